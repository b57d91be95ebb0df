"""MNIST, all ten digits (``X/255``): test error of ``DSGClassifier`` per kernel, defaults otherwise.

Issue 6's must-show: ``kernel="chi2"`` and ``kernel="arccos"`` within one percentage point of
``kernel="rbf"``. Prints one markdown row per (kernel, parameters) with the test error, the fit
and predict times (one torch thread) and the number of steps.

    python benchmarks/mnist10.py                                  # rbf, chi2, arccos, full data
    python benchmarks/mnist10.py --n-train 16384 --kernels rbf arccos
    python benchmarks/mnist10.py --kernels arccos --params '{"precond_eps": 3.0}'
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from kernelstream import DSGClassifier

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist.npz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", nargs="+", default=["rbf", "chi2", "arccos"])
    parser.add_argument("--params", default="{}", help="JSON of other DSGClassifier parameters")
    parser.add_argument("--n-train", type=int, default=60000, help="first rows of the training set")
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    params = json.loads(args.params)

    with np.load(DATA) as data:
        X, y = data["X_train"][: args.n_train] / 255.0, data["y_train"][: args.n_train]
        X_test, y_test = data["X_test"] / 255.0, data["y_test"]
    print(f"# MNIST 10 classes: {len(X)} training rows, {len(X_test)} test rows; "
          f"torch {torch.__version__}, {args.threads} thread(s), {platform.machine()}")
    print("| kernel | parameters | test error | fit s | predict s | steps | features | sigma_ |")
    print("|---|---|---|---|---|---|---|---|")
    for kernel in args.kernels:
        model = DSGClassifier(kernel=kernel, random_state=args.random_state, **params)
        start = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        error = float(np.mean(model.predict(X_test) != y_test))
        predict_s = time.perf_counter() - start
        print(f"| {kernel} | {json.dumps(params) if params else 'defaults'} | {100 * error:.2f}% | "
              f"{fit_s:.0f} | {predict_s:.0f} | {model.t_} | {model.n_components_} | "
              f"{model.sigma_:.3g} |", flush=True)


if __name__ == "__main__":
    main()
