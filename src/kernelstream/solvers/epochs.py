"""What the epoch loops of the fixed-budget solvers share: the stopping rule, the loop state, the
result, and the per-column losses.

Several regularisation values ``α`` are trained side by side: the ``A`` models are the column
blocks of one coefficient matrix ``θ`` ``(D+1, A·C)``, column block ``a`` the model of ``α_a``.
:func:`column_losses` scores their outputs, :func:`record_epoch` keeps each column's best
iterate, and :class:`EpochState` holds what a run needs to go on from an epoch boundary. The
loops themselves are :func:`.preconditioned.run_epochs` (stochastic steps),
:func:`.conjugate.run_conjugate_gradients` and :func:`.direct.solve_normal_equations`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ..losses import Loss

__all__ = ["EpochControl", "EpochState", "FitResult", "start_state", "record_epoch", "column_losses"]


@dataclass
class FitResult:
    """What :func:`~.preconditioned.run_epochs` returns: the best iterate of each ``α`` column
    and the curves."""

    theta: torch.Tensor  # (D+1, A·C), best epoch per column
    best_loss: torch.Tensor  # (A,)
    best_epoch: list[int]
    loss_curve: list[float] = field(default_factory=list)  # training loss per epoch (best column)
    validation_curve: list[list[float]] = field(default_factory=list)  # per epoch, per column
    n_epochs: int = 0
    n_steps: int = 0


def column_losses(loss: Loss, U: torch.Tensor, y: torch.Tensor, weight: torch.Tensor,
                  n_alphas: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss derivative ``(m, A·C)`` and per-column summed weighted loss ``(A,)`` of the outputs
    ``U`` ``(m, A·C)`` of ``A`` models that share the targets ``y``."""
    m = U.shape[0]
    C = U.shape[1] // n_alphas
    stacked = U.reshape(m, n_alphas, C).transpose(0, 1).reshape(n_alphas * m, C)
    targets = y.repeat(n_alphas) if y.ndim == 1 else y.repeat(n_alphas, 1)
    G = loss.derivative(stacked, targets).reshape(n_alphas, m, C)
    value = loss.value(stacked, targets).reshape(n_alphas, m, -1).sum(dim=2)  # (A, m)
    G = G * weight[None, :, None]
    return G.transpose(0, 1).reshape(m, n_alphas * C), (value * weight[None, :]).sum(dim=1)


@dataclass(frozen=True)
class EpochControl:
    """Stopping rule: ``max_iter`` epochs; stop after ``n_iter_no_change`` epochs in which no
    column's monitored loss fell below ``best − tol·|best|`` (``tol=None``: never)."""

    max_iter: int
    tol: float | None = 1e-4
    n_iter_no_change: int = 3


@dataclass
class EpochState:
    """The variables of :func:`~.preconditioned.run_epochs`'s loop at an epoch boundary: the
    iterate ``theta``, the result so far (best iterates, losses, curves), the per-epoch iterate
    sums of the tail average, the epochs without improvement, the step sizes and the epochs
    done. Batches are drawn from ``(seed, epoch)``, so this is all a run needs to go on from
    ``epoch`` (:mod:`kernelstream.solvers.checkpoint` saves and restores it)."""

    theta: torch.Tensor | None = None
    result: FitResult | None = None
    sums: list = field(default_factory=list)  # [(sum of an epoch's iterates, its steps)]
    stale: int = 0
    eta: torch.Tensor | None = None
    epoch: int = 0
    direction: torch.Tensor | None = None  # conjugate gradients: the next search direction


def record_epoch(result: FitResult, state: EpochState, epoch: int, train: torch.Tensor,
                 monitored: torch.Tensor, candidate: torch.Tensor, control: EpochControl,
                 callback=None) -> None:
    """The end of an epoch: log the training and monitored losses per column ``(A,)``, let each
    column whose monitored loss is a new best keep ``candidate``'s coefficients, count the
    epochs without improvement, then ``callback(epoch + 1, best monitored loss)``."""
    C = candidate.shape[1] // monitored.shape[0]
    result.n_epochs = epoch + 1
    result.loss_curve.append(float(train.min()))
    result.validation_curve.append(monitored.tolist())
    improved = _improved(monitored, result.best_loss, control.tol)
    for a in torch.nonzero(monitored < result.best_loss).flatten().tolist():
        result.best_loss[a] = monitored[a]
        result.best_epoch[a] = epoch
        result.theta[:, a * C:(a + 1) * C] = candidate[:, a * C:(a + 1) * C]
    state.epoch = epoch + 1
    state.stale = 0 if improved else state.stale + 1
    if callback is not None:
        callback(epoch + 1, float(monitored.min()))


def start_state(state: EpochState | None, theta: torch.Tensor, n_alphas: int) -> EpochState:
    """``state``, or (when it has not started) the state before the first epoch from ``theta``."""
    state = EpochState() if state is None else state
    if state.result is None:
        state.theta = theta
        state.result = FitResult(theta=theta.clone(), best_loss=torch.full((n_alphas,), math.inf, dtype=torch.float64),
                                 best_epoch=[-1] * n_alphas)
    return state


def _improved(monitored: torch.Tensor, best: torch.Tensor, tol: float | None) -> bool:
    """Whether the best column's loss fell below the best so far by more than ``tol``
    (relative): the model kept is the best column, so columns still creeping down behind it do
    not hold the fit open."""
    if tol is None:
        return True
    record = float(best.min())
    return math.isinf(record) or float(monitored.min()) < record - tol * abs(record)
