"""The default fit's time and error as the rows grow, against Nyström(1024) + ridge.

Issue 49's curve: ``make_classification(n, 20, n_informative=10, flip_y=0.02,
random_state=1)`` and ``make_friedman1(n, 20, noise=1.0, random_state=1)``, 75/25 split
(``random_state=0``), at each ``n``; ``DSGClassifier(random_state=0)`` /
``DSGRegressor(random_state=0)`` against ``StandardScaler + Nystroem(1024, random_state=0) +
RidgeClassifier(alpha=1e-3)`` / ``Ridge(alpha=1e-3)``. Each fit runs in a process of its own
(one thread, after a warm-up fit on 2,000 rows), so that its peak RSS is its own: CPU seconds
of ``fit`` (min and median of the repeats), the test error rate (RMSE for regression), the
features the fit kept, the peak RSS of the process, and the ratios to the peer's.

    python -m benchmarks.scaling --out benchmarks/results
    python -m benchmarks.scaling --sizes 10000 --repeats 1          # seconds
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks.common.report import markdown_table, report_or_print

SETS = ("classification", "regression")
SIZES = (10_000, 100_000, 1_000_000)
HEADER = ["set", "rows", "method", "error", "CPU s min", "CPU s median", "features",
          "peak RSS GiB", "error / peer", "time / peer", "time / previous size"]


def rows_of(name: str, n: int) -> tuple:
    """``(X_train, X_test, y_train, y_test)`` of a set at ``n`` rows."""
    from sklearn.datasets import make_classification, make_friedman1
    from sklearn.model_selection import train_test_split
    if name == "classification":
        X, y = make_classification(n, 20, n_informative=10, flip_y=0.02, random_state=1)
    else:
        X, y = make_friedman1(n, 20, noise=1.0, random_state=1)
    return train_test_split(X, y, test_size=0.25, random_state=0)


def estimator(name: str, method: str):
    """Our default estimator or the peer pipeline of a set."""
    if method == "ours":
        from kernelstream import DSGClassifier, DSGRegressor
        return (DSGClassifier if name == "classification" else DSGRegressor)(random_state=0,
                                                                           verbose=0)
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import Ridge, RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    last = RidgeClassifier(alpha=1e-3) if name == "classification" else Ridge(alpha=1e-3)
    return make_pipeline(StandardScaler(), Nystroem(n_components=1024, random_state=0), last)


def error(name: str, model, X, y) -> float:
    predicted = model.predict(X)
    if name == "classification":
        return 100.0 * float(np.mean(predicted != y))
    return float(np.sqrt(np.mean((predicted - y) ** 2)))


def one(name: str, n: int, method: str, repeats: int) -> dict:
    """One method's fits in this process (one thread): CPU seconds, error, features, peak RSS."""
    import time

    import torch
    from threadpoolctl import threadpool_limits
    torch.set_num_threads(1)
    with threadpool_limits(1):
        X, X_test, y, y_test = rows_of(name, 2000)
        estimator(name, method).fit(X, y)  # warm-up: imports, kernels
        X, X_test, y, y_test = rows_of(name, n)
        seconds = []
        for _ in range(repeats):
            start = time.process_time()
            model = estimator(name, method).fit(X, y)
            seconds.append(time.process_time() - start)
    plan = getattr(model, "fit_plan_", None)
    features = (model.n_components_ if hasattr(model, "n_components_") else 1024)
    return dict(error=error(name, model, X_test, y_test), seconds=seconds, features=int(features),
                rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                plan=str(plan) if plan is not None else None)


def run(name: str, n: int, method: str, repeats: int) -> dict:
    """:func:`one` in a fresh process (its peak RSS its own)."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.scaling", "--one", name, str(n),
                          method, str(repeats)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(sizes, repeats: int, sets) -> tuple[list, list]:
    """The table rows (ours and the peer's at each size) and our plans at the largest size."""
    rows, plans = [], []
    for name in sets:
        previous = None
        for n in sizes:
            times = repeats if n < 1_000_000 else 1
            peer, ours = run(name, n, "peer", times), run(name, n, "ours", times)
            for method, result in (("Nystroem(1024)+ridge", peer), ("kernelstream", ours)):
                mine = result is ours
                best = min(result["seconds"])
                shown = f"{result['error']:.2f}%" if name == "classification" else f"{result['error']:.4f}"
                rows.append([name, f"{n:,}", method, shown, f"{best:.2f}",
                             f"{float(np.median(result['seconds'])):.2f}", f"{result['features']:,}",
                             f"{result['rss']:.2f}",
                             f"{result['error'] / peer['error']:.3f}" if mine else "",
                             f"{best / min(peer['seconds']):.2f}" if mine else "",
                             f"{best / previous:.2f}" if mine and previous else ""])
                print(" | ".join(rows[-1]), flush=True)
            previous = min(ours["seconds"])
            if n == max(sizes):
                plans += [f"{name}, {n:,} rows:", "", "```", ours["plan"], "```", ""]
    return rows, plans


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--repeats", type=int, default=2, help="fits a method (1 at 10^6 rows)")
    parser.add_argument("--out", type=Path, help="write DIR/scaling.md")
    parser.add_argument("--one", nargs=4, metavar=("SET", "ROWS", "METHOD", "REPEATS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        name, n, method, repeats = args.one
        print(json.dumps(one(name, int(n), method, int(repeats))))
        return
    rows, plans = table(args.sizes, args.repeats, args.sets)
    body = ["One thread; each method's fits in a process of its own after a warm-up fit on "
            f"2,000 rows; CPU seconds of `fit`, min and median of {args.repeats} fits (one at "
            "10^6 rows); error: test error rate (classification) or RMSE (regression), 75/25 "
            "split; peak RSS: the process's (data included); ratios to the peer of the same "
            "size, and our time over our time at the previous size.", "",
            *markdown_table(HEADER, rows), "", "Our plans (`fit_plan_`) at the largest size:", "",
            *plans]
    report_or_print(args.out, "scaling.md", "The default fit as the rows grow, against "
                    "Nystroem(1024) + ridge", body)


if __name__ == "__main__":
    main()
