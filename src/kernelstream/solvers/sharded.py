"""Rows held by ranks: the data operator of a fit whose training rows are split over processes.

Under ``torch.distributed`` every rank holds its shard of the rows. :class:`ShardedRows` is the
rows of one global order (a view: the rows ``index`` of another view, no data moved) of which
this rank holds some; :class:`ShardedCache` is the fit engine's data operator
(:class:`~.operator.DataOperator`) on them: each rank caches its own rows' features, and every
product is this rank's share summed over ranks (``Φ̃ᵀU``, ``Φ̃ᵀWΦ̃θ``: one all-reduce of a
``(D+1)×C`` block; ``Φ̃θ``: of an ``n×C`` one, each rank writing its rows). The rows a stage
needs whole (the subsample's, the sketch's, the calibration's) are gathered to every rank by
:meth:`ShardedRows.gathered`. Every rank runs the same engine on the same sums, so every
decision (the growth, the bandwidth's challenges) is the same on every rank.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from .cached import FeatureCache, grown_gram, restricted
from .regenerated import RegeneratedFeatures
from .streams import subset

__all__ = ["ShardedRows", "HostRows", "ShardedCache", "feature_operator", "gathered", "host_rows", "nearby",
           "rows_at", "rows_like"]


class ShardedRows:
    """``n`` rows of one global order, of which this rank holds ``local`` at the positions
    ``owned`` (ascending; the rows of ``local`` in that order), the others on other ranks.

    ``local`` is any row container the solvers take (a tensor, :class:`~.streams.SparseRows`,
    :class:`~kernelstream.ops.sparse.CSRRows`, or before conversion a NumPy or SciPy matrix).
    """

    def __init__(self, local, owned: torch.Tensor, n_rows: int, comm):
        self.local, self.owned, self.comm = local, owned, comm
        self.n_rows = int(n_rows)
        self._local_of, self._turn = None, 0

    @classmethod
    def of_shards(cls, local, comm) -> "ShardedRows":
        """Every rank's ``local`` rows in rank order (rank 0's first): the global order."""
        counts = comm.gather_objects(int(local.shape[0]))
        first = sum(counts[:comm.rank])
        return cls(local, torch.arange(first, first + counts[comm.rank]), sum(counts), comm)

    # -- the interface of rows ----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.local.shape[1])

    @property
    def dtype(self):
        return self.local.dtype

    @property
    def device(self) -> torch.device:
        return getattr(self.local, "device", torch.device("cpu"))

    @property
    def sparse(self) -> bool:
        """Whether the rows are a sparse matrix (the plan's ``DataShape.sparse``)."""
        return sp.issparse(self.local) or hasattr(self.local, "matrix")

    def __len__(self) -> int:
        return self.n_rows

    def mapped(self, convert) -> "ShardedRows":
        """The same rows with ``local`` converted by ``convert`` (validation, to tensors)."""
        return ShardedRows(convert(self.local), self.owned, self.n_rows, self.comm)

    def local_of(self) -> torch.Tensor:
        """``(n,)``: each position's row in ``local``, ``-1`` where another rank holds it."""
        if self._local_of is None:
            self._local_of = torch.full((self.n_rows,), -1, dtype=torch.long)
            self._local_of[self.owned] = torch.arange(len(self.owned))
        return self._local_of

    def subset(self, index) -> "ShardedRows":
        """The rows at ``index`` (positions of this view), as a view: nothing moves."""
        index = torch.as_tensor(index, dtype=torch.long).cpu()
        where = self.local_of()[index]
        mine = torch.nonzero(where >= 0).reshape(-1)
        return ShardedRows(rows_at(self.local, where[mine]), mine, len(index), self.comm)

    __getitem__ = subset

    def on_host(self) -> "HostRows":
        """These rows as the median heuristic reads them: indexing gathers NumPy or SciPy rows."""
        return HostRows(self)

    def whole(self):
        """Every row of the view on every rank as a NumPy or SciPy matrix (collective)."""
        return host_rows(self.gathered())

    def gathered(self):
        """Every row of the view on every rank, in its order, in ``local``'s container
        (collective: every rank calls it)."""
        parts = self.comm.gather_objects((self.owned.numpy(), host_rows(self.local)))
        order = np.concatenate([owned for owned, _ in parts])
        blocks = [block for _, block in parts]
        stacked = sp.vstack(blocks, format="csr") if sp.issparse(blocks[0]) else np.concatenate(blocks)
        rows = stacked[np.argsort(order, kind="stable")]
        return rows_like(self.local, rows)

    @property
    def width(self) -> int:
        """How many items :meth:`spread` evaluates at once: one a rank."""
        return self.comm.world_size

    def spread(self, evaluate, items: list) -> list:
        """Every item's ``evaluate(item)`` on every rank, in order, dealt over the ranks in
        turn across calls (collective; an error on one rank stops every rank)."""
        rank, ranks, turn = self.comm.rank, self.comm.world_size, self._turn
        self._turn += len(items)
        try:
            mine = {i: evaluate(item) for i, item in enumerate(items) if (turn + i) % ranks == rank}
        except Exception as error:  # noqa: BLE001 — every rank hears of it
            self.comm.fail(error)
        results = {}
        for part in self.comm.gather_objects(mine):
            results.update(part)
        return [results[i] for i in range(len(items))]

    def feature_operator(self, feature_map, budget: int | None = None,
                         storage: torch.dtype | None = None, regenerate: bool = False) -> "ShardedCache":
        """The fit engine's operator on these rows (:class:`ShardedCache`)."""
        return ShardedCache(feature_operator(feature_map, self.local, budget, storage, regenerate), self)


class HostRows:
    """:class:`ShardedRows` whose indexing gathers the rows asked for to every rank as NumPy
    or SciPy rows (:func:`~kernelstream.features.bandwidth.median_distance` reads a sample)."""

    def __init__(self, rows: ShardedRows):
        self.rows, self.shape = rows, rows.shape

    def __getitem__(self, index):
        return host_rows(self.rows.subset(index).gathered())


class ShardedCache:
    """The data operator of :class:`ShardedRows`: ``local`` (a :class:`~.cached.FeatureCache` of
    this rank's rows) answers for them; each product is the ranks' shares summed."""

    #: :meth:`rows` reads the cached features
    reads_rows = True

    def __init__(self, local: FeatureCache, rows: ShardedRows):
        self.local, self.X = local, rows
        self.comm, self.n_rows = rows.comm, rows.n_rows
        self._sketch_gram: tuple | None = None  # (rows, precise, blocks counted, ΨΨᵀ)
        self._sketch_psi: tuple | None = None  # (rows, blocks, Ψ): the last rows gathered

    # -- what the engine reads of a cache ------------------------------------------------
    feature_map = property(lambda self: self.local.feature_map)
    n_blocks = property(lambda self: self.local.n_blocks)
    n_features = property(lambda self: self.local.n_features)
    storage = property(lambda self: self.local.storage)
    budget = property(lambda self: self.local.budget)
    nbytes = property(lambda self: self.local.nbytes)
    passes = property(lambda self: self.local.passes)

    def _sum(self, tensor: torch.Tensor) -> torch.Tensor:
        return self.comm.checked_sum(tensor)[0]

    def _spread(self, local: torch.Tensor, n: int) -> torch.Tensor:
        """The ``(n, ·)`` rows of every rank from this rank's ``local`` at its positions."""
        out = local.new_zeros((n, *local.shape[1:]))
        out[self.X.owned.to(local.device)] = local
        return self._sum(out)

    def matmul(self, theta: torch.Tensor) -> torch.Tensor:
        return self._spread(self.local.matmul(theta), self.n_rows)

    def rmatmul(self, U: torch.Tensor) -> torch.Tensor:
        return self._sum(self.local.rmatmul(U[self.X.owned.to(U.device)]).contiguous())

    def normal_matmul(self, theta: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return self._sum(self.local.normal_matmul(theta, w[self.X.owned.to(w.device)]).contiguous())

    def _gathered_columns(self, index: torch.Tensor, first: int = 0) -> torch.Tensor:
        """``Ψ`` of the rows ``index`` from feature ``first`` on, every rank's rows summed in
        (the last rows gathered at this size are kept: a preconditioner's ``Ψ`` then its Gram
        cost one all-reduce)."""
        memo = self._sketch_psi
        if (memo is not None and memo[1] == self.n_blocks and len(memo[0]) == len(index)
                and torch.equal(memo[0], index)):
            return memo[2][:, first:]
        where = self.X.local_of()[index.cpu()]
        mine = torch.nonzero(where >= 0).reshape(-1)
        out = torch.zeros((len(index), self.n_features - first), dtype=self.local.X.dtype,
                          device=index.device)
        if len(mine):
            out[mine.to(index.device)] = self.local.psi(where[mine].to(index.device))[:, first:]
        out = self._sum(out)
        if first == 0:
            self._sketch_psi = (index, self.n_blocks, out)
        return out

    def psi(self, index: torch.Tensor) -> torch.Tensor:
        return self._gathered_columns(index).clone()  # callers scale it in place

    def rows(self, index: torch.Tensor) -> torch.Tensor:
        return self.psi(index) * self.n_blocks**-0.5

    def gram(self, index: torch.Tensor, precise: bool = False) -> torch.Tensor:
        """``ΨΨᵀ`` of the rows ``index``; across doubling sizes only the new blocks' columns
        are gathered and added (as :meth:`FeatureCache.gram`)."""
        gram, self._sketch_gram = grown_gram(
            self._sketch_gram, index, precise, self.n_blocks,
            lambda counted: self._gathered_columns(index, counted * self.feature_map.block_size))
        return gram

    # -- growth and other rows -----------------------------------------------------------
    regenerates = property(lambda self: getattr(self.local, "regenerates", False))

    def for_rows(self, X: ShardedRows, once: bool = False) -> "ShardedCache":
        return ShardedCache(self.local.for_rows(X.local, once), X)

    def fits(self, n_blocks: int) -> bool:
        """Whether every rank's rows hold ``n_blocks`` blocks within its budget."""
        refused = torch.tensor([0.0 if self.local.fits(n_blocks) else 1.0], dtype=torch.float64)
        return float(self._sum(refused)) == 0.0

    def grow(self, n_blocks: int) -> None:
        self.local.grow(n_blocks)

    def redraw(self, feature_map) -> None:
        self.local.redraw(feature_map)
        self._sketch_gram = self._sketch_psi = None

    def first_blocks(self, n_blocks: int) -> "ShardedCache":
        return self if n_blocks == self.n_blocks else ShardedCache(self.local.first_blocks(n_blocks), self.X)

    def extended(self, theta: torch.Tensor, n_blocks: int) -> torch.Tensor:
        return self.local.extended(theta, n_blocks)

    def fitted(self, theta: torch.Tensor, cache_bytes: int | None = None) -> tuple:
        return self.local.fitted(theta, cache_bytes)

    def restricted(self, index: torch.Tensor) -> "ShardedCache":
        """The rows ``index`` alone (Newton's active rows), their cached columns copied."""
        view = self.X.subset(index)
        where = self.X.local_of()[torch.as_tensor(index).cpu()]
        mine = where[where >= 0].to(index.device)
        return ShardedCache(restricted(self.local, mine), view)


def feature_operator(feature_map, X, budget: int | None = None, storage: torch.dtype | None = None,
                     regenerate: bool = False):
    """The fit engine's data operator on the rows ``X``: a :class:`~.cached.FeatureCache`
    (``regenerate``: :class:`~.regenerated.RegeneratedFeatures`, features drawn every pass),
    or for rows held by ranks (:class:`ShardedRows`) a :class:`ShardedCache` of them."""
    if isinstance(X, ShardedRows):
        return X.feature_operator(feature_map, budget, storage, regenerate)
    if regenerate:
        return RegeneratedFeatures(feature_map, X, budget)
    return FeatureCache(feature_map, X, budget, storage)


def gathered(X):
    """``X`` whole on this rank: rows held by ranks gathered, any other rows as they are."""
    return X.gathered() if isinstance(X, ShardedRows) else X


def nearby(X):
    """``X`` where a stage of a bounded number of rows (the narrowing's) computes fastest:
    rows whose every product is a remote call (``X.remote``: Dask's actors, a round trip of
    7 ms for four blocks on this 2-core machine) gathered into this process; any other rows
    (ranks': collectives of microseconds) as they are."""
    return X.gathered() if getattr(X, "remote", False) else X


def rows_at(local, index: torch.Tensor):
    """Rows ``index`` of a container of rows, of the same kind."""
    if sp.issparse(local) or isinstance(local, np.ndarray):
        return local[index.numpy()]
    return subset(local, index.to(local.device) if isinstance(local, torch.Tensor) else index)


def host_rows(local):
    """``local``'s rows as a NumPy or SciPy matrix (to send to other ranks)."""
    if hasattr(local, "matrix"):
        return local.matrix
    return local.cpu().numpy() if isinstance(local, torch.Tensor) else local


def rows_like(local, rows):
    """NumPy or SciPy ``rows`` in the container kind of ``local``."""
    if hasattr(local, "matrix"):
        return type(local)(rows, local.dtype, local.device)
    if isinstance(local, torch.Tensor):
        return torch.as_tensor(rows, dtype=local.dtype, device=local.device)
    return rows
