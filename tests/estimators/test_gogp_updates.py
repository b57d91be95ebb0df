"""GoGP's kernel state after many rank-one updates and downdates (issue 33): the inverse kept in
packed storage agrees with a full refactorisation, and the chunked path (one kernel call per
chunk, members joining and leaving inside it) learns exactly what one point at a time does."""

import numpy as np
import pytest
import torch

from kernelstream.features import make_feature_map
from kernelstream.solvers.gogp import GoGPKernelState, from_dense, move_last, symmetric, symv, syr


def _stream(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = torch.tensor(rng.uniform(-2, 2, (n, d)))
    X[n // 2:n // 2 + 20] = X[:20]  # repeated rows: second observations of members
    return X, np.sin(X.numpy()).sum(1) + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("solver", ["rls", "sgd"])
def test_inverse_matches_refactorisation_after_many_updates_and_downdates(solver):
    X, z = _stream(2000)
    fm = make_feature_map("rbf", 3, 0.8, 2, 0)
    state = GoGPKernelState(fm.kernel, 0.02, 0.05, solver=solver, max_inducing=48,
                            n_total=len(z), n_features_in=3)
    for start in range(0, len(z), 500):
        state.update_many(X[start:start + 500], z[start:start + 500], 1.0, chunk=64)
        G = fm.kernel(state.U, state.U) + 0.02 * torch.eye(state.size, dtype=torch.float64)
        torch.testing.assert_close(state.Ginv, torch.linalg.inv(G), rtol=1e-7, atol=1e-7)
        if solver == "sgd":
            torch.testing.assert_close(state.K, fm.kernel(state.U, state.U), rtol=1e-12, atol=1e-12)
        else:
            torch.testing.assert_close(state.gamma, state.P @ state.r, rtol=1e-7, atol=1e-7)
            assert torch.linalg.eigvalsh(state.P).min() > 0
    assert state.size == 48 and state.n_removed > 500  # hundreds of downdates


def test_chunked_updates_equal_one_point_at_a_time():
    """update_many reads k_U(x) from one kernel table per chunk through the slot map; members
    that join, leave or move within the chunk must give the same kernel rows."""
    X, z = _stream(600)
    fm = make_feature_map("rbf", 3, 0.8, 2, 0)
    kwargs = dict(max_inducing=30, n_features_in=3)
    one = GoGPKernelState(fm.kernel, 0.02, 0.05, **kwargs)
    chunked = GoGPKernelState(fm.kernel, 0.02, 0.05, **kwargs)
    means_one = [one.update(x, float(zi)) for x, zi in zip(X, z)]
    means_chunked = chunked.update_many(X, z, chunk=97)
    np.testing.assert_allclose(means_chunked, means_one, rtol=1e-9, atol=1e-12)
    assert chunked.n_removed == one.n_removed > 100
    torch.testing.assert_close(chunked.U, one.U, rtol=0, atol=0)


def test_triangle_storage_blas_and_moves():
    """The lower triangle of a capacity-sized buffer: dsymv/dsyr on its leading block (no copy),
    and moving the last member into a freed slot."""
    g = torch.Generator().manual_seed(0)
    A = torch.randn(7, 7, dtype=torch.float64, generator=g)
    A = (A + A.T).numpy()
    x = np.linspace(-1, 1, 7)
    T = from_dense(A, capacity=10)
    np.testing.assert_array_equal(symmetric(T, 7), A)
    np.testing.assert_allclose(symv(T, 7, x), A @ x, rtol=1e-13)
    syr(T, 7, 0.5, x)
    np.testing.assert_allclose(symmetric(T, 7), A + 0.5 * np.outer(x, x), rtol=1e-13)
    assert not T[7:].any() and not T[:, 7:].any()  # nothing outside the block
    move_last(T, 7, 2)
    order = [0, 1, 6, 3, 4, 5]
    np.testing.assert_allclose(symmetric(T, 6), (A + 0.5 * np.outer(x, x))[np.ix_(order, order)])


def test_one_row_partial_fit_checks_its_row():
    """partial_fit of one plain float64 row skips validate_data's dispatch, not its checks: a
    NaN, an infinity, a wrong width or an overflowing value is refused as before, and other
    inputs (lists, float32) take the full path to the same result."""
    from kernelstream import GoGPRegressor

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.normal(size=60)
    model = GoGPRegressor(random_state=0).fit(X[:50], y[:50])
    for row, message in [(np.array([[np.nan, 0.0, 0.0]]), "NaN"),
                         (np.array([[np.inf, 0.0, 0.0]]), "infinity"),
                         (np.zeros((1, 2)), "2 features"), (np.full((1, 3), 1e200), "overflow")]:
        with pytest.raises(ValueError, match=message):
            model.partial_fit(row, y[:1])
    with pytest.raises(ValueError, match="NaN"):
        model.partial_fit(X[50:51], np.array([np.nan]))
    other = GoGPRegressor(random_state=0).fit(X[:50], y[:50])
    for i in range(50, 60):
        model.partial_fit(X[i:i + 1], y[i:i + 1])
        other.partial_fit(X[i:i + 1].tolist(), [float(y[i])])
    np.testing.assert_array_equal(model.predict(X), other.predict(X))
