"""Sparse input without densifying the data set: CSR rows stay sparse in the default fit and are
densified a batch (or a bounded row chunk) at a time, giving the dense fit bit for bit; every
estimator whose kernel allows it takes CSR in fit and predict."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kernelstream import (AOGDClassifier, DSGClassifier, DSGGaussianProcessRegressor,
                          DSGRegressor, GoGPRegressor, RandomFeatures)
from kernelstream.solvers.streams import SparseRows


def _sparse_problem(n=6000, d=40, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.1, format="csr", random_state=seed, dtype=np.float64)
    X.data = rng.normal(size=X.nnz)
    w = rng.normal(size=d)
    return X, np.sin(X @ w) + 0.1 * rng.normal(size=n)


@pytest.mark.slow
def test_default_fit_on_csr_is_the_dense_fit():
    X, y = _sparse_problem(2000, 20)
    params = dict(block_size=64, batch_size=256, random_state=0)
    sparse = DSGRegressor(**params).fit(X, y)
    dense = DSGRegressor(**params).fit(X.toarray(), y)
    assert sparse.cv_results_ is not None  # the race ran on sparse rows
    assert (sparse.alpha_, sparse.n_components_) == (dense.alpha_, dense.n_components_)
    np.testing.assert_array_equal(sparse.sigma_, dense.sigma_)  # per-feature lengthscales too
    np.testing.assert_array_equal(sparse.predict(X), dense.predict(X.toarray()))


def test_csr_rows_are_densified_a_batch_or_a_sketch_chunk_at_a_time(monkeypatch):
    X, y = _sparse_problem(8000, 40)
    densified = []
    original = SparseRows.__getitem__

    def recording(self, index):
        rows = original(self, index)
        densified.append(rows.shape[0])
        return rows

    monkeypatch.setattr(SparseRows, "__getitem__", recording)
    params = dict(sigma=4.0, alpha=1e-4, n_components=128, block_size=128, batch_size=512,
                  solver="sgd", max_iter=3, random_state=0)
    sparse = DSGRegressor(**params).fit(X, y)
    assert densified and max(densified) <= 16 * 129  # the sketch's rows, not the 8000 of X
    np.testing.assert_array_equal(sparse.predict(X),
                                  DSGRegressor(**params).fit(X.toarray(), y).predict(X.toarray()))


@pytest.mark.parametrize("kernel", ["rbf", "laplace", "matern"])
def test_csr_and_dense_inputs_give_the_same_classifier(kernel):
    X, y = _sparse_problem(1500, 20)
    labels = (y > 0).astype(int)
    params = dict(kernel=kernel, sigma=3.0, alpha=1e-4, n_components=256, block_size=128,
                  batch_size=256, max_iter=4, random_state=0)
    sparse = DSGClassifier(**params).fit(X, labels)
    dense = DSGClassifier(**params).fit(X.toarray(), labels)
    np.testing.assert_array_equal(sparse.decision_function(X), dense.decision_function(X.toarray()))


@pytest.mark.parametrize("make", [
    lambda: GoGPRegressor(random_state=0),
    lambda: DSGGaussianProcessRegressor(sigma=1.0, noise=0.1, n_steps=16, n_landmarks=64,
                                             block_size=256, random_state=0),
    lambda: AOGDClassifier(n_components=256, random_state=0),
    lambda: RandomFeatures(kernel="matern", random_state=0),
    lambda: DSGRegressor(kernel="laplace", solver="one_pass", random_state=0),
])
def test_estimators_take_csr_in_fit_and_predict(make):
    X, y = _sparse_problem(400, 10)
    target = (y > 0).astype(int) if isinstance(make(), AOGDClassifier) else y
    sparse, dense = make().fit(X, target), make().fit(X.toarray(), target)
    method = "transform" if isinstance(sparse, RandomFeatures) else "predict"
    np.testing.assert_allclose(getattr(sparse, method)(X), getattr(dense, method)(X.toarray()),
                               rtol=1e-6, atol=1e-6)


def _wide_problem(n, d, per_row, seed=0):
    """``n × d`` CSR with ``per_row`` non-zeros a row, and a smooth target of a few columns."""
    rng = np.random.default_rng(seed)
    indices = np.concatenate([np.sort(rng.choice(d, per_row, replace=False)) for _ in range(n)])
    X = sp.csr_matrix((rng.normal(size=n * per_row), indices, np.arange(0, n * per_row + 1, per_row)),
                      shape=(n, d))
    return X, np.sin(X @ rng.normal(size=d)) + 0.1 * rng.normal(size=n)


def test_a_wide_csr_fit_projects_the_non_zeros_and_agrees_with_the_dense_fit(monkeypatch):
    """Wide sparse rows never reach the dense route (issue 30): the fit projects them by their
    non-zeros and ends with the dense fit's model to float rounding."""
    X, y = _wide_problem(1500, 2000, 10)
    densified, original = [], SparseRows.__getitem__

    def recording(self, index):
        densified.append(index)
        return original(self, index)

    monkeypatch.setattr(SparseRows, "__getitem__", recording)
    params = dict(sigma=3.0, alpha=1e-4, n_components=256, block_size=128, batch_size=256,
                  max_iter=3, random_state=0, dtype="float64")
    sparse = DSGRegressor(**params).fit(X, y)
    monkeypatch.undo()
    assert not densified
    dense = DSGRegressor(**params).fit(X.toarray(), y)
    np.testing.assert_allclose(sparse.predict(X), dense.predict(X.toarray()), rtol=1e-7, atol=1e-7)


def test_a_csr_fit_two_million_columns_wide_never_densifies(monkeypatch):
    """2,000 rows × 2,000,000 columns, 5 non-zeros a row (dense rows: 16 GB in float32): the
    median bandwidth, the preconditioner's sketch and the epochs all stay sparse."""
    X, y = _wide_problem(2000, 2_000_000, 5)

    def refuse(*args, **kwargs):
        raise AssertionError("wide rows densified")

    monkeypatch.setattr(sp.csr_matrix, "toarray", refuse)
    model = DSGRegressor(sigma="median", alpha=1e-3, n_components=128, block_size=64,
                         batch_size=512, max_iter=2, random_state=0).fit(X, y)
    assert model.sigma_ > 0 and np.isfinite(model.loss_curve_).all()
    assert model.n_components_ == 128
