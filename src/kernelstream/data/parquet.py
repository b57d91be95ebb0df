"""Parquet files read by row group with :mod:`pyarrow.dataset` scanners (``pip install
kernelstream[parquet]``).

A part is one row group (a row range of one when there are fewer row groups than ranks). Only
the selected columns are read; features must be numeric columns without missing values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ._blocks import Block, make_row_ids, split_row_id
from ._text import check_readable
from .base import AUTO_LABEL, Part, Source, check_integer, default_label

__all__ = ["ParquetSource"]

DEFAULT_BATCH_ROWS = 65536


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.dataset
        import pyarrow.parquet
    except ImportError as error:
        raise ImportError("Reading Parquet needs pyarrow: pip install 'kernelstream[parquet]'."
                          ) from error
    return pyarrow


def _numeric(field) -> bool:
    types = _pyarrow().types
    return types.is_integer(field.type) or types.is_floating(field.type) or \
        types.is_boolean(field.type)


class ParquetSource(Source):
    """Rows of Parquet files as dense chunks.

    Parameters
    ----------
    paths : sequence of path-like
        The files, read as one data set in this order (same columns in each).
    label : str or None, default="auto"
        The label column; None for unlabelled rows. "auto": the column named ``y``, ``label``
        or ``target`` (any case; the command line's default too), else no label column.
    weight : str or None, default=None
        The sample-weight column.
    features : list of str or None, default=None
        The feature columns, in this order; None: every other column (all must be numeric).
    batch_size : int, default=65536
        Rows per record batch of the scanner (bounds the memory of one read).
    **options
        ``chunk_rows``, ``shuffle_buffer``, ``shuffle``, ``seed``, ``dtype`` (:class:`Source`).
    """

    def __init__(self, paths: Sequence, *, label: str | None = AUTO_LABEL,
                 weight: str | None = None, features: Sequence[str] | None = None,
                 batch_size: int = DEFAULT_BATCH_ROWS, **options):
        super().__init__(**options)
        parquet = _pyarrow().parquet
        self.paths = [Path(path) for path in paths]
        for path in self.paths:
            check_readable(path)
        self.batch_size = check_integer("batch_size", batch_size, 1)
        schema = parquet.read_schema(self.paths[0])
        if label == AUTO_LABEL:
            label = default_label([name for name in schema.names if name != weight])
        self.label, self.weight = label, weight
        self.features = self._feature_columns(schema, features)
        self._group_rows = [self._row_groups(parquet, path, schema) for path in self.paths]

    def _feature_columns(self, schema, features) -> list[str]:
        """Check the named columns exist and the features are numeric."""
        names = schema.names
        for what, column in (("label", self.label), ("weight", self.weight)):
            if column is not None and column not in names:
                raise ValueError(f"{what} column {column!r} is not in {self.paths[0]}; its "
                                 f"columns are {names}.")
        if features is None:
            features = [name for name in names if name not in (self.label, self.weight)]
        for name in list(features) + [c for c in (self.label, self.weight) if c is not None]:
            if name not in names:
                raise ValueError(f"feature column {name!r} is not in {self.paths[0]}; its "
                                 f"columns are {names}.")
            if not _numeric(schema.field(name)):
                raise ValueError(f"column {name!r} of {self.paths[0]} has type "
                                 f"{schema.field(name).type}; only numeric columns can be read.")
        return list(features)

    def _row_groups(self, parquet, path: Path, schema) -> list[int]:
        """Rows of each row group of ``path``, after checking it has the first file's columns."""
        metadata = parquet.read_metadata(path)
        if not metadata.schema.to_arrow_schema().equals(schema):
            raise ValueError(f"{path} does not have the columns of {self.paths[0]}; the files "
                             "of a source must share their schema.")
        return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]

    @property
    def n_features(self) -> int:
        return len(self.features)

    def _describe(self) -> str:
        return ", ".join(str(path) for path in self.paths)

    def _plan(self, world_size: int) -> list[Part]:
        groups = [(file, group, rows) for file, counts in enumerate(self._group_rows)
                  for group, rows in enumerate(counts) if rows]
        pieces = world_size if len(groups) < world_size else 1  # row ranges of a row group
        parts = []
        for file, group, rows in groups:
            bounds = np.linspace(0, rows, pieces + 1).round().astype(int)
            parts += [Part(file, int(a), int(b), group) for a, b in zip(bounds[:-1], bounds[1:])
                      if b > a]
        return parts

    def _locate(self, row_id: int) -> str:
        file, row = split_row_id(row_id)
        return f"{self.paths[file]}, row {row}"

    def _read(self, part: Part) -> Iterator[Block]:
        yield from self._scan(part, self.features)

    def _read_labels(self, part: Part) -> Iterator[Block]:
        yield from self._scan(part, [])

    def _scan(self, part: Part, features: list[str]) -> Iterator[Block]:
        """Record batches of the part's row group, cut to ``[start, stop)``, as blocks."""
        dataset = _pyarrow().dataset
        extra = [column for column in (self.label, self.weight) if column is not None]
        fragment = next(iter(dataset.dataset(self.paths[part.file], format="parquet")
                             .get_fragments())).split_by_row_group()[part.group]
        scanner = dataset.Scanner.from_fragment(fragment, columns=features + extra,
                                                batch_size=self.batch_size, use_threads=False)
        first_row = sum(self._group_rows[part.file][:part.group])  # of the group, in the file
        position = 0  # of the batch, in the group
        for batch in scanner.to_batches():
            low, high = max(position, part.start), min(position + batch.num_rows, part.stop)
            if high > low:
                rows = batch.slice(low - position, high - low)
                yield self._block(rows, features, make_row_ids(
                    part.file, first_row + np.arange(low, high)))
            position += batch.num_rows
            if position >= part.stop:
                break

    def _block(self, batch, features: list[str], row_ids: np.ndarray) -> Block:
        def column(name):
            values = batch.column(name)
            if values.null_count:
                row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
                raise ValueError(f"{self._locate(int(row_ids[row]))}: column {name!r} is "
                                 "missing (null); fill missing values before streaming.")
            return values.to_numpy(zero_copy_only=False)

        X = (np.column_stack([column(name) for name in features]).astype(self.dtype, copy=False)
             if features else None)
        y = None if self.label is None else column(self.label)
        weight = None if self.weight is None else column(self.weight).astype(np.float64)
        return Block(X, y, weight, row_ids)
