"""What a bare ``pip install kernelstream`` (no extras) must do: import, fit, save and load every
public estimator, and run ``kernelstream fit`` / ``predict`` on a CSV.

Run as a script (``python tests/install/bare_install_smoke.py``) by ``.ci/bare_install`` in a
fresh virtual environment holding only the wheel and its dependencies, and by
``tests/install/test_bare_install.py`` with every optional extra made unimportable.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def _data(n: int = 200, d: int = 4):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n), (X[:, 0] + X[:, 1] > 0).astype(int)


def _estimators():
    """``(estimator, fit arguments)`` for each public estimator, small and fast."""
    import kernelstream as ks

    X, y_reg, y_cls = _data()
    small = dict(random_state=0)
    return [
        (ks.DSGRegressor(**small), (X, y_reg)),
        (ks.DSGClassifier(**small), (X, y_cls)),
        (ks.DSGOneClass(**small), (X,)),
        (ks.DSGDensityRatio(**small), (X, X + 0.5)),
        (ks.DSGGaussianProcessRegressor(n_components=256, **small), (X, y_reg)),
        (ks.GoGPRegressor(**small), (X, y_reg)),
        (ks.AOGDClassifier(**small), (X, y_cls)),
        (ks.RandomFeatures(n_components=64, **small), (X,)),
    ]


def _output(estimator, X):
    for method in ("predict", "transform", "log_ratio"):
        if hasattr(estimator, method):
            return np.asarray(getattr(estimator, method)(X))
    raise AssertionError(f"{type(estimator).__name__} has no output method")


def check_estimators(folder: Path) -> None:
    """Fit, save, load and predict each public estimator; the loaded model predicts the same."""
    import kernelstream as ks

    X = _data()[0]
    names = set()
    for estimator, args in _estimators():
        name = type(estimator).__name__
        estimator.fit(*args)
        path = folder / f"{name}.kst"
        estimator.save(path)
        loaded = ks.load(path)
        np.testing.assert_allclose(_output(loaded, X), _output(estimator, X), rtol=1e-6, atol=1e-6)
        names.add(name)
    public = {n for n in ks.__all__ if n[0].isupper()}
    assert names == public, f"not checked: {sorted(public - names)}"


def check_command_line(folder: Path) -> None:
    """``kernelstream fit`` then ``predict`` on a CSV with a header and a label column ``y``."""
    X, _, y = _data()
    table = folder / "train.csv"
    header = ",".join([f"x{j}" for j in range(X.shape[1])] + ["y"])
    np.savetxt(table, np.column_stack([X, y]), delimiter=",", header=header, comments="")
    model, predictions = folder / "model.kst", folder / "predictions.csv"
    command = [sys.executable, "-m", "kernelstream"]
    subprocess.run([*command, "fit", str(table), "--task", "classification", "-o", str(model),
                    "--quiet"], check=True)
    subprocess.run([*command, "predict", str(model), str(table), "-o", str(predictions), "--quiet"],
                   check=True)
    lines = predictions.read_text().splitlines()
    assert len(lines) == X.shape[0] + 1, f"{len(lines)} lines of predictions for {X.shape[0]} rows"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        check_estimators(Path(folder))
        check_command_line(Path(folder))
    print("bare install: every public estimator fits, saves and loads; the command line runs")


if __name__ == "__main__":
    main()
