"""Rows of a block's i.i.d. draws, drawn alone: what sparse input needs of ``W``.

``rng.normal((d, h), seed, block, stream)`` puts number ``i·h + k`` at row ``i``, column ``k``,
and number ``p`` comes from Philox call ``p // 4`` (four uniforms, two Box–Muller pairs), so
row ``i`` is a function of calls ``⌊i·h/4⌋ .. ⌊(i·h + h − 1)/4⌋`` alone. :func:`normal_rows` and
:func:`cauchy_rows` evaluate only those calls for the rows asked for, ``O(rows·h)`` instead of
``O(d·h)``, and give the numbers of the full draw: the same words, and the same float64 ops
(``log`` on the same strided view; ``cos``, ``sin`` and ``tan`` on buffers padded to whole
SIMD chunks, as the full draw computes all but its last few numbers).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import rng

__all__ = ["normal_rows", "cauchy_rows"]

#: Philox calls evaluated at a time (the temporaries stay in cache; measured 4x faster than
#: one pass over 10^6 calls)
_PIECE_CALLS = 2**14
#: elementwise buffers are padded to a multiple of this many numbers
_SIMD_PAD = 64


def _uniform_windows(columns: np.ndarray, h: int, seed: int, block: int, stream: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(U, start)``: ``U[i]`` the uniforms of the Philox calls that cover row ``columns[i]``
    (``(m, 4k)``, float64), ``start[i]`` the position of the row's first number in ``U[i]``."""
    first = columns * h // 4
    k = (h + 3) // 4 + 1  # calls that cover h numbers from any offset
    calls = (first[:, None] + np.arange(k)[None, :]).reshape(-1)
    key, c1, c2 = rng._split_seed(seed), block & rng._MASK32, (block >> 32) & rng._MASK32
    words = rng._philox4x32_numpy(calls, c1, c2, stream, key).view(np.int64)
    U = (torch.from_numpy(words).to(torch.float64) + 0.5) * 2.0**-32  # (u + ½) / 2^32
    return U.reshape(len(columns), 4 * k), torch.from_numpy(columns * h - 4 * first)


def _padded(values: torch.Tensor) -> torch.Tensor:
    """``values`` flat, followed by ½s up to a multiple of ``_SIMD_PAD`` numbers."""
    flat = values.reshape(-1)
    return torch.cat([flat, flat.new_full(((-flat.numel()) % _SIMD_PAD,), 0.5)])


def _take(numbers: torch.Tensor, start: torch.Tensor, h: int) -> torch.Tensor:
    """The ``h`` numbers of each row from its ``start``: ``(m, h)``."""
    return numbers.gather(1, start[:, None] + torch.arange(h)[None, :])


def _normal_piece(columns: np.ndarray, h: int, seed: int, block: int, stream: int) -> torch.Tensor:
    U, start = _uniform_windows(columns, h, seed, block, stream)
    u = _padded(U).view(-1, 2)
    radius = torch.sqrt(-2.0 * torch.log(u[:, 0]))  # Box–Muller, as rng.normal
    angle = (2.0 * math.pi) * u[:, 1]
    out = torch.empty(2 * u.shape[0], dtype=torch.float64)
    pair = out.view(-1, 2)
    torch.mul(radius, torch.cos(angle), out=pair[:, 0])
    torch.mul(radius, torch.sin(angle), out=pair[:, 1])
    return _take(out[: U.numel()].view(U.shape), start, h)


def _cauchy_piece(columns: np.ndarray, h: int, seed: int, block: int, stream: int) -> torch.Tensor:
    U, start = _uniform_windows(columns, h, seed, block, stream)
    t = torch.tan(math.pi * (_padded(U) - 0.5))  # as rng.cauchy
    return _take(t[: U.numel()].view(U.shape), start, h)


def _rows(piece, columns, h: int, seed: int, block: int, stream: int, device) -> torch.Tensor:
    """``piece`` over the rows ``columns`` a few at a time, ``(m, h)`` float64 on ``device``."""
    columns = np.asarray(torch.as_tensor(columns).cpu(), dtype=np.int64)
    step = max(1, _PIECE_CALLS // (h // 4 + 2))
    out = torch.empty((len(columns), h), dtype=torch.float64)
    for i in range(0, len(columns), step):
        out[i : i + step] = piece(columns[i : i + step], h, seed, block, stream)
    return out.to(device)


def normal_rows(columns, h: int, seed: int, block: int, stream: int, device=None) -> torch.Tensor:
    """Rows ``columns`` of ``rng.normal((d, h), seed, block, stream)``, ``(m, h)`` float64."""
    return _rows(_normal_piece, columns, h, seed, block, stream, device)


def cauchy_rows(columns, h: int, seed: int, block: int, stream: int, device=None) -> torch.Tensor:
    """Rows ``columns`` of ``rng.cauchy((d, h), seed, block, stream)``, ``(m, h)`` float64."""
    return _rows(_cauchy_piece, columns, h, seed, block, stream, device)
