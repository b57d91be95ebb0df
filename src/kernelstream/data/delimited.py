"""CSV (and other delimited) text files read in byte ranges as dense chunks.

Every field must be a number (``nan`` and ``inf`` are parsed, then refused). A range is parsed
by :func:`numpy.loadtxt` (its C parser, no pandas); when that fails the range is read again
line by line with :mod:`csv` to name the file, the line and what is wrong. Records must not
span lines (no newline inside quotes); blank lines are skipped.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ._blocks import Block, make_row_ids
from ._text import (check_readable, data_line_starts, data_lines_only, has_whitespace_lines,
                    line_number, locate_line, plan_byte_parts, read_lines_starting_in)
from .base import AUTO_LABEL, Part, Source, check_integer, default_label

__all__ = ["CsvSource"]

DEFAULT_PART_BYTES = 2**22  # 4 MiB of text per part
_BOM = b"\xef\xbb\xbf"


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _first_line(path: Path, delimiter: str) -> tuple[list[str], int]:
    """The fields of the first line of ``path`` and the offset after it (a BOM is skipped)."""
    with open(path, "rb") as f:
        line = f.readline()
        end = f.tell()
    if not line:
        raise ValueError(f"{path} is empty: a CSV file needs a header or a data line.")
    if not line.strip():
        raise ValueError(f"{path}: the first line is empty; a CSV file starts with a header "
                         "or a data line.")
    text = line.removeprefix(_BOM).decode("utf-8", errors="replace").rstrip("\r\n")
    return [field.strip() for field in next(csv.reader([text], delimiter=delimiter))], end


class _Columns:
    """The layout shared by every file: names (or None), and which column is what."""

    def __init__(self, paths: list[Path], header, delimiter: str):
        layouts = [_first_line(path, delimiter) for path in paths]
        self.data_starts = []
        for position, (path, (fields, end)) in enumerate(zip(paths, layouts)):
            has_header = not all(map(_is_number, fields)) if header is None else bool(header)
            self.data_starts.append(end if has_header else 0)
            names = fields if has_header else None
            if position == 0:
                self.names, self.n_columns, self.first = names, len(fields), path
            elif len(fields) != self.n_columns or (names and self.names and names != self.names):
                raise ValueError(f"{path} has columns {fields} but {self.first} has "
                                 f"{self.names or self.n_columns}; the files of a source must "
                                 "share their columns.")

    def index(self, column, what: str) -> int | None:
        """The position of ``column`` (a name or an index, negative from the end)."""
        if column is None:
            return None
        if isinstance(column, str):
            if self.names is None:
                raise ValueError(f"{what}={column!r} names a column, but {self.first} has no "
                                 "header; pass the column's index instead.")
            if column not in self.names:
                raise ValueError(f"{what} column {column!r} is not in the header of "
                                 f"{self.first}; its columns are {self.names}.")
            return self.names.index(column)
        if isinstance(column, (int, np.integer)) and -self.n_columns <= column < self.n_columns:
            return int(column) % self.n_columns
        raise ValueError(f"{what} column {column!r} does not exist: {self.first} has "
                         f"{self.n_columns} columns (indices 0..{self.n_columns - 1}).")

    def auto_label(self, weight: int | None) -> int | None:
        """The column ``label="auto"`` picks (``default_label``), the weight column aside."""
        names = [name if index != weight else None for index, name in enumerate(self.names or [])]
        name = default_label([name for name in names if name is not None])
        return None if name is None else names.index(name)

    def name(self, index: int) -> str:
        return f"column {index}" + (f" ({self.names[index]!r})" if self.names else "")


class CsvSource(Source):
    """Rows of CSV files as dense chunks; one column is the label, another optionally the weight.

    Parameters
    ----------
    paths : sequence of path-like
        The files, read as one data set in this order (same columns in each).
    label : str, int or None, default="auto"
        The label column, by header name or index (negative counts from the end); None for
        unlabelled rows (``y`` is None). "auto": the header's column named ``y``, ``label`` or
        ``target`` (any case; the command line's default too), else no label column.
    weight : str, int or None, default=None
        The sample-weight column, likewise.
    header : bool or None, default=None
        Whether the first line of each file names the columns; None: it does when one of its
        fields is not a number.
    delimiter : str, default=","
    part_bytes : int, default=4 MiB
        Bytes of text per part (the unit of reading, sharding and order shuffling).
    **options
        ``chunk_rows``, ``shuffle_buffer``, ``shuffle``, ``seed``, ``dtype`` (:class:`Source`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "toy.csv"
    >>> _ = path.write_text("x1,x2,y\\n0.5,1,0\\n2,3,1\\n")
    >>> chunk = next(iter(CsvSource([path], label="y", shuffle=False)))
    >>> chunk.X.tolist(), chunk.y.tolist()
    ([[0.5, 1.0], [2.0, 3.0]], [0.0, 1.0])
    """

    def __init__(self, paths: Sequence, *, label=AUTO_LABEL, weight=None,
                 header: bool | None = None, delimiter: str = ",",
                 part_bytes: int = DEFAULT_PART_BYTES, **options):
        super().__init__(**options)
        self.paths = [Path(path) for path in paths]
        self._sizes = [check_readable(path) for path in self.paths]
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise ValueError(f"delimiter must be one character; got {delimiter!r}.")
        self.delimiter = delimiter
        self.part_bytes = check_integer("part_bytes", part_bytes, 1)
        self._columns = _Columns(self.paths, header, delimiter)
        self._weight = self._columns.index(weight, "weight")
        if isinstance(label, str) and label == AUTO_LABEL:
            label = self._columns.auto_label(self._weight)
        self._label = self._columns.index(label, "label")
        if self._label is not None and self._label == self._weight:
            raise ValueError("label and weight name the same column.")
        special = {self._label, self._weight}
        self._features = [i for i in range(self._columns.n_columns) if i not in special]

    @property
    def n_features(self) -> int:
        return len(self._features)

    @property
    def feature_names(self) -> list[str] | None:
        """Header names of the feature columns (None without a header)."""
        names = self._columns.names
        return None if names is None else [names[i] for i in self._features]

    def _describe(self) -> str:
        return ", ".join(str(path) for path in self.paths)

    def _plan(self, world_size: int) -> list[Part]:
        return [Part(*bounds) for bounds in plan_byte_parts(
            self._sizes, self._columns.data_starts, self.part_bytes, world_size)]

    def _locate(self, row_id: int) -> str:
        return locate_line(self.paths, row_id)

    def _read(self, part: Part) -> Iterator[Block]:
        parsed = self._parse(part)
        if parsed is None:
            return
        table, row_ids = parsed
        y = None if self._label is None else table[:, self._label]
        weight = None if self._weight is None else table[:, self._weight]
        X = np.asarray(table[:, self._features], dtype=self.dtype)
        yield Block(X, y, weight, row_ids)

    def _parse(self, part: Part) -> tuple[np.ndarray, np.ndarray] | None:
        """The ``(rows, columns)`` float64 table of the lines starting in ``part`` and their ids."""
        path = self.paths[part.file]
        offset, data = read_lines_starting_in(path, part.start, part.stop)
        starts = data_line_starts(data)
        if not len(starts):
            return None
        text = data_lines_only(data) if has_whitespace_lines(data) else data
        text = text.removeprefix(_BOM) if offset == 0 else text
        try:
            table = np.loadtxt(io.BytesIO(text), delimiter=self.delimiter, dtype=np.float64,
                               ndmin=2, comments=None, quotechar='"')
        except ValueError as error:
            raise self._diagnose(path, offset, data, error) from error
        if table.shape != (len(starts), self._columns.n_columns):
            raise self._diagnose(path, offset, data, None)
        return table, make_row_ids(part.file, offset + starts)

    def _diagnose(self, path: Path, offset: int, data: bytes, error) -> ValueError:
        """Read the range again with :mod:`csv` and name the first bad line."""
        number = line_number(path, offset)
        for line in (data.removeprefix(_BOM) if offset == 0 else data).split(b"\n"):
            text = line.decode("utf-8", errors="replace").rstrip("\r")
            if text.strip():
                problem = self._problem(next(csv.reader([text], delimiter=self.delimiter)))
                if problem:
                    return ValueError(f"{path}, line {number}: {problem}")
            number += 1
        return ValueError(f"{path}: cannot parse the lines from byte {offset}: {error}")

    def _problem(self, fields: list[str]) -> str | None:
        """What is wrong with one record, or None."""
        expected = self._columns.n_columns
        if len(fields) != expected:
            origin = "the header" if self._columns.names else "the first line"
            return (f"{len(fields)} columns, but {expected} in {origin} of "
                    f"{self._columns.first}.")
        for index, field in enumerate(fields):
            if _is_number(field):
                continue
            if index == self._label:
                return (f"the label {field!r} is not a number; encode the classes as numbers "
                        "(e.g. 0..K-1).")
            if index == self._weight:
                return f"the sample weight {field!r} is not a number."
            return f"{self._columns.name(index)} holds {field!r}, which is not a number."
        return None
