"""The ridge normal equations solved exactly, in one pass, where the features are few.

For the squared loss the objective of every ``α`` column,

    ``F(θ) = Σ_i w_i ½(φ̃_iᵀθ − y_i)²/n + (α/2)‖W‖²``  (``θ = [W; b/c]``, the intercept free),

is minimised by ``θ = (A/n + α I_W)^{-1} B/n`` with ``A = Σ_i w_i φ̃_i φ̃_iᵀ`` and
``B = Σ_i w_i φ̃_i y_iᵀ``: "streaming normal equations". One pass sums ``A`` and ``B`` over the
batches (memory ``O(D²)``, none in ``n``; work ``O(n·D·(d + D))``), then one Cholesky
factorisation per ``α`` solves them in float64.

Where ``D`` is small this is cheaper than the iterative solvers' epochs and, unlike them, it
reaches the optimum of every candidate whatever its conditioning: the bandwidth and ``α``
selection (:func:`~.selection.cross_validate`, :func:`~.selection.race_bandwidths`) uses it for
the squared loss, so that a wide bandwidth with a small ``α`` — slow for stochastic steps to
converge — is judged by what it can reach, not by how far 20 epochs take it.
"""

from __future__ import annotations

from typing import Callable, Iterator

import torch

from ..features.base import FeatureMap
from ..losses import Loss
from .epochs import EpochControl, EpochState, FitResult, record_epoch, start_state
from .feature_rows import augmented, feature_matrix, row_chunks
from .preconditioned import monitored_validation

__all__ = ["DIRECT_MAX_FEATURES", "solve_normal_equations"]

#: the direct solve is used where ``D + 1`` is at most this (a ``(D+1)²`` float64 matrix, 34 MB,
#: and one Cholesky factorisation per ``α``: well under a second on one core)
DIRECT_MAX_FEATURES = 2049


def solve_normal_equations(feature_map: FeatureMap, n_blocks: int, alphas, n_outputs: int,
                           loss: Loss, batches: Callable[[int], tuple[int, Iterator]],
                           control: EpochControl, validation: tuple | None = None,
                           callback: Callable[[int, float], None] | None = None,
                           state: EpochState | None = None, comm=None) -> FitResult:
    """The exact minimiser of ``F`` for every ``α`` in one pass over ``batches(0)``, as a
    :class:`~.epochs.FitResult` of one "epoch" (its monitored loss: the validation loss,
    else ``F`` itself). Arguments as :func:`~.conjugate.run_conjugate_gradients`."""
    if loss.name != "squared":
        raise ValueError(f"The normal equations are those of the squared loss, not {loss.name!r}.")
    A_sum, B_sum, yy, rows, dtype = _normal_sums(feature_map, n_blocks, n_outputs, batches(0)[1], comm)
    D = A_sum.shape[0] - 1
    H = A_sum / rows
    B = B_sum / rows  # (D+1, C)
    free = torch.ones(D + 1, dtype=torch.float64, device=H.device)
    free[D] = 0.0  # the intercept is not penalised
    solutions, fits, penalties = [], [], []
    for alpha in alphas:
        theta = _solve_positive(H + torch.diag(float(alpha) * free), B)
        solutions.append(theta)
        fits.append(float(0.5 * (yy / rows - 2 * (theta * B).sum() + (theta * (H @ theta)).sum())))  # mean ½w(φ̃ᵀθ − y)²
        penalties.append(0.5 * float(alpha) * float(theta[:D].square().sum()))  # (α/2)‖W‖²
    theta = torch.cat(solutions, dim=1).to(dtype)
    state = start_state(state, torch.zeros_like(theta), len(alphas))
    train = torch.tensor(fits, dtype=torch.float64)
    monitored = (train + torch.tensor(penalties, dtype=torch.float64) if validation is None else
                 monitored_validation(validation, feature_map, n_blocks, theta, loss, len(alphas)).cpu())
    state.result.n_steps += 1
    state.theta = theta
    record_epoch(state.result, state, 0, train, monitored, theta, control, callback)
    return state.result


def _normal_sums(feature_map, n_blocks, n_outputs, batches, comm):
    """``A = Σ wφ̃φ̃ᵀ``, ``B = Σ wφ̃yᵀ`` (float64, products in the features' precision),
    ``Σ w‖y‖²``, the number of rows and the features' dtype; with ``comm`` the sums of every rank."""
    D = n_blocks * feature_map.block_size
    sums, yy, rows, dtype = None, None, 0, torch.float32  # sums = [A | B]
    for X, y, weight in batches:
        targets, dtype = (y if y.ndim == 2 else y[:, None]).to(X.dtype), X.dtype
        if sums is None:
            sums = torch.zeros((D + 1, D + 1 + n_outputs), dtype=torch.float64, device=X.device)
            yy = torch.zeros((), dtype=torch.float64, device=X.device)
        A, B = sums[:, :D + 1], sums[:, D + 1:]
        for chunk in row_chunks(X.shape[0], D):
            Phi = augmented(feature_matrix(feature_map, X[chunk], n_blocks))
            w = weight[chunk].to(X.dtype)
            weighted = Phi * w[:, None]
            A += (weighted.T @ Phi).double()
            B += (weighted.T @ targets[chunk]).double()
            yy += (w.double() * targets[chunk].double().square().sum(dim=1)).sum()
        rows += X.shape[0]
    if sums is None:  # no rows here (another rank may have some)
        sums = torch.zeros((D + 1, D + 1 + n_outputs), dtype=torch.float64)
        yy = torch.zeros((), dtype=torch.float64)
    if comm is not None:
        sums, yy, rows = comm.sum_step(sums, yy, rows)
    if rows == 0:
        raise ValueError("The normal equations had no rows; the training data is empty.")
    return sums[:, :D + 1], sums[:, D + 1:], yy, rows, dtype


def _solve_positive(H: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``H⁻¹B`` for a symmetric positive semi-definite ``H`` by Cholesky, with a jitter of
    ``10⁻¹² tr(H)/D``, grown tenfold while the factorisation fails (a singular ``H``: the
    intercept's direction when the features already hold a constant)."""
    if not (torch.isfinite(H).all() and torch.isfinite(B).all()):
        raise FloatingPointError("The normal equations are not finite; standardise X, and check y "
                                 "and sample_weight.")
    scale = float(torch.diagonal(H).mean())
    eye = torch.eye(H.shape[0], dtype=H.dtype, device=H.device)
    for jitter in (scale * 10.0**e for e in range(-12, 1)):  # up to tr(H)/D: positive definite
        L, info = torch.linalg.cholesky_ex(H + jitter * eye)
        if int(info) == 0:
            return torch.cholesky_solve(B, L)
    raise FloatingPointError("The normal equations could not be factorised.")
