"""Newton's method on the data operator (``solvers/newton.py``): every loss reaches the
minimum of its objective on cached features, where the gradient vanishes, and the minimisers
have the loss's defining property (the pinball loss's quantile, the softmax's probabilities)."""

import dataclasses

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from kernelstream.features import make_feature_map
from kernelstream.losses import get_loss
from kernelstream.planning import LIMITS
from kernelstream.solvers.cached import FeatureCache
from kernelstream.solvers.newton import newton_loss, smoothed_loss

N, D = 800, 256


def _cache(seed=0, d=3):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, d, generator=g, dtype=torch.float64)
    cache = FeatureCache(make_feature_map("rbf", d, 1.5, 128, seed), X)
    cache.grow(D // 128)
    return X, cache


def _objective(cache, smooth, y, w, alpha, theta):
    """``F(θ)`` and ``∇F(θ)`` of the loss's (smoothed) objective, from the cache's products."""
    penalty = torch.full((cache.n_features + 1, 1), alpha, dtype=torch.float64)
    penalty[-1] = 0.0
    value, slope, _ = smooth(cache.matmul(theta), y, need=1)
    F = float((w[:, None] * value).sum()) / N + 0.5 * float((penalty * theta.square()).sum())
    return F, cache.rmatmul(w[:, None] * slope) / N + penalty * theta


def _solve(cache, loss, y, alpha=1e-3, **limits):
    w = torch.ones(N, dtype=torch.float64)
    rows = torch.arange(N)
    start = torch.zeros((cache.n_features + 1, y.shape[1]), dtype=torch.float64)
    plan_limits = dataclasses.replace(LIMITS, solve_tol=1e-8, **limits)
    theta = newton_loss(cache, y, w, alpha, loss, (rows[:200], rows), start, plan_limits).theta
    return theta, w


@pytest.mark.parametrize("name", ["logistic", "huber"])
def test_a_smooth_loss_reaches_the_minimum_where_its_gradient_vanishes(name):
    """The logistic and Huber losses: Newton's minimiser has a gradient below 1e-6 of the
    gradient at zero, and L-BFGS on the same objective finds no lower value."""
    X, cache = _cache()
    signal = torch.sin(2 * X[:, 0]) + X[:, 1]
    y = (torch.sign(signal + 0.3 * torch.randn(N, generator=torch.Generator().manual_seed(1)))
         if name == "logistic" else signal + 0.2 * torch.randn(N, dtype=torch.float64))[:, None]
    loss = get_loss(name, delta=0.3)
    theta, w = _solve(cache, loss, y)
    smooth = smoothed_loss(loss, 0.0)
    value, gradient = _objective(cache, smooth, y, w, 1e-3, theta)
    _, at_zero = _objective(cache, smooth, y, w, 1e-3, torch.zeros_like(theta))
    assert float(gradient.norm()) <= 1e-6 * float(at_zero.norm())

    def fun(v):
        F, g = _objective(cache, smooth, y, w, 1e-3, torch.tensor(v)[:, None])
        return F, g.numpy().ravel()

    lbfgs = minimize(fun, np.zeros(theta.shape[0]), jac=True, method="L-BFGS-B",
                     options=dict(maxiter=5000, gtol=1e-10))
    assert value <= lbfgs.fun + 1e-9 * abs(lbfgs.fun)


def test_the_pinball_loss_puts_its_quantile_of_the_rows_below_the_fit():
    """The quantile loss at τ = 0.8 (its envelope at the last width): about 80% of the rows lie
    below the fitted function, as the pinball loss's minimiser leaves them; its outputs are
    the smoothed objective's minimiser's (by L-BFGS) to the solve's tolerance."""
    X, cache = _cache(seed=2)
    y = (X[:, 0] + 0.5 * torch.randn(N, dtype=torch.float64,
                                      generator=torch.Generator().manual_seed(3)))[:, None]
    loss = get_loss("quantile", quantile=0.8)
    theta, w = _solve(cache, loss, y, alpha=1e-4, smoothing_path=(1.0, 0.1, 0.01))
    below = float((y <= cache.matmul(theta)).double().mean())
    assert abs(below - 0.8) < 0.03
    smooth = smoothed_loss(loss, 0.01)

    def fun(v):
        F, g = _objective(cache, smooth, y, w, 1e-4, torch.tensor(v)[:, None])
        return F, g.numpy().ravel()

    lbfgs = minimize(fun, np.zeros(theta.shape[0]), jac=True, method="L-BFGS-B",
                     options=dict(maxiter=20000, gtol=1e-12))
    outputs, best = cache.matmul(theta), cache.matmul(torch.tensor(lbfgs.x)[:, None])
    # Newton stops where a step moves the outputs by less than solve_tol (1e-3, relative):
    # they are then within a few of those of the minimiser's, its objective closer still
    assert float((outputs - best).norm()) <= 5 * LIMITS.solve_tol * float(best.norm())
    value = _objective(cache, smooth, y, w, 1e-4, theta)[0]
    assert value <= lbfgs.fun + 1e-4 * abs(lbfgs.fun)


def test_the_softmax_over_three_classes_reaches_its_minimum():
    """The softmax (±1 columns, one class against the rest): the gradient of the cross-entropy
    falls by more than a thousandfold at Newton's solution. Each column's curvature alone in
    its systems (the classes' coupling left to the line search) converges linearly, not
    quadratically: 3e-4 of the start's gradient after 30 steps here."""
    X, cache = _cache(seed=4)
    labels = (X[:, 0] > 0.5).long() + (X[:, 1] > 0).long()
    y = torch.where(labels[:, None] == torch.arange(3), 1.0, -1.0).double()
    loss = get_loss("softmax")
    theta, w = _solve(cache, loss, y, alpha=1e-3)
    smooth = smoothed_loss(loss, 0.0)
    _, gradient = _objective(cache, smooth, y, w, 1e-3, theta)
    _, at_zero = _objective(cache, smooth, y, w, 1e-3, torch.zeros_like(theta))
    assert float(gradient.norm()) <= 1e-3 * float(at_zero.norm())
    p = torch.softmax(cache.matmul(theta), dim=1)
    assert float((p.argmax(dim=1) == labels).double().mean()) > 0.9


def test_a_hinge_whose_rows_all_leave_the_zone_keeps_a_finite_step():
    """Rows all on the envelope's linear parts leave the intercept without curvature; the
    curvature floor keeps the Newton system definite (an unlearnable set: labels by row
    number, as scikit-learn's checks give)."""
    g = torch.Generator().manual_seed(0)
    X = torch.rand(30, 3, generator=g, dtype=torch.float64)
    cache = FeatureCache(make_feature_map("rbf", 3, 0.3, 128, 0), X)
    cache.grow(4)
    y = torch.where(torch.arange(30)[:, None] % 3 == torch.arange(3), 1.0, -1.0).double()
    rows = torch.arange(30)
    theta = newton_loss(cache, y, torch.ones(30, dtype=torch.float64), 0.1, get_loss("hinge"),
                        (rows, rows), None, LIMITS).theta
    assert bool(torch.isfinite(theta).all())
