"""Probe for issue 33: per-feature lengthscales (ARD) fitted on a subsample. Worth it, and at what cost?

On one thread, CPU seconds (``time.process_time``):

1. **Main table.** ``fit_lengthscales`` (exact GP marginal likelihood, L-BFGS-B, ``--rows`` rows,
   ``--max-iter`` iterations) on ``make_friedman1(8000, n_features=25, noise=0.5)`` (6,000 training
   rows standardised, 2,000 test) and on the shared sets a9a (first 8,000 rows, official test),
   abalone, diabetes, german_numer (seeded 75/25 splits, standardised); then the test error of
   (a) ``DSGRegressor``/``DSGClassifier`` with those lengthscales, α chosen by the estimator
   (``alpha="auto"``) or set to ``s_n²/(s·n)`` from the fit, (b) the exact GP posterior mean with
   them on at most 6,000 training rows (float64 Cholesky; labels ±1 as targets for the binary
   sets, error of the sign), and (c) the isotropic default estimator.
2. **Objectives** (``--objectives``): marginal likelihood against kernel ridge's closed-form
   leave-one-out, and the subsample size, scored by the exact GP with the fitted hyper-parameters.

The estimators get the lengthscales as ``sigma=1.0`` on ``X / ℓ``: the same model as ``sigma=ℓ``
(``W = diag(1/ℓ)·G``: ``(x/ℓ)ᵀG = xᵀdiag(1/ℓ)G``), which runs on estimators that do not yet
validate an array ``sigma``.

Run from the repository root (a markdown table on stdout, or in ``--out``; minutes)::

    python -m benchmarks.research.ard_lengthscales --out benchmarks/results/ard_lengthscales.md
    python -m benchmarks.research.ard_lengthscales --quick
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import torch
from sklearn.datasets import make_friedman1
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from kernelstream.estimators import DSGClassifier, DSGRegressor
from kernelstream.features import make_feature_map
from kernelstream.solvers.lengthscales import fit_lengthscales

from ..common.data import load, official_split, random_split
from ..common.machine import machine_line

SETS = ("friedman1", "a9a", "abalone", "diabetes", "german_numer")
BINARY = {"a9a", "diabetes", "german_numer"}
#: training rows of the exact GP (6,000² float64 is 288 MB)
GP_ROWS = 6000


def dataset(name: str, quick: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``X_train, y_train, X_test, y_test``: standardised on the training rows; labels ±1."""
    if name == "friedman1":
        X, y = make_friedman1(8000, n_features=25, noise=0.5, random_state=0)
        X, y, Xt, yt = X[:6000], y[:6000], X[6000:], y[6000:]
    elif name == "a9a":
        X, y, Xt, yt = official_split("a9a", 8000)
    else:
        data = load(name)
        X, y, Xt, yt = random_split(data["X"], data["y"], seed=0, test_size=0.25,
                                    stratify=name in BINARY)
    if quick:
        X, y = X[:1500], y[:1500]
    if name in BINARY:
        top = np.max(y)
        y, yt = np.where(y == top, 1.0, -1.0), np.where(yt == top, 1.0, -1.0)
    scaler = StandardScaler().fit(X.astype(np.float64))
    return (scaler.transform(X.astype(np.float64)), y.astype(np.float64),
            scaler.transform(Xt.astype(np.float64)), yt.astype(np.float64))


def score(name: str, prediction: np.ndarray, y: np.ndarray) -> float:
    """Test error: the error rate of the sign (binary sets), else the RMSE."""
    if name in BINARY:
        return float(np.mean(np.sign(prediction) != y))
    return float(np.sqrt(np.mean((prediction - y) ** 2)))


def exact_gp(X, y, Xt, ell, noise: float, signal: float) -> tuple[np.ndarray, float]:
    """The GP posterior mean ``s·k*ᵀ(sK + s_n²I)⁻¹(y − ȳ) + ȳ`` at ``Xt`` on the first
    :data:`GP_ROWS` rows, and its CPU seconds."""
    start = time.process_time()
    X, y = torch.from_numpy(X[:GP_ROWS]), y[:GP_ROWS]
    kernel = make_feature_map("rbf", X.shape[1], ell, 2, 0).kernel
    C = signal * kernel(X, X) + noise * torch.eye(X.shape[0], dtype=torch.float64)
    weights = torch.cholesky_solve(torch.from_numpy(y - y.mean())[:, None], torch.linalg.cholesky(C))
    mean = signal * (kernel(torch.from_numpy(Xt), X) @ weights)[:, 0].numpy() + y.mean()
    return mean, time.process_time() - start


def estimator(name: str, X, y, Xt, ell=None, alpha="auto") -> tuple[np.ndarray, float]:
    """The test decision values of the default estimator (isotropic, ``ell=None``) or of one
    with lengthscales ``ell`` (``sigma=1.0`` on ``X/ℓ``), and its fit's CPU seconds."""
    cls = DSGClassifier if name in BINARY else DSGRegressor
    start = time.process_time()
    if ell is None:
        model = cls(random_state=0).fit(X, y)
    else:
        model = cls(sigma=1.0, alpha=alpha, random_state=0).fit(X / ell, y)
        Xt = Xt / ell
    seconds = time.process_time() - start
    out = model.decision_function(Xt) if name in BINARY else model.predict(Xt)
    return out, seconds


def main_rows(names, rows: int, max_iter: int, quick: bool) -> list[str]:
    """One line per set of the main table."""
    lines = ["| set | n × d | fit ℓ (s) | iterations | ARD DSG, α auto | ARD DSG, α = s_n²/(s·n) | "
             "ARD exact GP | isotropic DSG default | relevance: smallest ℓ / median ℓ |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        X, y, Xt, yt = dataset(name, quick)
        ell, noise, signal, info = fit_lengthscales(X, y, rows=rows, max_iter=max_iter, seed=0)
        cells = [f"{name}", f"{X.shape[0]} × {X.shape[1]}", f"{info['seconds']:.1f}",
                 f"{info['n_iter']}"]
        for ell_, alpha in ((ell, "auto"), (ell, noise / (signal * X.shape[0]))):
            out, seconds = estimator(name, X, y, Xt, ell_, alpha)
            cells.append(f"{score(name, out, yt):.4f} ({seconds:.0f} s)")
        mean, seconds = exact_gp(X, y, Xt, ell, noise, signal)
        cells.append(f"{score(name, mean, yt):.4f} ({seconds:.0f} s)")
        out, seconds = estimator(name, X, y, Xt)
        cells.append(f"{score(name, out, yt):.4f} ({seconds:.0f} s)")
        cells.append(f"{ell.min():.3g} / {np.median(ell):.3g}")
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def objective_rows(names, rows_list, max_iter: int, quick: bool) -> list[str]:
    """One line per (set, objective, rows, start): the fit's time and the exact GP's error."""
    lines = ["| set | objective | rows | start | fit ℓ (s) | iterations | exact GP error | "
             "noise s_n² | smallest ℓ / median ℓ |", "|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        X, y, Xt, yt = dataset(name, quick)
        for objective in ("marginal_likelihood", "loo"):
            for rows in rows_list:
                for init in ("std", "median"):
                    ell, noise, signal, info = fit_lengthscales(
                        X, y, rows=rows, max_iter=max_iter, objective=objective, init=init)
                    mean, _ = exact_gp(X, y, Xt, ell, noise, signal)
                    lines.append(f"| {name} | {objective} | {info['rows']} | {init} | "
                                 f"{info['seconds']:.1f} | {info['n_iter']} | "
                                 f"{score(name, mean, yt):.4f} | {noise:.3g} | "
                                 f"{ell.min():.3g} / {np.median(ell):.3g} |")
                    print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--objectives", nargs="*", default=None, choices=SETS,
                        help="compare the objectives, rows and starts on these sets instead")
    parser.add_argument("--objective-rows", nargs="+", type=int, default=[500, 1000, 2000])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with threadpool_limits(1):
        if args.objectives is not None:
            rows = [min(r, 500) for r in args.objective_rows] if args.quick else args.objective_rows
            lines = objective_rows(args.objectives or ["friedman1"], sorted(set(rows)),
                                   args.max_iter, args.quick)
        else:
            lines = main_rows(args.sets, 500 if args.quick else args.rows, args.max_iter, args.quick)
    command = "python -m benchmarks.research.ard_lengthscales " + " ".join(argv or sys.argv[1:])
    text = "\n".join([f"`{command}`", "", machine_line(1), "", *lines, ""])
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
