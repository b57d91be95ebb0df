"""What every reader shares: parts, shards, the shuffle buffer, chunks, the validation split, the
first pass and the seeded sample.

A source is cut into **parts**, the units a reader reads in one go (a byte range of a text file,
a Parquet row group, a range of array rows). An epoch reads this source's parts in an order
permuted from ``(seed, epoch, rank, world_size)``, pours their rows into a pool of about
``shuffle_buffer`` rows and, each time the pool is full, permutes it and emits the chunks that
fit in all but half of it; the other half waits and mixes with the next parts (a row stays
once more with probability 1/2). At the end the pool is permuted and emptied; only the
last chunk may be short. Every row of the source is emitted exactly once per epoch.

Subclasses implement ``n_features``, ``_plan(world_size)`` (the parts), ``_read(part)`` (its rows
as :class:`~kernelstream.data._blocks.Block` objects) and ``_locate(row_id)`` (the file and line
or row of a row, for error messages); ``_read_labels(part)`` may skip the features for the
first pass.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Iterable, Iterator, NamedTuple

import numpy as np
import scipy.sparse as sp

from ._blocks import Block, check_finite, concat_blocks

__all__ = ["Source", "Chunk", "Part", "Summary", "MAX_CLASSES", "LABEL_NAMES", "AUTO_LABEL",
           "default_label", "check_integer", "LabelSet"]

#: past this many distinct labels ``Summary.classes`` is None (a regression target)
MAX_CLASSES = 1000
#: column names taken as the label by ``label="auto"``, in this order (as the command line)
LABEL_NAMES = ("y", "label", "target")
#: the default ``label`` of the table readers: a column named as in ``LABEL_NAMES``, if any
AUTO_LABEL = "auto"
_GOLDEN = 0x9E3779B97F4A7C15  # splitmix64 increment
_MASK64 = (1 << 64) - 1


def default_label(names: list[str] | None) -> str | None:
    """The column ``label="auto"`` picks: the first of ``names`` that is ``y``, ``label`` or
    ``target`` (any case), else None (no label column; pass ``label=`` to name one).

    Examples
    --------
    >>> default_label(["x1", "x2", "Target"]), default_label(["a", "b"]), default_label(None)
    ('Target', None, None)
    """
    named = [name for name in names or [] if str(name).lower() in LABEL_NAMES]
    return named[0] if named else None


class Part(NamedTuple):
    """A unit of reading: rows or bytes ``[start, stop)`` of file ``file`` (row group ``group``)."""

    file: int
    start: int
    stop: int
    group: int = 0

    @property
    def size(self) -> int:
        return self.stop - self.start


class Chunk(NamedTuple):
    """Rows handed to a model: ``X`` (dense ``(n, d)`` array or CSR), ``y`` (``(n,)`` or None),
    ``sample_weight`` (``(n,)`` or None) and ``row_ids`` (stable int64 names of the rows)."""

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray | None
    sample_weight: np.ndarray | None
    row_ids: np.ndarray


@dataclass(frozen=True)
class Summary:
    """What a first pass finds: rows, features and classes.

    Attributes
    ----------
    n_rows : int
        Rows of this source (after any shard or split).
    n_features : int
        Columns of ``X`` (of the whole data set, shards agree).
    classes : ndarray or None
        Sorted distinct labels; None without labels or past ``MAX_CLASSES`` distinct labels.
    """

    n_rows: int
    n_features: int
    classes: np.ndarray | None


def check_integer(name: str, value, minimum: int) -> int:
    """``value`` as an int; a ValueError naming ``name`` if it is not an integer (a bool is not)
    of at least ``minimum``. Every reader checks its integer options with it."""
    if not isinstance(value, Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def _float_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64; got {dtype}.")
    return dtype


def unit_hash(row_ids: np.ndarray, seed: int) -> np.ndarray:
    """``u ∈ [0, 1)`` per row id: splitmix64's finaliser of ``row_id + (seed + 1)·φ``, top 53 bits.

    Examples
    --------
    >>> u = unit_hash(np.arange(100000), seed=0)
    >>> round(float((u < 0.1).mean()), 2)
    0.1
    """
    z = np.asarray(row_ids, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(((seed + 1) * _GOLDEN) & _MASK64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / 2.0**53


def assign_parts(parts: list[Part], world_size: int) -> list[int]:
    """The rank owning each part: largest parts first, each to the least loaded rank (ties to the
    lowest rank), so ranks get sizes within one part of each other. Deterministic."""
    loads = np.zeros(world_size)
    owner = [0] * len(parts)
    for index in sorted(range(len(parts)), key=lambda i: (-parts[i].size, i)):
        rank = int(np.argmin(loads))
        owner[index] = rank
        loads[rank] += parts[index].size
    return owner


class Source(ABC):
    """A data set read as a reproducible stream of shuffled chunks.

    Parameters
    ----------
    chunk_rows : int, default=2048
        Rows per chunk (the last chunk of an epoch may be shorter).
    shuffle_buffer : int, default=16384
        Rows mixed in memory (see the module docstring); at least ``chunk_rows`` are used. Peak
        memory is about ``shuffle_buffer`` rows plus one part.
    shuffle : bool, default=True
        Permute the parts and the rows; False reads the data in file order.
    seed : int, default=0
        Seeds the permutations together with the epoch (and the rank of a shard).
    dtype : {"float64", "float32"}, default="float64"
        dtype of ``X``.
    """

    def __init__(self, *, chunk_rows: int = 2048, shuffle_buffer: int = 16384,
                 shuffle: bool = True, seed: int = 0, dtype="float64"):
        self.chunk_rows = check_integer("chunk_rows", chunk_rows, 1)
        self.shuffle_buffer = check_integer("shuffle_buffer", shuffle_buffer, 0)
        self.seed = check_integer("seed", seed, 0)
        self.shuffle = bool(shuffle)
        self.dtype = _float_dtype(dtype)
        self.rank, self.world_size = 0, 1
        self._holdouts: tuple[tuple[float, int, bool], ...] = ()
        self._cache: dict = {}  # shared with shards and splits: what a first pass found

    # -- what a reader implements --------------------------------------------------------
    @property
    @abstractmethod
    def n_features(self) -> int:
        """Columns of ``X``."""

    @abstractmethod
    def _plan(self, world_size: int) -> list[Part]:
        """Every part of the whole data set, cut fine enough for ``world_size`` ranks."""

    @abstractmethod
    def _read(self, part: Part) -> Iterator[Block]:
        """The rows of ``part``, in file order."""

    @abstractmethod
    def _locate(self, row_id: int) -> str:
        """Where a row is, for messages: "file.csv, line 12"."""

    def _read_labels(self, part: Part) -> Iterator[Block]:
        """The rows of ``part`` for the first pass (readers may leave ``X`` out)."""
        return self._read(part)

    # -- public API ----------------------------------------------------------------------
    def chunks(self, epoch: int = 0) -> Iterator[Chunk]:
        """The chunks of one epoch: the same for the same ``(seed, epoch)``, in another order for
        another epoch. Every row of this source appears in exactly one chunk.

        Parameters
        ----------
        epoch : int, default=0

        Yields
        ------
        Chunk
            ``(X, y, sample_weight, row_ids)`` of ``chunk_rows`` rows (the last may be shorter).
        """
        rng = np.random.default_rng([self.seed, check_integer("epoch", epoch, 0), self.rank,
                                     self.world_size])
        parts = self._my_parts()
        if self.shuffle:
            parts = [parts[i] for i in rng.permutation(len(parts))]
        return self._rebatch(self._blocks(parts), rng)

    def __iter__(self) -> Iterator[Chunk]:
        return self.chunks(0)

    def shard(self, rank: int, world_size: int) -> "Source":
        """The part of the data that rank ``rank`` of ``world_size`` reads.

        Parts (byte ranges, row groups, row ranges) go to ranks by size, largest first to the
        least loaded rank; the shards are disjoint and together hold every row once, whatever
        the seed or epoch. Each shard shuffles its own rows from ``(seed, epoch, rank)``.

        **Global batches.** In data-parallel training, step t of an epoch takes the t-th chunk of
        every rank; the global batch is their union (up to ``world_size · chunk_rows`` rows) and
        the gradient is the row-weighted average of the ranks' gradients (an all-reduce of
        ``(Σ gradient, rows)``). Shards differ by up to one part in rows, so ranks run out of
        chunks at different steps: a rank with no chunk left joins the all-reduce with zero rows
        until every rank is done (or all ranks stop at the smallest count, dropping those rows).

        Parameters
        ----------
        rank : int
            This process's rank, ``0 <= rank < world_size``.
        world_size : int
            Number of ranks.

        Returns
        -------
        Source
            A copy of this source that reads only its shard.
        """
        world_size = check_integer("world_size", world_size, 1)
        rank = check_integer("rank", rank, 0)
        if rank >= world_size:
            raise ValueError(f"rank must be in [0, world_size); got rank={rank}, "
                             f"world_size={world_size}.")
        if self.world_size != 1:
            raise ValueError("This source is already a shard; shard the whole source instead.")
        shard = copy.copy(self)
        shard.rank, shard.world_size = rank, world_size
        return shard

    def split(self, validation_fraction: float, seed: int = 0) -> tuple["Source", "Source"]:
        """``(train, validation)``: row ``r`` is held out when ``hash(row_id_r, seed) <
        validation_fraction`` (splitmix64 of the row's stable id), so the split is the same on
        every rank, in every epoch and for any chunking; about ``validation_fraction`` of the
        rows are held out (not stratified).

        Parameters
        ----------
        validation_fraction : float
            Share of rows held out, in ``(0, 1)``.
        seed : int, default=0
            Seeds the hash (another seed, another split).

        Returns
        -------
        train, validation : Source
            Two copies of this source reading complementary rows.
        """
        if not isinstance(validation_fraction, Real) or not 0 < validation_fraction < 1:
            raise ValueError("validation_fraction must be in (0, 1); "
                             f"got {validation_fraction!r}.")
        seed = check_integer("seed", seed, 0)
        views = []
        for validation in (False, True):
            view = copy.copy(self)
            view._holdouts = self._holdouts + ((float(validation_fraction), seed, validation),)
            views.append(view)
        return views[0], views[1]

    def take_rows(self, n: int, seed: int = 0) -> Chunk:
        """A seeded sample of ``n`` rows (all rows when there are fewer), for heuristics such as
        the median bandwidth: the parts are read in an order drawn from ``seed`` until ``n`` rows
        are in hand, and ``n`` of those rows are drawn without replacement. Reads about ``n``
        rows plus one part, not the whole source.

        Parameters
        ----------
        n : int
            Rows wanted.
        seed : int, default=0
            Seeds the order of the parts and the draw.

        Returns
        -------
        Chunk
            ``min(n, rows)`` rows.
        """
        n = check_integer("n", n, 1)
        rng = np.random.default_rng([check_integer("seed", seed, 0), self.rank, self.world_size])
        parts = self._my_parts()
        pending, rows = [], 0
        for block in self._blocks([parts[i] for i in rng.permutation(len(parts))]):
            pending.append(block)
            rows += len(block)
            if rows >= n:
                break
        if not rows:
            raise ValueError(f"{self!r} has no rows to take.")
        pool = concat_blocks(pending)
        return _as_chunk(pool.take(rng.choice(rows, size=min(n, rows), replace=False)))

    def scan(self) -> Summary:
        """The first pass: rows, features and sorted labels of this source, reading labels only
        where the format allows it (memoised for the whole source, shared with its shards).

        For data-parallel training scan the whole source before sharding it: every rank needs
        the same ``classes``.

        Returns
        -------
        Summary
            ``n_rows``, ``n_features`` and ``classes``.
        """
        n_features = self.n_features  # a reader's own first pass may memoise the summary
        whole = self.world_size == 1 and not self._holdouts
        if whole and "summary" in self._cache:
            return self._cache["summary"]
        n_rows, labels = 0, LabelSet()
        for part in self._my_parts():
            for block in self._filtered(self._checked(self._read_labels(part))):
                n_rows += len(block)
                labels.add(block.y)
        summary = Summary(n_rows, n_features, labels.sorted())
        if whole:
            self._cache["summary"] = summary
        return summary

    def blocks(self, features: bool = True) -> Iterator[Chunk]:
        """The rows of this source as read, part by part in file order, without the shuffle
        buffer: the material of a first pass (class counts, target moments, a sample).
        ``features=False`` lets readers that can skip ``X`` do so (``X`` is then None).

        Yields
        ------
        Chunk
            The rows of one read block (a part, or a slice of one).
        """
        for part in self._my_parts():
            read = self._read(part) if features else self._read_labels(part)
            for block in self._filtered(self._checked(read)):
                yield _as_chunk(block)

    def rechunked(self, chunk_rows: int) -> "Source":
        """A copy of this source (shard and split kept) that hands out chunks of
        ``chunk_rows`` rows; the shuffle buffer is kept, so only the cut changes."""
        view = copy.copy(self)
        view.chunk_rows = check_integer("chunk_rows", chunk_rows, 1)
        return view

    def unsharded(self) -> "Source":
        """The whole source this shard was cut from (splits kept): what every rank reads alike,
        such as a seeded sample for the bandwidth heuristic."""
        whole = copy.copy(self)
        whole.rank, whole.world_size = 0, 1
        return whole

    def share_layout(self, comm) -> None:
        """What this shard's reading needs of every file (a LIBSVM source's columns) found by
        the ranks of ``comm`` together, each from its own parts (collective: every rank calls
        it). Readers whose layout needs no pass over the files do nothing."""

    def locate(self, row_id: int) -> str:
        """Where row ``row_id`` is, for messages: "file.csv, line 12" (or the array and row)."""
        return self._locate(int(row_id))

    # -- shared machinery ----------------------------------------------------------------
    def _my_parts(self) -> list[Part]:
        parts = self._plan(self.world_size)
        if self.world_size == 1:
            return parts
        owner = assign_parts(parts, self.world_size)
        return [part for part, rank in zip(parts, owner) if rank == self.rank]

    def _checked(self, blocks: Iterable[Block]) -> Iterator[Block]:
        for block in blocks:
            check_finite(block, self._locate)
            yield block

    def _filtered(self, blocks: Iterable[Block]) -> Iterator[Block]:
        for block in blocks:
            for fraction, seed, validation in self._holdouts:
                block = block.take((unit_hash(block.row_ids, seed) < fraction) == validation)
            if len(block):
                yield block

    def _blocks(self, parts: list[Part]) -> Iterator[Block]:
        for part in parts:
            yield from self._filtered(self._checked(self._read(part)))

    def _rebatch(self, blocks: Iterable[Block], rng: np.random.Generator) -> Iterator[Chunk]:
        """Chunks of ``chunk_rows`` from a pool that keeps half of ``shuffle_buffer`` rows back."""
        size = self.chunk_rows
        capacity = max(self.shuffle_buffer, size) if self.shuffle else size
        keep = capacity // 2 if self.shuffle else 0
        pending, rows = [], 0
        for block in blocks:
            pending.append(block)
            rows += len(block)
            if rows >= capacity:
                pool = self._mixed(pending, rng)
                n_out = max(size, (rows - keep) // size * size)
                yield from _slices(pool, n_out, size)
                pending, rows = [pool.take(slice(n_out, None))], rows - n_out
        if rows:
            yield from _slices(self._mixed(pending, rng), rows, size)

    def _mixed(self, blocks: list[Block], rng: np.random.Generator) -> Block:
        pool = concat_blocks(blocks)
        return pool.take(rng.permutation(len(pool))) if self.shuffle else pool

    def __repr__(self) -> str:
        shard = f", rank={self.rank}/{self.world_size}" if self.world_size > 1 else ""
        return f"{type(self).__name__}({self._describe()}{shard})"

    def _describe(self) -> str:
        return ""


def _slices(pool: Block, n_rows: int, size: int) -> Iterator[Chunk]:
    for start in range(0, n_rows, size):
        yield _as_chunk(pool.take(slice(start, min(start + size, n_rows))))


def _as_chunk(block: Block) -> Chunk:
    return Chunk(block.X, block.y, block.sample_weight, block.row_ids)


class LabelSet:
    """Distinct labels seen so far, up to ``MAX_CLASSES`` (a first pass adds each part's)."""

    def __init__(self):
        self.values: np.ndarray | None = None
        self.overflow = False

    def add(self, y: np.ndarray | None) -> None:
        if y is None or self.overflow:
            return
        seen = np.unique(y) if self.values is None else np.union1d(self.values, y)
        self.overflow = len(seen) > MAX_CLASSES
        self.values = None if self.overflow else seen

    def sorted(self) -> np.ndarray | None:
        return self.values
