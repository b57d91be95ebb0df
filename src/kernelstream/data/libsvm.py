"""LIBSVM / svmlight text files (``label index:value ...``) read in byte ranges as CSR chunks.

Each byte range is parsed by :func:`sklearn.datasets.load_svmlight_file` (its C parser) on the
lines that start in the range. ``zero_based="auto"`` follows scikit-learn's rule over the whole
source, not per range: the indices are one-based unless some index 0 appears in some file, and
``n_features`` is the largest index (one-based) or the largest index + 1. Both come from one
first pass over the files unless both are given.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from ._blocks import Block, make_row_ids
from ._text import (check_readable, data_line_starts, line_number, locate_line,
                    plan_byte_parts, read_lines_starting_in)
from .base import LabelSet, Part, Source, Summary, check_integer

__all__ = ["LibsvmSource"]

DEFAULT_PART_BYTES = 2**22  # 4 MiB of text per part
#: the layout's first pass keeps the parts it parsed, up to this many bytes of CSR, for the
#: read that follows it (each then parsed once, not twice)
_PARSED_MEMO_BYTES = 2**28
#: an ``index:`` at the start of a token (not ``qid:``), and a comment to the end of its line
_INDEX = re.compile(rb"(?<![^\s])(\d+):")
_COMMENT = re.compile(rb"#[^\n]*")


class LibsvmSource(Source):
    """Rows of LIBSVM/svmlight files as CSR chunks (dense with ``dense=True``).

    Parameters
    ----------
    paths : sequence of path-like
        The files, read as one data set in this order.
    n_features : int or None, default=None
        Columns of ``X``; None discovers it in a first pass (see the module docstring).
    zero_based : bool or "auto", default="auto"
        Whether indices start at 0; "auto" decides over all files, like scikit-learn.
    dense : bool, default=False
        Hand out dense arrays instead of CSR matrices.
    part_bytes : int, default=4 MiB
        Bytes of text per part (the unit of reading, sharding and order shuffling).
    **options
        ``chunk_rows``, ``shuffle_buffer``, ``shuffle``, ``seed``, ``dtype`` (:class:`Source`).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "toy.svm"
    >>> _ = path.write_text("1 1:0.5 3:2\\n-1 2:1\\n1 3:-1\\n")
    >>> source = LibsvmSource([path], chunk_rows=2, shuffle=False)
    >>> [chunk.X.shape for chunk in source.chunks()]
    [(2, 3), (1, 3)]
    >>> source.scan().classes
    array([-1.,  1.])
    """

    def __init__(self, paths: Sequence, *, n_features: int | None = None, zero_based="auto",
                 dense: bool = False, part_bytes: int = DEFAULT_PART_BYTES, **options):
        super().__init__(**options)
        self.paths = [Path(path) for path in paths]
        self._sizes = [check_readable(path) for path in self.paths]
        if n_features is not None:
            n_features = check_integer("n_features", n_features, 1)
        if zero_based not in (True, False, "auto"):
            raise ValueError(f"zero_based must be True, False or 'auto'; got {zero_based!r}.")
        self._declared = (n_features, zero_based)
        self.dense = bool(dense)
        self.part_bytes = check_integer("part_bytes", part_bytes, 1)

    @property
    def n_features(self) -> int:
        return self._layout()[0]

    @property
    def zero_based(self) -> bool:
        """Whether the files' indices start at 0 (resolved from "auto" by the first pass)."""
        return self._layout()[1] == 0

    def _describe(self) -> str:
        return ", ".join(str(path) for path in self.paths)

    def _plan(self, world_size: int) -> list[Part]:
        return [Part(*bounds) for bounds in
                plan_byte_parts(self._sizes, [0] * len(self._sizes), self.part_bytes, world_size)]

    def _locate(self, row_id: int) -> str:
        return locate_line(self.paths, row_id)

    def _layout(self) -> tuple[int, int]:
        """``(n_features, shift)``: the column of raw index ``i`` is ``i − shift``."""
        n_features, zero_based = self._declared
        if n_features is not None and zero_based != "auto":
            return n_features, 0 if zero_based else 1
        if "layout" not in self._cache:
            self._cache["layout"] = self._discover()
        return self._cache["layout"]

    def _discover(self) -> tuple[int, int]:
        """The first pass over every file: smallest and largest raw index, and on the way the
        rows and labels of the whole source (memoised as its :class:`Summary`).

        A part with a line that does not parse, or with NaN or infinity, gives its indices by a
        text scan and memoises no summary: the error is raised by whoever reads the part, naming
        the line. Under data parallelism that is the rank that owns the part, so the other ranks
        hear of it as a ``RankFailure`` naming that rank.
        """
        return self._settle([self._first_pass(self._plan(self.world_size))])

    def share_layout(self, comm) -> None:
        """The layout's first pass dealt over the ranks (collective: every rank of ``comm``, a
        communicator with ``gather_objects``, calls it): each rank parses its own parts and the
        ranks' index ranges, rows and labels are combined, where alone each would parse every
        part. A rank that knows the layout already hands it to the others."""
        n_features, zero_based = self._declared
        if self.world_size == 1 or (n_features is not None and zero_based != "auto"):
            return
        known = self._cache.get("layout")
        mine = None if known is not None else self._first_pass(self._my_parts())
        shares = comm.gather_objects((known, self._cache.get("summary"), mine))
        told = [(layout, summary) for layout, summary, _ in shares if layout is not None]
        if known is not None:
            return
        if told:
            self._cache["layout"] = told[0][0]
            if told[0][1] is not None:
                self._cache["summary"] = told[0][1]
            return
        self._settle([share for _, _, share in shares])

    def _first_pass(self, parts: list[Part]) -> tuple:
        """``(lowest, highest raw index, rows, LabelSet, clean)`` of ``parts``; this shard's
        own are kept for their first read (at most ``_PARSED_MEMO_BYTES``). ``clean``: every
        part parsed, finite (else the rows and labels are not counted)."""
        low, high, n_rows, labels, clean = math.inf, -1, 0, LabelSet(), True
        memo, kept, mine = self._cache.setdefault("parsed", {}), 0, set(self._my_parts())
        for part in parts:
            keep = part in mine and kept < _PARSED_MEMO_BYTES
            parsed = self._parse_or_scan(part, memo if keep else None)
            entry = memo.get(self._parsed_key(part))
            kept += 0 if entry is None else _csr_bytes(entry[0])
            if parsed is None:
                continue
            y, part_low, part_high = parsed
            low, high = min(low, part_low), max(high, part_high)
            clean = clean and y is not None
            if clean:
                n_rows += len(y)
                labels.add(y)
        return low, high, n_rows, labels, clean

    def _settle(self, passes: list[tuple]) -> tuple[int, int]:
        """``(n_features, shift)`` from first passes over parts that cover the source
        (:meth:`_first_pass`), memoised with the source's :class:`Summary` where all are clean."""
        n_features, zero_based = self._declared
        low, high = min(p[0] for p in passes), max(p[1] for p in passes)
        shift = (0 if zero_based else 1) if zero_based != "auto" else int(low > 0 and high >= 0)
        n_features = n_features if n_features is not None else max(high + 1 - shift, 1)
        self._cache["layout"] = (n_features, shift)
        if all(p[4] for p in passes):
            labels = LabelSet()
            for p in passes:
                labels.overflow = labels.overflow or p[3].overflow
                labels.add(p[3].sorted())
            labels.values = None if labels.overflow else labels.values
            self._cache["summary"] = Summary(sum(p[2] for p in passes), n_features, labels.sorted())
        return n_features, shift

    def _parse_or_scan(self, part: Part, memo: dict | None = None):
        """``(labels, lowest, highest raw index)`` of a part; the labels are None when a line
        of it is bad or not finite (the indices of a bad part come from :func:`_scan_indices`);
        None for a part without data lines. ``memo``: where the parsed part is kept for its
        first read."""
        try:
            parsed = self._parse(part)
        except ValueError:
            path = self.paths[part.file]
            low, high = _scan_indices(read_lines_starting_in(path, part.start, part.stop)[1])
            return None, low, high
        if parsed is None:
            return None
        X, y, row_ids = parsed
        low, high = (int(X.indices.min()), int(X.indices.max())) if X.nnz else (math.inf, -1)
        finite = np.isfinite(X.data).all() and np.isfinite(y).all()
        if memo is not None and finite:
            memo[self._parsed_key(part)] = parsed
        return (y if finite else None), low, high

    def _parsed_key(self, part: Part) -> tuple:
        return (str(self.paths[part.file]), part.start, part.stop, np.dtype(self.dtype).str)

    def _read(self, part: Part) -> Iterator[Block]:
        n_features, shift = self._layout()  # the first pass first: it keeps what it parses
        parsed = self._parse(part)
        if parsed is None:
            return
        X, y, row_ids = parsed
        indices = X.indices - shift
        self._check_indices(indices, X, row_ids, n_features, shift)
        X = sp.csr_matrix((X.data, indices, X.indptr), shape=(len(y), n_features))
        yield Block(X.toarray() if self.dense else X, y, None, row_ids)

    def _read_labels(self, part: Part) -> Iterator[Block]:
        parsed = self._parse(part)
        if parsed is not None:
            yield Block(None, parsed[1], None, parsed[2])

    def _check_indices(self, indices, X, row_ids, n_features: int, shift: int) -> None:
        bad = np.flatnonzero((indices < 0) | (indices >= n_features))
        if not len(bad):
            return
        row = int(np.searchsorted(X.indptr, bad[0], "right") - 1)
        where = self._locate(int(row_ids[row]))
        if indices[bad[0]] < 0:
            raise ValueError(f"{where}: feature index 0 in a file read as one-based "
                             "(zero_based=False); pass zero_based=True or 'auto'.")
        raise ValueError(f"{where}: feature index {int(X.indices[bad[0]])} is beyond "
                         f"n_features={n_features}; pass a larger n_features, or None to "
                         "discover it.")

    def _parse(self, part: Part):
        """``(X, y, row_ids)`` of the lines starting in ``part``, with raw (unshifted) indices;
        None when the range holds no data line. A part the layout's first pass kept is taken
        from its memo, once."""
        kept = self._cache.get("parsed")
        if kept:
            parsed = kept.pop(self._parsed_key(part), None)
            if parsed is not None:
                return parsed
        path = self.paths[part.file]
        offset, data = read_lines_starting_in(path, part.start, part.stop)
        starts = data_line_starts(data, comment=b"#")
        if not len(starts):
            return None
        try:
            X, y = _load(data, self.dtype)
        except (ValueError, TypeError) as error:
            raise self._diagnose(path, offset, data, starts, error) from error
        if X.shape[0] != len(starts):  # our line rule and the parser's disagree: never silent
            raise ValueError(f"{path}: {X.shape[0]} rows parsed from bytes {offset}.. but "
                             f"{len(starts)} data lines found.")
        return X, y.astype(np.float64), make_row_ids(part.file, offset + starts)

    def _diagnose(self, path: Path, offset: int, data: bytes, starts: np.ndarray,
                  error: Exception) -> ValueError:
        """The first line that does not parse (bisection: about two parses of the range)."""
        bounds = np.append(starts, len(data))
        low, high = 0, len(starts)  # the first bad line is in [low, high)
        while high - low > 1:
            middle = (low + high) // 2
            if _parses(data[bounds[low]:bounds[middle]], self.dtype):
                low = middle
            else:
                high = middle
        line = data[bounds[low]:bounds[low + 1]].split(b"\n")[0].rstrip(b"\r")
        try:
            _load(line, self.dtype)
            reason = str(error)  # the line parses alone: report the range's error
        except (ValueError, TypeError) as line_error:
            reason = _reason(line, line_error)
        number = line_number(path, offset + int(starts[low]))
        return ValueError(f"{path}, line {number}: {reason}")


def _csr_bytes(X) -> int:
    """Bytes of a CSR matrix's three arrays."""
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


def _scan_indices(data: bytes) -> tuple[float, int]:
    """Lowest and highest ``index`` of the ``index:value`` tokens in LIBSVM text, read from the
    text alone (for a range that does not parse); ``(inf, -1)`` when there is none."""
    found = [int(token) for token in _INDEX.findall(_COMMENT.sub(b"", data))]
    return (min(found), max(found)) if found else (math.inf, -1)


def _load(data: bytes, dtype):
    """``load_svmlight_file`` on bytes with raw indices (``zero_based=True``)."""
    return load_svmlight_file(io.BytesIO(data), zero_based=True, dtype=dtype)


def _parses(data: bytes, dtype) -> bool:
    try:
        _load(data, dtype)
    except (ValueError, TypeError):
        return False
    return True


def _reason(line: bytes, error: Exception) -> str:
    """What is wrong with a LIBSVM line, in words."""
    label = line.split(b"#")[0].split()[0].decode(errors="replace")
    try:
        float(label)
    except ValueError:
        return f"the label {label!r} is not a number (line {line[:60]!r})."
    return f"cannot parse {line[:60]!r}: {error}."
