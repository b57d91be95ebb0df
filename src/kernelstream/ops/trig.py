"""``cos`` and ``sin`` into an output, on the faster backend for the tensor and the threads.

On one CPU thread in float32, NumPy's SIMD loops take 0.8 ns an element where torch's take 1.7
(AVX-512, a ``(2048, 512)`` block; record: docs/decisions/cpu-trig.md): the Fourier features'
``cos``/``sin`` are half the feature time of a low-dimensional set. Everywhere else (CUDA,
float64, where NumPy's loops are scalar, or several torch threads, which split torch's loop)
torch computes them. Both are accurate to a few units in the last place.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["cos_into", "sin_into"]


def _numpy_faster(Z: torch.Tensor) -> bool:
    return (Z.device.type == "cpu" and Z.dtype == torch.float32 and not Z.requires_grad
            and torch.get_num_threads() == 1)


def cos_into(Z: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out = cos Z`` (``out`` may be ``Z`` or a strided view of the same shape)."""
    if _numpy_faster(Z):
        np.cos(Z.numpy(), out=out.numpy())
        return out
    return torch.cos(Z, out=out)


def sin_into(Z: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out = sin Z`` (``out`` may be ``Z`` or a strided view of the same shape)."""
    if _numpy_faster(Z):
        np.sin(Z.numpy(), out=out.numpy())
        return out
    return torch.sin(Z, out=out)
