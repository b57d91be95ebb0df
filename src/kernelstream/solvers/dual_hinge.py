"""The squared hinge (L2-SVM) on random features, solved exactly in the dual where the rows are
few: finite Newton on the active set, every row's leave-one-out prediction from the last step.

The objective is the estimator's (the squared hinge of :mod:`kernelstream.losses`, intercept free),

    ``F(W, b) = Σ_i w_i max(0, 1 − y_i f_i)²/n + (α/2)‖W‖²``,  ``f = ΦW + b``,  ``y_i = ±1``.

On the active set ``A = {i : y_i f_i < 1}`` the loss is ``w_i (f_i − y_i)²``, so the Newton step
is the least-squares (LS-SVM) system on ``A`` alone, ``W = Φ_Aᵀβ``:

    ``(K_AA + D_A)β + b1 = y_A``,  ``1ᵀβ = 0``,  ``D_ii = nα/(2w_i)``,  ``K = ΦΦᵀ``,

followed by an exact line search on the piecewise-quadratic ``F`` along the step; the iteration
ends when the active set repeats, at the exact optimum (Keerthi & DeCoste, JMLR 2005; Chapelle,
Neural Computation 2007). Each step is one Cholesky factorisation of ``|A| × |A|``; the ``α``
are solved from the largest down, each starting from the previous optimum.

Leave-one-out: a row outside ``A`` has no gradient, so removing it leaves the model as it is;
a row of ``A`` is predicted by ``y_i − β_i/(C⁻¹)_ii``, ``C`` the bordered matrix of the last step
(Cawley & Talbot, 2004), exact as long as removing the row leaves the rest of ``A`` active.

Why, where the rows are few: least squares on ``±1`` targets also penalises outputs beyond the
margin, and on a boundary without label noise its leave-one-out loss prefers a too narrow
kernel (``make_hastie_10_2``; decision record: docs/decisions/research-binary-loss.md). The
squared hinge ignores rows beyond the margin, as the SVM does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import scipy.linalg.lapack
import torch

from .dual import DualSolution, GramRows

__all__ = ["DualSquaredHinge", "HingeSolution", "dual_squared_hinge", "squared_hinge_path"]

#: Newton steps per ``α`` before giving up (2–6 are typical along the path)
MAX_NEWTON_STEPS = 50
#: a Newton step moving no output by more than this (relative) ends the iteration
_STEP_TOL = 1e-10
#: bisection steps of the line search (``t`` to ``2⁻⁶⁰``)
_LINE_SEARCH_STEPS = 60


@dataclass
class HingeSolution:
    """The optimum at one ``α`` (or the last iterate where it did not converge): ``W = Φᵀβ``,
    the intercept, ``F`` and the leave-one-out predictions."""

    alpha: float
    dual: torch.Tensor  # (m,) β, zero outside the active set
    intercept: float  # b
    objective: float  # F at the optimum
    leave_one_out: torch.Tensor  # (m,) each row predicted by the model fitted without it
    newton_steps: int
    converged: bool  # else the last iterate, its fitted values in place of leave_one_out

    def leave_one_out_loss(self, y: torch.Tensor, weight: torch.Tensor) -> float:
        """Weighted mean squared hinge of the leave-one-out predictions (``inf`` where the
        iteration did not converge: no candidate)."""
        if not self.converged:
            return math.inf
        return float((weight * (1 - y * self.leave_one_out).clamp_min(0).square()).sum() / weight.sum())


@dataclass
class DualSquaredHinge(GramRows):
    """Every ``α``'s optimum for one feature map, each output column its own path (one against
    the rest for several classes: the columns share only the features)."""

    alphas: list  # of float
    paths: list  # C lists of HingeSolution, one per α

    def leave_one_out_losses(self, alphas) -> torch.Tensor:
        """Weighted mean over the rows of ``Σ_c max(0, 1 − y_ic ŷ_{−i,c})²``, for every ``α``
        ``(A,)``."""
        return torch.tensor([sum(path[self.alphas.index(a)].leave_one_out_loss(self.y[:, c], self.weight)
                                 for c, path in enumerate(self.paths)) for a in alphas],
                            dtype=torch.float64)

    def solution(self, alpha: float) -> DualSolution:
        """The optimum at ``alpha`` (one of those solved) as the primal ``θ`` needs it."""
        at = [path[self.alphas.index(alpha)] for path in self.paths]
        return DualSolution(self.feature_map, self.n_blocks, self.X,
                            torch.stack([s.dual for s in at], dim=1),
                            torch.tensor([s.intercept for s in at], dtype=torch.float64),
                            sum(s.objective for s in at),
                            torch.stack([s.leave_one_out for s in at], dim=1))


def dual_squared_hinge(rows: GramRows, alphas) -> DualSquaredHinge:
    """The squared hinge's optimum at each of ``alphas`` on ``rows`` (``y`` ±1, one column per
    output)."""
    alphas = [float(a) for a in alphas]
    paths = [squared_hinge_path(rows.gram, rows.y[:, c], rows.weight, rows.n_rows, alphas)
             for c in range(rows.y.shape[1])]
    return DualSquaredHinge(**vars(rows), alphas=alphas, paths=paths)


def squared_hinge_path(gram: torch.Tensor, y: torch.Tensor, weight: torch.Tensor, n_rows: int,
                       alphas) -> list[HingeSolution]:
    """The optimum of ``F`` at each of ``alphas`` (returned in the order given).

    Parameters
    ----------
    gram : (m, m) float64 tensor
        ``K = ΦΦᵀ`` on the rows of positive weight.
    y : (m,) tensor of ±1
    weight : (m,) tensor, positive
    n_rows : int
        ``n`` of the objective (rows of weight 0 included).
    alphas : sequence of float, positive
    """
    y, weight = y.double(), weight.double()
    order = sorted(range(len(alphas)), key=lambda k: -float(alphas[k]))
    solutions: list[HingeSolution | None] = [None] * len(alphas)
    beta = torch.zeros_like(y)
    b = 0.0
    for k in order:
        alpha = float(alphas[k])
        if not alpha > 0:
            raise ValueError(f"the squared hinge's dual route needs alpha > 0, got {alpha}.")
        beta, b, solutions[k] = _newton(gram, y, weight, n_rows, alpha, beta, b)
    return solutions


def _newton(K, y, w, n_rows, alpha, beta, b):
    """Finite Newton from ``(β, b)`` at one ``α``. It converges when a full step leaves the
    active set as it was (or moves no output); it stalls when the line search takes no step
    along a direction that is not nothing (rounding, near interpolation at the smallest ``α``)."""
    f = K @ beta + b
    active, converged = None, False
    for step in range(1, MAX_NEWTON_STEPS + 1):
        new_active = y * f < 1
        if active is not None and torch.equal(new_active, active):
            converged = True  # the last full step solved this active set's system: the optimum
            break
        active = new_active
        factor, target_beta, target_b = _active_set_step(K, y, w, n_rows, alpha, active)
        delta_beta, delta_b = target_beta - beta, (b if target_b is None else target_b) - b
        delta_f = K @ delta_beta + delta_b
        t = _line_search(y, w, n_rows, alpha, f, beta, delta_f, delta_beta)
        beta, b, f = beta + t * delta_beta, b + t * delta_b, f + t * delta_f
        size, scale = float(delta_f.abs().max()), _STEP_TOL * (1 + float(f.abs().max()))
        if size <= scale:
            converged = True  # rows on the margin flip in and out of A by rounding: nothing to do
            break
        if t * size <= scale:
            break  # stalled
        if t < 1:
            active = None  # a partial step: the active set must be recomputed and solved again
    loo = _leave_one_out(y, f, beta, active, factor) if converged else f.clone()
    objective = _objective(y, w, n_rows, alpha, f, beta)
    return beta, b, HingeSolution(alpha, beta, b, objective, loo, step, converged)


def _active_set_step(K, y, w, n_rows, alpha, active):
    """``(cholesky(K_AA + D_A), β, b)``: the least-squares optimum on the rows of ``A`` (``b``
    ``None`` when ``A`` is empty: any intercept will do)."""
    index = torch.nonzero(active).squeeze(1)
    beta = torch.zeros_like(y)
    if index.numel() == 0:  # no row inside the margin: only the penalty pulls, towards W = 0
        return None, beta, None
    M = K.index_select(0, index).index_select(1, index)
    M.diagonal().add_(n_rows * alpha / (2 * w[index]))  # K_AA + D_A
    L = _cholesky(M)
    rhs = torch.stack([y[index], torch.ones_like(y[index])], dim=1)
    x = torch.cholesky_solve(rhs, L)  # M⁻¹[y 1]
    b = float(x[:, 0].sum() / x[:, 1].sum())  # 1ᵀβ = 0
    beta[index] = x[:, 0] - b * x[:, 1]
    return L, beta, b


def _cholesky(M: torch.Tensor) -> torch.Tensor:
    """``L`` of ``M = LLᵀ``. ``K_AA`` is positive semi-definite and ``D_A > 0``, but the Gram
    matrix sums float32 products, whose rounding (about ``10⁻⁷`` of the diagonal) can outweigh
    ``D_A`` at the smallest ``α``: then a jitter of ``10⁻⁸ … 10⁻⁴`` of the mean diagonal is
    added, the least that factorises."""
    L, info = torch.linalg.cholesky_ex(M)
    scale = float(M.diagonal().mean())
    for jitter in (1e-8, 1e-6, 1e-4):
        if int(info) == 0:
            return L
        L, info = torch.linalg.cholesky_ex(M + jitter * scale * torch.eye(len(M), dtype=M.dtype, device=M.device))
    if int(info) != 0:
        raise FloatingPointError("The squared hinge's active-set system is not positive definite "
                                 "even with a jitter of 1e-4; standardise X, and check sample_weight.")
    return L


def _line_search(y, w, n_rows, alpha, f, beta, delta_f, delta_beta) -> float:
    """The ``t ∈ [0, 1]`` minimising ``F`` along the step: the root of the nondecreasing,
    piecewise-linear ``F'(t) = −2Σ w_i c_i max(0, a_i − t c_i)/n + α(βᵀΔf + tΔβᵀΔf)``
    (``a = 1 − y∘f``, ``c = y∘Δf``, ``1ᵀβ = 0``), exactly: the rows' breakpoints ``a_i/c_i``
    sorted, ``F' = P + Qt`` summed segment by segment, the first segment ending at a slope
    above 0 solved for its root (``O(m log m)``)."""
    a, c = 1 - y * f, y * delta_f
    wc = (2.0 / n_rows) * w * c
    p, q = -wc * a, wc * c  # an active row's share of P and Q
    active = (a > 0) | ((a == 0) & (c < 0))  # inside the margin just after t = 0
    P = float(p[active].sum()) + alpha * float(beta @ delta_f)
    Q = float(q[active].sum()) + alpha * float(delta_beta @ delta_f)
    ratio = a / torch.where(c == 0, torch.ones_like(c), c)
    crossing = (c != 0) & (ratio > 0) & (ratio < 1)  # a row enters or leaves the margin in (0, 1)
    t = ratio[crossing]
    sign = torch.where(c[crossing] > 0, -1.0, 1.0).to(p.dtype)  # c > 0 leaves the margin, c < 0 joins
    order = torch.argsort(t)
    t, dP, dQ = t[order], (sign * p[crossing])[order], (sign * q[crossing])[order]
    ends = torch.cat([t, t.new_ones(1)])
    Ps = P + torch.cat([t.new_zeros(1), torch.cumsum(dP, 0)])  # P on each segment
    Qs = Q + torch.cat([t.new_zeros(1), torch.cumsum(dQ, 0)])
    above = torch.nonzero(Ps + Qs * ends > 0).reshape(-1)
    if above.numel() == 0:
        return 1.0
    k = int(above[0])
    start = 0.0 if k == 0 else float(t[k - 1])
    Pk, Qk = float(Ps[k]), float(Qs[k])
    root = -Pk / Qk if Qk > 0 else start
    return min(max(root, start), float(ends[k]))


def _leave_one_out(y, f, beta, active, factor) -> torch.Tensor:
    """Rows outside ``A``: ``f_i``; rows of ``A``: ``y_i − β_i/(C⁻¹)_ii``, with
    ``(C⁻¹)_ii = (M⁻¹)_ii − (M⁻¹1)_i²/(1ᵀM⁻¹1)`` for the bordered ``C = [[M, 1], [1ᵀ, 0]]``."""
    loo = f.clone()
    index = torch.nonzero(active).squeeze(1)
    if index.numel() == 0:
        return loo
    M_inverse_diagonal = _inverse_diagonal(factor)
    ones = torch.cholesky_solve(torch.ones_like(y[index])[:, None], factor)[:, 0]  # M⁻¹1
    C_inverse_diagonal = M_inverse_diagonal - ones.square() / ones.sum()
    loo[index] = y[index] - beta[index] / C_inverse_diagonal.clamp_min(1e-300)
    return loo


def _inverse_diagonal(factor: torch.Tensor) -> torch.Tensor:
    """``diag(M⁻¹)`` from ``M = LLᵀ``: ``Σ_k (L⁻¹)_ki²`` (LAPACK's triangular inverse on the CPU,
    a third of the products of a solve against the identity)."""
    if factor.device.type != "cpu":
        return torch.cholesky_inverse(factor).diagonal()
    L_inverse, info = scipy.linalg.lapack.dtrtri(factor.numpy(), lower=1)
    if info != 0:
        raise FloatingPointError(f"LAPACK dtrtri failed (info={info}) on the active set's factor.")
    return torch.from_numpy(L_inverse).square().sum(dim=0)


def _objective(y, w, n_rows, alpha, f, beta) -> float:
    """``F = Σ w_i max(0, 1 − y_i f_i)²/n + (α/2)βᵀKβ`` (``Kβ = f − b`` and ``1ᵀβ = 0``)."""
    loss = float((w * (1 - y * f).clamp_min(0).square()).sum()) / n_rows
    return loss + 0.5 * alpha * float(beta @ f)
