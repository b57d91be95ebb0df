"""What a default fit of n rows costs: ``DSGClassifier()`` on seeded a9a subsets, one thread.

For each n: CPU seconds of ``fit`` (min and median of ``--repeats`` fits after one warm-up),
the test error on a9a's test file, the loss kept, the features kept and the route the fit took
(by the thresholds of :mod:`kernelstream.estimators._converging`). Writes
``benchmarks/results/fit_cost.md``, which ``docs/user_guide/fit_cost.md`` includes.

Usage: ``python -m benchmarks.perf.fit_cost [--sizes 1000 2000 ...] [--repeats 2]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from kernelstream import DSGClassifier
from kernelstream.planning import LIMITS
from kernelstream.solvers.dual import DUAL_MAX_ROWS

from ..common.data import official_split
from ..common.report import markdown_table, write_report

CV_MAX_ROWS = LIMITS.cv_max_rows
from ..common.timing import measure, threads

OUT = Path(__file__).resolve().parents[1] / "results" / "fit_cost.md"
SIZES = (1000, 2000, 3000, 4000, 4200, 6000, 10000, 32561)
TITLE = "What a default fit costs: `DSGClassifier()` on a9a subsets"


def route(n: int) -> str:
    """The route of a default binary fit of ``n`` rows in memory."""
    if n <= DUAL_MAX_ROWS:
        return "dual: both losses, σ × α by leave-one-out"
    if n <= CV_MAX_ROWS:
        return f"epochs; σ, α by leave-one-out on a dual subsample of {DUAL_MAX_ROWS}"
    return "epochs; σ by the race, features grown"


def row(X, y, X_test, y_test, n: int, repeats: int) -> list:
    """One table row: the fit of a seeded subset of ``n`` rows, timed ``repeats`` times."""
    rows = np.random.RandomState(0).permutation(X.shape[0])[:n]
    timing = measure(lambda: DSGClassifier(random_state=0, verbose=0).fit(X[rows], y[rows]),
                     repeats=repeats, warmup=0)
    model = timing.result
    error = float(np.mean(model.predict(X_test) != y_test))
    return [f"{n:,}", f"{timing.min('cpu'):.1f} / {timing.median('cpu'):.1f}", f"{error:.2%}",
            model.loss_, f"{model.n_components_:,}", route(n)]


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    X, y, X_test, y_test = official_split("a9a")
    with threads(1):
        DSGClassifier(random_state=0, verbose=0).fit(X[:300], y[:300])  # warm-up
        table = [row(X, y, X_test, y_test, n, args.repeats) for n in args.sizes]
    body = ["CPU seconds of `fit`, min / median of the repeats after one warm-up fit.", "",
            *markdown_table(["rows", "CPU s (min / median)", "test error", "loss", "features",
                             "route"], table)]

    return write_report(args.out, TITLE, body, threads=1)


if __name__ == "__main__":
    print(main().read_text())
