"""``.npy`` files as memory maps, and ``.npz`` archives of arrays, as sources.

An ``.npz`` member written without compression (``np.savez``) is memory-mapped in place (its
bytes are stored as-is inside the zip); a compressed one (``np.savez_compressed``) has to be
decompressed, and is read into memory whole.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ._text import check_readable
from .arrays import ArraySource

__all__ = ["open_npy", "open_npz"]

_LOCAL_HEADER = 30  # bytes of a zip local file header before its name and extra field


def _load_npy(path, what: str) -> np.ndarray:
    path = Path(path)
    check_readable(path)
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as error:
        raise ValueError(f"{path} ({what}) cannot be memory-mapped: {error}") from error


def open_npy(path, *, label=None, weight=None, **options) -> ArraySource:
    """A source over ``X`` in the ``.npy`` file ``path``, labels in ``label`` (another ``.npy``
    path) and weights in ``weight``; all three are memory-mapped.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> np.save(folder / "X.npy", np.ones((6, 3))); np.save(folder / "y.npy", np.arange(6))
    >>> open_npy(folder / "X.npy", label=folder / "y.npy").scan().n_rows
    6
    """
    X = _load_npy(path, "X")
    y = None if label is None else _load_npy(label, "label")
    sample_weight = None if weight is None else _load_npy(weight, "weight")
    return ArraySource(X, y, sample_weight=sample_weight, origin=str(path), **options)


def _member_offset(f, info: zipfile.ZipInfo) -> int:
    """Where the data of an uncompressed zip member starts (after its local header)."""
    f.seek(info.header_offset)
    header = f.read(_LOCAL_HEADER)
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return info.header_offset + _LOCAL_HEADER + name_length + extra_length


def _npz_member(path: Path, key: str) -> np.ndarray:
    """Array ``key`` of the archive: a memory map when stored uncompressed, else loaded."""
    with zipfile.ZipFile(path) as archive:
        names = [name.removesuffix(".npy") for name in archive.namelist()]
        if key not in names:
            raise ValueError(f"{path} has no array {key!r}; its arrays are {names}.")
        info = archive.getinfo(f"{key}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        with np.load(path, allow_pickle=False) as data:
            return data[key]
    with open(path, "rb") as f:
        f.seek(_member_offset(f, info))
        version = np.lib.format.read_magic(f)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0}.get(
            version, np.lib.format.read_array_header_2_0)
        shape, fortran_order, dtype = read_header(f)
        offset = f.tell()
    if dtype.hasobject:
        raise ValueError(f"{path}: array {key!r} holds Python objects; it cannot be read.")
    return np.memmap(path, dtype=dtype, mode="r", shape=shape, offset=offset,
                     order="F" if fortran_order else "C")


def open_npz(paths: Sequence, *, features: str = "X", label: str | None = "y",
             weight: str | None = None, **options) -> ArraySource:
    """A source over the arrays ``features`` (X), ``label`` and ``weight`` of one or several
    ``.npz`` archives (each archive in turn, same columns in all).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "data.npz"
    >>> np.savez(path, X_train=np.ones((4, 2)), y_train=np.arange(4))
    >>> open_npz([path], features="X_train", label="y_train").scan().classes
    array([0, 1, 2, 3])
    """
    members = []
    for path in map(Path, paths):
        check_readable(path)
        arrays = [None if key is None else _npz_member(path, key)
                  for key in (features, label, weight)]
        members.append((*arrays, str(path)))
    return ArraySource.from_members(members, **options)
