"""Rows held by Dask workers: the fit engine's data operator with its products as tasks.

A Dask array (or DataFrame) passed to ``fit`` stays on the workers of the user's ``Client``:
the row blocks a worker computed are stacked in one actor (:class:`RowBlock`) on it, holding
them and the feature caches of their rows. :class:`DaskRows` is the rows of one global order
seen from the client, as :class:`~.sharded.ShardedRows` is under ``torch.distributed``;
:class:`DaskCache` is the engine's data operator on them: every product is one call a worker
(a round trip of about 7 ms for four calls on this 2-core machine, whatever the chunks), its
``(D+1)×C`` results summed (``Φ̃ᵀU``, ``Φ̃ᵀWΦ̃θ``) or its rows' outputs placed (``Φ̃θ``) on the
client. The rows a stage needs whole (the subsample's, the sketch's) and the narrowing's
bounded rows (:func:`~.sharded.nearby`) are fetched.
Requires the ``dask`` extra (``pip install 'kernelstream[dask]'``).
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
import torch

from ..distributed import Communicator
from .cached import FeatureCache, restricted
from .sharded import ShardedCache, ShardedRows, feature_operator, host_rows, rows_at, rows_like

__all__ = ["RowBlock", "DaskRows", "DaskCache", "is_dask_collection", "dask_rows"]

_KEYS = itertools.count()


def is_dask_collection(X) -> bool:
    """Whether ``X`` is a Dask array or DataFrame (without importing Dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


class RowBlock:
    """A Dask actor on a worker: the row blocks it holds, stacked, and the data operators of
    their views, by key."""

    def __init__(self, *blocks):
        self.rows = (blocks[0] if len(blocks) == 1 else sp.vstack(blocks, format="csr")
                     if sp.issparse(blocks[0]) else np.concatenate(blocks))
        self.operators = {}

    def convert(self, convert) -> None:
        """Replace the rows by ``convert(rows)`` (validation, the solvers' container)."""
        self.rows = convert(self.rows)

    def fetch(self, index: np.ndarray):
        """The rows ``index`` as NumPy or SciPy rows."""
        return host_rows(rows_at(self.rows, torch.as_tensor(index, dtype=torch.long)))

    def make(self, key: int, index: np.ndarray, feature_map, budget, storage, regenerate) -> None:
        rows = rows_at(self.rows, torch.as_tensor(index, dtype=torch.long))
        self.operators[key] = feature_operator(feature_map, rows, budget, storage, regenerate)

    def derive(self, key: int, new: int, method: str, *args) -> None:
        """Keep ``operators[key].method(*args)`` (a view: first blocks, restricted rows: the
        block's rows among a Newton step's active ones, :func:`~.cached.restricted`)."""
        operator = self.operators[key]
        self.operators[new] = (restricted(operator, *args) if method == "restricted"
                               else getattr(operator, method)(*args))

    def call(self, key: int, method: str, *args):
        return getattr(self.operators[key], method)(*args)

    def drop(self, key: int) -> None:
        self.operators.pop(key, None)


class DaskRows(ShardedRows):
    """``n`` rows in blocks held by :class:`RowBlock` actors; a view holds, for each block, the
    rows ``indices[b]`` of it at the view's positions ``positions[b]``. ``local``: a few of the
    rows on the client (the container kind and width the estimators read)."""

    def __init__(self, actors: list, indices: list, positions: list, n_rows: int, local,
                 workers: list | None = None):
        super().__init__(local, torch.arange(0), n_rows, Communicator())
        self.actors, self.indices, self.positions = actors, indices, positions
        self.workers = workers or []  # the actors' workers' addresses
        self._owners = None

    @property
    def width(self) -> int:
        """How many items :meth:`spread` evaluates at once: one a worker."""
        return max(1, len(self.workers))

    def spread(self, evaluate, items: list) -> list:
        """Every item's ``evaluate(item)``, in order, each a task on the actors' workers in
        turn (the subsample's bandwidths, the narrowing's: their bounded rows travel with the
        task, the client waits)."""
        if len(items) < 2 or len(self.workers) < 2:
            return [evaluate(item) for item in items]
        from distributed import get_client

        client = get_client()
        futures = [client.submit(evaluate, item, workers=[self.workers[i % len(self.workers)]],
                                 pure=False) for i, item in enumerate(items)]
        return client.gather(futures)

    #: every product a call to the workers (:func:`~.sharded.nearby`)
    remote = True

    @classmethod
    def of_collection(cls, X, client) -> "DaskRows":
        """The row blocks of a Dask array or DataFrame, each put in an actor on the worker
        that computes it."""
        array = X.to_dask_array(lengths=True) if hasattr(X, "to_dask_array") else X
        if array.ndim != 2:
            raise ValueError(f"X must be 2-D; the Dask array has shape {array.shape}.")
        from distributed import wait

        array = array.rechunk({1: -1})
        blocks = client.compute(list(array.to_delayed().ravel()))
        wait(blocks)
        starts = np.cumsum([0, *(int(s) for s in array.chunks[0])])
        holders = client.who_has(blocks)
        by_worker: dict = {}  # one actor a worker, its blocks stacked: a pass is one call a worker
        for b, block in enumerate(blocks):
            by_worker.setdefault(sorted(holders[block.key])[0], []).append(b)
        actors = [client.submit(RowBlock, *(blocks[b] for b in held), actor=True, workers=[worker],
                                pure=False) for worker, held in by_worker.items()]
        actors = [actor.result() for actor in actors]
        positions = [np.concatenate([np.arange(starts[b], starts[b + 1]) for b in held])
                     for held in by_worker.values()]
        head = actors[0].fetch(np.arange(min(len(positions[0]), 64))).result()
        return cls(actors, [np.arange(len(at)) for at in positions], positions, int(starts[-1]), head,
                   list(by_worker))

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.local) or hasattr(self.local, "matrix")

    def mapped(self, convert) -> "DaskRows":
        """``convert`` applied to every block on its worker (and to the client's few rows)."""
        local = convert(self.local)
        for future in [actor.convert(convert) for actor in self.actors]:
            future.result()
        return DaskRows(self.actors, self.indices, self.positions, self.n_rows, local, self.workers)

    def owners(self) -> tuple[np.ndarray, np.ndarray]:
        """``(block, place)`` of each position of the view: its block and its place among the
        view's rows of that block (the row of that block's operators)."""
        if self._owners is None:
            block = np.empty(self.n_rows, dtype=np.int64)
            place = np.empty(self.n_rows, dtype=np.int64)
            for b, at in enumerate(self.positions):
                block[at], place[at] = b, np.arange(len(at))
            self._owners = (block, place)
        return self._owners

    def split(self, index) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each block, ``(places of the positions index of it, where they are in index)``."""
        index = np.asarray(torch.as_tensor(index, dtype=torch.long).cpu())
        block, place = self.owners()
        of = block[index]
        return [(place[index[of == b]], np.flatnonzero(of == b)) for b in range(len(self.actors))]

    def subset(self, index) -> "DaskRows":
        parts = self.split(index)
        return DaskRows(self.actors, [rows[places] for rows, (places, _) in zip(self.indices, parts)],
                        [at for _, at in parts], len(np.atleast_1d(np.asarray(
                            torch.as_tensor(index).cpu()))), self.local, self.workers)

    __getitem__ = subset

    def gathered(self):
        futures = [actor.fetch(rows) for actor, rows in zip(self.actors, self.indices)]
        parts = [future.result() for future in futures]
        stacked = sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(parts)
        order = np.concatenate(self.positions)
        return rows_like(self.local, stacked[np.argsort(order, kind="stable")])

    def feature_operator(self, feature_map, budget=None, storage=None, regenerate: bool = False):
        key = next(_KEYS)
        for future in [actor.make(key, rows, feature_map, budget, storage, regenerate)
                       for actor, rows in zip(self.actors, self.indices)]:
            future.result()
        return DaskCache(key, self, feature_map, budget, storage)


class DaskCache(ShardedCache):
    """The data operator of :class:`DaskRows`: the operators ``key`` of the blocks' actors
    answer for their rows; the client places or sums their results."""

    def __init__(self, key: int, rows: DaskRows, feature_map, budget, storage, n_blocks: int = 0):
        self.key, self.X, self.n_rows = key, rows, rows.n_rows
        self._map, self._budget, self._n_blocks = feature_map, budget, n_blocks
        self._storage = rows.local.dtype if storage is None else storage
        self._sketch_gram = self._sketch_psi = None
        self._passes = [0]

    feature_map = property(lambda self: self._map)
    n_blocks = property(lambda self: self._n_blocks)
    n_features = property(lambda self: self._n_blocks * self._map.block_size)
    storage = property(lambda self: self._storage)
    budget = property(lambda self: self._budget)
    nbytes = property(lambda self: 0)
    passes = property(lambda self: self._passes[0])
    regenerates = False

    def _calls(self, method: str, *per_block) -> list:
        """``method`` on every block's operator, block ``b`` given ``per_block[i][b]``."""
        futures = [actor.call(self.key, method, *(arg[b] for arg in per_block))
                   for b, actor in enumerate(self.X.actors)]
        return [future.result() for future in futures]

    def _same(self, value) -> list:
        return [value] * len(self.X.actors)

    def _sliced(self, tensor: torch.Tensor) -> list:
        return [tensor[torch.as_tensor(at, dtype=torch.long)] for at in self.X.positions]

    def matmul(self, theta: torch.Tensor) -> torch.Tensor:
        self._passes[0] += 1
        out = torch.zeros((self.n_rows, theta.shape[1]), dtype=torch.float64)
        for at, part in zip(self.X.positions, self._calls("matmul", self._same(theta))):
            out[torch.as_tensor(at, dtype=torch.long)] = part
        return out

    def rmatmul(self, U: torch.Tensor) -> torch.Tensor:
        self._passes[0] += 1
        return sum(self._calls("rmatmul", self._sliced(U)))

    def normal_matmul(self, theta: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        self._passes[0] += 1
        return sum(self._calls("normal_matmul", self._same(theta), self._sliced(w)))

    def _gathered_columns(self, index: torch.Tensor, first: int = 0) -> torch.Tensor:
        memo = self._sketch_psi
        if (memo is not None and memo[1] == self.n_blocks and len(memo[0]) == len(index)
                and torch.equal(memo[0], index)):
            return memo[2][:, first:]
        parts = self.X.split(index)
        futures = [actor.call(self.key, "psi", torch.as_tensor(places, dtype=torch.long))
                   if len(places) else None for actor, (places, _) in zip(self.X.actors, parts)]
        out = torch.zeros((len(index), self.n_features), dtype=self.X.local.dtype)
        for (_, at), future in zip(parts, futures):
            if future is not None:
                out[torch.as_tensor(at, dtype=torch.long)] = future.result()
        self._sketch_psi = (index, self.n_blocks, out)
        return out[:, first:]

    def for_rows(self, X: DaskRows, once: bool = False) -> "DaskCache":
        key = next(_KEYS)
        for future in [actor.make(key, rows, self._map, None, None, once)  # once: drawn
                       for actor, rows in zip(X.actors, X.indices)]:
            future.result()
        cache = DaskCache(key, X, self._map, None, None)
        cache.grow(self.n_blocks) if self.n_blocks else None
        return cache

    def fits(self, n_blocks: int) -> bool:
        return all(self._calls("fits", self._same(n_blocks)))

    def grow(self, n_blocks: int) -> None:
        self._calls("grow", self._same(n_blocks))
        self._n_blocks = max(self._n_blocks, n_blocks)

    def redraw(self, feature_map) -> None:
        self._calls("redraw", self._same(feature_map))
        self._map, self._sketch_gram, self._sketch_psi = feature_map, None, None

    def _derived(self, rows: DaskRows, method: str, per_block: list) -> "DaskCache":
        key = next(_KEYS)
        for future in [actor.derive(self.key, key, method, arg)
                       for actor, arg in zip(self.X.actors, per_block)]:
            future.result()
        return DaskCache(key, rows, self._map, self._budget, self._storage, self._n_blocks)

    def first_blocks(self, n_blocks: int) -> "DaskCache":
        if n_blocks == self.n_blocks:
            return self
        view = self._derived(self.X, "first_blocks", self._same(n_blocks))
        view._n_blocks = n_blocks
        return view

    def extended(self, theta: torch.Tensor, n_blocks: int) -> torch.Tensor:
        return FeatureCache.extended(self, theta, n_blocks)

    def fitted(self, theta: torch.Tensor, cache_bytes: int | None = None) -> tuple:
        return self._map, theta

    def restricted(self, index: torch.Tensor) -> "DaskCache":
        local = [torch.as_tensor(places, dtype=torch.long) for places, _ in self.X.split(index)]
        return self._derived(self.X.subset(index), "restricted", local)


def dask_rows(X):
    """``X`` (a Dask array or DataFrame) as :class:`DaskRows` on the current ``Client``."""
    try:
        from distributed import get_client
    except ImportError as error:  # pragma: no cover - the extra is absent
        raise ImportError("fit on a Dask collection needs the dask extra: "
                          "pip install 'kernelstream[dask]'") from error
    try:
        client = get_client()
    except ValueError as error:
        raise ValueError("fit on a Dask collection runs on a dask.distributed Client; create "
                         "one first (distributed.Client() or Client(LocalCluster(...))).") from error
    return DaskRows.of_collection(X, client)
