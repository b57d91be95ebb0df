"""``open_source``: one entry point that picks the reader from the data's type or extension."""

from __future__ import annotations

import glob
import os
from pathlib import Path

from .arrays import ArraySource
from .base import Source
from .delimited import CsvSource
from .libsvm import LibsvmSource
from .numpy_files import open_npy, open_npz
from .parquet import ParquetSource

__all__ = ["open_source", "FORMATS"]

#: file extension -> format
FORMATS = {".svm": "libsvm", ".libsvm": "libsvm", ".svmlight": "libsvm", ".csv": "csv",
           ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy", ".npz": "npz"}
_READERS = {"libsvm": LibsvmSource, "csv": CsvSource, "parquet": ParquetSource,
            "npz": open_npz}


def _is_path(data) -> bool:
    return isinstance(data, (str, os.PathLike))


def expand_paths(data) -> list[Path]:
    """Files named by a path, a directory (its files, sorted), a glob pattern (its matches,
    sorted) or a list of these; ``FileNotFoundError`` when nothing is there."""
    items = [data] if _is_path(data) else list(data)
    paths = []
    for item in items:
        text = os.fspath(item)
        if glob.has_magic(text):
            matches = sorted(glob.glob(text))
            if not matches:
                where = "" if os.path.isabs(text) else f" (relative to {os.getcwd()})"
                raise FileNotFoundError(f"No file matches {text!r}{where}.")
            paths += map(Path, matches)
        elif Path(text).is_dir():
            files = sorted(p for p in Path(text).iterdir()
                           if p.is_file() and not p.name.startswith("."))
            if not files:
                raise FileNotFoundError(f"The directory {text!r} holds no file.")
            paths += files
        else:
            paths.append(Path(text))  # the reader says if it is missing
    return paths


def _infer_format(paths: list[Path]) -> str:
    formats = {FORMATS.get(path.suffix.lower()) for path in paths}
    if None in formats:
        unknown = next(path for path in paths if path.suffix.lower() not in FORMATS)
        raise ValueError(f"Cannot tell the format of {str(unknown)!r} from its extension; pass "
                         f"format= one of {sorted(set(FORMATS.values()) - {'tsv'})}.")
    if len(formats) > 1:
        raise ValueError(f"The files mix formats {sorted(formats)}; a source reads one format. "
                         "Pass a glob or list of files of one format.")
    return formats.pop()


def open_source(data, y=None, *, sample_weight=None, format: str | None = None,
                **options) -> Source:
    """A :class:`~kernelstream.data.Source` over files or arrays.

    Parameters
    ----------
    data : path-like, glob pattern, directory, list of paths, or array
        Files of one format (LIBSVM ``.svm``/``.libsvm``/``.svmlight``, ``.csv``, ``.tsv``,
        ``.parquet``/``.pq``, ``.npy``, ``.npz``; other extensions need ``format``), or ``X``
        itself: a numpy array, memory map, torch tensor or scipy sparse matrix.
    y, sample_weight : array-like, default=None
        Labels and weights of in-memory ``X`` (files name them with ``label=``/``weight=``).
    format : {"libsvm", "csv", "tsv", "parquet", "npy", "npz"}, default=None
        The files' format when the extension does not say it.
    **options
        Options of the reader (:class:`LibsvmSource`, :class:`CsvSource`,
        :class:`ParquetSource`, :func:`open_npy`, :func:`open_npz`, :class:`ArraySource`) and of
        every source: ``chunk_rows``, ``shuffle_buffer``, ``shuffle``, ``seed``, ``dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> source = open_source(np.eye(4), np.arange(4), chunk_rows=3, shuffle=False)
    >>> [chunk.y.tolist() for chunk in source.chunks()]
    [[0, 1, 2], [3]]
    """
    if not _is_path(data) and not _is_path_list(data):
        return ArraySource(data, y, sample_weight=sample_weight, **options)
    if y is not None or sample_weight is not None:
        raise ValueError("y and sample_weight go with in-memory arrays; for files name the "
                         "columns (label=, weight=) or, for .npy, the files holding them.")
    paths = expand_paths(data)
    format = format or _infer_format(paths)
    if format == "tsv":
        format, options = "csv", {"delimiter": "\t", **options}
    if format == "npy":
        if len(paths) != 1:
            raise ValueError(f"{len(paths)} .npy files: pass the X file, with label= and "
                             "weight= naming the files of y and of the weights.")
        return open_npy(paths[0], **options)
    if format not in _READERS:
        raise ValueError(f"Unknown format {format!r}; use one of {sorted(_READERS) + ['npy']}.")
    return _READERS[format](paths, **options)


def _is_path_list(data) -> bool:
    return isinstance(data, (list, tuple)) and bool(data) and all(map(_is_path, data))
