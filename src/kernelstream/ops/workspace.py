"""Reusable scratch buffers for the hot loop.

Allocating a fresh multi-megabyte tensor per step costs page faults (measured 2–3 s per GiB on
the development VM), more than the arithmetic it holds. :func:`scratch` hands out views of one
flat buffer per ``(name, device, dtype)`` and thread, grown on demand and never shrunk; callers
must finish with a view before asking for the same name again.
"""

from __future__ import annotations

import math
import threading

import torch

__all__ = ["scratch", "release"]

_local = threading.local()


def _buffers() -> dict:
    if not hasattr(_local, "buffers"):
        _local.buffers = {}
    return _local.buffers


def scratch(name: str, shape: tuple[int, ...], dtype: torch.dtype, device) -> torch.Tensor:
    """A contiguous ``shape`` view of the reusable buffer ``name`` (contents undefined)."""
    device = torch.device(device)
    key = (name, device, dtype)
    n = math.prod(shape)
    buf = _buffers().get(key)
    if buf is None or buf.numel() < n:
        buf = torch.empty(max(n, 1), dtype=dtype, device=device)
        _buffers()[key] = buf
    return buf[:n].view(shape)


def release() -> None:
    """Free every scratch buffer of the calling thread."""
    _buffers().clear()
