"""The shared benchmark data sets: the one place that knows where they live.

The ``.npz`` files of ``../shared/data`` (next to the repository; ``MANIFEST.md`` there describes
each). Data sets with an official split hold ``X_train, y_train, X_test, y_test``; the others
``X, y`` (qm7 has its own keys).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

#: the repository root
ROOT = Path(__file__).resolve().parents[2]
#: the shared data folder, a sibling of the repository
DATA = ROOT.parent / "shared" / "data"
#: where the committed benchmark results live
RESULTS = ROOT / "benchmarks" / "results"

__all__ = ["DATA", "RESULTS", "ROOT", "data_path", "load", "official_split", "random_split"]


def data_path(name: str) -> Path:
    """The path of the shared data set ``name`` (``"a9a"`` or ``"a9a.npz"``).

    Raises
    ------
    FileNotFoundError
        If the file is missing, naming the folder searched and the data sets found there.
    """
    path = DATA / (name if name.endswith(".npz") else f"{name}.npz")
    if not path.is_file():
        found = sorted(p.stem for p in DATA.glob("*.npz")) if DATA.is_dir() else []
        raise FileNotFoundError(f"no data set {name!r} at {path}; found {found or 'nothing'} "
                                f"in {DATA} (see MANIFEST.md there)")
    return path


def load(name: str) -> dict[str, np.ndarray]:
    """All arrays of the shared data set ``name``, read into memory."""
    with np.load(data_path(name)) as data:
        return {key: data[key] for key in data.files}


def official_split(name: str, n_train: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``X_train, y_train, X_test, y_test`` of a data set with an official split.

    Parameters
    ----------
    name : str
        A data set with an official split (a9a, mnist, usps).
    n_train : int, optional
        Keep only the first ``n_train`` training rows.
    """
    data = load(name)
    if "X_train" not in data:
        raise ValueError(f"{name!r} has no official split (keys {sorted(data)}); use random_split")
    rows = slice(None, n_train)
    return data["X_train"][rows], data["y_train"][rows], data["X_test"], data["y_test"]


def random_split(X: np.ndarray, y: np.ndarray, *, seed: int, train_size: float | int | None = None,
                 test_size: float | int | None = None, stratify: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``X_train, y_train, X_test, y_test``: scikit-learn's seeded ``train_test_split`` of ``X, y``
    (stratified by ``y`` on request), in the order the benchmarks use."""
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, train_size=train_size, test_size=test_size, random_state=seed,
        stratify=y if stratify else None)
    return X_train, y_train, X_test, y_test
