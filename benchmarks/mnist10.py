"""MNIST, all ten digits (``X/255``): test error of ``DSGClassifier`` per kernel, defaults otherwise.

Issue 6's must-show: ``kernel="chi2"`` and ``kernel="arccos"`` within one percentage point of
``kernel="rbf"``. Prints one markdown row per (kernel, parameters) with the test error, the fit
and predict times (one torch thread) and the number of steps; ``--out DIR`` also writes
``DIR/mnist10.md``.

    python -m benchmarks.mnist10                                  # rbf, chi2, arccos, full data
    python -m benchmarks.mnist10 --n-train 16384 --kernels rbf arccos
    python -m benchmarks.mnist10 --kernels arccos --params '{"precond_eps": 3.0}'
    python -m benchmarks.mnist10 --quick --out /tmp/bench         # seconds: rbf, 2,048/1,000 rows
    python -m benchmarks.mnist10 --kernels rbf --out benchmarks/results --file-name mnist10_defaults.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.common.data import official_split
from benchmarks.common.machine import machine_line
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import measure, threads
from kernelstream import DSGClassifier

HEADER = ["kernel", "parameters", "test error", "fit s", "predict s", "steps", "features", "sigma_"]


def row(kernel: str, params: dict, seed: int, X, y, X_test, y_test) -> list[str]:
    """One table row: fit with defaults (plus ``params``), time fit and predict, score."""
    model = DSGClassifier(kernel=kernel, random_state=seed, **params)
    fit = measure(lambda: model.fit(X, y), repeats=1, warmup=0)
    predict = measure(lambda: model.predict(X_test), repeats=1, warmup=0)
    error = float(np.mean(predict.result != y_test))
    return [kernel, json.dumps(params) if params else "defaults", f"{100 * error:.2f}%",
            f"{fit.min():.0f}", f"{predict.min():.0f}", str(model.t_), str(model.n_components_),
            f"{model.sigma_:.3g}"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", nargs="+", default=["rbf", "chi2", "arccos"])
    parser.add_argument("--params", default="{}", help="JSON of other DSGClassifier parameters")
    parser.add_argument("--n-train", type=int, default=60000, help="first rows of the training set")
    parser.add_argument("--n-test", type=int, default=None, help="first rows of the test set")
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="also write OUT/mnist10.md")
    parser.add_argument("--file-name", default="mnist10.md", help="name of the file in OUT")
    parser.add_argument("--quick", action="store_true", help="rbf, 2,048/1,000 rows (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.kernels, args.n_train, args.n_test = ["rbf"], 2048, 1000
    params = json.loads(args.params)

    X, y, X_test, y_test = official_split("mnist", args.n_train)
    X, X_test, y_test = X / 255.0, X_test[: args.n_test] / 255.0, y_test[: args.n_test]
    title = f"MNIST 10 classes: {len(X)} training rows, {len(X_test)} test rows"
    print(f"# {title}; {machine_line(args.threads)}")
    table = markdown_table(HEADER, [])
    print("\n".join(table))
    with threads(args.threads):
        for kernel in args.kernels:
            table += markdown_table(HEADER, [row(kernel, params, args.random_state, X, y, X_test,
                                                 y_test)])[2:]
            print(table[-1], flush=True)
    if args.out is not None:
        print("wrote", write_report(args.out / args.file_name, title, table, threads=args.threads))


if __name__ == "__main__":
    main()
