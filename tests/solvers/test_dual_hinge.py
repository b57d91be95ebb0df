"""The squared hinge solved exactly in the dual on few rows: finite Newton on the active set,
leave-one-out predictions from the last step, and the classifier's choice between it and least
squares."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from sklearn.exceptions import ConvergenceWarning

from kernelstream import DSGClassifier
from kernelstream.solvers import dual_hinge
from kernelstream.solvers.dual import gram_rows
from kernelstream.solvers.dual_hinge import dual_squared_hinge, squared_hinge_path
from kernelstream.solvers.preconditioned import INTERCEPT_FEATURE, feature_matrix

from test_dual import _weights
from test_preconditioned import D_BLOCKS, _data, _map


def _binary(n, seed=0):
    X, y = _data(n=n, seed=seed)
    flipped = torch.tensor(np.random.default_rng(seed).random(n) < 0.1)  # label noise: an overlap
    return X, torch.where((y > 0) ^ flipped[:, None], 1.0, -1.0).double()


def _gradient(Phi, y, weight, W, b, alpha):
    """``∂F/∂(W, b)`` of ``F = Σ w max(0, 1 − y f)²/n + (α/2)‖W‖²``."""
    f = Phi @ W + b
    d = -2 * weight * y * (1 - y * f).clamp_min(0) / len(y)  # ∂F/∂f
    return Phi.T @ d + alpha * W, d.sum()


@pytest.mark.parametrize("alpha", [1e-2, 1e-6])
def test_the_dual_optimum_zeroes_the_primal_gradient(alpha):
    X, y = _binary(400)
    fm, weight = _map(), _weights(400)
    solution = dual_squared_hinge(gram_rows(fm, D_BLOCKS, X, y, weight), [1e-1, alpha]).solution(alpha)
    theta = solution.theta()
    W, b = theta[:-1, 0], INTERCEPT_FEATURE * theta[-1, 0]
    Phi = feature_matrix(fm, X, D_BLOCKS).double()
    grad_W, grad_b = _gradient(Phi, y[:, 0], weight, W, b, alpha)
    assert float(grad_W.abs().max()) < 1e-9 and abs(float(grad_b)) < 1e-9
    margin = (1 - y[:, 0] * (Phi @ W + b)).clamp_min(0)
    objective = float((weight * margin.square()).sum()) / 400 + 0.5 * alpha * float(W @ W)
    assert solution.training_loss == pytest.approx(objective, rel=1e-9)


def test_the_warm_started_path_reaches_each_alphas_own_optimum():
    X, y = _binary(300, seed=1)
    rows = gram_rows(_map(), D_BLOCKS, X, y, torch.ones(300, dtype=X.dtype))
    alphas = [1e-5, 1e-1, 1e-3]  # any order: solved from the largest down, returned as given
    path = squared_hinge_path(rows.gram, rows.y[:, 0], rows.weight, 300, alphas)
    for alpha, solution in zip(alphas, path):
        alone = squared_hinge_path(rows.gram, rows.y[:, 0], rows.weight, 300, [alpha])[0]
        assert solution.alpha == alpha
        assert solution.objective == pytest.approx(alone.objective, rel=1e-10)
        assert torch.allclose(solution.dual, alone.dual, atol=1e-8)


def test_leave_one_out_predictions_are_refits_without_the_row_while_the_active_set_holds():
    X, y = _binary(300, seed=2)
    weight, alpha = _weights(300), 1e-3
    rows = gram_rows(_map(), D_BLOCKS, X, y, weight)
    solution = squared_hinge_path(rows.gram, rows.y[:, 0], rows.weight, 300, [alpha])[0]
    f = rows.gram @ solution.dual + solution.intercept
    active = rows.y[:, 0] * f < 1
    checked_inside = checked_outside = 0
    for i in range(0, rows.X.shape[0], 7):
        keep = torch.arange(rows.X.shape[0]) != i
        refit = squared_hinge_path(rows.gram[keep][:, keep], rows.y[keep, 0], rows.weight[keep], 300,
                                   [alpha])[0]
        predicted = float(rows.gram[i, keep] @ refit.dual + refit.intercept)
        refit_active = rows.y[keep, 0] * (rows.gram[keep][:, keep] @ refit.dual + refit.intercept) < 1
        if not active[i]:  # no gradient: removing the row changes nothing
            assert float(solution.leave_one_out[i]) == pytest.approx(float(f[i]), abs=1e-12)
            assert predicted == pytest.approx(float(f[i]), abs=1e-8)
            checked_outside += 1
        elif torch.equal(refit_active, active[keep]):  # the formula is exact here
            assert float(solution.leave_one_out[i]) == pytest.approx(predicted, abs=1e-8)
            checked_inside += 1
    assert checked_inside >= 5 and checked_outside >= 5


def test_refuses_alpha_zero():
    X, y = _binary(50)
    rows = gram_rows(_map(), D_BLOCKS, X, y, torch.ones(50, dtype=X.dtype))
    with pytest.raises(ValueError, match="alpha > 0"):
        dual_squared_hinge(rows, [0.0])


@pytest.mark.slow
def test_binary_auto_loss_on_few_rows_solves_both_losses_and_keeps_one():
    X, y = make_classification(500, 6, random_state=0)
    model = DSGClassifier(random_state=0).fit(X, y)
    cv = model.cv_results_
    assert set(cv["param_loss"]) == {"squared", "squared_hinge"} and model.fit_plan_.route == "dual"
    assert model.loss_ in ("squared", "squared_hinge")
    kept = (cv["param_loss"] == model.loss_) & (cv["param_sigma"] == model.sigma_) & (
        cv["param_alpha"] == model.alpha_)
    assert np.argmax(np.where(cv["param_loss"] == model.loss_, cv["mean_test_score"], -np.inf)) == \
        int(np.flatnonzero(kept)[0])
    # an explicit loss is solved alone
    hinge = DSGClassifier(random_state=0, loss="squared_hinge").fit(X, y)
    assert hinge.loss_ == "squared_hinge" and set(hinge.cv_results_["param_loss"]) == {"squared_hinge"}


def test_the_squared_hinge_on_few_rows_of_three_classes_is_one_against_the_rest():
    X, y = make_classification(450, 6, n_informative=4, n_classes=3, random_state=0)
    model = DSGClassifier(random_state=0, loss="squared_hinge", sigma=2.0, alpha=1e-4).fit(X[:300], y[:300])
    assert model.fit_plan_.route == "dual" and model.expansion_.n_outputs == 3
    for c in range(3):  # column c is the binary machine of class c against the rest
        binary = DSGClassifier(random_state=0, loss="squared_hinge", sigma=2.0, alpha=1e-4)
        binary.fit(X[:300], y[:300] == c)
        assert np.allclose(binary.decision_function(X[300:]), model.decision_function(X[300:])[:, c],
                           atol=1e-4)
    assert model.score(X[300:], y[300:]) > 0.8


def test_the_hinge_replaces_least_squares_only_for_significantly_fewer_errors():
    clf = DSGClassifier()
    targets = torch.ones(100, 1, dtype=torch.float64)
    weight = torch.ones(100, dtype=torch.float64)
    kept = torch.ones(100, 1, dtype=torch.float64)
    candidate = kept.clone()
    kept[:10] = -1  # least squares wrong on 10 rows, the hinge on none: 10 > 2√10
    assert clf._clearly_better(candidate, kept, targets, weight)
    candidate[10:13] = -1  # and the hinge wrong on 3 others: 7 < 2√13
    assert not clf._clearly_better(candidate, kept, targets, weight)
    assert not clf._clearly_better(kept, candidate, targets, weight)


def test_an_iteration_that_does_not_converge_is_no_candidate_and_warns_when_forced(monkeypatch):
    X, y = _binary(200)
    rows = gram_rows(_map(), D_BLOCKS, X, y, torch.ones(200, dtype=X.dtype))
    monkeypatch.setattr(dual_hinge, "MAX_NEWTON_STEPS", 1)  # no active set is confirmed in one step
    solution = squared_hinge_path(rows.gram, rows.y[:, 0], rows.weight, 200, [1e-3])[0]
    assert not solution.converged and solution.leave_one_out_loss(rows.y[:, 0], rows.weight) == np.inf
    Xc, yc = make_classification(300, 5, random_state=0)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model = DSGClassifier(random_state=0, loss="squared_hinge", alpha=1e-3).fit(Xc, yc)
    assert model.score(Xc, yc) > 0.8  # the last iterate
    auto = DSGClassifier(random_state=0).fit(Xc, yc)  # the hinge never converges: least squares
    assert auto.loss_ == "squared"


def test_the_subsample_that_chooses_sigma_and_alpha_takes_rows_of_positive_weight():
    """Between 2048 and 4096 rows the binary squared hinge takes sigma and alpha from the dual
    route on 2048 of the rows: never rows of weight 0 (here 2,850 of 3,000)."""
    X, y = make_classification(3000, 5, random_state=0)
    weight = np.zeros(3000)
    weight[::20] = 1.0
    model = DSGClassifier(random_state=0, solver="sgd", max_iter=2, n_components=512).fit(X, y, sample_weight=weight)
    assert set(model.cv_results_["n_rows"]) == {150} and model.loss_ == "squared_hinge"


def test_the_line_search_finds_the_least_objective_along_the_step_exactly():
    from kernelstream.solvers.dual_hinge import _line_search, _objective

    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        m = 120
        X = torch.randn(m, 3, generator=g, dtype=torch.float64)
        K = torch.exp(-torch.cdist(X, X) ** 2 / 2)
        y = torch.where(torch.rand(m, generator=g) > 0.5, 1.0, -1.0).double()
        w = torch.rand(m, generator=g, dtype=torch.float64) + 0.5
        beta, step = torch.randn(m, generator=g, dtype=torch.float64), torch.randn(m, generator=g, dtype=torch.float64)
        beta, step = beta - beta.mean(), step - step.mean()  # 1ᵀβ = 0 along the path
        alpha, b = 1e-3, 0.1
        f, delta_f = K @ beta + b, K @ step
        t = _line_search(y, w, m, alpha, f, beta, delta_f, step)
        grid = torch.linspace(0, 1, 2001, dtype=torch.float64)
        values = [_objective(y, w, m, alpha, f + s * delta_f, beta + s * step) for s in grid]
        best = _objective(y, w, m, alpha, f + t * delta_f, beta + t * step)
        assert 0.0 <= t <= 1.0 and best <= min(values) + 1e-12 * (1 + abs(min(values)))
