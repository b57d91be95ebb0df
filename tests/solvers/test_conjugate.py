"""Conjugate gradients solve the ridge normal equations of a fixed set of random features."""

import dataclasses

import numpy as np
import pytest
import torch

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.losses import get_loss
from kernelstream.solvers.conjugate import run_conjugate_gradients
from kernelstream.solvers.preconditioned import INTERCEPT_FEATURE, EpochControl, feature_matrix
from kernelstream.solvers.selection import train

from test_preconditioned import D_BLOCKS, _data, _map, _problem, _ridge


def _gap(fm, X, theta, exact):
    """Mean squared distance of the two fitted functions on ``X``, relative to the variance."""
    Phi = feature_matrix(fm, X, D_BLOCKS)
    ours = Phi @ theta[:-1] + INTERCEPT_FEATURE * theta[-1]
    closed = Phi @ exact[:-1] + exact[-1]
    return float(((ours - closed) ** 2).mean() / closed.var())


@pytest.mark.parametrize("alpha", [1e-3, 1e-6])
def test_conjugate_gradients_reach_the_closed_form_ridge_solution(alpha):
    X, y = _data()
    fm = _map()
    problem = dataclasses.replace(_problem(X, y, get_loss("squared")), method="cg")
    result = train(problem, fm, D_BLOCKS, [alpha], EpochControl(max_iter=40, tol=None))
    exact = _ridge(feature_matrix(fm, X, D_BLOCKS), y, alpha)
    assert _gap(fm, X, result.theta, exact) < 1e-5
    # each column is the best iterate by training loss: the curve falls to the optimum
    assert result.loss_curve[-1] <= result.loss_curve[1] and result.n_epochs == 40


def test_conjugate_gradients_get_closer_than_stochastic_steps_in_as_many_passes():
    X, y = _data()
    fm, alpha, passes = _map(), 1e-7, 25  # measured: cg 1.2e-6, sgd 2.4e-4
    exact = _ridge(feature_matrix(fm, X, D_BLOCKS), y, alpha)
    gaps = {}
    for method in ("sgd", "cg"):
        problem = dataclasses.replace(_problem(X, y, get_loss("squared")), method=method)
        result = train(problem, fm, D_BLOCKS, [alpha], EpochControl(max_iter=passes, tol=None))
        gaps[method] = _gap(fm, X, result.theta, exact)
    assert gaps["cg"] < 1e-5 and gaps["cg"] < gaps["sgd"] / 50, gaps


def test_alpha_columns_are_solved_as_separate_systems():
    X, y = _data(n=1500)
    fm, alphas = _map(), [1e-2, 1e-5]
    problem = dataclasses.replace(_problem(X, y, get_loss("squared")), method="cg")
    result = train(problem, fm, D_BLOCKS, alphas, EpochControl(max_iter=40, tol=None))
    Phi = feature_matrix(fm, X, D_BLOCKS)
    for a, alpha in enumerate(alphas):
        assert _gap(fm, X, result.theta[:, a:a + 1], _ridge(Phi, y, alpha)) < 1e-5


def test_a_loss_that_is_not_quadratic_is_refused():
    X, y = _data(n=200)
    with pytest.raises(ValueError, match="quadratic"):
        run_conjugate_gradients(_map(), D_BLOCKS, torch.zeros(2 * 64 + 1, 1, dtype=X.dtype), None,
                                get_loss("huber"), None, EpochControl(max_iter=1))


@pytest.mark.slow
def test_estimators_fit_with_conjugate_gradients():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (2000, 2)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(2000)
    model = DSGRegressor(solver="cg", random_state=0).fit(X[:1500], y[:1500])
    rmse = np.sqrt(np.mean((model.predict(X[1500:]) - y[1500:]) ** 2))
    assert rmse < 0.15 and model.n_iter_ >= 1
    labels = np.where(y > 0, "up", "down")
    clf = DSGClassifier(solver="cg", random_state=0).fit(X[:1500], labels[:1500])
    assert clf.loss_ == "squared" and clf.score(X[1500:], labels[1500:]) > 0.87  # preconditioned: 0.892, cg: 0.896
    three = np.digitize(y, [-0.3, 0.3])
    multi = DSGClassifier(solver="cg", random_state=0).fit(X[:1500], three[:1500])
    assert multi.loss_ == "squared" and multi.score(X[1500:], three[1500:]) > 0.85  # 0.880 and 0.874


def test_solver_cg_refuses_a_loss_it_cannot_solve_and_keeps_the_model():
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((300, 3)), rng.standard_normal(300)
    model = DSGRegressor(solver="cg", loss="huber", random_state=0)
    with pytest.raises(ValueError, match="solver='cg'.*squared"):
        model.fit(X, y)
    assert not hasattr(model, "expansion_")
    with pytest.raises(ValueError, match="solver='cg'.*squared"):
        DSGClassifier(solver="cg", loss="logistic").fit(X, y > 0)


@pytest.mark.slow
def test_the_solver_benchmark_compares_both_solvers(tmp_path):
    from benchmarks.perf import solver_cg

    solver_cg.main(["--only", "breast_cancer", "--seeds", "0", "--out", str(tmp_path / "cg.md")])
    text = (tmp_path / "cg.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| breast_cancer"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert 0 < float(cells[2]) < 0.15 and 0 < float(cells[3]) < 0.15  # error rates of both solvers


@pytest.mark.slow
def test_a_stream_fit_and_a_warm_start_use_conjugate_gradients_too():
    from kernelstream.data import ArraySource

    rng = np.random.default_rng(2)
    X = rng.uniform(-3, 3, (2500, 2)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(2500)
    streamed = DSGRegressor(solver="cg", random_state=0).fit(ArraySource(X[:2000], y[:2000]))
    assert np.sqrt(np.mean((streamed.predict(X[2000:]) - y[2000:]) ** 2)) < 0.15
    warm = DSGRegressor(solver="cg", random_state=0, warm_start=True, max_iter=3).fit(X[:2000], y[:2000])
    first = warm.predict(X[2000:])
    warm.fit(X[:2000], y[:2000])  # goes on from the fitted coefficients at the same size
    assert np.mean((warm.predict(X[2000:]) - y[2000:]) ** 2) <= np.mean((first - y[2000:]) ** 2) * 1.05
