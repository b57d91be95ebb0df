"""The direct solver: the ridge normal equations of a few random features, exactly, in one pass."""

import dataclasses

import numpy as np
import pytest
import torch

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.losses import get_loss
from kernelstream.solvers import selection
from kernelstream.solvers.direct import solve_normal_equations
from kernelstream.solvers.preconditioned import INTERCEPT_FEATURE, EpochControl, feature_matrix
from kernelstream.solvers.selection import train

from test_conjugate import _gap
from test_preconditioned import D_BLOCKS, _data, _map, _problem, _ridge


def _direct(problem):
    return dataclasses.replace(problem, method="direct")


@pytest.mark.parametrize("alpha", [1e-2, 1e-7])
def test_the_direct_solve_is_the_closed_form_ridge_solution(alpha):
    X, y = _data(n=1500)
    fm = _map()
    result = train(_direct(_problem(X, y, get_loss("squared"))), fm, D_BLOCKS, [alpha],
                   EpochControl(max_iter=30))
    exact = _ridge(feature_matrix(fm, X, D_BLOCKS), y, alpha)
    assert _gap(fm, X, result.theta, exact) < 1e-9
    assert result.n_epochs == 1 and result.n_steps == 1  # one pass, whatever max_iter


def test_every_alpha_column_is_solved_and_scored_on_the_validation_rows():
    X, y = _data(n=2000)
    fm, alphas = _map(), [1e-1, 1e-4, 1e-7]
    held = (X[1500:], y[1500:], torch.ones(500, dtype=X.dtype))
    problem = _direct(_problem(X[:1500], y[:1500], get_loss("squared"), validation=held))
    result = train(problem, fm, D_BLOCKS, alphas, EpochControl(max_iter=1))
    Phi, Phi_val = feature_matrix(fm, X[:1500], D_BLOCKS), feature_matrix(fm, X[1500:], D_BLOCKS)
    for a, alpha in enumerate(alphas):
        exact = _ridge(Phi, y[:1500], alpha)
        assert _gap(fm, X[:1500], result.theta[:, a:a + 1], exact) < 1e-9
        predicted = Phi_val @ exact[:-1] + exact[-1]
        assert result.best_loss[a] == pytest.approx(float((0.5 * (predicted - y[1500:]) ** 2).mean()), rel=1e-9)
    assert result.validation_curve == [result.best_loss.tolist()]


def test_without_validation_rows_the_objective_is_monitored():
    X, y = _data(n=800)
    fm, alpha = _map(), 1e-3
    result = train(_direct(_problem(X, y, get_loss("squared"))), fm, D_BLOCKS, [alpha], EpochControl(max_iter=1))
    Phi = feature_matrix(fm, X, D_BLOCKS)
    theta = result.theta.double()
    fitted = Phi @ theta[:-1] + INTERCEPT_FEATURE * theta[-1]
    objective = float((0.5 * (fitted - y) ** 2).mean() + 0.5 * alpha * theta[:-1].square().sum())
    assert float(result.best_loss[0]) == pytest.approx(objective, rel=1e-9)
    training_loss = float((0.5 * (fitted - y) ** 2).mean())  # the loss curve: the loss alone
    assert result.loss_curve == [pytest.approx(training_loss, rel=1e-9)]


def test_sample_weights_count_as_repeated_rows():
    X, y = _data(n=600)
    fm, alpha = _map(), 1e-4
    repeats = torch.from_numpy(np.random.default_rng(1).integers(1, 4, 600))
    weighted = dataclasses.replace(_direct(_problem(X, y, get_loss("squared"))), weight=repeats.to(X.dtype))
    repeated = _direct(_problem(X.repeat_interleave(repeats, 0), y.repeat_interleave(repeats, 0),
                                get_loss("squared")))
    a = train(weighted, fm, D_BLOCKS, [alpha], EpochControl(max_iter=1)).theta
    b = train(repeated, fm, D_BLOCKS, [alpha], EpochControl(max_iter=1)).theta
    Phi, targets = feature_matrix(fm, X.repeat_interleave(repeats, 0), D_BLOCKS), y.repeat_interleave(repeats, 0)
    assert _gap(fm, X, b, _ridge(Phi, targets, alpha)) < 1e-9
    # the weighted mean divides by the 600 rows, not by Σw: α counts Σw/600 times more
    assert _gap(fm, X, a, _ridge(Phi, targets, alpha * 600 / int(repeats.sum()))) < 1e-9


def test_a_loss_other_than_squared_is_refused():
    X, y = _data(n=100)
    problem = _direct(_problem(X, y, get_loss("logistic")))
    with pytest.raises(ValueError, match="squared loss"):
        solve_normal_equations(_map(), D_BLOCKS, [1e-3], 1, problem.loss, problem.batches(100),
                               EpochControl(max_iter=1))


def test_non_finite_sums_are_refused_not_looped_on():
    X, y = _data(n=100)
    y[3] = float("nan")
    with pytest.raises(FloatingPointError, match="not finite"):
        train(_direct(_problem(X, y, get_loss("squared"))), _map(), D_BLOCKS, [1e-3], EpochControl(max_iter=1))


def test_empty_training_data_is_refused():
    with pytest.raises(ValueError, match="no rows"):
        solve_normal_equations(_map(), D_BLOCKS, [1e-3], 1, get_loss("squared"), lambda epoch: (0, iter(())),
                               EpochControl(max_iter=1))


@pytest.mark.slow
@pytest.mark.parametrize("make", [lambda: DSGRegressor(random_state=0, solver="sgd", max_iter=100),
                                  lambda: DSGClassifier(loss="squared", random_state=0, solver="sgd", max_iter=100)])
def test_the_squared_loss_chooses_sigma_and_alpha_by_direct_solves(make, monkeypatch):
    """With the squared loss each (σ, α) candidate of the selection is judged at its exact
    optimum; the stochastic solver then trains the winner (``solver="sgd"``: epochs,
    not the dual route of few rows)."""
    methods = []
    original = selection.solve_normal_equations

    def spy(*args, **kwargs):
        methods.append("direct")
        return original(*args, **kwargs)

    monkeypatch.setattr(selection, "solve_normal_equations", spy)
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (900, 2)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(900)
    model = make()
    target = y if isinstance(model, DSGRegressor) else y > 0
    model.fit(X[:700], target[:700])
    n_candidates = len(set(model.cv_results_["param_sigma"]))
    assert len(methods) == 5 * n_candidates  # five folds of each bandwidth, every α at once
    assert model.score(X[700:], target[700:]) > (0.9 if isinstance(model, DSGRegressor) else 0.88)
