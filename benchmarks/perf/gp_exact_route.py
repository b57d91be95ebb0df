"""Where the GP's exact solves stop paying: fit time and test RMSE of ``solver="exact"`` (one
Cholesky factorisation) and ``"cg"`` (conjugate gradients on the exact kernel) against
``solver="dual"`` by rows, at the same hyper-parameters.

``make_friedman1(n + 1000, noise=0.5, random_state=1)``, standardised (X and y), the first ``n``
rows to fit and 1,000 to test; ``DSGGaussianProcessRegressor(sigma=3.0, noise=0.02)`` (the
hyper-parameters given, so that only the solve is timed), one thread, CPU seconds of ``fit``
(min over ``--repeats`` after a warm-up on the smallest size). The dual route's defaults: 256
steps of 2,048 features; the exact route's memory while fitting: ``16n²`` bytes
(:func:`kernelstream.solvers.gp_exact.exact_bytes`); the exact factorisation is not run past
8,000 rows (16,000: 4 GB).

    python -m benchmarks.perf.gp_exact_route --out benchmarks/results
    python -m benchmarks.perf.gp_exact_route --quick             # 1,000 rows: seconds
"""

from __future__ import annotations

import numpy as np

from benchmarks.common.report import report_table
from benchmarks.common.timing import measure, shape_arguments, threads

HEADER = ["rows", "exact: fit CPU s", "exact: RMSE", "cg: fit CPU s", "cg: RMSE",
          "dual: fit CPU s", "dual: RMSE", "dual / exact time", "dual / cg time",
          "exact: memory while fitting"]
EXACT_MOST = 8000


def problem(n: int):
    from sklearn.datasets import make_friedman1
    X, y = make_friedman1(n + 1000, noise=0.5, random_state=1)
    X, y = (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()
    return X[:n], y[:n], X[n:], y[n:]


def fit(solver: str, X, y):
    from kernelstream import DSGGaussianProcessRegressor
    return DSGGaussianProcessRegressor(sigma=3.0, noise=0.02, solver=solver, random_state=0,
                                       verbose=0).fit(X, y)


@threads(1)
def table(sizes, repeats: int) -> list[list[str]]:
    from kernelstream.solvers.gp_exact import exact_bytes
    for solver in ("exact", "cg", "dual"):  # warm-up
        fit(solver, *problem(200)[:2])
    rows = []
    for n in sizes:
        X, y, Xte, yte = problem(n)
        cells = {}
        for solver in ("exact", "cg", "dual"):
            if solver == "exact" and n > EXACT_MOST:
                continue
            timing = measure(lambda: fit(solver, X, y), repeats=repeats, warmup=0)
            rmse = float(np.sqrt(np.mean((timing.result.predict(Xte) - yte) ** 2)))
            cells[solver] = (timing.min("cpu"), rmse)
        (te, re), (tc, rc), (td, rd) = (cells.get(k, (np.nan, np.nan)) for k in ("exact", "cg", "dual"))
        rows.append([f"{n:,}", f"{te:.3f}", f"{re:.4f}", f"{tc:.3f}", f"{rc:.4f}", f"{td:.2f}",
                     f"{rd:.4f}", f"{td / te:.1f}", f"{td / tc:.1f}",
                     f"{exact_bytes(n, 1) / 2**20:.0f} MiB" if n <= EXACT_MOST else "—"])
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main(argv=None) -> None:
    args = shape_arguments(__doc__, "gp_exact_route.md", argv)
    sizes = (1000,) if args.quick else (1000, 2000, 4000, 8000, 16000)
    repeats = 1 if args.quick else min(args.repeats, 2)
    report_table(args.out, "gp_exact_route.md", "The GP's exact solves against its dual iteration",
                 f"One thread; friedman1 (d = 10), sigma=3.0 and noise=0.02 given; CPU seconds of "
                 f"`fit`, min of {repeats}; RMSE on 1,000 test rows (standardised y).", HEADER,
                 table(sizes, repeats))


if __name__ == "__main__":
    main()
