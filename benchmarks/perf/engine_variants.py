"""Every parameter a user sets on the fit engine against the default fit on the same rows.

Issue 48's table: ``make_moons(2000, noise=0.1)`` (75/25), a9a (its own split) and
``make_friedman1(20000, noise=0.5)`` (80/20), each fitted with defaults and with each variant
(a ``loss``, ``max_iter``, ``solver="cg"``, a checkpoint, a9a's rows read from two LIBSVM
files by ``open_source``); the route the plan took, the test error (RMSE
for regression) and CPU seconds of ``fit``, min and median over the repeats after one warm-up,
one thread, and the ratios to the default's error and min time from the same run.

    python -m benchmarks.perf.engine_variants --out benchmarks/results
    python -m benchmarks.perf.engine_variants --quick                 # moons, one repeat
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import make_friedman1, make_moons
from sklearn.model_selection import train_test_split

from benchmarks.common.data import official_split
from benchmarks.common.report import report_table
from benchmarks.common.timing import measure, threads
from kernelstream import DSGClassifier, DSGRegressor

#: a checkpoint's path, written in a temporary folder (``checkpoint_every=1``: every size)
CHECKPOINT = "<a temporary file>"
#: the variant that fits the training rows written as two LIBSVM files, read by ``open_source``
SOURCE = {"source": "two LIBSVM files"}
#: the variants of each set (the default first), as keyword arguments of the estimator
VARIANTS = {
    "moons": [{}, {"max_iter": 2}, {"max_iter": 5}, {"solver": "cg"}, {"loss": "logistic"},
              {"loss": "hinge"}, {"checkpoint": CHECKPOINT}],
    "a9a": [{}, {"loss": "logistic"}, {"loss": "hinge"}, {"max_iter": 10}, {"solver": "cg"},
            {"checkpoint": CHECKPOINT}, SOURCE],
    "friedman1": [{}, {"loss": "huber"}, {"loss": "absolute"}, {"loss": "quantile"},
                  {"loss": "epsilon_insensitive"}, {"max_iter": 2}, {"solver": "cg"},
                  {"checkpoint": CHECKPOINT}],
}
HEADER = ["set", "variant", "route", "error", "error - default", "CPU s min", "CPU s median",
          "time / default"]


def rows_of(name: str) -> tuple:
    """``(estimator, X_train, y_train, X_test, y_test)`` of a set."""
    if name == "moons":
        X, y = make_moons(2000, noise=0.1, random_state=0)
        return (DSGClassifier, *_split(X, y, 0.25))
    if name == "a9a":
        return (DSGClassifier, *official_split("a9a"))
    X, y = make_friedman1(20000, noise=0.5, random_state=0)
    return (DSGRegressor, *_split(X, y, 0.2))


def _split(X, y, test_size: float) -> tuple:
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_size, random_state=0)
    return X_train, y_train, X_test, y_test


def _libsvm_source(X, y, folder: Path):
    """The rows as two LIBSVM files in ``folder``, opened as one source."""
    from sklearn.datasets import dump_svmlight_file

    from kernelstream.data import open_source
    half = X.shape[0] // 2
    dump_svmlight_file(X[:half], y[:half], str(folder / "part-0.svm"))
    dump_svmlight_file(X[half:], y[half:], str(folder / "part-1.svm"))
    return open_source(str(folder / "part-*.svm"), n_features=X.shape[1])


def error(model, X, y) -> float:
    """Test error in percent (a classifier) or RMSE (a regressor)."""
    predicted = model.predict(X)
    if isinstance(model, DSGClassifier):
        return 100.0 * float(np.mean(predicted != y))
    return float(np.sqrt(np.mean((predicted - y) ** 2)))


def run_set(name: str, repeats: int) -> list[list[str]]:
    """The table rows of one set: the default first, then each variant with its ratios."""
    estimator, X, y, X_test, y_test = rows_of(name)
    rows, base = [], None
    folder = tempfile.TemporaryDirectory()
    for shown in VARIANTS[name]:
        params = {k: (str(Path(folder.name) / "fit.kst") if v == CHECKPOINT else v)
                  for k, v in shown.items() if shown is not SOURCE}
        data = (X, y) if shown is not SOURCE else (_libsvm_source(X, y, Path(folder.name)),)
        timing = measure(lambda: estimator(random_state=0, **params).fit(*data), repeats=repeats)
        model, seconds = timing.result, timing.min("cpu")
        err = error(model, X_test, y_test)
        base = base or (err, seconds)
        regression = estimator is DSGRegressor
        delta = f"x{err / base[0]:.3f}" if regression else f"{err - base[0]:+.2f} points"
        rows.append([name, ", ".join(f"{k}={v!r}" for k, v in shown.items()).replace("'<", "<").replace(">'", ">") or "defaults",
                     model.fit_plan_.route, f"{err:.4f}" if regression else f"{err:.2f}%", delta,
                     f"{seconds:.2f}", f"{timing.median('cpu'):.2f}", f"{seconds / base[1]:.2f}"])
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="moons, one repeat: seconds")
    parser.add_argument("--out", type=Path, help="write DIR/engine_variants.md")
    args = parser.parse_args(argv)
    sets, repeats = (["moons"], 1) if args.quick else (args.sets, args.repeats)
    with threads(1):
        rows = [row for name in sets for row in run_set(name, repeats)]
    report_table(args.out, "engine_variants.md", "Every parameter on the fit engine against the "
                 "default fit", "One thread; CPU seconds of `fit`, min and median of the repeats "
                 f"after one warm-up ({repeats} repeats); error: test error rate (classifiers) or "
                 "RMSE (regression); `time / default`: the variant's min over the default's min, "
                 "same run.", HEADER, rows)


if __name__ == "__main__":
    main()
