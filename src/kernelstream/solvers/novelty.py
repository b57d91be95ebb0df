"""The one-class SVM and the KL density ratio on cached random features, by the engine's
Newton iteration (:func:`~.newton.newton_loss`, each step a weighted least squares solved by
preconditioned conjugate gradients):

- one class: ``min_{θ,b} (1/n) Σ max(0, −(φ̃_iᵀθ + b)) + (ν/2)‖θ‖² + νb`` (``b = −τ``: the
  one-class SVM of Schölkopf et al. scaled by ``ν``; its hinge by the envelopes of
  ``smoothing_path``);
- density ratio: ``min_θ E_q[exp f] − E_p[f] + (α/2)‖θ‖²``, minimised at ``f = log p/q``
  (Nguyen et al. 2008), a smooth loss: Newton's own steps.

Both reach the rows through a data operator (:mod:`.operator`): a
:class:`~.cached.FeatureCache` of the training rows.
"""

from __future__ import annotations

import dataclasses

import torch

from ..losses import get_loss
from .cached import RidgeSolve
from .feature_rows import INTERCEPT_FEATURE
from .newton import newton_loss

__all__ = ["density_ratio_loss", "density_ratio_newton", "density_ratio_path", "one_class_newton",
           "seeded_order", "weighted_quantile"]


def seeded_order(n: int, seed: int, device) -> torch.Tensor:
    """Every row's position in a seeded order (the sketch rows are its first)."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(int(seed)))
    return order.to(device)


def _sketch(order: torch.Tensor, limits) -> tuple:
    """The preconditioner's sketch rows and every row's, as :func:`~.newton.newton_loss` takes them."""
    return order[:limits.sketch_least_rows], order


def one_class_newton(cache, nu: float, order: torch.Tensor, limits, max_steps: int | None = None,
                     weight: torch.Tensor | None = None) -> RidgeSolve:
    """``(θ, b)`` of the one-class SVM on ``cache``'s rows (the module's objective, each row's
    hinge weighted by ``weight`` of mean 1): the hinge ``max(0, −u)`` of the outputs
    ``u = φ̃ᵀθ + b`` with the linear term ``νb``; at the optimum about a fraction ``ν`` of the
    rows (of the weight) have ``u < 0``."""
    n, D = cache.n_rows, cache.n_features
    device = order.device
    targets = torch.zeros((n, 1), device=device)
    weight = (torch.ones(n, device=device) if weight is None else
              weight.to(device, torch.float64) / weight.double().mean())
    # F is homogeneous: (cθ, cb) at ν/c solves it scaled by c. At ν = 1 the solution is the
    # kernel mean g = Φ̃Φ̃ᵀw/n (every row inside), and f ≈ g/ν: c = ν/std(g) spreads the
    # outputs over about 1, the scale of the envelopes' widths
    mean_feature = cache.rmatmul(weight.reshape(n, 1).to(torch.float64)) / n
    mean_feature[-1] = 0.0
    spread = _spread(cache.matmul(mean_feature))
    scale = nu / spread
    linear = torch.zeros((D + 1, 1), dtype=torch.float64, device=device)
    linear[-1] = nu * INTERCEPT_FEATURE  # νb, b = INTERCEPT_FEATURE·θ_{D}
    loss, sketch = get_loss("one_class"), _sketch(order, limits)
    wide = dataclasses.replace(limits, smoothing_path=limits.smoothing_path[:1])
    first = newton_loss(cache, targets, weight, nu / scale, loss, sketch, None, wide,
                        max_steps=max_steps, linear=linear)
    # the outputs' spread at the optimum is not g's: rescaled to 1, then the finer widths
    spread = _spread(cache.matmul(first.theta))
    scale /= spread
    finer = dataclasses.replace(limits, smoothing_path=limits.one_class_widths)
    solve = newton_loss(cache, targets, weight, nu / scale, loss, sketch, first.theta / spread,
                        finer, max_steps=max_steps, linear=linear)
    # the rows on the margin (up to one a feature) sit within the last width below 0: the
    # offset that puts a weight ν of the rows below it, within the optimum's interval of b
    theta = solve.theta.clone()
    theta[-1] -= weighted_quantile(cache.matmul(theta)[:, 0], weight, nu) / INTERCEPT_FEATURE
    return RidgeSolve(theta / scale, first.iterations + solve.iterations, solve.converged)


def _spread(outputs: torch.Tensor) -> float:
    """The outputs' standard deviation over the rows, 1 where they do not vary (one row,
    identical rows): nothing to rescale by."""
    spread = float(outputs.std(correction=0))
    return spread if spread > 1e-12 else 1.0


def weighted_quantile(values: torch.Tensor, weight: torch.Tensor, q: float) -> float:
    """The least value below or at which a share ``q`` of ``weight`` lies."""
    order = torch.argsort(values)
    shares = torch.cumsum(weight.double()[order], 0) / float(weight.double().sum())
    at = min(int(torch.searchsorted(shares, torch.tensor([q], dtype=torch.float64))), len(values) - 1)
    return float(values[order[at]])


def _two_samples(numerator: torch.Tensor) -> tuple:
    """Targets 1 on the rows ``numerator`` marks (drawn from ``p``), 0 on the rest (from
    ``q``), weights ``n/n_p`` and ``n/n_q``: ``Σ_i w_i ℓ_i / n = E_p[−f] + E_q[exp f]``."""
    n, n_p = len(numerator), int(numerator.sum())
    targets = numerator.to(torch.float32).reshape(n, 1)
    weight = torch.where(numerator, n / n_p, n / (n - n_p)).to(torch.float64)
    return targets, weight


def density_ratio_loss(outputs: torch.Tensor, numerator: torch.Tensor) -> float:
    """``E_q[exp f] − E_p[f]`` of outputs ``f``, ``numerator`` marking ``p``'s rows."""
    f = outputs.reshape(-1).double()
    return float(torch.exp(f[~numerator].clamp_max(50.0)).mean() - f[numerator].mean())


def density_ratio_path(cache, numerator: torch.Tensor, alphas, limits, held, seed: int,
                       max_steps: int | None = None) -> tuple:
    """``(solve, α, held-out losses)``: :func:`density_ratio_newton` at each ``α`` of
    ``alphas`` (decreasing, warm), the one of least :func:`density_ratio_loss` on the held-out
    rows ``held = (operator, numerator)``, stopped once that loss rises."""
    best, start, losses = None, None, []
    order = seeded_order(cache.n_rows, seed, numerator.device)
    for alpha in alphas:
        solve = density_ratio_newton(cache, numerator, alpha, order, limits, max_steps, start)
        losses.append(density_ratio_loss(held[0].matmul(solve.theta), held[1]))
        if best is not None and losses[-1] >= best[2]:
            break
        best, start = (solve, alpha, losses[-1]), solve.theta
    return best[0], best[1], losses


def density_ratio_newton(cache, numerator: torch.Tensor, alpha: float, order: torch.Tensor, limits,
                         max_steps: int | None = None, start: torch.Tensor | None = None) -> RidgeSolve:
    """``θ`` of the KL density ratio at ``α`` on ``cache``'s rows, ``numerator`` marking those
    drawn from ``p`` (:func:`_two_samples`), from ``start``; ``order``: the rows' seeded order."""
    targets, weight = _two_samples(numerator)
    # a smooth loss at a small α: a sketch of a few rows a feature, factored in the features
    sketch = (order[:max(limits.sketch_least_rows, limits.novelty_sketch_per_feature
                         * (cache.n_features + 1))], order)
    return newton_loss(cache, targets, weight, alpha, get_loss("kl_ratio"), sketch,
                       start, limits, max_steps=max_steps)
