"""The default solver's loop state as a state dict, to checkpoint a fit and resume it exactly.

:func:`~kernelstream.solvers.preconditioned.run_epochs` and
:func:`~kernelstream.solvers.selection.grow_features` keep their loop variables in an
:class:`~kernelstream.solvers.epochs.EpochState` and a
:class:`~kernelstream.solvers.selection.GrowthState`, updated at every epoch boundary. Here they
become nested dicts of tensors and plain numbers (``kernelstream.io`` writes those) and back.
Nothing else is needed to go on from an epoch boundary: the batches of epoch ``e`` are drawn
from ``(seed, e)``, the preconditioner from seeded sketch rows, and the random features from
``(seed, block)``, so no random-generator state is saved. The size is that of the iterates:
the iterate, the best iterate per ``α`` column, the per-epoch sums of the tail average (at most
``⌈e/2⌉`` of them) and, during growth, the best size so far, each ``(D + 1) × A·C``; it does not
depend on the number of rows.
"""

from __future__ import annotations

from typing import Any

import torch

from .epochs import EpochState, FitResult
from .selection import GrowthState

__all__ = ["growth_state_dict", "growth_state_from_dict", "epoch_state_dict", "epoch_state_from_dict",
           "fit_result_dict", "fit_result_from_dict"]


def _copy(tensor: torch.Tensor | None, device) -> torch.Tensor | None:
    """A tensor with its own (freshly allocated, aligned) memory on ``device``: the same bits
    in, the same bits out of every later GEMM."""
    return None if tensor is None else tensor.detach().to(device).clone()


def fit_result_dict(result: FitResult | None) -> dict[str, Any] | None:
    """:class:`FitResult` as a state dict."""
    if result is None:
        return None
    return dict(theta=result.theta, best_loss=result.best_loss, best_epoch=list(result.best_epoch),
                loss_curve=list(result.loss_curve),
                validation_curve=[list(v) for v in result.validation_curve],
                n_epochs=result.n_epochs, n_steps=result.n_steps)


def fit_result_from_dict(state: dict[str, Any] | None, device) -> FitResult | None:
    """The inverse of :func:`fit_result_dict`; the best losses stay on the CPU, as the solver's."""
    if state is None:
        return None
    return FitResult(theta=_copy(state["theta"], device), best_loss=_copy(state["best_loss"], "cpu"),
                     best_epoch=[int(e) for e in state["best_epoch"]],
                     loss_curve=[float(v) for v in state["loss_curve"]],
                     validation_curve=[[float(v) for v in row] for row in state["validation_curve"]],
                     n_epochs=int(state["n_epochs"]), n_steps=int(state["n_steps"]))


def epoch_state_dict(state: EpochState) -> dict[str, Any]:
    """:class:`EpochState` as a state dict."""
    return dict(theta=state.theta, result=fit_result_dict(state.result),
                sums=[[total, steps] for total, steps in state.sums], stale=state.stale,
                eta=state.eta, epoch=state.epoch, direction=state.direction)


def epoch_state_from_dict(state: dict[str, Any], device) -> EpochState:
    """The inverse of :func:`epoch_state_dict`, its tensors on ``device``."""
    return EpochState(theta=_copy(state["theta"], device),
                      result=fit_result_from_dict(state["result"], device),
                      sums=[(_copy(total, device), int(steps)) for total, steps in state["sums"]],
                      stale=int(state["stale"]), eta=_copy(state["eta"], device),
                      epoch=int(state["epoch"]), direction=_copy(state.get("direction"), device))


def growth_state_dict(state: GrowthState) -> dict[str, Any]:
    """:class:`GrowthState` as a state dict (tensors and plain numbers, nested)."""
    return dict(n_blocks=state.n_blocks, best=fit_result_dict(state.best),
                best_blocks=state.best_blocks, history=[list(h) for h in state.history],
                continuing=state.continuing, epochs=epoch_state_dict(state.epochs),
                narrowing=state.narrowing, narrowed=state.narrowed)


def growth_state_from_dict(state: dict[str, Any], device) -> GrowthState:
    """The inverse of :func:`growth_state_dict`, its tensors on ``device``."""
    return GrowthState(n_blocks=int(state["n_blocks"]), best=fit_result_from_dict(state["best"], device),
                       best_blocks=int(state["best_blocks"]),
                       history=[(int(J), float(loss), int(epochs), float(sigma))
                                for J, loss, epochs, sigma in state["history"]],
                       continuing=bool(state["continuing"]),
                       epochs=epoch_state_from_dict(state["epochs"], device),
                       narrowing=bool(state["narrowing"]), narrowed=int(state["narrowed"]))
