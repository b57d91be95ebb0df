"""NORMA (benchmarks.baselines.norma) against its recursion written out as a naive loop."""

import numpy as np
import pytest

from benchmarks.baselines import NORMA


def rbf(a, b, sigma):
    return np.exp(-np.sum((a - b) ** 2) / (2 * sigma**2))


def naive_norma(X, Y, sigma, lam, loss, b, epochs, seed, eta0, power_t, intercept):
    """Kivinen et al.'s f_{t+1} = (1 − η_t λ) f_t − (η_t/b) Σ φ'(f_t(x_i), y_i) k(x_i, ·), one term
    appended per row and step, f evaluated as an explicit double sum."""
    terms, offset, t, lipschitz = [], np.zeros(Y.shape[1]), 0, None
    f = lambda x: sum(a * rbf(z, x, sigma) for z, a in terms) + offset  # noqa: E731
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(X))
        for start in range(0, len(X), b):
            rows = order[start:start + b]
            if lipschitz is None:
                K = np.array([[rbf(X[i], X[j], sigma) for j in rows] for i in rows])
                lipschitz = np.linalg.eigvalsh(K)[-1] / len(rows)
            t += 1
            eta = eta0 / (lipschitz * t**power_t)
            u = np.array([f(X[i]) for i in rows])
            grad = np.where(Y[rows] * u < 1, -Y[rows], 0.0) if loss == "hinge" else u - Y[rows]
            terms = [(z, (1 - eta * lam) * a) for z, a in terms]
            offset = offset - eta * lipschitz * grad.mean(0) if intercept else offset
            terms += [(X[i], -eta * g / len(rows)) for i, g in zip(rows, grad)]
    return f


@pytest.mark.parametrize("loss, intercept, outputs", [("hinge", True, 1), ("squared", False, 1),
                                                      ("squared", True, 3)])
def test_output_is_the_recursion(loss, intercept, outputs):
    rng = np.random.default_rng(0)
    X, X_new = rng.normal(size=(19, 2)), rng.normal(size=(7, 2))
    if loss == "hinge":
        Y = np.where(X[:, :1] > 0, 1.0, -1.0)
    else:
        Y = np.sin(X[:, :1] * np.arange(1, outputs + 1))
    model = NORMA(sigma=0.9, loss=loss, alpha=0.05, batch_size=4, eta0=0.7, power_t=0.5,
                  fit_intercept=intercept, random_state=2)
    model.fit(X, Y[:, 0] if outputs == 1 else Y, epochs=3)
    f = naive_norma(X, Y, 0.9, 0.05, loss, 4, 3, 2, 0.7, 0.5, intercept)
    expected = np.array([f(x) for x in X_new])
    np.testing.assert_allclose(model.decision_function(X_new).reshape(7, -1), expected, atol=1e-12)
    assert model.n_support_ <= len(X)  # recurring rows merged, not appended


def test_a_step_above_one_over_lambda_is_refused():
    X = np.random.default_rng(1).normal(size=(10, 2))
    model = NORMA(sigma=1.0, alpha=10.0, batch_size=5, eta0=1.0)
    with pytest.raises(ValueError, match="lower eta0 or alpha"):
        model.fit(X, X[:, 0])


def test_hinge_needs_plus_minus_one_labels():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="labels -1 and \\+1"):
        NORMA(sigma=1.0, loss="hinge").fit(X, [0, 1, 0, 1])
    with pytest.raises(RuntimeError, match="not fitted"):
        NORMA(sigma=1.0).predict(X)
