"""The exact kernel's model on few rows: the closed form, the estimators' defaults, and a model
that continues in random features."""

import numpy as np
import pytest
import torch

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.features import make_feature_map
from kernelstream.features.kernel_columns import KernelColumns
from kernelstream.solvers.dual import dual_ridge, gram_rows
from kernelstream.solvers.dual_hinge import dual_squared_hinge
from kernelstream.solvers.exact_kernel import exact_kernel_model, exact_kernel_solution


def exact_gram_rows(fm, X, y, w):
    return gram_rows(fm, 1, X, y, w, exact=True)


def _rows(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    return X, y


def _gaussian(A, B, sigma):
    squared = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-squared / (2 * sigma**2))


def _closed_form(X, y, w, sigma, alpha):
    """``min Σ w_i ½(f_i − y_i)²/n + (α/2)βᵀKβ`` over ``f = Kβ + b``: the bordered system
    ``[[WK + nαI, W1], [1ᵀWK, 1ᵀW1]] [β; b] = [Wy; 1ᵀWy]`` (the stationarity in ``β`` and ``b``)."""
    n = len(y)
    K, W = _gaussian(X, X, sigma), np.diag(w)
    top = np.hstack([W @ K + n * alpha * np.eye(n), (W @ np.ones(n))[:, None]])
    bottom = np.hstack([np.ones(n) @ W @ K, [w.sum()]])[None]
    solved = np.linalg.solve(np.vstack([top, bottom]), np.concatenate([W @ y, [w @ y]]))
    return solved[:n], solved[n]


def test_least_squares_is_the_closed_form_with_a_free_intercept():
    X, y = _rows()
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    fm = make_feature_map("rbf", X.shape[1], 1.3, 64, 0)
    rows = exact_gram_rows(fm, torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(w))
    solution = exact_kernel_solution(rows, 1e-3, "squared")
    beta, b = _closed_form(X, y, w, 1.3, 1e-3)
    np.testing.assert_allclose(solution.dual[:, 0].numpy(), beta, rtol=1e-7, atol=1e-7 * np.abs(beta).max())
    assert float(solution.intercept[0]) == pytest.approx(b, rel=1e-8)
    # the eigendecomposition's optimum on the same matrix (the selection's) is the same
    eigen = dual_ridge(rows).solution(1e-3)
    np.testing.assert_allclose(eigen.dual.numpy(), solution.dual.numpy(), atol=1e-8 * np.abs(beta).max())
    assert eigen.training_loss == pytest.approx(solution.training_loss, rel=1e-9)


def test_the_model_predicts_the_kernel_expansion_and_rows_of_weight_zero_are_no_centres():
    X, y = _rows(204)  # 201 of positive weight: 4 blocks of 51, the last padded at coefficient 0
    w = np.ones(len(y))
    w[:3] = 0.0
    fm = make_feature_map("rbf", X.shape[1], 1.3, 64, 0)
    rows = exact_gram_rows(fm, torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(w))
    solution = exact_kernel_solution(rows, 1e-2, "squared")
    kernel_map, theta = exact_kernel_model(solution, 64)
    assert isinstance(kernel_map, KernelColumns) and kernel_map.precise
    J, r = kernel_map.max_blocks, kernel_map.block_size
    assert rows.X.shape[0] == 201 and (J, r) == (4, 51) and kernel_map.centres.shape[0] == 204
    X_test = np.random.default_rng(3).standard_normal((50, X.shape[1]))
    coef = theta[:-1].reshape(J, r, 1) / J**0.5
    predicted = kernel_map.contract(torch.as_tensor(X_test), coef)[:, 0] + solution.intercept[0]
    expected = _gaussian(X_test, X[3:], 1.3) @ solution.dual[:, 0].numpy() + float(solution.intercept[0])
    np.testing.assert_allclose(predicted.numpy(), expected, rtol=1e-9, atol=1e-9)


def test_the_squared_hinge_is_the_dual_hinge_on_the_kernel_matrix():
    X, y = _rows()
    signs = np.sign(y)
    fm = make_feature_map("rbf", X.shape[1], 1.3, 64, 0)
    rows = exact_gram_rows(fm, torch.as_tensor(X), torch.as_tensor(signs), torch.ones(len(y), dtype=torch.float64))
    solution = exact_kernel_solution(rows, 1e-3, "squared_hinge")
    path = dual_squared_hinge(rows, [1e-3]).solution(1e-3)
    assert torch.equal(solution.dual, path.dual) and torch.equal(solution.intercept, path.intercept)
    margins = signs * (rows.gram @ solution.dual[:, 0] + solution.intercept[0]).numpy()
    assert np.mean(margins > 0) > 0.95  # it separates its training rows


def test_the_regressor_default_on_few_rows_is_the_exact_kernel_at_its_sigma_and_alpha():
    X, y = _rows(400)
    model = DSGRegressor(random_state=0).fit(X, y)
    assert model.fit_plan_.basis == "exact" and model.fit_plan_.route == "dual"
    assert [s["stage"] for s in model.fit_plan_.stages] == ["selection", "exact_kernel"]
    assert np.ndim(model.sigma_) == 0 or len(model.sigma_) == X.shape[1]
    # the model at its (sigma_, alpha_) on the scaled targets, predicted from the closed form
    fm = make_feature_map("rbf", X.shape[1], model.sigma_, 64, 0)
    scaled = (y - model.y_offset_) / model.y_scale_ if hasattr(model, "y_offset_") else y
    rows = exact_gram_rows(fm, torch.as_tensor(X), torch.as_tensor(scaled), torch.ones(len(y), dtype=torch.float64))
    solution = exact_kernel_solution(rows, model.alpha_, "squared")
    X_test, _ = _rows(100, seed=5)
    expected = fm.kernel(torch.as_tensor(X_test), torch.as_tensor(X)).numpy() @ solution.dual[:, 0].numpy()
    expected = expected + float(solution.intercept[0])
    if hasattr(model, "y_offset_"):
        expected = expected * model.y_scale_ + model.y_offset_
    np.testing.assert_allclose(model.predict(X_test), expected, rtol=1e-6, atol=1e-6 * np.abs(y).max())


@pytest.mark.parametrize("make", [lambda: _rows(300), lambda: (_rows(300)[0], np.sign(_rows(300)[1]))])
def test_partial_fit_after_an_exact_fit_continues_in_random_features(make):
    X, y = make()
    Estimator = DSGRegressor if len(np.unique(y)) > 2 else DSGClassifier
    model = Estimator(random_state=0, batch_size=50).fit(X, y)
    exact = model.decision_function(X) if Estimator is DSGClassifier else model.predict(X)
    model.partial_fit(X[:50], y[:50])
    assert not isinstance(model.expansion_.feature_map, KernelColumns)
    assert model.expansion_.n_blocks == model.fit_plan_.max_blocks
    after = model.decision_function(X) if Estimator is DSGClassifier else model.predict(X)
    assert np.corrcoef(after, exact)[0, 1] > 0.95  # the same function, a few steps on


def test_a_warm_start_on_an_exact_model_solves_again():
    X, y = _rows(300)
    model = DSGRegressor(random_state=0, warm_start=True).fit(X, y)
    first = model.predict(X)
    model.fit(X, y)
    assert model.fit_plan_.basis == "exact"
    np.testing.assert_allclose(model.predict(X), first, rtol=1e-6, atol=1e-6)


def test_basis_random_features_keeps_the_random_features_dual():
    X, y = _rows(300)
    model = DSGRegressor(random_state=0, basis="random_features").fit(X, y)
    assert model.fit_plan_.basis == "random_features"
    assert not isinstance(model.expansion_.feature_map, KernelColumns)
