"""Pegasos (benchmarks.baselines.pegasos): the published update, and the primal optimum."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from benchmarks.baselines import SDCA, Pegasos


def data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.where(X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)


def naive_pegasos(X, y, lam, loss, k, epochs, seed, radius):
    """Shalev-Shwartz et al.'s mini-batch iteration written out, batches from the documented
    permutations."""
    w, t = np.zeros(X.shape[1]), 0
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(y))
        for start in range(0, len(y), k):
            rows = order[start:start + k]
            t += 1
            eta = 1 / (lam * t)
            u = X[rows] @ w
            if loss == "hinge":
                grad = -(X[rows] * (y[rows] * (y[rows] * u < 1))[:, None]).sum(0) / len(rows)
            else:
                grad = (X[rows] * (u - y[rows])[:, None]).sum(0) / len(rows)
            w = (1 - eta * lam) * w - eta * grad
            w *= min(1.0, radius / np.linalg.norm(w)) if np.linalg.norm(w) > 0 else 1.0
    return w


@pytest.mark.parametrize("loss", ["hinge", "squared"])
def test_steps_are_the_published_update(loss):
    X, y = data(23)
    model = Pegasos(loss=loss, alpha=0.3, batch_size=5, random_state=1).fit(X, y, epochs=3)
    w = naive_pegasos(X, y, 0.3, loss, 5, 3, 1, model.radius_)
    np.testing.assert_allclose(model.coef_.numpy(), w, atol=1e-12)
    radius = 1 / np.sqrt(0.3) if loss == "hinge" else np.sqrt(np.mean(y**2) / 0.3)
    assert model.radius_ == pytest.approx(radius)


def primal(w, X, y, lam, loss):
    u = X @ w
    risk = np.maximum(0, 1 - y * u) if loss == "hinge" else 0.5 * (u - y) ** 2
    return risk.mean() + lam / 2 * w @ w


def test_hinge_reaches_the_svm_primal_optimum():
    X, y = data()
    lam = 0.05
    optimum = SDCA(loss="hinge", alpha=lam, batch_size=32).fit(X, y, epochs=300).objectives()[1]
    model = Pegasos(loss="hinge", alpha=lam, batch_size=10).fit(X, y, epochs=200)
    assert optimum <= primal(model.coef_.numpy(), X, y, lam, "hinge") < optimum * (1 + 1e-4)


def test_squared_reaches_the_ridge_optimum():
    X, y = data(seed=1)
    y = X @ np.arange(1.0, 5.0)
    lam = 0.05
    ridge = Ridge(alpha=lam * len(y), fit_intercept=False).fit(X, y)
    best = primal(ridge.coef_, X, y, lam, "squared")
    model = Pegasos(loss="squared", alpha=lam, batch_size=10).fit(X, y, epochs=200)
    assert best <= primal(model.coef_.numpy(), X, y, lam, "squared") < best * (1 + 1e-6)
    assert np.linalg.norm(model.coef_.numpy()) <= model.radius_ + 1e-12
