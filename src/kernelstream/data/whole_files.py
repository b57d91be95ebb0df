"""Whole-file reading: LIBSVM, CSV, Parquet and npz files, or directories, into memory.

The streaming sources of :mod:`kernelstream.data` read a data set in chunks; :func:`read_labelled`
reads it whole (one reader per format behind it), which is what the command line does: every
file it reads goes through this function. LIBSVM becomes a CSR matrix (sparse rows stay sparse;
the estimators that need dense rows are densified by the caller,
:func:`kernelstream.cli.models.prepare_rows`), CSV, Parquet and npz dense float64 arrays. A
directory is every visible file in it, in name order, read in one format and stacked. Every
error is a :class:`DataFileError` naming the file (and the line). Importing this module loads
neither torch nor scikit-learn (the LIBSVM reader imports scikit-learn when it runs), so the
command line's ``--help`` stays fast.

Labels: a LIBSVM line starts with its label. In a CSV or Parquet table the label is the column
``label`` names (a name, or an index counted from 0, negative from the end); by default the
column called ``y``, ``label`` or ``target``, else the last column; ``label="none"``: no label
column. When the caller knows the number of features (a fitted model), a table with exactly that
many columns has no label column. In an npz file ``label`` is the key of the labels (default
``y``); the rows are the key with the leading ``y`` replaced by ``X`` (``y_test`` → ``X_test``).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .base import LABEL_NAMES

__all__ = ["DataFileError", "Labelled", "WHOLE_FILE_FORMATS", "read_labelled", "detect_format",
           "NO_LABEL"]

#: the formats :func:`read_labelled` reads
WHOLE_FILE_FORMATS = ("libsvm", "csv", "parquet", "npz")
_SUFFIXES = {".svm": "libsvm", ".libsvm": "libsvm", ".svmlight": "libsvm", ".csv": "csv",
             ".parquet": "parquet", ".pq": "parquet", ".npz": "npz"}
#: ``label`` that reads no label column (a table) or no labels (npz); without ``label`` a table's
#: label is the first column named as in ``LABEL_NAMES`` (as ``label="auto"`` of the streaming
#: readers), else its last column
NO_LABEL = "none"
#: a LIBSVM line: a label (or comma-separated labels), optional qid, then index:value pairs
_LIBSVM_LINE = re.compile(r"^\s*[^\s:#]+(\s+qid:\S+)?(\s+\d+:\S+)*\s*(#.*)?$")


class DataFileError(ValueError):
    """A data file that is missing, unreadable, or not in the format it was read as."""


@dataclass
class Labelled:
    """Rows read from a file: ``X`` (dense float64, or CSR for LIBSVM), labels ``y`` (``None``
    when the file has none), the column names of a table, the format and the files read."""

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray | None
    feature_names: list[str] | None
    fmt: str
    files: list[Path]


def read_labelled(path, fmt: str | None = None, label: str | int | None = None, *,
                  n_features: int | None = None, zero_based: bool = False) -> Labelled:
    """Read a file, or a directory of files, whole.

    Parameters
    ----------
    path : str or Path
        A file, or a directory whose visible files are all read (name order) and stacked.
    fmt : {"libsvm", "csv", "parquet", "npz"}, optional
        The format; by default from the suffix (``.svm``, ``.libsvm``, ``.csv``, ``.parquet``,
        ``.npz``), else from the first line (``label index:value ...`` is LIBSVM, commas CSV).
    label : str or int, optional
        The label column or key (see the module docstring); ``"none"``: no labels.
    n_features : int, optional
        Columns expected (a fitted model's ``n_features_in_``): LIBSVM rows are read with this
        width, a table with this many columns has no label column, and any other width is an
        error.
    zero_based : bool, default=False
        LIBSVM feature indices start at 0 (as ``dump_svmlight_file`` writes by default) instead of
        LIBSVM's 1.

    Raises
    ------
    DataFileError
        Naming the file (and the line) when something is wrong.
    """
    files = _data_files(Path(path))
    if fmt is not None and fmt not in WHOLE_FILE_FORMATS:
        raise DataFileError(f"unknown format {fmt!r}; use one of {', '.join(WHOLE_FILE_FORMATS)}")
    fmt = _one_format(path, files, fmt)
    if fmt == "libsvm":
        data = _read_libsvm(files, n_features, zero_based)
    elif fmt == "npz":
        data = _stack([_read_npz(f, label) for f in files], fmt, files)
    else:
        reader = _read_csv if fmt == "csv" else _read_parquet
        data = _stack([_split_label(f, *reader(f), label, n_features) for f in files], fmt,
                      files)
    if n_features is not None and data.X.shape[1] != n_features:
        raise DataFileError(f"{path}: rows have {data.X.shape[1]} features, the model expects "
                            f"{n_features}")
    return data


def _data_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise DataFileError(f"{path}: the directory holds no data files")
        return files
    if not path.is_file():
        raise DataFileError(f"{path}: no such file or directory")
    return [path]


def _one_format(folder, files: list[Path], fmt: str | None) -> str:
    """``fmt``, else the files' own format; an error naming one file of each format when a
    directory mixes them (by suffix; without ``fmt`` also by first line)."""
    formats = {f: _SUFFIXES.get(f.suffix.lower(), fmt) if fmt else detect_format(f)
               for f in files}
    found = sorted(set(formats.values())) if len(files) > 1 or fmt is None else [fmt]
    if len(found) > 1:
        examples = ", ".join(f"{next(f.name for f in files if formats[f] == kind)}: {kind}"
                             for kind in found)
        raise DataFileError(f"{folder}: mixed formats ({examples}); a directory is read in one "
                            "format: move the other files out")
    return fmt or found[0]


def detect_format(path: Path) -> str:
    """The format of ``path`` from its suffix, else from its first line."""
    if path.suffix.lower() in _SUFFIXES:
        return _SUFFIXES[path.suffix.lower()]
    try:
        with open(path, encoding="utf-8") as f:
            first = f.readline()
    except (UnicodeDecodeError, OSError) as exc:
        raise DataFileError(f"{path}: cannot tell its format ({exc}); pass --format") from None
    if "," in first:
        return "csv"
    if _LIBSVM_LINE.match(first) and ":" in first:
        return "libsvm"
    raise DataFileError(f"{path}: cannot tell its format from the suffix or the first line; "
                        f"pass --format ({', '.join(WHOLE_FILE_FORMATS)})")


# -- LIBSVM ----------------------------------------------------------------------------------
def _read_libsvm(files: list[Path], n_features: int | None, zero_based: bool) -> Labelled:
    """CSR rows and float labels of LIBSVM files (``sklearn.datasets.load_svmlight_files``)."""
    from sklearn.datasets import load_svmlight_files

    try:
        parts = load_svmlight_files([str(f) for f in files], n_features=n_features,
                                    dtype=np.float64, zero_based=zero_based)
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        raise DataFileError(_libsvm_error(files, exc, zero_based)) from None
    X = sp.vstack(parts[0::2], format="csr")
    return Labelled(X, np.concatenate(parts[1::2]), None, "libsvm", files)


def _libsvm_error(files: list[Path], exc: Exception, zero_based: bool) -> str:
    """The file and line at fault, if a line-by-line scan finds one, and what to do."""
    for path in files:
        bad = _first_bad_line(path, zero_based)
        if bad is not None:
            number, line, why = bad
            return f"{path}, line {number}: {why}: {line[:60]!r}"
    reason = " ".join(str(exc).split())
    if "n_features" in reason:
        return f"{files[0]}: {reason} (the rows are wider than the model's input)"
    return f"{files[0]}: not a readable LIBSVM file ({reason})"


def _first_bad_line(path: Path, zero_based: bool):
    """``(line number, line, reason)`` of the first malformed line, or ``None``."""
    try:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                if not _LIBSVM_LINE.match(line):
                    return number, line.strip(), "not a LIBSVM line (label index:value ...)"
                if not zero_based and re.search(r"\s0+:", line):
                    return number, line.strip(), ("feature index 0, but LIBSVM indices start at "
                                                  "1 (pass --zero-based for 0-based files)")
    except UnicodeDecodeError:
        return 0, "", "not a text file"
    return None


# -- tables ----------------------------------------------------------------------------------
def _read_csv(path: Path) -> tuple[list[str] | None, np.ndarray, Callable[[int], str]]:
    """Header (``None`` if the first line is all numbers), the cells as strings, and where row
    ``i`` of the cells is ("file, line N": blank lines counted)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            numbered = [(reader.line_num, row) for row in reader if row]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataFileError(f"{path}: not a readable CSV file ({exc})") from None
    if not numbered:
        raise DataFileError(f"{path}: the file is empty")
    first = numbered[0][1]
    header = None if all(_is_number(cell) for cell in first) else [c.strip() for c in first]
    body = numbered[1:] if header is not None else numbered
    for number, row in body:
        if len(row) != len(first):
            raise DataFileError(f"{path}, line {number}: {len(row)} fields, the first line has "
                                f"{len(first)}")
    if not body:
        raise DataFileError(f"{path}: a header and no rows")
    lines = [number for number, _ in body]
    return header, np.array([row for _, row in body], dtype=str), \
        lambda i: f"{path}, line {lines[i]}"


def _read_parquet(path: Path) -> tuple[list[str], np.ndarray, Callable[[int], str]]:
    """Column names, the columns as an object array (``pyarrow.parquet``), and where row ``i``
    is ("file, row i", counted from 0 as ``kernelstream.data`` does)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataFileError(f"{path}: reading Parquet needs pyarrow "
                            "(pip install pyarrow)") from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types on a damaged file
        raise DataFileError(f"{path}: not a readable Parquet file ({exc})") from None
    columns = [table.column(i).to_numpy(zero_copy_only=False) for i in range(table.num_columns)]
    return list(table.column_names), np.column_stack(columns).astype(object), \
        lambda i: f"{path}, row {i}"


def _split_label(path: Path, header, cells: np.ndarray, locate, label, n_features) -> Labelled:
    """Features as float64 and the label column of a table; NaN or infinity is refused."""
    column = _label_column(path, header, cells.shape[1], label, n_features)
    keep = [j for j in range(cells.shape[1]) if j != column]
    X = _numbers(cells[:, keep], header, keep, locate)
    y = None if column is None else _labels(cells[:, column])
    _check_finite(X, y, locate)
    names = None if header is None else [header[j] for j in keep]
    return Labelled(X, y, names, "", [path])


def _label_column(path: Path, header, width: int, label, n_features) -> int | None:
    if label is None and n_features is not None and width == n_features:
        return None  # as many columns as the model has inputs: no label column
    if label is None:
        named = [j for j, name in enumerate(header or []) if name.lower() in LABEL_NAMES]
        return named[0] if named else width - 1
    if str(label).lower() == NO_LABEL:
        return None
    if header is not None and str(label) in header:
        return header.index(str(label))
    try:
        index = int(label)
    except ValueError:
        raise DataFileError(f"{path}: no column {label!r}; columns: {header}") from None
    if not -width <= index < width:
        raise DataFileError(f"{path}: label column {index} is out of range ({width} columns)")
    return index % width


def _numbers(cells: np.ndarray, header, columns, locate) -> np.ndarray:
    """``cells`` as float64, or an error naming the first cell that is not a number."""
    try:
        return cells.astype(np.float64)
    except (ValueError, TypeError):
        for i, row in enumerate(cells):
            for j, cell in enumerate(row):
                if not _is_number(cell):
                    name = header[columns[j]] if header else f"column {columns[j]}"
                    raise DataFileError(f"{locate(i)}: {name} holds {str(cell)!r}, not a "
                                        "number") from None
        raise


def _check_finite(X: np.ndarray, y: np.ndarray | None, locate) -> None:
    """An error naming the first row with NaN or infinity (as ``kernelstream.data`` does)."""
    for what, values in (("a feature value", X), ("the label", y)):
        if values is None or values.dtype.kind != "f":
            continue
        finite = np.isfinite(values) if values.ndim == 1 else np.isfinite(values).all(axis=1)
        if not finite.all():
            raise DataFileError(f"{locate(int(np.argmin(finite)))}: {what} is NaN or infinite; "
                                "remove or impute missing values")


def _labels(column: np.ndarray) -> np.ndarray:
    """Labels as float64 when they are all numbers, else as strings."""
    try:
        return column.astype(np.float64)
    except (ValueError, TypeError):
        return column.astype(str)


def _is_number(cell) -> bool:
    try:
        float(cell)
    except (ValueError, TypeError):
        return False
    return True


# -- npz -------------------------------------------------------------------------------------
def _read_npz(path: Path, label) -> Labelled:
    """``X``/``y`` (or the pair ``label`` names) of an ``.npz`` file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{path}: not a readable npz file ({exc})") from None
    x_key, y_key = _npz_keys(path, arrays, label)
    X = arrays[x_key]
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise DataFileError(f"{path}: {x_key!r} is not a 2-D numeric array ({X.dtype}, {X.shape})")
    y = None if y_key is None else arrays[y_key]
    return Labelled(X.astype(np.float64, copy=False), y, None, "npz", [path])


def _npz_keys(path: Path, arrays: dict, label) -> tuple[str, str | None]:
    """``(rows key, labels key or None)``: ``y_KEY`` names the labels of ``X_KEY``; ``"none"``
    reads ``X`` alone; by default ``X`` and ``y`` (``y`` when the file has it)."""
    keys = sorted(arrays)
    if label is None or str(label).lower() == NO_LABEL:
        if "X" not in arrays:
            raise DataFileError(f"{path}: no key 'X'; keys: {keys}; pass --label y_KEY for "
                                "X_KEY/y_KEY")
        return "X", ("y" if label is None and "y" in arrays else None)
    y_key = str(label)
    if y_key.startswith("X") and "y" + y_key[1:] in arrays:
        raise DataFileError(f"{path}: --label names the labels; {y_key!r} holds the rows, whose "
                            f"labels are {'y' + y_key[1:]!r}: pass --label {'y' + y_key[1:]}")
    if not y_key.startswith("y"):
        raise DataFileError(f"{path}: --label {y_key!r}: the labels of an npz file are y or "
                            f"y_KEY (the rows X or X_KEY); keys: {keys}")
    x_key = "X" + y_key[1:]
    missing = [key for key in (y_key, x_key) if key not in arrays]
    if missing:
        raise DataFileError(f"{path}: no key {missing[0]!r} (--label {y_key} reads {x_key} and "
                            f"{y_key}); keys: {keys}")
    return x_key, y_key


def _stack(parts: list[Labelled], fmt: str, files: list[Path]) -> Labelled:
    """One table from the files of a directory (same columns, all labelled or none)."""
    widths = {part.X.shape[1] for part in parts}
    if len(widths) > 1:
        raise DataFileError(f"{files[0].parent}: the files have different numbers of columns "
                            f"{sorted(widths)}")
    if len({part.y is None for part in parts}) > 1:
        raise DataFileError(f"{files[0].parent}: some files have labels and some do not")
    X = np.concatenate([part.X for part in parts])
    y = None if parts[0].y is None else np.concatenate([part.y for part in parts])
    return Labelled(X, y, parts[0].feature_names, fmt, files)
