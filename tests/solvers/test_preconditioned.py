"""The preconditioned solver reaches the regularised optimum on a fixed set of random features."""

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from kernelstream.features import make_feature_map
from kernelstream.losses import get_loss
from kernelstream.solvers.preconditioned import (INTERCEPT_FEATURE, EpochControl, _tail_average, feature_matrix,
                                                 run_epochs, sketch_preconditioner)
from kernelstream.solvers.selection import (Problem, _effective_validation_rows, _widened,
                                            grow_features, race_bandwidths, train)
from kernelstream.solvers.streams import StreamValidation

D_BLOCKS, R = 2, 64


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    f = np.sin(2 * X[:, 0]) * np.cos(X[:, 1])
    y = f + 0.1 * rng.standard_normal(n)
    return torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64).reshape(-1, 1)


def _map(sigma=0.7, seed=0):
    return make_feature_map("rbf", 2, sigma, R, seed)


def _problem(X, y, loss, batch_size=256, validation=None):
    return Problem(X, y, torch.ones(X.shape[0], dtype=X.dtype), validation, loss, 1, batch_size, 0)


def _ridge(Phi, y, alpha):
    """Closed form of ``(1/n)Σ ½(φᵀw + b − y)² + α/2‖w‖²`` (unregularised intercept)."""
    n, D = Phi.shape
    A = torch.cat([Phi, torch.ones(n, 1, dtype=Phi.dtype)], 1)
    H = A.T @ A / n
    H[:D, :D] += alpha * torch.eye(D, dtype=Phi.dtype)
    return torch.linalg.solve(H, A.T @ y / n)


def test_squared_loss_reaches_the_closed_form_ridge_solution():
    X, y = _data()
    fm, alpha = _map(), 1e-4
    problem = _problem(X, y, get_loss("squared"))
    result = train(problem, fm, D_BLOCKS, [alpha], EpochControl(max_iter=30, tol=None))
    exact = _ridge(feature_matrix(fm, X, D_BLOCKS), y, alpha)
    Phi = feature_matrix(fm, X, D_BLOCKS)
    ours = Phi @ result.theta[:-1] + INTERCEPT_FEATURE * result.theta[-1]
    closed = Phi @ exact[:-1] + exact[-1]
    gap = ((ours - closed) ** 2).mean() / closed.var()
    assert gap < 1e-4


def test_logistic_loss_reaches_the_optimum_of_the_same_objective():
    X, y = _data()
    labels = torch.where(y > 0, 1.0, -1.0).to(X.dtype)
    fm, alpha = _map(), 1e-3
    loss = get_loss("logistic")
    result = train(_problem(X, labels, loss), fm, D_BLOCKS, [alpha], EpochControl(max_iter=60, tol=None))
    Phi = feature_matrix(fm, X, D_BLOCKS).numpy()
    t = labels.numpy()[:, 0]
    D = Phi.shape[1]

    def objective(theta):
        u = Phi @ theta[:D] + INTERCEPT_FEATURE * theta[D]
        value = np.logaddexp(0, -t * u).mean() + alpha / 2 * theta[:D] @ theta[:D]
        g = -t * 0.5 * (1 - np.tanh(t * u / 2))  # dℓ/du = −t σ(−tu)
        return value, np.append(Phi.T @ g / len(t) + alpha * theta[:D], INTERCEPT_FEATURE * g.mean())

    best = minimize(objective, np.zeros(D + 1), jac=True, method="L-BFGS-B", options=dict(maxiter=5000, gtol=1e-10))
    ours = objective(result.theta[:, 0].numpy())[0]
    assert ours - best.fun < 1e-4 * abs(best.fun)


def test_alpha_columns_train_as_separate_models():
    X, y = _data(1500)
    fm, loss = _map(), get_loss("squared")
    control = EpochControl(max_iter=4, tol=None)
    together = train(_problem(X, y, loss), fm, D_BLOCKS, [1e-2, 1e-5], control)
    for a, alpha in enumerate([1e-2, 1e-5]):
        alone = train(_problem(X, y, loss), fm, D_BLOCKS, [alpha], control)
        torch.testing.assert_close(together.theta[:, a:a + 1], alone.theta, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("n_sketch", [2000, 100])  # the (D+1)² covariance route, the s × s Gram route
def test_preconditioner_inverts_the_curvature_on_its_top_subspace(n_sketch):
    X, _ = _data(n_sketch)
    fm, loss, alpha = _map(), get_loss("logistic"), 1e-3
    P = sketch_preconditioner(fm, D_BLOCKS, X, loss, [alpha])
    Phi = torch.cat([feature_matrix(fm, X, D_BLOCKS),
                     torch.full((X.shape[0], 1), INTERCEPT_FEATURE, dtype=X.dtype)], 1)
    H = Phi.T @ Phi / X.shape[0] / loss.step_scale + alpha * torch.eye(Phi.shape[1], dtype=X.dtype)
    v = P.V[:, :5]
    torch.testing.assert_close(P.V.T @ P.V, torch.eye(P.rank, dtype=X.dtype), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(P.apply(H @ v, 1), v, rtol=1e-6, atol=1e-6)
    assert 0 < float(P.step_sizes(256)) <= 1


def test_tail_average_covers_the_last_half_of_the_epochs():
    sums, iterates = [], []
    for epoch in range(6):
        values = [torch.full((1, 1), float(10 * epoch + i)) for i in range(4)]
        iterates.append(values)
        sums.append((sum(values), 4))
        average = _tail_average(sums, epoch, sum(values[2:]), 2)
        if epoch == 0:
            expected = np.mean([1 * 0 + 2, 3])
        else:
            last = iterates[epoch + 1 - math.ceil((epoch + 1) / 2):]
            expected = np.mean([float(v) for epoch_values in last for v in epoch_values])
        assert float(average) == pytest.approx(expected)


def test_widening_keeps_the_function():
    X, y = _data(500)
    fm = _map()
    theta = torch.randn(D_BLOCKS * R + 1, 1, dtype=X.dtype)
    wide = _widened(theta, D_BLOCKS, 2 * D_BLOCKS, R)
    before = feature_matrix(fm, X, D_BLOCKS) @ theta[:-1] + INTERCEPT_FEATURE * theta[-1]
    after = feature_matrix(fm, X, 2 * D_BLOCKS) @ wide[:-1] + INTERCEPT_FEATURE * wide[-1]
    torch.testing.assert_close(before, after)


def test_features_grow_while_validation_improves_and_stop_at_the_budget():
    X, y = _data(4000)
    problem = _problem(X[:3000], y[:3000], get_loss("squared"),
                       validation=(X[3000:], y[3000:], torch.ones(1000, dtype=X.dtype)))
    result, J, history, kept = grow_features(problem, _map(0.3), [1e-6], EpochControl(max_iter=20),
                                             start_blocks=1, max_blocks=4, growth_tol=1e-3)
    assert [h[0] for h in history][:2] == [1, 2]
    assert J <= 4 and history[-1][0] <= 4
    assert history[1][1] < history[0][1]  # 128 features beat 64 on this function
    assert kept.sigma == 0.3 and {h[3] for h in history} == {0.3}  # no narrowing unless asked


@pytest.mark.parametrize("start_sigma, narrowings", [(2.8, 2), (0.7, 0)])
def test_narrower_bandwidths_challenge_the_size_kept_and_win_only_when_better(start_sigma, narrowings):
    """σ/2 then σ/4 challenge a too-wide winner of the race and replace it (their loss is in the
    history, the model kept is the last entry); a bandwidth near the function's scale stays."""
    X, y = _data(4000)
    problem = _problem(X[:3000], y[:3000], get_loss("squared"),
                       validation=(X[3000:], y[3000:], torch.ones(1000, dtype=X.dtype)))
    control = EpochControl(max_iter=20)
    result, J, history, kept = grow_features(problem, _map(start_sigma), [1e-6], control,
                                             start_blocks=2, max_blocks=2, growth_tol=1e-3,
                                             narrow=True)
    assert kept.sigma == pytest.approx(start_sigma / 2**narrowings)
    sigmas = [h[3] for h in history]
    assert sigmas[:2] == [start_sigma, start_sigma / 2] and len(history) == 2 + min(narrowings, 1)
    assert result.best_loss.min() == pytest.approx(min(h[1] for h in history))
    plain, *_ = grow_features(problem, _map(start_sigma), [1e-6], control, 2, 2, 1e-3)
    assert (result.best_loss.min() < plain.best_loss.min()) == (narrowings > 0)


def test_the_race_prefers_a_bandwidth_near_the_scale_of_the_function():
    X, y = _data(6000)
    problem = _problem(X[:5000], y[:5000], get_loss("squared"),
                       validation=(X[5000:], y[5000:], torch.ones(1000, dtype=X.dtype)))
    best, records = race_bandwidths(problem, lambda s: _map(s), [0.02, 0.7, 20.0], [1e-4, 1e-6],
                                    EpochControl(max_iter=10), n_blocks=1)
    assert best == 0.7
    assert {r["sigma"] for r in records} == {0.02, 0.7, 20.0}
    assert all(np.isfinite(r["validation_loss"]) for r in records)


def test_non_finite_coefficients_raise_instead_of_returning_nan():
    X, y = _data(500)
    y[0] = math.inf
    problem = _problem(X, y, get_loss("squared"))
    with pytest.raises(FloatingPointError, match="diverged"):
        train(problem, _map(), 1, [1e-6], EpochControl(max_iter=3, tol=None))


def _weighted_ridge(Phi, y, w, alpha):
    """Closed form of ``(1/n)Σ w_i ½(φᵀw + b − y)² + α/2‖w‖²``."""
    n, D = Phi.shape
    A = torch.cat([Phi, torch.ones(n, 1, dtype=Phi.dtype)], 1)
    H = A.T @ (w[:, None] * A) / n
    H[:D, :D] += alpha * torch.eye(D, dtype=Phi.dtype)
    return torch.linalg.solve(H, A.T @ (w[:, None] * y) / n)


@pytest.mark.parametrize("heavy", [1.0, 1000.0])
def test_weighted_rows_reach_the_weighted_ridge_solution(heavy):
    """Unequal sample weights (one half of the rows ``heavy`` times the other): the sketch is
    drawn ``∝ w`` and the curvature scaled by ``w̄``, so the steps stay stable (a step sized for
    unit weights diverges at ``heavy = 1000``) and reach the weighted closed form."""
    X, y = _data()
    w = torch.where(X[:, 0] > 0, heavy, 1.0).to(X.dtype)
    fm, alpha = _map(), 1e-4
    problem = Problem(X, y, w, None, get_loss("squared"), 1, 256, 0)
    result = train(problem, fm, D_BLOCKS, [alpha], EpochControl(max_iter=30, tol=None))
    Phi = feature_matrix(fm, X, D_BLOCKS)
    exact = _weighted_ridge(Phi, y, w, alpha)
    ours = Phi @ result.theta[:-1] + INTERCEPT_FEATURE * result.theta[-1]
    closed = Phi @ exact[:-1] + exact[-1]
    assert (((ours - closed) ** 2) * w[:, None]).sum() / (w[:, None] * (closed - closed.mean()) ** 2).sum() < 1e-3


def test_the_narrowing_margin_counts_effective_validation_rows():
    """Kish's ``(Σw)²/Σw²``: equal weights count every row, one heavy row counts about once; a
    stream's held-out batches count the same rows the same."""
    X, y = _data(400)
    equal, skewed = torch.ones(400, dtype=X.dtype), torch.ones(400, dtype=X.dtype)
    skewed[0] = 1e6
    rows = [_effective_validation_rows(_problem(X, y, get_loss("squared"), validation=(X, y, w)))
            for w in (equal, skewed)]
    assert rows[0] == pytest.approx(400) and rows[1] == pytest.approx(1.0, abs=1e-3)
    batches = [(X[i:i + 100], y[i:i + 100], skewed[i:i + 100]) for i in range(0, 400, 100)]
    assert StreamValidation(batches).effective_rows() == pytest.approx(rows[1])
    assert _effective_validation_rows(_problem(X, y, get_loss("squared"))) == 0.0
