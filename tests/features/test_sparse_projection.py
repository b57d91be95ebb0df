"""Sparse rows projected by their non-zeros (issue 30): the Fourier maps give the features of
the dense rows to float rounding, draw only the rows of ``W`` of the columns that occur (the
same numbers as the full draw), and never densify the rows nor draw a whole i.i.d. block."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from kernelstream import rng
from kernelstream.features import make_feature_map
from kernelstream.features.row_draws import cauchy_rows, normal_rows
from kernelstream.ops.sparse import CSRRows, keeps_sparse


def _csr(n, d, per_row, seed=0):
    """``n × d`` CSR with ``per_row`` non-zeros a row at random columns."""
    g = np.random.default_rng(seed)
    indices = np.concatenate([np.sort(g.choice(d, per_row, replace=False)) for _ in range(n)])
    return sp.csr_matrix((g.uniform(0.1, 1.0, n * per_row), indices,
                          np.arange(0, n * per_row + 1, per_row)), shape=(n, d))


@pytest.mark.parametrize("h", [512, 31, 6, 1])
def test_row_draws_are_the_rows_of_the_full_draw_bit_for_bit(h):
    columns = np.array([0, 1, 2, 77, 398, 399])
    full = rng.normal((400, h), 11, 3, rng.Stream.WEIGHTS)
    assert torch.equal(normal_rows(columns, h, 11, 3, rng.Stream.WEIGHTS), full[columns])
    full = rng.cauchy((400, h), 11, 3, rng.Stream.WEIGHTS)
    assert torch.equal(cauchy_rows(columns, h, 11, 3, rng.Stream.WEIGHTS), full[columns])


@pytest.mark.parametrize("kernel, block_size, params", [
    ("rbf", 64, {}), ("rbf", 63, {}), ("laplace", 64, {}), ("laplace", 31, {}),
    ("matern", 64, {"nu": 2.5}), ("rbf", 64, {"sampling": "orthogonal"}),
    ("laplace", 32, {"sampling": "sobol"}), ("exp_chi2", 64, {}), ("polynomial", 64, {}),
])
def test_sparse_rows_give_the_features_of_the_dense_rows(kernel, block_size, params):
    X = _csr(40, 500, 6)
    fm = make_feature_map(kernel, 500, 3.0, block_size, seed=4, kernel_params=params)
    rows = CSRRows(X, torch.float64, torch.device("cpu"))
    dense = torch.from_numpy(X.toarray())
    coef = torch.randn(3, block_size, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(fm.features(rows, range(3)), fm.features(dense, range(3)),
                               rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(fm.contract(rows, coef), fm.contract(dense, coef), rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(fm.block_features(rows, 2), fm.block_features(dense, 2),
                               rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(fm.features(rows[5:9], [1]), fm.features(dense[5:9], [1]),
                               rtol=1e-9, atol=1e-9)


def test_float32_sparse_features_agree_with_the_dense_ones():
    X = _csr(64, 3000, 10)
    fm = make_feature_map("rbf", 3000, 2.0, 256, seed=1)
    sparse = fm.features(CSRRows(X, torch.float32, "cpu"), range(2))
    dense = fm.features(torch.from_numpy(X.toarray()).float(), range(2))
    torch.testing.assert_close(sparse, dense, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_a_wide_batch_is_never_densified_and_only_its_columns_are_drawn(monkeypatch):
    """2,000 rows × 2,000,000 columns, 5 non-zeros a row: dense rows would be 16 GB and a
    block's full draw 2·10⁶ × 32 normals; the projection holds neither."""
    X = _csr(2000, 2_000_000, 5, seed=2)
    assert keeps_sparse(X)
    fm = make_feature_map("rbf", X.shape[1], 1.0, 64, seed=0)

    def refuse(*args, **kwargs):
        raise AssertionError("densified or drew a whole block")

    monkeypatch.setattr(CSRRows, "to_dense", refuse)
    monkeypatch.setattr(sp.csr_matrix, "toarray", refuse)
    monkeypatch.setattr(type(fm), "_draw", refuse)
    rows = CSRRows(X, torch.float32, "cpu")
    Phi = fm.features(rows, range(2))
    assert Phi.shape == (2000, 2, 64) and torch.isfinite(Phi).all()
    occurring = np.unique(X.indices).size
    tables = fm._params.row_tables.values()
    assert [table.n for table in tables] == [occurring, occurring]  # the rows of those columns only
    few = X[:3]  # against the dense features of three rows, drawn the usual way
    monkeypatch.undo()
    torch.testing.assert_close(Phi[:3], fm.features(torch.from_numpy(few.toarray()).float(), range(2)),
                               rtol=0, atol=1e-5)


def test_rows_beyond_the_row_budget_are_drawn_for_the_batch_alone():
    X = _csr(50, 4000, 8)
    fm = make_feature_map("laplace", 4000, 2.0, 64, seed=3)
    fm._params.row_budget = 4000 * 8 + 100 * 32 * 8  # the slots and 100 rows of a block
    rows, dense = CSRRows(X, torch.float64, "cpu"), torch.from_numpy(X.toarray())
    for part in (slice(0, 5), slice(None)):  # a few rows' columns kept, then too many to keep
        torch.testing.assert_close(fm.features(rows[part], range(2)), fm.features(dense[part], range(2)),
                                   rtol=1e-9, atol=1e-9)
    assert 0 < next(iter(fm._params.row_tables.values())).n <= 100
    assert fm._params.row_nbytes <= fm._params.row_budget
    fm.clear_cache()
    assert fm._params.row_nbytes == 0 and not fm._params.row_tables


def test_only_wide_sparse_matrices_keep_their_rows_sparse():
    assert keeps_sparse(_csr(10, 1000, 5)) and not keeps_sparse(_csr(10, 100, 5))
    assert not keeps_sparse(_csr(10, 1000, 200)) and not keeps_sparse(np.zeros((3, 1000)))


def test_csr_rows_index_like_sparse_rows_and_keep_the_caller_matrix():
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([5, 1, 2]), np.array([0, 2, 3])),
                      shape=(2, 300))  # unsorted indices
    rows = CSRRows(X, torch.float32, "cpu")
    assert X.indices.tolist() == [5, 1, 2]  # not sorted in place
    assert rows[torch.tensor([1])].shape == (1, 300) and len(rows.subset([0, 1])) == 2
    torch.testing.assert_close(rows.to_dense(), torch.from_numpy(X.toarray()).float())
    assert rows.new_zeros((2, 3)).dtype == torch.float32 and rows.element_size() == 4
