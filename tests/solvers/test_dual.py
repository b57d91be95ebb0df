"""The dual route: random-feature ridge solved exactly on few rows, every α's leave-one-out
error in closed form, and the estimators' defaults that use it."""

import numpy as np
import pytest
import torch
from sklearn.metrics import log_loss

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.planning import LIMITS, dual_features
from kernelstream.solvers.dual import DUAL_MAX_ROWS, dual_ridge, gram_rows
from kernelstream.solvers.preconditioned import INTERCEPT_FEATURE, feature_matrix

from test_preconditioned import D_BLOCKS, _data, _map

DUAL_ALPHAS, SIGMA_SCALES = LIMITS.dual_alphas, LIMITS.sigma_scales


def _weighted_ridge(Phi, y, weight, alpha):
    """Closed form of ``Σ w ½(φᵀW + b − y)²/n + α/2‖W‖²`` (``n`` rows, the intercept free)."""
    n, D = Phi.shape
    A = torch.cat([Phi, torch.ones(n, 1, dtype=Phi.dtype)], 1)
    H = (A * weight[:, None]).T @ A / n
    H[:D, :D] += alpha * torch.eye(D, dtype=Phi.dtype)
    return torch.linalg.solve(H, (A * weight[:, None]).T @ y / n)


def _weights(n, seed=1):
    weight = torch.tensor(np.random.default_rng(seed).uniform(0.5, 2.0, n))
    weight[:7] = 0.0  # rows of weight 0 leave the fit alone
    return weight


@pytest.mark.parametrize("alpha", [1e-2, 1e-7])
def test_the_dual_solution_is_the_weighted_ridge_solution(alpha):
    X, y = _data(n=400)
    fm, weight = _map(), _weights(400)
    solution = dual_ridge(gram_rows(fm, D_BLOCKS, X, y, weight)).solution(alpha)
    theta = solution.theta()
    Phi = feature_matrix(fm, X, D_BLOCKS)
    exact = _weighted_ridge(Phi, y, weight, alpha)
    assert torch.allclose(theta[:-1], exact[:-1], atol=1e-8 * float(exact.abs().max()))
    assert float(INTERCEPT_FEATURE * theta[-1]) == pytest.approx(float(exact[-1]), abs=1e-8)
    residual = Phi @ exact[:-1] + exact[-1] - y  # F at the primal optimum
    objective = (float((weight * 0.5 * residual[:, 0] ** 2).sum()) / len(y)
                 + 0.5 * alpha * float(exact[:-1].square().sum()))
    assert solution.training_loss == pytest.approx(objective, rel=1e-8)


@pytest.mark.parametrize("alpha", [1e-1, 1e-5])
def test_leave_one_out_predictions_are_those_of_refits_without_the_row(alpha):
    X, y = _data(n=300)
    fm, weight = _map(), _weights(300)
    ridge = dual_ridge(gram_rows(fm, D_BLOCKS, X, y, weight))
    predicted = ridge.leave_one_out(alpha)
    Phi = feature_matrix(fm, X, D_BLOCKS)
    kept = torch.nonzero(weight > 0).flatten()
    for k in (0, 1, 50, 200):  # k-th row of positive weight
        i = int(kept[k])
        others = weight.clone()
        others[i] = 0.0  # removing the row (the objective's n unchanged)
        refit = _weighted_ridge(Phi, y, others, alpha)
        assert float(predicted[k]) == pytest.approx(float(Phi[i] @ refit[:-1] + refit[-1]), abs=1e-8)
    losses = ridge.leave_one_out_losses([alpha])
    w = weight[kept]
    expected = float((w * 0.5 * (y[kept, 0] - predicted[:, 0]) ** 2).sum() / w.sum())
    assert float(losses[0]) == pytest.approx(expected, rel=1e-10)


def test_refusals_of_the_dual_solve():
    X, y = _data(n=50)
    with pytest.raises(ValueError, match="sample_weight 0"):
        gram_rows(_map(), D_BLOCKS, X, y, torch.zeros(50, dtype=X.dtype))
    bad = X.clone()
    bad[3, 0] = float("inf")
    with pytest.raises(FloatingPointError, match="not finite"):
        gram_rows(_map(), D_BLOCKS, bad, y, torch.ones(50, dtype=X.dtype))


def _regression(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    return X, np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(n)


def test_the_regressor_defaults_on_few_rows_choose_by_leave_one_out_and_fit_every_row():
    X, y = _regression(600)
    model = DSGRegressor(random_state=0).fit(X, y)
    plan = model.fit_plan_
    assert plan.route == "dual" and plan.validation_fraction is None  # every row trains
    r = model.expansion_.feature_map.block_size  # the exact kernel's model: every row a centre
    assert plan.basis == "exact" and model.n_components_ == -(-600 // r) * r
    assert plan.max_blocks * plan.block_size == min(dual_features(600), LIMITS.few_rows_features)
    results = model.cv_results_
    assert set(results["n_rows"]) == {min(600, LIMITS.few_rows_subsample)}
    assert len(results["params"]) % len(DUAL_ALPHAS) == 0  # every alpha of each sigma tried
    best = int(np.argmax(results["mean_test_score"]))
    np.testing.assert_array_equal(model.sigma_, results["param_sigma"][best])
    m = min(600, LIMITS.few_rows_subsample)
    assert model.alpha_ == pytest.approx(results["param_alpha"][best] * m / 600)  # carried to n
    X_test, y_test = _regression(2000, seed=2)
    assert np.mean((model.predict(X_test) - y_test) ** 2) < 0.02  # noise variance 0.01


def test_with_a_budget_the_dual_route_fits_the_exact_minimiser_on_every_row():
    X, y = _regression(600)
    model = DSGRegressor(random_state=0, n_components=512, alpha=1e-3).fit(X, y)
    assert model.n_iter_ == 1 and model.n_components_ == 512 and len(model.cv_results_["params"]) == 5
    # the exact minimiser on all 600 rows at the chosen (σ, α), in standardised y
    fm, J = model.expansion_.feature_map, model.expansion_.n_blocks
    Xt = torch.tensor(X, dtype=torch.float32)
    z = torch.tensor((y - model.y_offset_) / model.y_scale_).reshape(-1, 1)
    exact = _weighted_ridge(feature_matrix(fm, Xt, J).double(), z, torch.ones(600, dtype=torch.float64),
                            model.alpha_)

    X_test, _ = _regression(200, seed=1)
    closed = (feature_matrix(fm, torch.tensor(X_test, dtype=torch.float32), J).double() @ exact[:-1]
              + exact[-1]).numpy().ravel() * model.y_scale_ + model.y_offset_
    assert np.abs(model.predict(X_test) - closed).max() < 1e-3 * np.std(y)


def test_more_rows_than_the_dual_route_take_the_subsample_route():
    X, y = _regression(DUAL_MAX_ROWS + 200)
    model = DSGRegressor(random_state=0, n_components=512).fit(X, y)
    assert model.fit_plan_.route == "subsample" and model.fit_plan_.validation_fraction == 0.1
    assert model.n_iter_ >= 1  # conjugate-gradient iterations (a near-exact sketch: one)


def test_an_explicit_max_iter_or_solver_keeps_the_epochs():
    X, y = _regression(300)
    assert DSGRegressor(random_state=0, max_iter=3, n_components=256).fit(X, y).n_iter_ <= 3
    assert DSGRegressor(random_state=0, loss="huber", n_components=256).fit(X, y).n_iter_ > 1


def test_the_binary_classifier_on_few_rows_calibrates_on_leave_one_out_scores():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 2))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 + 0.3 * rng.standard_normal(500) > 1.4, "out", "in")
    model = DSGClassifier(random_state=0).fit(X, y)
    assert model.n_iter_ == 1 and model.proba_temperature_ is not None
    X_test = rng.standard_normal((2000, 2))
    y_test = np.where(X_test[:, 0] ** 2 + X_test[:, 1] ** 2 > 1.4, "out", "in")
    assert np.mean(model.predict(X_test) != y_test) < 0.08
    proba = model.predict_proba(X_test)
    confidence = proba.max(axis=1)  # calibrated: as confident as it is right, on unseen rows
    assert abs(confidence.mean() - np.mean(model.predict(X_test) == y_test)) < 0.05
    assert log_loss(y_test, proba, labels=model.classes_) < 0.25
