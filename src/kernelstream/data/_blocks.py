"""Rows in memory: a block of ``(X, y, sample_weight, row_ids)``, concatenation, selection and
the finiteness check every reader runs on what it parsed.

A row id is a stable integer name for a row, independent of how the source is cut into parts:
``file_index · 2⁴⁰ + position``, where the position is the byte offset of the row's line (text
formats) or the row's index in its file or array (binary formats). Ids are unique in a source
(files below 1 TiB, fewer than 2²³ files), which is what the validation split hashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["Block", "concat_blocks", "make_row_ids", "split_row_id", "check_finite"]

#: row id = file_index << FILE_SHIFT | position
FILE_SHIFT = 40


def make_row_ids(file_index: int, positions) -> np.ndarray:
    """``file_index · 2⁴⁰ + positions`` as int64."""
    return (np.int64(file_index) << FILE_SHIFT) | np.asarray(positions, dtype=np.int64)


def split_row_id(row_id: int) -> tuple[int, int]:
    """``(file_index, position)`` of a row id."""
    return int(row_id) >> FILE_SHIFT, int(row_id) & ((1 << FILE_SHIFT) - 1)


@dataclass(frozen=True)
class Block:
    """Consecutive rows as read: features ``X`` (dense or CSR), labels, weights and row ids."""

    X: np.ndarray | sp.csr_matrix | None  # None when only labels were read
    y: np.ndarray | None
    sample_weight: np.ndarray | None
    row_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.row_ids)

    def take(self, index) -> "Block":
        """The rows ``index`` (a slice, integer array or boolean mask), in that order."""
        return Block(_pick(self.X, index), _pick(self.y, index),
                     _pick(self.sample_weight, index), self.row_ids[index])


def _pick(values, index):
    return None if values is None else values[index]


def concat_blocks(blocks: Sequence[Block]) -> Block:
    """The rows of ``blocks`` one after the other (CSR stays CSR)."""
    if len(blocks) == 1:
        return blocks[0]
    if sp.issparse(blocks[0].X):
        X = sp.vstack([block.X for block in blocks], format="csr")
    else:
        X = np.concatenate([block.X for block in blocks])
    return Block(X, _concat([block.y for block in blocks]),
                 _concat([block.sample_weight for block in blocks]),
                 np.concatenate([block.row_ids for block in blocks]))


def _concat(parts: list) -> np.ndarray | None:
    return None if parts[0] is None else np.concatenate(parts)


def _first_non_finite_row(values) -> int | None:
    """Index of the first row of ``values`` (dense 1-D/2-D or CSR) holding NaN or ±inf."""
    if values is None:
        return None
    if sp.issparse(values):
        bad = np.flatnonzero(~np.isfinite(values.data))
        return None if not len(bad) else int(np.searchsorted(values.indptr, bad[0], "right") - 1)
    values = np.asarray(values)
    if values.dtype.kind not in "fc":
        return None
    finite = np.isfinite(values) if values.ndim == 1 else np.isfinite(values).all(axis=1)
    bad = np.flatnonzero(~finite)
    return None if not len(bad) else int(bad[0])


def check_finite(block: Block, locate: Callable[[int], str]) -> None:
    """Raise ``ValueError`` naming the row (``locate(row_id)``: file and line) of the first NaN
    or infinite value in the block's features, labels or weights."""
    for name, values in (("a feature value", block.X), ("the label", block.y),
                         ("the sample weight", block.sample_weight)):
        row = _first_non_finite_row(values)
        if row is not None:
            raise ValueError(f"{locate(int(block.row_ids[row]))}: {name} is NaN or infinite. "
                             "Remove or impute missing values before streaming the file.")
