"""Newton's method on a data operator for the losses that are not least squares.

Every loss ``F(θ) = Σ_i w_i ℓ(φ̃_iᵀθ, y_i)/n + (α/2)‖W‖²`` is minimised by steps whose systems
are the engine's weighted least squares, ``(Φ̃ᵀ diag(w h) Φ̃/n + αI_W) d = −∇F`` with
``h = ℓ''``, solved by :func:`~.cached.ridge_pcg` (Falkon's logistic path: Marteau-Ferey, Bach &
Rudi 2019; Meanti et al. 2020):

- :func:`newton_squared_hinge`: the squared hinge by finite Newton on its active rows
  (Keerthi & DeCoste 2005), every column at once;
- :func:`newton_loss`: the logistic loss, the softmax (one column's curvature ``p_c(1 − p_c)``
  each, the classes' coupling left to the line search), Huber, and the piecewise-linear
  losses (hinge, absolute, quantile, ε-insensitive) through their Moreau envelopes
  ``ℓ_μ(u) = min_v ℓ(v) + (u − v)²/2μ``, ``μ`` shrunk along ``plan.limits.smoothing_path``.
  Each step is a damped Newton step: the exact line search along ``d`` costs one product
  ``Φ̃d`` (``F(θ + td)`` is then a sum over rows for every ``t``).

The operator is anything with ``matmul``, ``rmatmul``, ``n_rows``, ``n_features`` and the
sketch rows of :class:`~.cached.SketchPreconditioner` (:mod:`.operator`).
"""

from __future__ import annotations

import math

import torch

from ..ops.linalg import narrow_matmul, row_gram, transposed_matmul
from .cached import (ColumnSketchPreconditioner, RidgeSolve, exact_gram, jittered_cholesky,
                     restricted, ridge_dual_rows, ridge_pcg)
from .feature_rows import INTERCEPT_FEATURE, augmented

__all__ = ["NEWTON_LOSSES", "newton_loss", "newton_squared_hinge", "smoothed_loss", "solve_tol"]

#: the losses :func:`newton_loss` solves, by their names in :mod:`kernelstream.losses`
NEWTON_LOSSES = ("logistic", "softmax", "huber", "hinge", "absolute", "quantile",
                 "epsilon_insensitive", "one_class", "kl_ratio")
#: the losses that need a smoothing path (piecewise linear: no curvature of their own)
SMOOTHED_LOSSES = ("hinge", "absolute", "quantile", "epsilon_insensitive", "one_class")


def solve_tol(alpha: float, limits) -> float:
    """The relative residual at which a solve stops: ``solve_tol·min(1, √(α/α₀))`` (a small
    ``α`` leaves the fitted values up to ``‖r‖/√α`` off; :class:`~kernelstream.planning.FitLimits`)."""
    return limits.solve_tol * min(1.0, math.sqrt(alpha / limits.solve_tol_alpha))


def newton_squared_hinge(cache, y, w, alpha, sketch, start, limits, stop=None,
                         max_steps: int | None = None) -> RidgeSolve:
    """The squared hinge ``Σ_c Σ_i w_i max(0, 1 − y_ic f_c(x_i))²/2n + α/2‖W‖²`` by finite
    Newton (Keerthi & DeCoste 2005), every column of ``y`` (±1; one machine against the rest per
    class) at once: least squares on each column's rows inside the margin until they stop
    changing, or until a step moves ``θ`` by less than the solve's tolerance (relative): without
    a line search the full steps can swap a row on the margin in and out for ever (24 of 30
    steps on a 24,000-row ``make_classification``, each moving ``θ`` by about 1e-4). Each step
    by :func:`_newton_step`, to a tolerance that is loose while the steps are long:
    ``newton_forcing·min(1, last step)`` (an inexact Newton method, Dembo, Eisenstat & Steihaug
    1982), the solve's own at the end. ``stop(θ)``: true ends the iteration after a step (a
    caller's held-out check); ``max_steps``: at most this many (``newton_max_steps``)."""
    n, C = y.shape
    theta, total, active, tol = start, 0, None, solve_tol(alpha, limits)
    moved, loose = math.inf, False  # the last step's relative length; whether it was solved loosely
    gram = None
    if n <= limits.dual_max_rows:  # few rows: every Newton system from one Gram
        gram = exact_gram(cache.rows(torch.arange(n, device=y.device)))
    steps = limits.newton_max_steps if max_steps is None else max_steps
    targets, weight = y.double(), w.double().reshape(n, 1)
    outputs = None if theta is None else cache.matmul(theta)
    penalty = torch.full((cache.n_features + 1, 1), float(alpha), dtype=torch.float64, device=y.device)
    penalty[-1] = 0.0  # the intercept is free
    for step in range(steps):
        if theta is not None:
            now = targets * outputs < 1  # (n, C): inside each column's margin
            if active is not None and not loose and bool((now == active).all()):
                break
            active = now
        inside = active if active is not None else torch.ones((n, C), dtype=torch.bool, device=y.device)
        # the cap's last step: the model is this solve, to the solve's own tolerance
        forcing = None if step == steps - 1 or theta is None else limits.newton_forcing
        previous = theta
        solved, iterations, exact = _newton_step(cache, y, w, alpha, inside, theta, sketch[0],
                                                 gram, tol, limits, forcing)
        total, loose = total + iterations, not exact
        if previous is None:
            theta, outputs = solved, cache.matmul(solved)
        else:  # the exact line search along the Newton direction (Keerthi & DeCoste's)
            direction = solved - previous
            moved_outputs = cache.matmul(direction)
            t, before, after = _line_search(_SQUARED_HINGE, outputs, moved_outputs, targets, weight,
                                            previous, direction, penalty, n,
                                            limits.line_search_bisections)
            theta, outputs = previous + t * direction, outputs + t * moved_outputs
            if before - after <= tol * abs(before) and not loose:
                break  # the step lowered F by less than the solve's tolerance (relative)
        if stop is not None and stop(theta):
            break
        if previous is not None:
            moved = float((theta - previous).norm()) / max(float(theta.norm()), 1e-300)
            if moved <= tol and not loose:
                break  # the step is below the solve's own accuracy
    return RidgeSolve(theta, total, True)


def _newton_step(cache, y, w, alpha, inside, theta, positions, gram, tol, limits,
                 forcing: float | None = None) -> tuple:
    """One Newton step's ``(θ, iterations, whether it was solved to tol)``: least squares
    of each column on its rows ``inside``. A column whose margin holds few rows is solved
    exactly in the dual (where ``α`` is small and conjugate gradients would crawl) where the
    cache reads its rows' features (a Nyström cache solves for them, ``M²`` a row: USPS's
    6,144 centres, 8.5 s a step); the others together by one conjugate-gradient run to
    ``tol``, or from a warm ``θ`` to ``forcing`` times its residual (the gradient: an inexact
    Newton step, Dembo, Eisenstat & Steihaug 1982; ``tol`` of the right-hand side alone stops
    a warm start after one iteration, a gradient step) (each pass over the cache serves every column, each column preconditioned from its
    own active sketch rows), over the rows inside some column's margin alone where they are at
    most ``newton_restrict_share`` of the rows (:func:`~kernelstream.solvers.cached.restricted`)."""
    n = y.shape[0]
    solved = torch.empty((cache.n_features + 1, y.shape[1]), dtype=torch.float64, device=y.device)
    few = (inside.sum(dim=0) <= limits.dual_max_rows) & cache.reads_rows
    for c in torch.nonzero(few).reshape(-1).tolist():
        index = torch.nonzero(inside[:, c]).reshape(-1)
        solved[:, c:c + 1] = ridge_dual_rows(cache, index, y[index, c:c + 1], w[index], alpha, n, gram)
    many = torch.nonzero(~few).reshape(-1).tolist()
    if not many:
        return solved, int(few.sum()), True
    weights = w.double()[:, None] * inside[:, many]
    precond = ColumnSketchPreconditioner(cache, positions, inside[positions][:, many], alpha,
                                         weights.mean(dim=0), limits.woodbury_max_roundoff)
    rows, targets = cache, y[:, many]
    union = torch.nonzero(inside[:, many].any(dim=1)).reshape(-1)
    if len(union) <= limits.newton_restrict_share * n:  # Σ_i over the union/n: weights × |union|/n
        rows, targets, weights = restricted(cache, union), targets[union], weights[union] * (len(union) / n)
    solve = ridge_pcg(rows, targets, weights, alpha, precond,
                      None if theta is None else theta[:, many], tol=tol, max_iter=limits.solve_max_iter,
                      start_tol=forcing)
    solved[:, many] = solve.theta
    return solved, int(few.sum()) + solve.iterations, solve.converged


class _SquaredHinge:
    """``½ max(0, 1 − yu)²`` and its derivatives in ``u``, as :class:`smoothed_loss` gives
    them (for :func:`_line_search`)."""

    def __call__(self, u: torch.Tensor, y: torch.Tensor, need: int = 2) -> tuple:
        gap = (1 - y * u).clamp_min(0)
        return (0.5 * gap.square(), -y * gap if need else None,
                (gap > 0).to(u.dtype) if need > 1 else None)


_SQUARED_HINGE = _SquaredHinge()


class smoothed_loss:
    """``ℓ_μ``, ``ℓ'_μ`` and ``ℓ''_μ`` in the output ``u`` ``(n, C)`` of a loss of
    :mod:`kernelstream.losses` (``loss.name``, its ``delta``, ``epsilon``, ``quantile``):
    the loss itself where it is smooth (logistic, softmax, Huber), else its Moreau envelope of
    width ``mu`` (a quadratic zone of width ``μ`` at each kink). ``y``: ``±1`` for margin
    losses and the softmax (its positive column the class), real targets for regression."""

    def __init__(self, loss, mu: float = 0.0):
        self.name, self.mu = loss.name, float(mu)
        self.delta = getattr(loss, "delta", 1.0)
        self.epsilon = getattr(loss, "epsilon", 0.0)
        self.tau = getattr(loss, "quantile", 0.5)
        #: the most curvature ``ℓ''_μ`` takes anywhere (the scale of a step's curvature floor)
        self.peak = (0.25 if self.name in ("logistic", "softmax") else 1.0 if self.name == "huber"
                     else 1.0 / self.mu if self.mu > 0 else 1.0)

    def __call__(self, u: torch.Tensor, y: torch.Tensor, need: int = 2) -> tuple:
        """``(value, first derivative, second derivative)`` per entry (``need`` < 2: the
        curvature is ``None``; < 1: the derivative too)."""
        name, mu = self.name, self.mu
        if name == "logistic":
            m = y * u
            value = torch.nn.functional.softplus(-m)
            p = torch.sigmoid(-m)  # the probability of the other class
            return value, -y * p if need else None, p * (1 - p) if need > 1 else None
        if name == "softmax":  # y: ±1 one against the rest, its positive column the class
            log_p = torch.log_softmax(u, dim=1)
            onehot = (y > 0).to(u.dtype)
            value = -(onehot * log_p).sum(dim=1, keepdim=True) / u.shape[1]  # shared by the columns
            p = log_p.exp()
            return value.expand_as(u), p - onehot if need else None, p * (1 - p) if need > 1 else None
        if name == "hinge":  # in the margin m = yu: 0 for m ≥ 1, (1 − m)²/2μ, 1 − m − μ/2
            gap = 1 - y * u
            return _envelope(gap, mu, 0.0, 1.0, -y, need)
        if name == "one_class":  # max(0, −u), u = f − τ
            return _envelope(-u, mu, 0.0, 1.0, -1.0, need)
        if name == "kl_ratio":  # −u on the numerator's rows (y = 1), exp(u) on the denominator's
            e = torch.exp(u.clamp_max(50.0))
            numerator = y > 0
            return (torch.where(numerator, -u, e), torch.where(numerator, -1.0, e) if need else None,
                    torch.where(numerator, 0.0, e) if need > 1 else None)
        r = u - y
        if name == "huber":
            a = r.abs()
            value = torch.where(a <= self.delta, 0.5 * r.square(), self.delta * (a - 0.5 * self.delta))
            return (value, r.clamp(-self.delta, self.delta) if need else None,
                    (a <= self.delta).to(u.dtype) if need > 1 else None)
        if name == "absolute":  # |r| = max(0, −r) + max(0, r)
            return _two_sided(r, mu, 0.0, 1.0, 1.0, need)
        if name == "quantile":  # τ·max(0, y − u) + (1 − τ)·max(0, u − y)
            return _two_sided(r, mu, 0.0, self.tau, 1.0 - self.tau, need)
        if name == "epsilon_insensitive":  # max(0, |r| − ε)
            return _two_sided(r, mu, self.epsilon, 1.0, 1.0, need)
        raise ValueError(f"newton_loss has no loss {name!r}; it solves {NEWTON_LOSSES}.")


def _envelope(gap, mu: float, kink: float, slope: float, sign, need: int) -> tuple:
    """The envelope of ``slope·max(0, gap − kink)`` in ``gap`` (``sign``: ∂gap/∂u):
    ``slope·(gap − kink)²/2μ`` on ``(kink, kink + slope·μ]``, linear beyond."""
    over = (gap - kink).clamp_min(0)
    zone = over <= slope * mu
    value = torch.where(zone, over.square() / (2 * mu), slope * over - slope**2 * mu / 2)
    first = torch.where(zone, over / mu, torch.full_like(over, slope))
    second = ((over > 0) & zone).to(gap.dtype) / mu if need > 1 else None
    return value, sign * first if need else None, second


def _two_sided(r, mu: float, kink: float, below: float, above: float, need: int) -> tuple:
    """The envelopes of ``below·max(0, −r − k) + above·max(0, r − k)`` in ``r = u − y``, summed
    (the absolute, pinball and ε-insensitive losses)."""
    lower, upper = _envelope(-r, mu, kink, below, -1.0, need), _envelope(r, mu, kink, above, 1.0, need)
    return (lower[0] + upper[0], lower[1] + upper[1] if need else None,
            lower[2] + upper[2] if need > 1 else None)


def newton_loss(cache, y, w, alpha, loss, sketch, start, limits, *, max_steps: int | None = None,
                tol: float | None = None, linear: torch.Tensor | None = None) -> RidgeSolve:
    """``loss`` (a :mod:`kernelstream.losses` object) by damped Newton steps on ``cache``:
    each step's direction from :func:`~.cached.ridge_pcg` on the weights ``w·ℓ''`` and the
    right-hand side ``−∇F``, preconditioned from the sketch rows ``sketch[0]`` at the mean
    weight, solved to ``newton_forcing·min(1, ‖∇F‖/‖∇F₀‖)`` (inexact Newton); the step length
    by an exact line search (:func:`_line_search`). A piecewise-linear loss runs its envelope
    at each ``μ`` of ``limits.smoothing_path`` in turn, warm, each but the last to a step of
    ``newton_forcing`` in at most ``smoothing_steps`` steps (it only starts the next). Stops when a step moves the outputs
    ``Φ̃θ`` by less than the solve's tolerance (relative: at a small ``α`` ``θ`` keeps moving
    along directions the outputs hardly see; friedman1's absolute loss took 8 steps so, 3 by
    the outputs, at the same held-out loss to 6 digits), after ``max_steps`` steps a width
    (``newton_max_steps``), or (a smooth loss) lowers ``F`` by less than it: an envelope's ``F``
    is flat where its minimiser still moves (a9a, the hinge: 15.6% test error stopped so,
    15.2% by the steps). ``y`` ``(n, C)``: ``±1`` (the softmax too) or targets; ``linear``
    ``(D+1, C)``: a term ``⟨linear, θ⟩`` added to ``F`` (the one-class SVM's ``−ντ``)."""
    n, C = y.shape
    targets, weight = y.double(), w.double().reshape(n, 1)
    tol = solve_tol(alpha, limits) if tol is None else tol
    steps = limits.newton_max_steps if max_steps is None else max_steps
    theta = torch.zeros((cache.n_features + 1, C), dtype=torch.float64, device=y.device) \
        if start is None else start.double().clone()
    penalty = torch.full((cache.n_features + 1, 1), float(alpha), dtype=torch.float64, device=y.device)
    penalty[-1] = 0.0  # the intercept is free
    linear = torch.zeros_like(theta) if linear is None else linear.double()
    smooth_loss = loss.name not in SMOOTHED_LOSSES  # its decrease bounds its gap to the optimum
    widths = (0.0,) if smooth_loss else limits.smoothing_path
    # the sketch: every row where they are few, else least squares' count (sketch_rows)
    order = torch.arange(n, device=y.device) if n <= limits.dual_max_rows else sketch[1]
    size = len(order) if n <= limits.dual_max_rows else max(
        len(sketch[0]), min(len(order), limits.sketch_ratio * n // max(cache.n_features, 1)))
    total, outputs = 0, cache.matmul(theta)
    sketched = CurvatureSketch(cache, order, size, alpha, limits)
    for k, mu in enumerate(widths):
        smooth = smoothed_loss(loss, mu)
        # a wider envelope only starts the next: solved to newton_forcing, the last to tol
        width_tol = tol if k == len(widths) - 1 else max(tol, limits.newton_forcing)
        first_norm = None
        last = k == len(widths) - 1
        for _ in range(steps if last else min(steps, limits.smoothing_steps)):
            _, slope, curvature = smooth(outputs, targets)
            gradient = cache.rmatmul(weight * slope) / n + penalty * theta + linear
            norm = float(gradient.norm())
            first_norm = norm if first_norm is None else first_norm
            # a floor: rows all on a loss's linear parts leave the intercept without curvature
            h = weight * curvature.clamp_min(1e-4 * max(float(curvature.max()), smooth.peak))
            precond = sketched.preconditioner(h)
            step_tol = max(tol, limits.newton_forcing * min(1.0, norm / max(first_norm, 1e-300)))
            rows, h_rows = _curved_rows(cache, h, limits)
            solve = ridge_pcg(rows, h_rows, h_rows, alpha, precond, None, tol=step_tol,  # y unused
                              max_iter=limits.solve_max_iter, rhs=-gradient)
            total += solve.iterations
            direction = solve.theta
            moved_outputs = cache.matmul(direction)
            t, before, after = _line_search(smooth, outputs, moved_outputs, targets, weight, theta,
                                            direction, penalty, n, limits.line_search_bisections,
                                            linear)
            theta, outputs = theta + t * direction, outputs + t * moved_outputs
            if (t * float(moved_outputs.norm()) <= width_tol * max(float(outputs.norm()), 1e-300)
                    or (smooth_loss and before - after <= width_tol * abs(before))):
                break  # the step moved the outputs (or, a smooth loss's, lowered F) by less than the tolerance
    return RidgeSolve(theta, total, True)


def _curved_rows(cache, h: torch.Tensor, limits) -> tuple:
    """The operator and weights of a Newton system's products: the rows whose curvature in
    some column is at least ``newton_sketch_share`` of the largest alone (a hinge's zone),
    their weights times their share of the rows (the products' ``1/n`` stays every row's),
    where they are at most ``newton_restrict_share`` of the rows; else every row."""
    most = h.max(dim=1).values
    union = torch.nonzero(most >= limits.newton_sketch_share * float(most.max())).reshape(-1)
    n = h.shape[0]
    if len(union) > limits.newton_restrict_share * n:
        return cache, h
    return restricted(cache, union), h[union] * (len(union) / n)


class CurvatureSketch:
    """A Newton step's preconditioner from the rows that carry its curvature: at weights
    ``h`` ``(n, C)``, the zone ``Z`` is the rows of ``order`` (a seeded order of every row)
    whose curvature in some column is at least ``newton_sketch_share`` of the largest, the
    sketch ``S`` its first ``size`` rows; column ``c``'s ``P_c = (U_cU_cᵀ + αI)⁻¹`` with
    ``U_c = Φ̃_Sᵀ diag(g)``, ``g_i² = h_ic·|Z|/(|S|·n)`` (``U_cU_cᵀ`` estimates ``Σ_i h_ic
    φ̃_iφ̃_iᵀ/n``), by Woodbury: one ``|S|²`` factor a column. Exact where the zone is few
    rows; a hinge's zone is a small share of the rows, which a sketch of every row would
    miss. ``Φ̃_S`` and its Gram are drawn again only where ``S`` changes."""

    def __init__(self, cache, order: torch.Tensor, size: int, alpha: float, limits):
        self.cache, self.order, self.size = cache, order, size
        self.alpha, self.share = float(alpha), limits.newton_sketch_share
        self.precise = torch.finfo(cache.X.dtype).eps > limits.woodbury_max_roundoff * alpha
        self.index = None

    def _draw(self, index: torch.Tensor) -> None:
        """``V = Φ̃_Sᵀ`` and ``VᵀV`` (float64) of the rows ``index``, unless they are the last."""
        if self.index is not None and len(self.index) == len(index) and torch.equal(self.index, index):
            return
        cache = self.cache
        Psi = cache.psi(index)
        Psi = Psi.double() if self.precise else Psi
        self.V = augmented(Psi.mul_(cache.n_blocks**-0.5)).T  # Φ̃_Sᵀ
        exact = getattr(cache, "exact_gram", None)  # ΦΦᵀ of every row, kept by a few-row solve
        if exact is not None and exact[0] is cache.feature_map and exact[1] == cache.n_blocks:
            self.gram = exact[2][index][:, index] + INTERCEPT_FEATURE**2
        else:
            rows = self.V[:-1].T
            self.gram = row_gram(rows).double() + INTERCEPT_FEATURE**2
        self.index = index

    def preconditioner(self, h: torch.Tensor):
        """``r ↦ [P_1 r_1, …, P_C r_C]`` at the curvature weights ``h`` ``(n, C)``; a sketch of
        more rows than features factors ``U_cU_cᵀ + αI`` itself (``sD²``), not by Woodbury."""
        n = h.shape[0]
        most = h.max(dim=1).values
        zone = self.order[most[self.order] >= self.share * float(most.max())]
        if min(len(zone), self.size) > self.cache.n_features + 1:
            return self._covariance(h, zone, n)
        self._draw(zone[:self.size])
        columns, scale = [], len(zone) / (len(self.index) * n)
        for c in range(h.shape[1]):
            weights = h[self.index, c].double()
            rows = torch.nonzero(weights >= self.share * float(weights.max())).reshape(-1)
            g = (weights[rows] * scale).sqrt()  # U_c = V_rows·diag(g)
            inner = self.gram if len(rows) == len(weights) else self.gram[rows][:, rows]
            inner = inner * g[:, None]
            inner *= g[None, :]
            inner.diagonal().add_(self.alpha)
            columns.append((rows, g, jittered_cholesky(inner)))

        def apply(r: torch.Tensor) -> torch.Tensor:
            projected = transposed_matmul(self.V, r.to(self.V.dtype)).double()  # Vᵀr, (s, C)
            z = torch.zeros_like(projected)
            for c, (rows, g, factor) in enumerate(columns):
                z[rows, c:c + 1] = g[:, None] * torch.cholesky_solve(g[:, None] * projected[rows, c:c + 1], factor)
            return (r.double() - narrow_matmul(self.V, z.to(self.V.dtype)).double()) / self.alpha

        return apply


    def _covariance(self, h: torch.Tensor, zone: torch.Tensor, n: int):
        """``r ↦ P_c r_c`` with ``P_c = (U_cU_cᵀ + αI)⁻¹`` factored in the features' ``(D+1)²``
        (the product in the features' precision, the factor in float64: no division by ``α``
        here, unlike Woodbury's)."""
        index = zone[:self.size]
        V = augmented(self.cache.psi(index).mul_(self.cache.n_blocks**-0.5))  # Φ̃_S, (s, D+1)
        scale = len(zone) / (len(index) * n)
        factors = []
        for c in range(h.shape[1]):
            U = V * (h[index, c].double() * scale).sqrt().to(V.dtype)[:, None]
            inner = (U.T @ U).double()
            inner.diagonal().add_(self.alpha)
            factors.append(jittered_cholesky(inner))

        def apply(r: torch.Tensor) -> torch.Tensor:
            r = r.double()
            return torch.cat([torch.cholesky_solve(r[:, c:c + 1], factor)
                              for c, factor in enumerate(factors)], dim=1)

        return apply


def _line_search(smooth, outputs, moved, targets, weight, theta, direction, penalty, n: int,
                 bisections: int, linear: torch.Tensor | None = None) -> tuple:
    """``(t, F(θ), F(θ + td))``: the minimiser ``t ∈ [0, 1]`` of the convex ``F(θ + td)``
    along ``direction``, by bisection on its derivative (``bisections`` halvings) ``Σ_i w_i ℓ'(f_i + t(Φ̃d)_i)(Φ̃d)_i/n
    + Σ_j α_j(θ_j + td_j)d_j`` (from the outputs ``f + tΦ̃d``, no pass over the rows; the full
    step where the derivative is still negative at 1, 0 where it is not negative at 0):
    an envelope's curvature is a zone's, and Newton's full step overshoots the rows that
    leave it (a9a, the hinge: by backtracking, half steps one in two, 16 steps at the last
    width; by bisection 7). ``linear``: ``F``'s linear term (:func:`newton_loss`)."""
    along = 0.0 if linear is None else float((linear * direction).sum())
    offset = 0.0 if linear is None else float((linear * theta).sum())

    def value(t: float) -> float:
        loss = smooth(outputs + t * moved, targets, need=0)[0]
        coef = theta + t * direction
        return (float((weight * loss).sum()) / n + 0.5 * float((penalty * coef.square()).sum())
                + offset + t * along)

    def slope(t: float) -> float:
        _, first, _ = smooth(outputs + t * moved, targets, need=1)
        return (float((weight * first * moved).sum()) / n
                + float((penalty * (theta + t * direction) * direction).sum()) + along)

    here = value(0.0)
    if slope(0.0) >= 0.0:
        return 0.0, here, here
    if slope(1.0) <= 0.0:
        return 1.0, here, value(1.0)
    low, high = 0.0, 1.0
    for _ in range(bisections):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if slope(middle) < 0.0 else (low, middle)
    t = 0.5 * (low + high)
    there = value(t)
    return (t, here, there) if there <= here else (0.0, here, here)
