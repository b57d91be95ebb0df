"""Doubly stochastic gradient descent in the RKHS (Dai et al. 2014, Algorithms 1 and 2).

Step ``t`` takes a mini-batch ``(X_t, y_t)`` of size ``b`` and a fresh block ``t`` of features::

    u_i = f_t(x_i)                                   (regenerates blocks 1..t−1; O(b·t·r·d))
    G   = w ⊙ ∂ℓ(u, y)/∂u                            (b, C)
    a_t = −γ_t Ψ_tᵀ G / b                            plain (Alg. 1, line 5)
    a_t = −(γ_t/L) (Ψ_tᵀΨ_t/b + εI)⁻¹ Ψ_tᵀ G / b     block-preconditioned (the authors' code),
                                                     L a curvature bound of the loss
    a_j ← a_j / (1 + γ_t ν)  for j < t               (lazy, through the expansion's scale)

The shrinkage is the proximal (implicit) step of the regulariser ``ν/2‖f‖²``: for every
``γ_t ν > 0`` it lies in ``(0, 1)``, where the explicit ``1 − γ_t ν`` of Algorithm 1 (the same
to first order) reaches zero or flips the sign of the model once ``γ_t ν ≥ 1`` — with the
logistic loss's Gauss–Newton scale 4 and ``γ_1 = 1`` that was any ``ν ≥ 0.25``. Both have the
same fixed points.

The intercept is not regularised: ``b ← b − γ_t · mean(G)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import torch

from ..expansion import Expansion
from ..losses import Loss
from ..ops.linalg import transposed_matmul
from ..ops.precond import precond_direction
from ..ops.workspace import scratch

__all__ = ["DSGConfig", "dsg_step", "run_dsg"]


@dataclass(frozen=True)
class DSGConfig:
    """Hyper-parameters of the solver.

    Attributes
    ----------
    schedule : callable ``t -> γ_t``.
    alpha : RKHS regularisation ``ν``.
    precondition : use the block preconditioner ``(Ψᵀ Ψ/b + εI)⁻¹``.
    precond_eps : ``ε`` relative to the mean eigenvalue ``tr(ΨᵀΨ/b)/r``.
    fit_intercept : learn the unregularised intercept.
    intercept_offset : constant added to the intercept's gradient (``ν`` for the one-class
        machine, whose objective has ``−ν τ = ν b``).
    """

    schedule: Callable[[int], float]
    alpha: float = 1e-6
    precondition: bool = True
    precond_eps: float = 1.0
    fit_intercept: bool = True
    intercept_offset: float = 0.0


def block_direction(Psi: torch.Tensor, G: torch.Tensor, config: DSGConfig) -> torch.Tensor:
    """``Ψᵀ G / b``, or ``(ΨᵀΨ/b + εI)⁻¹ Ψᵀ G / b`` when preconditioning. ``(r, C)``.

    With fewer rows than features (``b < r``) the same direction is computed in the ``b × b``
    form ``Ψᵀ (ΨΨᵀ/b + εI)⁻¹ G / b`` (push-through identity): ``O(b²r + b³)`` instead of
    ``O(br² + r³)``. Gram matrices go to reusable buffers; the solve is float64; on CPU the Gram
    is a BLAS SYRK and the factor LAPACK in place (:mod:`kernelstream.ops.precond`).
    """
    if not config.precondition:
        return transposed_matmul(Psi, G) / Psi.shape[0]  # (r, C)
    return precond_direction(Psi, G, config.precond_eps)


def dsg_step(expansion: Expansion, loss: Loss, X: torch.Tensor, y: torch.Tensor,
             weight: torch.Tensor, config: DSGConfig) -> float:
    """One doubly stochastic step on the batch; returns the batch's weighted mean loss.

    ``y`` is ``(b, C)`` for regression and margin losses, ``(b,)`` class indices for softmax.
    """
    u = expansion.decision(X)  # (b, C), current iterate
    if not torch.isfinite(u).all():
        raise FloatingPointError(_divergence_message(expansion, X, config))
    G = loss.derivative(u, y) * weight[:, None]  # (b, C)
    gamma = config.schedule(expansion.step + 1)
    if config.precondition:
        gamma *= loss.step_scale  # Gauss–Newton scaling: 1 / (curvature bound of the loss)
    block = expansion.next_block()
    r = expansion.feature_map.block_size
    Psi = expansion.block_features(X, block, out=scratch("psi", (X.shape[0], r), X.dtype, X.device))  # (b, r)
    delta = -gamma * block_direction(Psi, G, config)  # a_t
    intercept_delta = (-gamma * (G.mean(dim=0) + config.intercept_offset) if config.fit_intercept
                       else torch.zeros_like(G[0]))
    if not (torch.isfinite(delta).all() and torch.isfinite(intercept_delta).all()):
        raise FloatingPointError(_divergence_message(expansion, X, config))
    expansion.apply_step(block, delta, 1.0 / (1.0 + gamma * config.alpha), intercept_delta)
    value = loss.value(u, y)
    return float((value.reshape(X.shape[0], -1) * weight[:, None]).mean())


def _divergence_message(expansion: Expansion, X: torch.Tensor, config: DSGConfig) -> str:
    """Why a step produced non-finite numbers, and what to change."""
    where = f"Training diverged at step {expansion.step + 1} (non-finite outputs)"
    largest = float(X.abs().max()) if X.numel() else 0.0
    if not math.isfinite(largest) or largest > 1e15:
        return (f"{where}: X has values up to {largest:.3g}, too large for the kernel's features "
                "in this dtype. Standardise the inputs (sklearn.preprocessing.StandardScaler).")
    if config.precondition:
        return f"{where} with the block preconditioner on; lower eta0 or raise precond_eps."
    return f"{where}; lower eta0 or set precondition=True."


def run_dsg(expansion: Expansion, loss: Loss, batches: Iterable, config: DSGConfig,
            callback: Callable[[int, float], None] | None = None) -> None:
    """Algorithm 1 over an iterable of ``(X, y, weight)`` tensor batches."""
    for X, y, weight in batches:
        batch_loss = dsg_step(expansion, loss, X, y, weight, config)
        if callback is not None:
            callback(expansion.step, batch_loss)
