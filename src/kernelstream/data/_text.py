"""Text files in byte ranges: a range owns the lines that *start* inside it, so consecutive
ranges cover every line exactly once whatever their size, and a line's byte offset names it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ._blocks import split_row_id

__all__ = ["plan_byte_parts", "read_lines_starting_in", "data_line_starts", "line_number",
           "has_whitespace_lines", "data_lines_only", "locate_line", "check_readable"]

#: bytes that ``bytes.split()`` treats as whitespace
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True
_COUNT_BLOCK = 2**24  # bytes read at a time when counting lines


def check_readable(path: Path) -> int:
    """The size of ``path`` in bytes; ``FileNotFoundError`` naming it when it is missing."""
    if not path.is_file():
        raise FileNotFoundError(f"No such data file: {str(path)!r}.")
    return os.path.getsize(path)


def plan_byte_parts(sizes: list[int], data_starts: list[int], part_bytes: int,
                    world_size: int) -> list[tuple[int, int, int]]:
    """``(file, start, stop)`` byte ranges covering ``[data_start, size)`` of every file, each at
    most ``part_bytes`` and at most ``1/world_size`` of the total (so every rank gets a part)."""
    total = sum(size - start for size, start in zip(sizes, data_starts))
    part_size = max(1, min(part_bytes, math.ceil(total / world_size)))
    parts = []
    for file, (size, start) in enumerate(zip(sizes, data_starts)):
        n_parts = max(1, math.ceil((size - start) / part_size))
        bounds = np.linspace(start, size, n_parts + 1).round().astype(np.int64)
        parts += [(file, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    return parts


def read_lines_starting_in(path: Path, start: int, stop: int) -> tuple[int, bytes]:
    """``(offset, data)``: the bytes of every line of ``path`` whose first byte lies in
    ``[start, stop)``, and the file offset of ``data[0]``.

    A line starts at 0 or after a ``\\n``. The range's first line is found by stepping back one
    byte: if it is not a newline, the line in progress belongs to the previous range.
    """
    with open(path, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":
                f.readline()  # the rest of a line that started before `start`
        offset = f.tell()
        if offset >= stop:
            return offset, b""
        data = f.read(stop - offset)
        if data and not data.endswith(b"\n"):
            data += f.readline()  # complete the last line that started before `stop`
    return offset, data


def _lines(data: bytes, comment: bytes | None):
    """``(starts, ends, has_data)`` of every line of ``data`` (ends exclude the newline).

    Lines usually start with their content; only those starting with whitespace are stripped
    one by one, so the cost is one pass over the bytes plus O(lines).
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    starts = np.concatenate([[0], newlines + 1]).astype(np.int64)
    ends = np.concatenate([newlines, [len(buf)]]).astype(np.int64)
    starts, ends = starts[starts < len(buf)], ends[starts < len(buf)]
    first = starts.copy()  # first non-whitespace byte of each line (ends: none)
    has_data = ends > starts
    indented = np.flatnonzero(has_data & _WHITESPACE[buf[np.minimum(starts, len(buf) - 1)]])
    for line in indented:
        content = data[starts[line]:ends[line]].lstrip()
        first[line], has_data[line] = ends[line] - len(content), bool(content)
    if comment is not None and len(buf):
        has_data &= buf[np.minimum(first, len(buf) - 1)] != ord(comment)
    return starts, ends, has_data


def data_line_starts(data: bytes, comment: bytes | None = None) -> np.ndarray:
    """Offsets in ``data`` of the lines holding data: some non-whitespace byte, and (with
    ``comment``) a first non-whitespace byte other than ``comment``. Blank lines (and comment
    lines) are skipped by the parsers, so row ``i`` of a parsed range is ``starts[i]``."""
    starts, _, has_data = _lines(data, comment)
    return starts[has_data]


def has_whitespace_lines(data: bytes) -> bool:
    """Whether a line of ``data`` holds only spaces, tabs or ``\\r`` (not empty)."""
    starts, ends, has_data = _lines(data, None)
    return bool(np.any((ends > starts) & ~has_data))


def data_lines_only(data: bytes) -> bytes:
    """``data`` without its blank lines (each kept line ends with a newline)."""
    starts, ends, has_data = _lines(data, None)
    return b"".join(data[a:b] + b"\n" for a, b in zip(starts[has_data], ends[has_data]))


def line_number(path: Path, offset: int) -> int:
    """The 1-based line number of the line starting at byte ``offset`` (counts the newlines
    before it: O(offset), for error messages)."""
    newlines = 0
    with open(path, "rb") as f:
        remaining = offset
        while remaining > 0:
            block = f.read(min(_COUNT_BLOCK, remaining))
            if not block:
                break
            newlines += block.count(b"\n")
            remaining -= len(block)
    return newlines + 1


def locate_line(paths: list[Path], row_id: int) -> str:
    """"file, line N" of a text row (its id holds the file and the line's byte offset)."""
    file, offset = split_row_id(row_id)
    return f"{paths[file]}, line {line_number(paths[file], offset)}"
