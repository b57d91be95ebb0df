"""Preconditioned conjugate gradients for the squared loss: the ridge normal equations at a
fixed feature budget, one pass over the data per iteration.

For the squared loss ``ℓ(u, y) = ½(u − y)²`` the objective of every ``α`` column,

    ``F(θ) = Σ_i w_i ℓ(φ̃_iᵀθ, y_i)/n + (α/2)‖W‖²``  (``θ = [W; b/c]``, the intercept free),

is a quadratic with Hessian ``H = Φ̃ᵀ diag(w) Φ̃/n + α I_W``, so its minimiser solves
``Hθ = Φ̃ᵀ diag(w) y/n``. Conjugate gradients (Hestenes & Stiefel 1952) preconditioned by the
sketch preconditioner ``P ≈ (Φ̃ᵀΦ̃/n + α)^{-1}`` of :mod:`.preconditioned` (exact on its top
``k`` eigendirections, a scalar on the rest) need about ``√κ(PH)`` iterations where stochastic
steps need ``κ(PH)`` — the choice of Falkon (Rudi, Carratino & Rosasco, NeurIPS 2017), here with
random features instead of Nyström centres. Each iteration is one pass that evaluates the
features of every row once and gives both the gradient at ``θ`` and ``H p``, so memory stays
``O(D·(d + k))`` whatever ``n``:

- the step along the direction ``p`` is the exact minimiser ``t = −∇F(θ)ᵀp / pᵀHp``, from the
  gradient computed in the same pass (no drift of a recursively updated residual);
- the next direction is Polak–Ribière's, ``p ← z + max(0, β) p`` with ``z = P r``,
  ``β = r_{+}ᵀ(z_{+} − z)/rᵀz`` and ``r = −∇F``, which restarts by itself where conjugacy is lost;
- ``H p = Φ̃ᵀ diag(w) (ℓ'(Φ̃θ + Φ̃p) − ℓ'(Φ̃θ))/n + α p_W`` is exact for a quadratic loss, in
  float64 on the rows' outputs.

The iterates are scored on the validation rows like the stochastic solver's, and each column
keeps its best: stopping early on the validation loss regularises, as it does for gradient
descent. Without validation rows they are scored by ``F`` itself (the stochastic solver uses the
training loss alone), which conjugate gradients lower at every step. The epoch state holds the
iterate and the next direction in float64, so a run resumed from a checkpoint goes on exactly.
"""

from __future__ import annotations

from typing import Callable, Iterator

import torch

from ..features.base import FeatureMap
from ..losses import Loss
from ..ops.linalg import narrow_matmul, row_gram, symmetric_eigh, transposed_matmul
from .epochs import EpochControl, EpochState, FitResult, column_losses, record_epoch, start_state
from .feature_rows import CHUNK_FLOATS, INTERCEPT_FEATURE, PARAM_BYTES, augmented, feature_matrix, row_chunks
from .preconditioned import Preconditioner, monitored_validation

__all__ = ["QUADRATIC_LOSSES", "CG_SKETCH_ROWS", "conjugate_preconditioner", "run_conjugate_gradients"]

#: losses whose objective is a quadratic in ``θ`` (conjugate gradients solve them)
QUADRATIC_LOSSES = ("squared",)
#: sketch rows of the conjugate-gradient preconditioner (at most; its rank is up to this)
CG_SKETCH_ROWS = 8192
#: eigenvalues of the sketch Gram below this fraction of the largest are dropped: the Gram is
#: summed from products in the features' precision, so smaller ones are round-off
_RELATIVE_FLOOR = {torch.float32: 1e-6, torch.float64: 1e-12}


def conjugate_preconditioner(feature_map: FeatureMap, n_blocks: int, X_sketch: torch.Tensor,
                             alphas, weight_scale: float = 1.0) -> Preconditioner:
    """``P = V diag(1/(λ_i + α)) Vᵀ + (I − VVᵀ)/(λ_{k+1} + α)`` from the ``s``-row sketch: the
    Nyström preconditioner of Falkon in feature space, of rank up to ``s``.

    Unlike the stochastic solver's (:func:`~.preconditioned.sketch_preconditioner`), whose rank
    is bounded by its step-size rule, conjugate gradients gain from every eigendirection made
    exact: the iterations needed scale as ``√((λ_{k+1} + α)/α)``. With ``D + 1 ≤ s`` the
    ``(D+1)²`` covariance is factored, else the ``s × s`` Gram ``Φ̃_sΦ̃_sᵀ/s`` (``O(s²)``
    memory) with ``V = Φ̃_sᵀUΛ^{-1/2}/√s``; both are summed in the features' precision and
    factored in float64, and ``V`` (``(D+1) × k``) is kept in the features' precision.
    """
    s, r = X_sketch.shape[0], feature_map.block_size
    D, dtype = n_blocks * r, X_sketch.dtype
    route = _covariance_eigen if D + 1 <= s else _gram_eigen
    lam, eigenvectors, kappa = route(feature_map, n_blocks, X_sketch)
    # the directions the s rows resolve: λ ≥ κ/s (below it one row can hold the whole eigenvalue,
    # and rows the sketch did not draw can put more there), above the round-off of the sums
    floor = max(kappa / s, float(lam[0]) * _RELATIVE_FLOOR.get(dtype, 1e-6))
    k = max(1, min(int((lam >= floor).sum()), lam.shape[0] - 1))  # λ_{k+1}: the rest's scale
    V = eigenvectors(k)
    return Preconditioner(V=V, eigenvalues=lam[:k + 1].clone(), curvature=weight_scale,
                          alphas=torch.as_tensor(alphas, dtype=torch.float64, device=lam.device),
                          beta_rows=None)


def _covariance_eigen(feature_map, n_blocks, X):
    """Descending eigenvalues of ``Φ̃ᵀΦ̃/s`` from the ``(D+1)²`` covariance summed over row
    chunks (products in the features' precision), ``V(k)`` (its top ``k`` eigenvectors) and
    ``κ = max ‖φ̃‖²``."""
    s, D = X.shape[0], n_blocks * feature_map.block_size
    cov = torch.zeros((D + 1, D + 1), dtype=torch.float64, device=X.device)
    kappa = 0.0
    for rows in row_chunks(s, D):
        Phi = augmented(feature_matrix(feature_map, X[rows], n_blocks))
        cov += (Phi.T @ Phi).double()
        kappa = max(kappa, float((Phi * Phi).sum(dim=1).max()))
    lam, V = symmetric_eigh(cov / s)
    lam, V = lam.flip(0).clamp_min(0), V.flip(1)
    return lam, lambda k: V[:, :k].to(X.dtype).contiguous(), kappa


def _gram_eigen(feature_map, n_blocks, X):
    """Descending eigenvalues of ``Φ̃ᵀΦ̃/s`` from the ``s × s`` Gram (summed over groups of blocks,
    products in the features' precision), ``κ``, and ``V(k)``: the top ``k`` eigenvectors
    ``Φ̃ᵀUΛ^{-1/2}/√s`` ``(D+1, k)`` in the features' precision."""
    s, r = X.shape[0], feature_map.block_size
    gram = torch.full((s, s), INTERCEPT_FEATURE**2, dtype=torch.float64, device=X.device)
    group = max(1, min(CHUNK_FLOATS // (s * r),
                       PARAM_BYTES // (feature_map.block_param_numel() * X.element_size())))
    scale = n_blocks**-0.5

    def blocks_of(j):
        blocks = range(j, min(j + group, n_blocks))
        return blocks, feature_map.features(X, blocks).reshape(s, -1) * scale

    for j in range(0, n_blocks, group):
        Psi = blocks_of(j)[1]
        gram += row_gram(Psi).double()
    kappa = float(torch.diagonal(gram).max())
    lam, U = symmetric_eigh(gram / s)
    del gram
    lam, U = lam.flip(0).clamp_min(0), U.flip(1)

    def eigenvectors(k: int) -> torch.Tensor:
        scaled = (U[:, :k] / torch.sqrt(s * lam[:k])).to(X.dtype)
        V = torch.empty((n_blocks * r + 1, k), dtype=X.dtype, device=X.device)
        for j in range(0, n_blocks, group):
            blocks, Psi = blocks_of(j)
            V[j * r:blocks.stop * r] = Psi.T @ scaled
        V[-1] = INTERCEPT_FEATURE * scaled.sum(dim=0)
        return V

    return lam, eigenvectors, kappa


def run_conjugate_gradients(feature_map: FeatureMap, n_blocks: int, theta: torch.Tensor,
                            precond: Preconditioner, loss: Loss,
                            batches: Callable[[int], tuple[int, Iterator]], control: EpochControl,
                            validation: tuple | None = None,
                            callback: Callable[[int, float], None] | None = None,
                            state: EpochState | None = None, comm=None) -> FitResult:
    """Preconditioned conjugate gradients from ``theta`` ``(D+1, A·C)`` until ``control`` stops:
    one iteration (an "epoch") per pass over ``batches(epoch)``; arguments and result as
    :func:`~.preconditioned.run_epochs` (``result.theta``: each column's best iterate).
    """
    if loss.name not in QUADRATIC_LOSSES:
        raise ValueError(f"Conjugate gradients solve a quadratic objective; the {loss.name!r} loss "
                         "is not one: use the preconditioned stochastic solver.")
    n_alphas = precond.alphas.shape[0]
    C = theta.shape[1] // n_alphas
    alphas_cols = precond.alphas.repeat_interleave(C).to(theta.device)  # float64
    state = start_state(state, theta, n_alphas)
    result = state.result
    theta = state.theta.double()

    def preconditioned(r: torch.Tensor) -> torch.Tensor:  # P r, every column with its α
        return precond.apply_float64(r, C)

    direction = state.direction  # p (None: the first pass only computes the gradient)
    for epoch in range(state.epoch, control.max_iter):
        if control.tol is not None and state.stale >= control.n_iter_no_change:
            break
        _, epoch_batches = batches(epoch)
        probe = torch.zeros_like(theta) if direction is None else direction
        grad, curvature, train = _pass(feature_map, n_blocks, epoch_batches, theta, probe, loss,
                                       alphas_cols, n_alphas, comm)
        before = theta.to(result.theta.dtype)  # the iterate whose training loss is ``train``
        residual = -grad
        z = preconditioned(residual)
        if direction is None:  # the first pass gives the gradient only: start along P r
            direction = z
        else:  # the exact minimiser along p, then Polak–Ribière's next direction
            step = (residual * direction).sum(dim=0) / _positive((direction * curvature).sum(dim=0))
            theta = theta + direction * step
            after = residual - curvature * step
            z_after = preconditioned(after)
            beta = (after * (z_after - z)).sum(dim=0) / _positive((residual * z).sum(dim=0))
            direction = z_after + direction * beta.clamp_min(0)
        if not torch.isfinite(theta).all():
            raise FloatingPointError(f"Conjugate gradients diverged in iteration {epoch + 1} "
                                     "(non-finite coefficients); standardise X and check y.")
        iterate = theta.to(result.theta.dtype)
        scored = before if validation is None else iterate
        monitored = (_objective(train, before, precond.alphas, C) if validation is None else
                     monitored_validation(validation, feature_map, n_blocks, iterate, loss, n_alphas).cpu())
        result.n_steps += 1
        state.theta, state.direction = theta, direction  # float64: a resumed run goes on exactly
        record_epoch(result, state, epoch, train, monitored, scored, control, callback)
    return result


def _objective(train: torch.Tensor, theta: torch.Tensor, alphas: torch.Tensor, C: int) -> torch.Tensor:
    """``F(θ)`` per ``α`` column: the mean training loss plus ``(α/2)‖W‖²`` — what conjugate
    gradients lower at every step, so that without validation rows the last iterate is kept."""
    squares = theta[:-1].double().square().sum(dim=0).reshape(-1, C).sum(dim=1).cpu()
    return train + 0.5 * alphas.cpu() * squares


def _positive(x: torch.Tensor) -> torch.Tensor:
    """``x`` with its zeros (a converged column) replaced by 1, so that the step is 0, not NaN."""
    return torch.where(x > 0, x, torch.ones_like(x))


def _pass(feature_map, n_blocks, batches, theta, direction, loss, alphas_cols, n_alphas, comm):
    """One pass over ``batches``: ``∇F(θ)`` and ``H p`` ``(D+1, A·C)`` in float64 and the mean
    training loss at ``θ`` per column ``(A,)``; with ``comm`` the sums of every rank."""
    D, AC = theta.shape[0] - 1, theta.shape[1]
    both = torch.cat([theta, direction], dim=1)
    sums = torch.zeros((D + 1, 2 * AC), dtype=torch.float64, device=theta.device)
    total = torch.zeros(n_alphas, dtype=torch.float64, device=theta.device)
    rows = 0
    for X, y, weight in batches:
        coefficients = both.to(X.dtype)
        for chunk in row_chunks(X.shape[0], D):
            Phi = feature_matrix(feature_map, X[chunk], n_blocks)
            U = (narrow_matmul(Phi, coefficients[:D]) + INTERCEPT_FEATURE * coefficients[D]).double()
            targets, w = y[chunk].double(), weight[chunk].double()
            G, value = column_losses(loss, U[:, :AC], targets, w, n_alphas)  # w ℓ'(Φ̃θ)
            Hp = column_losses(loss, U[:, :AC] + U[:, AC:], targets, w, n_alphas)[0] - G
            weighted = torch.cat([G, Hp], dim=1)
            sums[:D] += transposed_matmul(Phi, weighted.to(Phi.dtype)).double()
            sums[D] += INTERCEPT_FEATURE * weighted.sum(dim=0)
            total += value
        rows += X.shape[0]
    if comm is not None:
        sums, total, rows = comm.sum_step(sums, total, rows)
    if rows == 0:
        raise ValueError("A conjugate-gradient pass had no rows; the training data is empty.")
    sums /= rows
    sums[:D] += alphas_cols.repeat(2) * both[:D]  # α W and α p_W (the intercept is free)
    return sums[:, :AC], sums[:, AC:], (total / rows).cpu()

