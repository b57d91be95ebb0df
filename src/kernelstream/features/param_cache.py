"""The cache of drawn block parameters that a feature map keeps under a byte budget.

Parameters are a pure function of ``(seed, block)``, so the cache only saves draws. Its policy is a
*pinned prefix*: blocks are kept in index order until the budget is spent and regenerated beyond
it. Training and prediction scan blocks ``0..t−1`` cyclically, on which LRU misses on every
access once the scan outgrows the budget; the prefix hits on a fixed ``budget / block bytes``.
"""

from __future__ import annotations

from typing import Callable, Iterator

import torch

from ..ops.workspace import scratch

__all__ = ["ParamCache", "Slab"]

#: ``draw(block, device)``: the float64 parameters of one block
Draw = Callable[[int, torch.device], torch.Tensor]


class Slab:
    """Parameters of blocks ``0..n−1`` side by side, ``(rows, capacity·h)``, at most ``limit`` blocks."""

    def __init__(self, rows: int, h: int, limit: int, dtype: torch.dtype, device: torch.device):
        self.rows, self.h, self.limit, self.n = rows, h, limit, 0
        self.device = device
        self.tensor = torch.empty((rows, 0), dtype=dtype, device=device)

    def capacity(self) -> int:
        return self.tensor.shape[1] // self.h

    def nbytes(self) -> int:
        return self.tensor.numel() * self.tensor.element_size()

    def reserve(self, n_blocks: int) -> None:
        if n_blocks <= self.capacity():
            return
        capacity = min(self.limit, max(n_blocks, 2 * self.capacity()))  # doubling, capped
        grown = torch.empty((self.rows, capacity * self.h), dtype=self.tensor.dtype, device=self.device)
        grown[:, : self.n * self.h] = self.tensor[:, : self.n * self.h]
        self.tensor = grown

    def view(self, j0: int, j1: int) -> torch.Tensor:
        """Parameters of the cached blocks ``j0..j1−1``, side by side (a view)."""
        return self.tensor[:, j0 * self.h : j1 * self.h]


class ParamCache:
    """Drawn block parameters of one feature map, at most ``budget`` bytes in all.

    Entries are single blocks keyed by ``(block, device, dtype)`` (:meth:`block`) or, for the
    Fourier families' fused path, one :class:`Slab` per ``(device, dtype)`` (:meth:`slab`).
    """

    def __init__(self, budget: int) -> None:
        self.budget = int(budget)
        self.entries: dict[tuple, torch.Tensor | Slab] = {}
        self.nbytes = 0

    def block(self, block: int, device: torch.device, dtype: torch.dtype, draw: Draw) -> torch.Tensor:
        """One block's parameters in ``dtype``, drawn and kept while the budget allows."""
        key = (block, device, dtype)
        params = self.entries.get(key)
        if params is None:
            params = draw(block, device).to(dtype)
            size = params.numel() * params.element_size()
            if self.nbytes + size <= self.budget:
                self.entries[key] = params
                self.nbytes += size
        return params

    def slab(self, rows: int, h: int, device: torch.device, dtype: torch.dtype) -> Slab:
        """The slab of ``(rows, h)`` blocks on ``(device, dtype)``, sized by the budget left."""
        key = ("slab", device, dtype)
        slab = self.entries.get(key)
        if slab is None:
            limit = max(0, (self.budget - self.nbytes) // (rows * h * dtype.itemsize))
            slab = self.entries[key] = Slab(rows, h, limit, dtype, device)
        return slab

    def extend(self, slab: Slab, n_blocks: int, draw: Draw) -> None:
        """Draw blocks ``slab.n .. n_blocks−1`` into ``slab`` (as far as its limit allows)."""
        target = min(n_blocks, slab.limit)
        if target <= slab.n:
            return
        before = slab.nbytes()
        slab.reserve(target)
        for j in range(slab.n, target):
            slab.view(j, j + 1).copy_(draw(j, slab.device))
        slab.n = target
        self.nbytes += slab.nbytes() - before

    def groups(self, slab: Slab, J: int, k: int, draw: Draw) -> Iterator[tuple[int, int, torch.Tensor]]:
        """Runs ``(j0, j1, W)`` of at most ``k`` of the blocks ``0..J−1``: slab views for the cached
        prefix, regenerated into a scratch buffer beyond it."""
        self.extend(slab, J, draw)
        for j0 in range(0, min(J, slab.n), k):
            j1 = min(j0 + k, slab.n, J)
            yield j0, j1, slab.view(j0, j1)
        for j0 in range(slab.n, J, k):  # beyond the budget: regenerate
            j1 = min(j0 + k, J)
            W = scratch("regenerated", (slab.rows, (j1 - j0) * slab.h), slab.tensor.dtype, slab.device)
            for j in range(j0, j1):
                W[:, (j - j0) * slab.h : (j - j0 + 1) * slab.h].copy_(draw(j, slab.device))
            yield j0, j1, W

    def n_blocks(self) -> int:
        """Number of cached blocks, over every device and dtype."""
        return sum(entry.n if isinstance(entry, Slab) else 1 for entry in self.entries.values())

    def clear(self) -> None:
        self.entries.clear()
        self.nbytes = 0
