"""Arrays as a source: numpy (memory maps included), torch tensors, scipy sparse matrices.

Parts are ranges of rows; a chunk copies only its rows (a memory-mapped file is read part by
part). Dense ``X`` gives dense chunks, sparse ``X`` CSR chunks.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from ._blocks import Block, make_row_ids, split_row_id
from .base import Part, Source, check_integer

__all__ = ["ArraySource"]

DEFAULT_PART_ROWS = 16384


def _to_numpy(values):
    """A torch tensor as a numpy array (moved to the CPU); anything else unchanged."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(values, torch.Tensor):
        return values.detach().cpu().numpy()
    return values


def _as_matrix(X, origin: str):
    X = _to_numpy(X)
    X = sp.csr_matrix(X) if sp.issparse(X) else X if isinstance(X, np.ndarray) else np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"{origin}: X must be 2-D (n_rows, n_features); got shape {X.shape}.")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{origin}: X must hold numbers; got dtype {X.dtype}.")
    return X


def _as_column(values, n_rows: int, what: str, origin: str, max_ndim: int):
    if values is None:
        return None
    values = _to_numpy(values)
    values = values if isinstance(values, np.ndarray) else np.asarray(values)
    if not 1 <= values.ndim <= max_ndim or len(values) != n_rows:
        raise ValueError(f"{origin}: {what} has shape {values.shape}, but X has {n_rows} rows.")
    if values.dtype.kind not in "biufUS":
        raise ValueError(f"{origin}: {what} must hold numbers or strings; got {values.dtype}.")
    return values


@dataclass(frozen=True)
class _Member:
    """One array set: ``X``, labels, weights, and where it came from (for messages)."""

    X: object
    y: np.ndarray | None
    sample_weight: np.ndarray | None
    origin: str

    @classmethod
    def checked(cls, X, y, sample_weight, origin: str) -> "_Member":
        X = _as_matrix(X, origin)
        return cls(X, _as_column(y, X.shape[0], "y", origin, 2),
                   _as_column(sample_weight, X.shape[0], "sample_weight", origin, 1), origin)


class ArraySource(Source):
    """Rows of arrays in memory or memory-mapped.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features), torch tensor or scipy sparse matrix
    y : array-like of shape (n_rows,) or (n_rows, n_outputs), default=None
    sample_weight : array-like of shape (n_rows,), default=None
    part_rows : int, default=16384
        Rows per part (the unit of reading, sharding and order shuffling).
    origin : str, default="arrays"
        How messages name the data (a file name for memory maps).
    **options
        ``chunk_rows``, ``shuffle_buffer``, ``shuffle``, ``seed``, ``dtype`` (:class:`Source`).

    Examples
    --------
    >>> import numpy as np
    >>> X, y = np.arange(10.0).reshape(5, 2), np.arange(5)
    >>> source = ArraySource(X, y, chunk_rows=2, seed=0)
    >>> sorted(int(i) for chunk in source.chunks(epoch=1) for i in chunk.y)
    [0, 1, 2, 3, 4]
    """

    def __init__(self, X, y=None, *, sample_weight=None, part_rows: int = DEFAULT_PART_ROWS,
                 origin: str = "arrays", **options):
        super().__init__(**options)
        self.part_rows = check_integer("part_rows", part_rows, 1)
        self._members = [_Member.checked(X, y, sample_weight, origin)]

    @classmethod
    def from_members(cls, members: Sequence[tuple], **options) -> "ArraySource":
        """One source over several ``(X, y, sample_weight, origin)`` sets with the same columns."""
        (X, y, weight, origin), *rest = members
        source = cls(X, y, sample_weight=weight, origin=origin, **options)
        for member in rest:
            source._members.append(_Member.checked(*member))
            if source._members[-1].X.shape[1] != source.n_features:
                raise ValueError(f"{member[3]} has {source._members[-1].X.shape[1]} columns but "
                                 f"{origin} has {source.n_features}.")
        return source

    @property
    def n_features(self) -> int:
        return self._members[0].X.shape[1]

    def _describe(self) -> str:
        return ", ".join(member.origin for member in self._members)

    def _plan(self, world_size: int) -> list[Part]:
        total = sum(member.X.shape[0] for member in self._members)
        part_rows = max(1, min(self.part_rows, math.ceil(total / world_size)))
        return [Part(file, start, min(start + part_rows, member.X.shape[0]))
                for file, member in enumerate(self._members)
                for start in range(0, member.X.shape[0], part_rows)]

    def _locate(self, row_id: int) -> str:
        file, row = split_row_id(row_id)
        return f"{self._members[file].origin}, row {row}"

    def _read(self, part: Part) -> Iterator[Block]:
        member, rows = self._members[part.file], slice(part.start, part.stop)
        X = member.X[rows]
        X = X.astype(self.dtype) if sp.issparse(X) else np.asarray(X, dtype=self.dtype)
        yield Block(X, *self._columns(member, part))

    def _read_labels(self, part: Part) -> Iterator[Block]:
        yield Block(None, *self._columns(self._members[part.file], part))

    @staticmethod
    def _columns(member: _Member, part: Part) -> tuple:
        rows = slice(part.start, part.stop)
        y = None if member.y is None else np.asarray(member.y[rows])
        weight = (None if member.sample_weight is None
                  else np.asarray(member.sample_weight[rows], dtype=np.float64))
        return y, weight, make_row_ids(part.file, np.arange(part.start, part.stop))
