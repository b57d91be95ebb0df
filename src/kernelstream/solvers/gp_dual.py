"""Gaussian-process posterior by a doubly stochastic iteration in dual coordinates.

The posterior of a GP with kernel ``k`` and noise variance ``s²`` on ``(X, y)`` is
``μ(x) = k(x, X) a`` and ``v(x) = k(x, x) − k(x, X) a_x`` with ``(K + s² I) a = y`` and
``(K + s² I) a_x = k(X, x)`` (Rasmussen & Williams, eq. 2.25-2.26; Dai et al. 2014, eq. 9).

Step ``t`` draws a fresh block of ``r`` random features ``Ψ_t = ψ_t(X)`` (unbiased:
``E[Ψ_t Ψ_tᵀ] = K``) and moves every column of ``A = [a, a_x1, ...]``::

    A ← A + γ P (Y − Ψ_t Ψ_tᵀ A − s² A),

a Richardson iteration on ``(K + s²I) A = Y`` whose operator is replaced by one random-feature
draw per step. ``P = (K_nM K_MM⁻¹ K_Mn + s² I)⁻¹`` is a Nyström preconditioner from ``M``
landmark columns of the exact kernel: since ``K ⪰ K_nM K_MM⁻¹ K_Mn``, the spectrum of
``P (K + s² I)`` lies in ``[1, λ_max]``, so every direction contracts at least by ``γ`` per step
and the transient is a few ``1/γ`` steps whatever the conditioning of ``K``. The preconditioner
changes the speed, never the fixed point. Iterates fluctuate around it by the random-feature
noise of one block; their Polyak average ``Ā`` converges as ``O(1/√t)``.

The model is again a random-feature expansion over the seeded blocks of the run:
``μ(x) = (1/T) Σ_t ψ_t(x)ᵀ (Ψ_tᵀ ā)``, i.e. ``T·r`` features, no training data kept. The
variance at given test points uses the second-order form
``v̂ = k(x, x) − 2 k̂(x, X) ā_x + ā_xᵀ (K̂ + s² I) ā_x``, which equals ``v`` at ``ā_x = a_x`` and
errs only quadratically in ``ā_x − a_x`` (the first-order ``k(x, x) − k̂(x, X) ā_x`` subtracts
two numbers near ``k(x, x)``).

Why not the primal functional SGD of the paper: with ``ν = s²/n`` the objective's curvature
spans ``[s²/n, λ_max(K)/n]``; on the paper's 2-D GP set (2^11 points, bandwidth 0.1 × median,
``s² = 0.1``) averaged constant-step SGD (batch 64, blocks of 512) is still far from the
posterior mean after 4000 steps. Per-block preconditioning of the primal step scales the data
term but not the ``ν``-shrinkage, which moves the fixed point. The dual iteration above comes
much closer in 200 steps of 2048 features (``benchmarks/gp.py``; decision record:
docs/decisions/research-gp-dual-solver.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..features.base import FeatureMap
from ..ops.linalg import narrow_matmul, transposed_matmul

__all__ = ["NystromPreconditioner", "NystromFactors", "DualGPResult", "kernel_in_chunks",
           "features_kernel", "kernel_diagonal", "nystrom_factors", "nystrom_preconditioner",
           "safe_step_size", "solve_dual", "solve_dual_fixed", "conjugate_gradients",
           "posterior_from_duals"]

_CHUNK_ELEMENTS = 2**22  # exact-kernel evaluation: entries per chunk
_DIVERGENCE_FACTOR = 10.0  # residual growth (over its running minimum) that halves the step
#: blocks used by safe_step_size: far beyond any run's blocks, so independent of them
_PROBE_BLOCK = 2**40


def kernel_in_chunks(feature_map: FeatureMap, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Exact ``k(X, Y)``, ``(n, m)``, evaluated in row chunks of bounded size."""
    rows = max(1, _CHUNK_ELEMENTS // max(1, Y.shape[0]))
    return torch.cat([feature_map.kernel(X[i:i + rows], Y) for i in range(0, X.shape[0], rows)])


def features_kernel(feature_map: FeatureMap, X: torch.Tensor, Y: torch.Tensor,
                    n_blocks: int) -> torch.Tensor:
    """``k̂(X, Y) = (1/J) Σ_{j<J} ψ_j(X)ψ_j(Y)ᵀ``, ``(n, m)``: the kernel of the first ``J``
    blocks' features, one block at a time."""
    out = torch.zeros((X.shape[0], Y.shape[0]), dtype=X.dtype, device=X.device)
    for j in range(n_blocks):
        out += feature_map.block_features(X, j) @ feature_map.block_features(Y, j).T
    return out / n_blocks


def kernel_diagonal(feature_map: FeatureMap, X: torch.Tensor) -> torch.Tensor:
    """``k(x_i, x_i)`` for each row, ``(n,)``."""
    rows = 256
    return torch.cat([feature_map.kernel(X[i:i + rows], X[i:i + rows]).diagonal()
                      for i in range(0, X.shape[0], rows)])


@dataclass
class NystromPreconditioner:
    """``P V = (V − B (BᵀB + s²I)⁻¹ BᵀV) / s²`` with ``B = K_nM L⁻ᵀ``, ``L Lᵀ = K_MM + δI``:
    the Woodbury form of ``(K_nM (K_MM + δI)⁻¹ K_Mn + s² I)⁻¹``. ``BᵀB + s²I`` has its spectrum in
    ``[s², λ_max + s²]``, so its factor survives float32 even when ``K_MM`` is numerically
    singular (wide kernels). Memory ``O(nM)``."""

    B: torch.Tensor
    cholesky: torch.Tensor
    noise: float

    def __call__(self, V: torch.Tensor) -> torch.Tensor:
        inner = torch.cholesky_solve(self.B.T @ V, self.cholesky)
        return (V - self.B @ inner) / self.noise


@dataclass
class NystromFactors:
    """The float64 factors of the Nyström approximation on ``M`` landmark rows:
    ``L Lᵀ = K_MM + δI``, ``B = K_nM L⁻ᵀ`` ``(n, M)`` and ``R Rᵀ = BᵀB + s²I``. Memory ``8·n·M``."""

    landmarks: torch.Tensor  # (M,) row indices into X
    kmm_cholesky: torch.Tensor  # L
    B: torch.Tensor
    inner_cholesky: torch.Tensor  # R
    noise: float


def nystrom_factors(feature_map: FeatureMap, X: torch.Tensor, noise: float, n_landmarks: int,
                    generator: torch.Generator) -> NystromFactors:
    """Landmarks: ``n_landmarks`` rows of ``X`` drawn without replacement by ``generator``.

    Factorised in float64 with a jitter ``δ = 1e-6 ·`` mean ``k(z, z)`` (the jittered Nyström
    approximation stays below ``K``, so the spectrum of ``P(K + s²I)`` stays ``≥ 1``).
    Raises ``torch.linalg.LinAlgError`` when ``BᵀB + s²I`` cannot be factorised (non-finite
    kernel values, or ``s²`` below the float64 resolution of ``BᵀB``).
    """
    n = X.shape[0]
    m = min(n, n_landmarks)
    landmarks = torch.randperm(n, generator=generator)[:m].to(X.device)
    K_nM = kernel_in_chunks(feature_map, X, X[landmarks]).to(torch.float64)
    K_MM = K_nM[landmarks]
    eye = torch.eye(m, dtype=torch.float64, device=X.device)
    jitter = 1e-6 * float(K_MM.diagonal().mean())
    for _ in range(8):  # duplicate landmarks make K_MM singular: raise the jitter
        L, info = torch.linalg.cholesky_ex(K_MM + jitter * eye)
        if int(info) == 0:
            break
        jitter *= 100
    B = torch.linalg.solve_triangular(L, K_nM.T, upper=False).T  # K_nM L⁻ᵀ
    R = torch.linalg.cholesky(B.T @ B + noise * eye)
    return NystromFactors(landmarks, L, B, R, float(noise))


def nystrom_preconditioner(feature_map: FeatureMap, X: torch.Tensor, noise: float,
                           n_landmarks: int, generator: torch.Generator,
                           factors: NystromFactors | None = None) -> NystromPreconditioner:
    """``P`` from :func:`nystrom_factors` (computed here unless given), cast to ``X``'s dtype."""
    if factors is None:
        factors = nystrom_factors(feature_map, X, noise, n_landmarks, generator)
    return NystromPreconditioner(factors.B.to(X.dtype), factors.inner_cholesky.to(X.dtype),
                                 float(noise))


def safe_step_size(feature_map: FeatureMap, X: torch.Tensor, noise: float,
                   precond: Callable[[torch.Tensor], torch.Tensor], *, cap: float = 0.5,
                   n_iter: int = 12, generator: torch.Generator | None = None) -> float:
    """``γ = min(cap, 1/λ̂)``, ``λ̂`` the top eigenvalue of ``P(Ψ_jΨ_jᵀ + s²I)`` by power
    iteration with a fresh block ``Ψ_j`` per iteration — the scale of one step's operator.

    The Nyström part of ``P`` captures less of ``K`` as ``n`` grows at fixed landmarks, and one
    block's ``Ψ_jΨ_jᵀ`` is noisier: both raise ``λ̂``, and a step above ``2/λ`` diverges. On the
    paper's GP set ``λ̂`` is about 3 at ``n = 2^11`` and 15 at ``n = 2^16`` (1024 landmarks).
    """
    v = torch.randn((X.shape[0], 1), generator=generator, dtype=torch.float64).to(X)
    lam = 1.0
    for j in range(n_iter):
        Psi = feature_map.block_features(X, _PROBE_BLOCK + j)
        w = precond(narrow_matmul(Psi, transposed_matmul(Psi, v)) + noise * v)
        lam = float(torch.linalg.norm(w) / torch.linalg.norm(v))
        v = w / torch.linalg.norm(w)
    return min(float(cap), 1.0 / lam)


@dataclass
class DualGPResult:
    """Averaged duals ``Ā`` ``(n, m)``, and the run's record."""

    duals: torch.Tensor
    n_steps: int
    step_size: float
    average_start: int
    residual_norms: list = field(default_factory=list)
    n_halvings: int = 0


def solve_dual(feature_map: FeatureMap, X: torch.Tensor, Y: torch.Tensor, noise: float,
               precond: Callable[[torch.Tensor], torch.Tensor], *, n_steps: int,
               step_size: float = 0.5, average_start: int = 0, first_block: int = 0,
               callback: Callable[[int, torch.Tensor], None] | None = None) -> DualGPResult:
    """Run ``A ← A + γ P (Y − Ψ_t Ψ_tᵀ A − s² A)`` for ``n_steps`` blocks and average.

    Step ``t`` (0-based) uses block ``first_block + t``. Iterates from step ``average_start``
    on are averaged. If the residual ``‖Y − Ψ_tΨ_tᵀA − s²A‖`` grows ten-fold over its running
    minimum (mean-square instability of a too large ``γ``), ``γ`` is halved and the iteration
    restarts from the average (or zero) — ``n_halvings`` records how often.
    ``callback(t, Ā)`` is called after every step, with ``Ā = None`` before averaging starts
    (progress bars, convergence curves).
    """
    A = torch.zeros_like(Y)
    A_avg = torch.zeros_like(Y)
    count, best = 0, math.inf
    result = DualGPResult(A_avg, n_steps, float(step_size), int(average_start))
    gamma = float(step_size)
    for t in range(n_steps):
        Psi = feature_map.block_features(X, first_block + t)
        residual = Y - narrow_matmul(Psi, transposed_matmul(Psi, A)) - noise * A
        norm = float(torch.linalg.norm(residual))
        result.residual_norms.append(norm)
        if not math.isfinite(norm) or norm > _DIVERGENCE_FACTOR * best:
            gamma /= 2
            result.n_halvings += 1
            A = A_avg.clone() if count else torch.zeros_like(Y)
            A_avg.zero_()
            count, best = 0, math.inf
            continue
        best = min(best, norm)
        A += gamma * precond(residual)
        if t >= average_start:
            count += 1
            A_avg += (A - A_avg) / count  # Polyak–Ruppert average
        if callback is not None:
            callback(t, A_avg if count else None)
    result.step_size = gamma
    if count == 0:  # averaging never started (or restarted at the last step): the last iterate
        A_avg.copy_(A)
    return result


def fixed_features_operator(feature_map: FeatureMap, X: torch.Tensor, n_blocks: int,
                            noise: float) -> Callable[[torch.Tensor], torch.Tensor]:
    """``V ↦ (K̂ + s²I)V`` with ``K̂ = (1/J) Σ_{j<J} Ψ_jΨ_jᵀ`` over blocks ``0..J−1``, float64
    (the blocks are regenerated at each call: memory ``O(n·r)``, time ``O(J·n·r·d)``)."""
    def apply(V: torch.Tensor) -> torch.Tensor:
        out = noise * V
        for j in range(n_blocks):
            Psi = feature_map.block_features(X, j).to(torch.float64)
            out += narrow_matmul(Psi, transposed_matmul(Psi, V)) / n_blocks
        return out

    return apply


def solve_dual_fixed(feature_map: FeatureMap, X: torch.Tensor, Y: torch.Tensor, noise: float,
                     precond: Callable[[torch.Tensor], torch.Tensor], *, n_blocks: int,
                     max_iter: int, tol: float = 1e-6,
                     callback: Callable[[int, torch.Tensor], None] | None = None) -> DualGPResult:
    """Duals of the GP whose kernel is the first ``n_blocks`` blocks' features:
    ``(K̂ + s²I)A = Y`` by preconditioned conjugate gradients, column by column, float64.

    With a fixed feature set the operator is known exactly, so the solve needs no averaging:
    conjugate gradients stop when every column's residual is below ``tol`` of its right-hand
    side, or after ``max_iter`` iterations (each regenerates the ``J`` blocks once). ``P`` is
    the Nyström preconditioner of the exact kernel, close to ``(K̂ + s²I)⁻¹`` when the features
    approximate ``K``. ``residual_norms`` records ``‖Y − (K̂ + s²I)A‖`` per iteration.
    """
    apply = fixed_features_operator(feature_map, X, n_blocks, noise)
    return conjugate_gradients(apply, Y, precond, max_iter=max_iter, tol=tol, callback=callback)


def conjugate_gradients(apply: Callable[[torch.Tensor], torch.Tensor], Y: torch.Tensor,
                        precond: Callable[[torch.Tensor], torch.Tensor], *, max_iter: int,
                        tol: float = 1e-6,
                        callback: Callable[[int, torch.Tensor], None] | None = None) -> DualGPResult:
    """``apply(A) = Y`` for a symmetric positive definite ``apply`` by preconditioned conjugate
    gradients, every column with its own step, float64: stops when every column's residual is
    below ``tol`` of its right-hand side, or after ``max_iter`` iterations;
    ``residual_norms`` records ``‖Y − apply(A)‖`` per iteration."""
    Y = Y.to(torch.float64)
    A, R = torch.zeros_like(Y), Y.clone()
    bound = tol * torch.linalg.norm(Y, dim=0)
    Z = precond(R)
    D, rz = Z.clone(), (R * Z).sum(0)
    result = DualGPResult(A, 0, math.nan, 0)
    for t in range(max_iter):
        if bool((torch.linalg.norm(R, dim=0) <= bound).all()):
            break
        Q = apply(D)
        alpha = _ratio(rz, (D * Q).sum(0))              # exact minimiser along each direction
        A += alpha * D
        R -= alpha * Q
        result.n_steps = t + 1
        result.residual_norms.append(float(torch.linalg.norm(R)))
        if callback is not None:
            callback(t, A)
        Z = precond(R)
        rz_next = (R * Z).sum(0)
        D = Z + _ratio(rz_next, rz) * D                 # Fletcher–Reeves: P-conjugate directions
        rz = rz_next
    return result


def _ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den`` per column, 0 where ``den`` is 0 (a column already solved)."""
    return torch.where(den != 0, num / torch.where(den != 0, den, 1.0), 0.0)


@dataclass
class PosteriorFromDuals:
    """What one pass over the blocks gives: the mean expansion's coefficients and, at the test
    points, ``k̂(x*, X) ā_x`` and ``ā_xᵀ K̂ ā_x`` (block averages)."""

    mean_coef: torch.Tensor  # (T, r, C): μ(x) = Σ_t ψ_t(x)ᵀ c_t
    cross: torch.Tensor | None  # (m,)
    quadratic: torch.Tensor | None  # (m,)


def posterior_from_duals(feature_map: FeatureMap, X: torch.Tensor, mean_duals: torch.Tensor,
                         blocks: range, X_var: torch.Tensor | None = None,
                         var_duals: torch.Tensor | None = None) -> PosteriorFromDuals:
    """One pass over ``blocks``: ``c_t = Ψ_tᵀ ā / T`` and, with test points ``X_var`` and their
    duals ``var_duals`` ``(n, m)``, the block averages of ``ψ_t(x*_j)ᵀ Ψ_tᵀ ā_j`` and
    ``‖Ψ_tᵀ ā_j‖²``."""
    T = len(blocks)
    coef = torch.empty((T, feature_map.block_size, mean_duals.shape[1]), dtype=X.dtype, device=X.device)
    cross = quadratic = None
    if X_var is not None:
        cross = torch.zeros(X_var.shape[0], dtype=X.dtype, device=X.device)
        quadratic = torch.zeros_like(cross)
    for i, block in enumerate(blocks):
        Psi = feature_map.block_features(X, block)
        coef[i] = transposed_matmul(Psi, mean_duals) / T
        if X_var is not None:
            C = transposed_matmul(Psi, var_duals)  # (r, m): column j is the block's coefficients of ā_j
            cross += (feature_map.block_features(X_var, block) * C.T).sum(1) / T
            quadratic += C.square().sum(0) / T
    return PosteriorFromDuals(coef, cross, quadratic)
