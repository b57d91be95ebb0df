"""SDCA baselines (benchmarks.baselines.sdca): the batched sweep is one-at-a-time SDCA, and the
solutions are the exact SVM / kernel ridge / ridge optima."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from sklearn.linear_model import Ridge
from sklearn.svm import LinearSVC

from benchmarks.baselines import SDCA, KernelSDCA, make_baseline, random_features
from benchmarks.baselines._kernel import exact_kernel


def two_moons(n, seed=0, d=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def naive_sdca(X, y, lam, loss, batch_size, epochs, seed):
    """Shalev-Shwartz & Zhang's coordinate updates, one coordinate at a time, in the order of the
    baseline's documented permutations."""
    n = len(y)
    alpha, w = np.zeros(n), np.zeros(X.shape[1])
    for epoch in range(epochs):
        for i in np.random.default_rng([seed, epoch]).permutation(n):
            u, q = X[i] @ w, X[i] @ X[i] / (lam * n)
            if loss == "hinge":
                delta = y[i] * min(1.0, max(0.0, (1 - y[i] * u) / q + alpha[i] * y[i])) - alpha[i]
            else:
                delta = (y[i] - u - alpha[i]) / (1 + q)
            alpha[i] += delta
            w += delta * X[i] / (lam * n)
    return alpha, w


@pytest.mark.parametrize("loss", ["hinge", "squared"])
def test_batched_sweep_is_sdca_one_coordinate_at_a_time(loss):
    X, y = two_moons(37, d=5)
    model = SDCA(loss=loss, alpha=0.05, batch_size=8, random_state=3).fit(X, y, epochs=3)
    alpha, w = naive_sdca(X, y, 0.05, loss, 8, 3, seed=3)
    np.testing.assert_allclose(model.dual_coef_.numpy(), alpha, atol=1e-12)
    np.testing.assert_allclose(model.coef_.numpy(), w, atol=1e-12)


def svm_dual_optimum(K, y, lam):
    """max over β = αy ∈ [0, 1]^n of (1/n) Σ β − βᵀ(YKY)β/(2λn²), by L-BFGS-B (independent of SDCA)."""
    n = len(y)
    Q = (y[:, None] * K * y[None, :]) / (lam * n**2)
    result = minimize(lambda b: (0.5 * b @ Q @ b - b.sum() / n, Q @ b - 1 / n), np.full(n, 0.5),
                      jac=True, bounds=[(0, 1)] * n, method="L-BFGS-B",
                      options=dict(ftol=1e-15, gtol=1e-12, maxiter=10_000))
    return -result.fun


def test_kernel_sdca_hinge_reaches_the_svm_optimum():
    X, y = two_moons(120)
    model = KernelSDCA(sigma=1.0, loss="hinge", alpha=1e-2, batch_size=16).fit(X, y, epochs=300)
    primal, dual = model.objectives()
    assert 0 <= primal - dual < 1e-8  # duality gap: P(w(α)) − D(α) → 0
    K = exact_kernel("rbf", 2, 1.0).kernel(torch.as_tensor(X), torch.as_tensor(X)).numpy()
    optimum = svm_dual_optimum(K, y, 1e-2)
    assert abs(primal - optimum) < 1e-7 * optimum
    assert abs(model.dual_coef_ * torch.as_tensor(y)).max() <= 1 + 1e-12  # the dual box


def test_kernel_sdca_squared_is_kernel_ridge_regression():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (80, 2))
    y = np.sin(X[:, 0]) * X[:, 1] + 0.1 * rng.normal(size=80)
    X_new = rng.uniform(-2, 2, (30, 2))
    lam = 1e-2
    model = KernelSDCA(sigma=0.8, loss="squared", alpha=lam, batch_size=16).fit(X, y, epochs=200)
    kernel = exact_kernel("rbf", 2, 0.8).kernel
    K = kernel(torch.as_tensor(X), torch.as_tensor(X)).numpy()
    K_new = kernel(torch.as_tensor(X_new), torch.as_tensor(X)).numpy()
    closed_form = K_new @ np.linalg.solve(K + lam * len(y) * np.eye(len(y)), y)  # k*ᵀ(K + λnI)⁻¹y
    np.testing.assert_allclose(model.predict(X_new), closed_form, atol=1e-9)


def test_sdca_squared_on_fixed_features_is_ridge():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 6))
    y = X @ rng.normal(size=6) + 0.1 * rng.normal(size=200)
    lam = 1e-2
    model = SDCA(loss="squared", alpha=lam, batch_size=32).fit(X, y, epochs=100)
    w = np.linalg.solve(X.T @ X + lam * len(y) * np.eye(6), X.T @ y)  # argmin P(w)
    np.testing.assert_allclose(model.coef_.numpy(), w, atol=1e-10)


def test_sdca_hinge_on_fixed_features_matches_linear_svc():
    X, y = two_moons(300, d=4)
    lam = 1e-2
    model = SDCA(loss="hinge", alpha=lam, batch_size=32).fit(X, y, epochs=300)
    svc = LinearSVC(C=1 / (lam * len(y)), loss="hinge", fit_intercept=False, tol=1e-10,
                    max_iter=1_000_000).fit(X, y)
    w_svc = svc.coef_[0]
    primal_svc = np.maximum(0, 1 - y * (X @ w_svc)).mean() + lam / 2 * w_svc @ w_svc
    primal, dual = model.objectives()
    assert 0 <= primal - dual < 1e-8  # SDCA's certificate
    assert abs(primal - primal_svc) < 1e-8  # liblinear's dual coordinate descent agrees


def test_r_sdca_is_ridge_on_the_librarys_random_features():
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (400, 2))
    y = np.cos(X).sum(1)
    lam = 1e-2
    model = make_baseline("r-SDCA", loss="squared", sigma=1.0, alpha=lam, batch_size=64,
                          n_components=64).fit(X, y, epochs=150)
    Z = random_features(n_components=64, sigma=1.0).fit_transform(X)  # the same seeded features
    ridge = Ridge(alpha=lam * len(y), fit_intercept=False, solver="cholesky").fit(Z, y)
    np.testing.assert_allclose(model.coef_.numpy(), ridge.coef_, atol=1e-8)


def test_partial_fit_continues_fit_and_refuses_other_rows():
    X, y = two_moons(50)
    once = KernelSDCA(sigma=1.0, alpha=1e-2, batch_size=8).fit(X, y, epochs=2)
    twice = KernelSDCA(sigma=1.0, alpha=1e-2, batch_size=8).fit(X, y).partial_fit(X, y)
    assert torch.equal(once.dual_coef_, twice.dual_coef_)
    with pytest.raises(ValueError, match="duals belong to the 50 rows"):
        twice.partial_fit(X[:40], y[:40])
    with pytest.raises(ValueError, match="labels -1 and \\+1"):
        KernelSDCA(sigma=1.0).fit(X, (y > 0).astype(int))
    assert torch.equal(once.dual_coef_, twice.dual_coef_)  # the failed calls changed nothing
