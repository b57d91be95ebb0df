"""``solver="cg"`` against the default ``solver="preconditioned"``, everything else default.

Both fits hold out the same validation rows, race the same bandwidths, grow the same features
and stop on the validation loss; only the training of each model differs (conjugate gradients
on the ridge normal equations against preconditioned SGD epochs). Binary classification uses
the squared loss either way (the default's "auto"), so the two solve the same objective. Sets
and splits as :mod:`benchmarks.perf.shared_defaults` (three seeded splits each); the test error
rate or RMSE and the fit time summed over the splits, one thread.

    python -m benchmarks.perf.solver_cg --out benchmarks/results/solver_cg.md
    python -m benchmarks.perf.solver_cg --only digits_odd_even --seeds 0     # seconds
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common.machine import machine_line
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import Stopwatch, threads
from benchmarks.perf.shared_defaults import SETS, error, split
from kernelstream import DSGClassifier, DSGRegressor

#: binary and regression sets (the multiclass sets train the softmax by default, which "cg" cannot)
DEFAULT_SETS = ["digits_odd_even", "breast_cancer", "german_numer", "diabetes", "phishing",
                "abalone", "diabetes_regression", "trump_approval", "chick_weights"]
SOLVERS = ("preconditioned", "cg")
HEADER = ["data set", "metric", "preconditioned", "cg", "ratio cg / preconditioned",
          "fit s preconditioned", "fit s cg"]


def run_set(name: str, seeds) -> list[str]:
    """One table row: mean test metric and total fit seconds of each solver over ``seeds``."""
    task = SETS[name]["task"]
    estimator = DSGClassifier if task == "classification" else DSGRegressor
    metric, seconds = {}, {}
    for solver in SOLVERS:
        errors, total = [], 0.0
        for seed in seeds:
            X, y, X_test, y_test = split(name, seed)
            with Stopwatch() as fit:
                model = estimator(solver=solver, random_state=seed).fit(X, y)
            total += fit.wall
            errors.append(error(task, model, X_test, y_test))
        metric[solver], seconds[solver] = float(np.mean(errors)), total
    row = [name, "error rate" if task == "classification" else "RMSE",
           *(f"{metric[s]:.4g}" for s in SOLVERS), f"{metric['cg'] / metric['preconditioned']:.3f}",
           *(f"{seconds[s]:.1f}" for s in SOLVERS)]
    print(" | ".join(row), flush=True)
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=DEFAULT_SETS, choices=sorted(SETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="write the table to this .md file")
    args = parser.parse_args(argv)
    with threads(args.threads):
        rows = [run_set(name, args.seeds) for name in args.only]
    table = markdown_table(HEADER, rows)
    print("\n".join(table))
    if args.out is not None:
        ratios = [float(r[4]) for r in rows]
        body = [f"Means over the seeds {args.seeds}; fit seconds summed over them (wall clock).", "",
                *table, "", f"Ratios cg / preconditioned: min {min(ratios):.3f}, median "
                f"{np.median(ratios):.3f}, max {max(ratios):.3f}."]
        print("wrote", write_report(args.out, "solver='cg' against the default solver, defaults otherwise",
                                    body, machine=machine_line(args.threads)))


if __name__ == "__main__":
    main()
