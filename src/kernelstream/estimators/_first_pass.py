"""The first pass over a stream: rows, classes, target moments and a seeded sample.

A fit on a source reads it once before training (``Source.blocks``, file order, no shuffle
buffer) and keeps

- the rows of every reader, split into training and validation rows by the hash of each row's
  stable id (the rule of ``Source.split``, so the split is the same on every rank);
- for classifiers the labels, their counts and which have positive weight; for regressors the
  mean and variance of ``y`` per output (Chan et al.'s pairwise update, mergeable over ranks);
- a **sample**: the ``n`` training rows (and validation rows) of smallest ``hash(row id)``,
  which is a uniform sample of the whole source, independent of its order, its parts and how it
  is sharded — every rank, and one process reading every shard, end with the same rows.

A :class:`PassStats` merges with another (ranks), so the data-parallel summary is the merge
of every rank's.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..data import Chunk
from ..data.base import unit_hash

__all__ = ["PassStats", "Reservoir", "RowBuffer", "first_pass", "concat_chunks"]


def concat_chunks(chunks: Sequence[Chunk]) -> Chunk:
    """The rows of ``chunks`` one after the other (CSR stays CSR; None stays None)."""
    chunks = [c for c in chunks if c is not None]
    if len(chunks) == 1:
        return chunks[0]

    def joined(values):
        if values[0] is None:
            return None
        if sp.issparse(values[0]):
            return sp.vstack(values, format="csr")
        return np.concatenate(values)

    return Chunk(*(joined([getattr(c, name) for c in chunks]) for name in Chunk._fields))


class RowBuffer:
    """Chunks' rows one after another, as :func:`concat_chunks` joins them, without holding
    them twice: each dense field is copied into an array of ``capacity`` rows allocated at the
    first chunk, whose pages the operating system commits as they are written (the memory of
    the rows read, not of the capacity); CSR ``X`` is kept by chunk and stacked at the end."""

    def __init__(self, capacity: int):
        self.capacity, self.n_rows = int(capacity), 0
        self.arrays: list | None = None
        self.sparse: list = []

    def append(self, chunk: Chunk) -> bool:
        """Copy ``chunk``'s rows in; False (nothing kept) where they pass the capacity."""
        m = chunk.X.shape[0]
        if self.n_rows + m > self.capacity:
            return False
        if self.arrays is None:
            self.arrays = [None if v is None or sp.issparse(v) else
                           np.empty((self.capacity, *v.shape[1:]), dtype=v.dtype) for v in chunk]
        for array, value in zip(self.arrays, chunk):
            if array is not None:
                array[self.n_rows:self.n_rows + m] = value
        if sp.issparse(chunk.X):
            self.sparse.append(chunk.X)
        self.n_rows += m
        return True

    def rows(self) -> Chunk | None:
        """Every row appended (views of the buffers), None before the first."""
        if self.arrays is None:
            return None
        values = [None if array is None else array[:self.n_rows] for array in self.arrays]
        if self.sparse:
            values[0] = self.sparse[0] if len(self.sparse) == 1 else sp.vstack(self.sparse, format="csr")
        return Chunk(*values)


def take(chunk: Chunk, index) -> Chunk:
    """The rows ``index`` of ``chunk``."""
    return Chunk(*(None if v is None else v[index] for v in chunk))


class Reservoir:
    """The ``size`` rows of smallest ``unit_hash(row_id, seed)`` seen so far (ties by id).
    Rows wait until a quarter more than ``size`` are held, then the smallest ``size`` are kept."""

    def __init__(self, size: int, seed: int):
        self.size, self.seed = size, seed
        self.pending: list[Chunk] = []
        self.held = 0

    def add(self, chunk: Chunk | None) -> None:
        if chunk is None or not len(chunk.row_ids):
            return
        self.pending.append(chunk)
        self.held += len(chunk.row_ids)
        if self.held > self.size + self.size // 4 + 1024:  # a quarter's slack: O(log) per row
            self._prune()

    def _prune(self) -> Chunk | None:
        if not self.pending:
            return None
        pool = concat_chunks(self.pending)
        keys = unit_hash(pool.row_ids, self.seed)
        pool = take(pool, np.lexsort((pool.row_ids, keys))[: self.size])  # ordered by key
        self.pending, self.held = [pool], len(pool.row_ids)
        return pool

    def merge(self, other: "Reservoir") -> None:
        for chunk in other.pending:
            self.add(chunk)

    def sample(self) -> Chunk | None:
        """The kept rows ordered by key: a uniformly shuffled sample (None when empty)."""
        return self._prune()


class _Moments:
    """Count, mean and sum of squared deviations per output, merged by Chan et al.'s rule."""

    def __init__(self):
        self.count, self.mean, self.m2 = 0, 0.0, 0.0

    def add_values(self, y: np.ndarray) -> None:
        y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        other = _Moments()
        other.count, other.mean = len(y), y.mean(axis=0)
        other.m2 = ((y - other.mean) ** 2).sum(axis=0)
        self.merge(other)

    def merge(self, other: "_Moments") -> None:
        if not other.count:
            return
        n = self.count + other.count
        delta = other.mean - self.mean
        self.mean = self.mean + delta * other.count / n
        self.m2 = self.m2 + other.m2 + delta**2 * self.count * other.count / n
        self.count = n

    def std(self) -> np.ndarray:
        return np.sqrt(self.m2 / max(self.count, 1))


class PassStats:
    """What the first pass found on some readers (see the module docstring)."""

    def __init__(self, holdout: float | None, split_seed: int, sample_seed: int,
                 sample_rows: tuple[int, int], labels: str):
        self.holdout, self.split_seed, self.labels = holdout, split_seed, labels
        self.reader_rows: list[tuple[int, int]] = []  # (train, validation) rows per reader
        self.samples = [Reservoir(n, sample_seed + k) for k, n in enumerate(sample_rows)]
        self.classes = self.counts = self.positive = self.example_ids = None
        self.moments = _Moments()
        self.has_labels = labels == "none"

    def add_reader(self, blocks) -> None:
        """Read one reader's blocks (``Source.blocks()``)."""
        rows = [0, 0]
        for chunk in blocks:
            held = (np.zeros(len(chunk.row_ids), bool) if self.holdout is None else
                    unit_hash(chunk.row_ids, self.split_seed) < self.holdout)
            rows[0] += int((~held).sum())
            rows[1] += int(held.sum())
            self.samples[0].add(take(chunk, ~held))
            self.samples[1].add(take(chunk, held))
            self._add_labels(chunk)
        self.reader_rows.append((rows[0], rows[1]))

    def _add_labels(self, chunk: Chunk) -> None:
        if self.labels == "none" or chunk.y is None:
            return
        self.has_labels = True
        if self.labels == "values":
            self.moments.add_values(chunk.y)
            return
        weight = np.ones(len(chunk.y)) if chunk.sample_weight is None else chunk.sample_weight
        classes, first, index = np.unique(chunk.y, return_index=True, return_inverse=True)
        self._merge_classes(classes, np.bincount(index, minlength=len(classes)),
                            np.bincount(index, weights=weight > 0, minlength=len(classes)),
                            chunk.row_ids[first])

    def _merge_classes(self, classes, counts, positive, example_ids) -> None:
        """Union of the labels; counts added; one row id per label (to name it in errors)."""
        if self.classes is not None:
            classes = np.concatenate([self.classes, classes])
            counts = np.concatenate([self.counts, counts])
            positive = np.concatenate([self.positive, positive])
            example_ids = np.concatenate([self.example_ids, example_ids])
        self.classes, first, index = np.unique(classes, return_index=True, return_inverse=True)
        self.counts = np.bincount(index, weights=counts, minlength=len(self.classes))
        self.positive = np.bincount(index, weights=positive, minlength=len(self.classes))
        self.example_ids = example_ids[first]

    def merge(self, other: "PassStats") -> None:
        """Add another rank's findings (its readers come after this one's)."""
        self.reader_rows += other.reader_rows
        for mine, theirs in zip(self.samples, other.samples):
            mine.merge(theirs)
        if other.classes is not None:
            self._merge_classes(other.classes, other.counts, other.positive, other.example_ids)
        self.moments.merge(other.moments)
        self.has_labels = self.has_labels or other.has_labels

    @property
    def n_train(self) -> int:
        return sum(train for train, _ in self.reader_rows)


def first_pass(readers: Sequence, comm, holdout: float | None, split_seed: int,
               sample_seed: int, sample_rows: tuple[int, int], labels: str) -> PassStats:
    """The first pass over this process's ``readers``, merged over ranks (rank order): every
    rank returns the same :class:`PassStats`. ``labels``: "classes", "values" or "none"."""
    stats = PassStats(holdout, split_seed, sample_seed, sample_rows, labels)
    try:
        for reader in readers:
            stats.add_reader(reader.blocks())
    except Exception as error:  # noqa: BLE001 — every rank hears of it
        comm.fail(error)
    gathered = comm.gather_objects(stats)
    merged = gathered[0]
    for other in gathered[1:]:
        merged.merge(other)
    return merged
