"""The one place that chooses how a Fourier expansion ``Σ_j ψ_j(X) c_j`` is evaluated.

Two backends compute the same sum: the torch ops of :mod:`.fourier` (every device and dtype) and
the fused Triton kernels of :mod:`.triton_fourier` (CUDA, float32, Gaussian i.i.d. paired blocks),
which draw the block parameters inside the kernel. Triton is opt-in: ``KERNELSTREAM_TRITON=1``;
it saves the parameters' memory, not time: on an H100 it ran at 2% of the torch path's speed
(every row tile redraws its frequencies in float64; ``benchmarks/results/gpu_roofline.md``).
Feature maps call :func:`fourier_contract_auto` and never read the environment themselves.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator

import torch

from .fourier import fourier_contract

__all__ = ["fourier_contract_auto", "triton_requested", "use_triton"]

#: ``groups(J, k)`` yields ``(j0, j1, W)``: the parameters of blocks ``j0..j1−1`` side by side
Groups = Callable[[int, int], Iterator[tuple[int, int, torch.Tensor]]]


def triton_requested() -> bool:
    """Whether the user opted in to the fused Triton kernels (``KERNELSTREAM_TRITON=1``)."""
    return os.environ.get("KERNELSTREAM_TRITON", "0") == "1"


def use_triton(X: torch.Tensor, feature_map) -> bool:
    """Whether ``Σ_j ψ_j(X) c_j`` for ``feature_map`` runs on the fused Triton kernels: opted in,
    ``X`` float32 on CUDA, and a map the kernels implement (Gaussian, i.i.d., paired)."""
    if not (X.is_cuda and X.dtype == torch.float32 and triton_requested()):
        return False
    from . import triton_fourier

    return triton_fourier.supports(feature_map)


def fourier_contract_auto(X: torch.Tensor, coef: torch.Tensor, feature_map, groups: Groups,
                          paired: bool, out: torch.Tensor | None = None) -> torch.Tensor:
    """``out + Σ_j ψ_j(X) coef_j`` (``coef`` is ``(J, r, C)``) on the backend :func:`use_triton`
    picks; ``groups`` supplies the block parameters to the torch path. O(n·J·r·d)."""
    if use_triton(X, feature_map):
        from . import triton_fourier

        result = triton_fourier.contract(X, coef, feature_map)  # no W in memory
        return result if out is None else out.add_(result)
    if out is None:
        out = torch.zeros((X.shape[0], coef.shape[2]), dtype=X.dtype, device=X.device)
    return fourier_contract(X, coef, groups, paired, out)
