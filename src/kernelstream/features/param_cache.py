"""The cache of drawn block parameters that a feature map keeps under a byte budget.

Parameters are a pure function of ``(seed, block)``, so the cache only saves draws. Its policy is a
*pinned prefix*: blocks are kept in index order until the budget is spent and regenerated beyond
it. Training and prediction scan blocks ``0..t−1`` cyclically, on which LRU misses on every
access once the scan outgrows the budget; the prefix hits on a fixed ``budget / block bytes``.

Sparse input needs only the rows of a block's ``(d, h)`` frequencies for the columns that occur
(:mod:`kernelstream.ops.sparse`). Those rows are kept in a :class:`RowTable` per block, drawn
the first time their column occurs, under a budget of their own (``KERNELSTREAM_SPARSE_CACHE_MB``,
256 MiB by default): a wide matrix's block can exceed the 32 MiB of whole blocks (40,000 columns
× 512 frequencies is 80 MB in float32), and drawing its rows again at every step would cost
more than all the rest of the step (a row of 512 normals takes ~20 µs, its products with a
non-zero ~1 µs). Beyond the budget a batch's missing rows are drawn for it alone.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Iterator

import torch

from ..ops.workspace import scratch

__all__ = ["ParamCache", "RowTable", "Slab", "DEFAULT_ROW_BYTES"]

#: budget of the rows of block parameters kept for sparse input, per feature map
DEFAULT_ROW_BYTES = int(float(os.environ.get("KERNELSTREAM_SPARSE_CACHE_MB", 256)) * 2**20)

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


class RowTable:
    """The rows of one block's ``(d, h)`` parameters drawn so far: row ``c`` is
    ``rows()[slot[c]]``, and ``slot[c] = −1`` while column ``c`` has not occurred."""

    def __init__(self, n_columns: int, h: int, dtype: torch.dtype, device: torch.device):
        self.slot = torch.full((n_columns,), -1, dtype=torch.int64, device=device)
        self.table = torch.empty((0, h), dtype=dtype, device=device)
        self.n = 0

    def rows(self) -> torch.Tensor:
        """The rows drawn, ``(n, h)``, in the order they were added."""
        return self.table[: self.n]


class ParamCache:
    """Drawn block parameters of one feature map, at most ``budget`` bytes in all, and the rows
    of blocks drawn for sparse input, at most ``row_budget`` bytes.

    Entries are single blocks keyed by ``(block, device, dtype)`` (:meth:`block`) or, for the
    Fourier families' fused path, one :class:`Slab` per ``(device, dtype)`` (:meth:`slab`);
    rows are kept in one :class:`RowTable` per ``(block, device, dtype)`` (:meth:`row_table`).
    """

    def __init__(self, budget: int, row_budget: int = DEFAULT_ROW_BYTES) -> None:
        self.budget = int(budget)
        self.entries: dict[tuple, torch.Tensor | Slab] = {}
        self.nbytes = 0
        self.row_budget = int(row_budget)
        self.row_tables: dict[tuple, RowTable] = {}
        self.row_nbytes = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

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
            with self._lock:
                return self._new_slab(key, rows, h, device, dtype)
        return slab

    def _new_slab(self, key: tuple, rows: int, h: int, device: torch.device, dtype: torch.dtype) -> Slab:
        slab = self.entries.get(key)
        if slab is None:
            limit = max(0, (self.budget - self.nbytes) // (rows * h * dtype.itemsize))
            slab = self.entries[key] = Slab(rows, h, limit, dtype, device)
        return slab

    def extend(self, slab: Slab, n_blocks: int, draw: Draw) -> None:
        """Draw blocks ``slab.n .. n_blocks−1`` into ``slab`` (as far as its limit allows), one
        thread at a time: a map shared by threads (Dask workers in one process) would otherwise
        see a slab grown but not yet written (random features that are not finite)."""
        target = min(n_blocks, slab.limit)
        if target <= slab.n:
            return
        with self._lock:
            if target > slab.n:
                self._extend(slab, target, draw)

    def _extend(self, slab: Slab, target: int, draw: Draw) -> None:
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

    def row_table(self, block: int, n_columns: int, h: int, device: torch.device,
                  dtype: torch.dtype) -> RowTable | None:
        """The row table of ``block`` on ``(device, dtype)``, made empty the first time; None
        when the row budget cannot hold even its column slots (8 bytes a column)."""
        key = (block, device, dtype)
        table = self.row_tables.get(key)
        if table is None:
            if self.row_nbytes + 8 * n_columns > self.row_budget:
                return None
            table = self.row_tables[key] = RowTable(n_columns, h, dtype, device)
            self.row_nbytes += 8 * n_columns
        return table

    def reserve_rows(self, table: RowTable, n_rows: int) -> bool:
        """Room in ``table`` for ``n_rows`` more rows (capacity doubled, capped by the columns
        and the row budget); False when the budget cannot hold them."""
        need, (capacity, h) = table.n + n_rows, table.table.shape
        if need <= capacity:
            return True
        row_bytes = h * table.table.element_size()
        room = capacity + (self.row_budget - self.row_nbytes) // row_bytes
        grown = min(table.slot.shape[0], max(need, 2 * capacity), room)
        if grown < need:
            return False
        larger = table.table.new_empty((grown, h))
        larger[: table.n] = table.table[: table.n]
        table.table = larger
        self.row_nbytes += (grown - capacity) * row_bytes
        return True

    def add_rows(self, table: RowTable, columns: torch.Tensor, rows: torch.Tensor) -> None:
        """Append ``rows`` (drawn for the new ``columns``) to ``table``, room reserved first."""
        start, stop = table.n, table.n + rows.shape[0]
        table.table[start:stop] = rows
        table.slot[columns] = torch.arange(start, stop, device=table.slot.device)
        table.n = stop

    def n_blocks(self) -> int:
        """Number of cached blocks, over every device and dtype."""
        return sum(entry.n if isinstance(entry, Slab) else 1 for entry in self.entries.values())

    def clear(self) -> None:
        self.entries.clear()
        self.nbytes = 0
        self.row_tables.clear()
        self.row_nbytes = 0
