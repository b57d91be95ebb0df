"""DSGGaussianProcessRegressor with its defaults against scikit-learn's optimised GP (issue 14).

Abalone (the shared ``abalone.npz``), for each seed a ``train_test_split`` of 3,000 training
and 1,177 test rows. Ours: ``DSGGaussianProcessRegressor(random_state=seed)`` on the 3,000 rows
(hyper-parameters by marginal likelihood on a 1,000-row subsample, landmark variance, std of
``y``). Peer: ``GaussianProcessRegressor(ConstantKernel()*RBF() + WhiteKernel(),
normalize_y=True)`` on the first 2,000 training rows (exact, O(n³)). Reported per seed: fit time
(min and median over ``--repeats`` after a warm-up fit), fit + predict time, test RMSE, coverage
of the 95% interval ``mean ± 1.96 std`` and the Gaussian NLPD of the test targets. A second,
generated set (``make_friedman1``, noise 1, same sizes) checks that the defaults are not tuned to
abalone (ours only). One thread.

    python -m benchmarks.gp_defaults [--seeds 0 1 2] [--repeats 3] [--out benchmarks/results]
    python -m benchmarks.gp_defaults --quick --out /tmp/bench   # seconds: seed 0, 600/300 rows
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from benchmarks.common.data import RESULTS, load, random_split
from benchmarks.common.machine import machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import Stopwatch, Timing, measure, threads
from kernelstream import DSGGaussianProcessRegressor

N_TRAIN, N_EXACT = 3000, 2000


def scores(mean, std, y) -> dict:
    """RMSE, 95% coverage ``P(|y − μ| ≤ 1.96 s)`` and NLPD ``½log(2πs²) + (y − μ)²/(2s²)``."""
    return dict(rmse=float(np.sqrt(np.mean((mean - y) ** 2))),
                coverage=float(np.mean(np.abs(y - mean) <= 1.96 * std)),
                nlpd=float(np.mean(0.5 * np.log(2 * np.pi * std**2) + (y - mean) ** 2 / (2 * std**2))))


def timed(make, X, y, Xs, repeats: int) -> dict:
    """Fit ``make()`` ``repeats`` times (after the caller's warm-up): min and median seconds of
    the fit and of fit + predict, and the scores of the last run."""
    fits = Timing()  # the fit part of each repeat

    def fit_predict():
        with Stopwatch() as sw:
            model = make().fit(X, y)
        fits.wall.append(sw.wall)
        fits.cpu.append(sw.cpu)
        return model, *model.predict(Xs, return_std=True)

    total = measure(fit_predict, repeats=repeats, warmup=0)
    model, mean, std = total.result
    return dict(fit_min=fits.min(), fit_median=fits.median(), total_min=total.min(),
                total_median=total.median(), mean=mean, std=std, model=model)


def run_seed(X, y, seed: int, repeats: int, n_train: int = N_TRAIN, n_exact: int = N_EXACT) -> dict:
    Xtr, ytr, Xte, yte = random_split(X, y, train_size=n_train, seed=seed)
    ours = timed(lambda: DSGGaussianProcessRegressor(random_state=seed), Xtr, ytr, Xte, repeats)
    exact = timed(lambda: GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(),
                                                   normalize_y=True, random_state=0),
                  Xtr[:n_exact], ytr[:n_exact], Xte, repeats)
    m = ours["model"]
    row = dict(seed=seed, ours={**scores(ours["mean"], ours["std"], yte), **_times(ours)},
               exact={**scores(exact["mean"], exact["std"], yte), **_times(exact)},
               hyper=f"σ={m.sigma_:.2f}, a={m.amplitude_:.0f}, s²={m.noise_:.2f}",
               exact_kernel=str(exact["model"].kernel_))
    print(row, flush=True)
    return row


def _times(result: dict) -> dict:
    return {k: result[k] for k in ("fit_min", "fit_median", "total_min", "total_median")}


def friedman(seed: int, n_train: int = N_TRAIN) -> dict:
    X, y = make_friedman1(n_train + 1177, noise=1.0, random_state=seed)
    model = DSGGaussianProcessRegressor(random_state=seed).fit(X[:n_train], y[:n_train])
    mean, std = model.predict(X[n_train:], return_std=True)
    row = dict(seed=seed, **scores(mean, std, y[n_train:]), noise=model.noise_)
    print("friedman1", row, flush=True)
    return row


def warm_up(X, y) -> None:
    """One small fit of each model: loads BLAS and torch kernels before anything is timed."""
    DSGGaussianProcessRegressor(n_steps=4, random_state=0).fit(X[:300], y[:300]).predict(
        X[:10], return_std=True)
    GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel()).fit(X[:200], y[:200])


def report(rows: list, fried: list, n_train: int, n_exact: int) -> list[str]:
    """The body of gp_defaults.md: the per-seed table, the ratios, the generated set."""
    lines = [f"scikit-learn {sklearn.__version__}, Python {platform.python_version()}. Machine "
             "shared (2 cores, other engineers' jobs running): times are indicative; both "
             "models were timed in the same run, alternately per seed.", "",
             f"Abalone, `train_test_split(train_size={n_train}, random_state=seed)`; ours on all "
             f"{n_train} training rows with defaults, scikit-learn's "
             "`GaussianProcessRegressor(ConstantKernel()*RBF() + WhiteKernel(), "
             f"normalize_y=True)` on the first {n_exact}. Times: min / median over the repeats "
             "after a warm-up. Coverage: fraction of test targets in mean ± 1.96 std.", ""]
    lines += markdown_table(
        ["seed", "model", "fit s (min / med)", "fit+predict s (min / med)", "RMSE", "coverage",
         "NLPD", "hyper-parameters"],
        [(r["seed"], name, f"{s['fit_min']:.2f} / {s['fit_median']:.2f}",
          f"{s['total_min']:.2f} / {s['total_median']:.2f}", f"{s['rmse']:.4f}",
          f"{s['coverage']:.3f}", f"{s['nlpd']:.3f}", hyper)
         for r in rows for name, s, hyper in (("ours (defaults)", r["ours"], r["hyper"]),
                                              ("scikit-learn GP", r["exact"], r["exact_kernel"]))])
    lines += ["", "Ratios (ours / scikit-learn):", ""]
    lines += markdown_table(
        ["seed", "fit time (median)", "fit+predict time (median)", "RMSE", "coverage (ours)"],
        [(r["seed"], f"{r['ours']['fit_median'] / r['exact']['fit_median']:.2f}",
          f"{r['ours']['total_median'] / r['exact']['total_median']:.2f}",
          f"{r['ours']['rmse'] / r['exact']['rmse']:.3f}", f"{r['ours']['coverage']:.3f}")
         for r in rows])
    lines += ["", f"Generated set: `make_friedman1({n_train + 1177}, noise=1.0, random_state=seed)`, "
              f"first {n_train} rows to fit, the rest to test (ours, defaults; true noise variance 1).", ""]
    lines += markdown_table(["seed", "RMSE", "coverage", "NLPD", "fitted noise"],
                            [(f["seed"], f"{f['rmse']:.4f}", f"{f['coverage']:.3f}", f"{f['nlpd']:.3f}",
                              f"{f['noise']:.3f}") for f in fried])
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-train", type=int, default=N_TRAIN)
    parser.add_argument("--n-exact", type=int, default=N_EXACT, help="rows of the exact GP's fit")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="seed 0, one repeat, 600/300 rows")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.repeats, args.n_train, args.n_exact = [0], 1, 600, 300
    data = load("abalone")
    X, y = data["X"], data["y"].astype(np.float64)
    with threads(1):
        warm_up(X, y)
        rows = [run_seed(X, y, seed, args.repeats, args.n_train, args.n_exact) for seed in args.seeds]
        fried = [friedman(seed, args.n_train) for seed in args.seeds]
    path = write_report(args.out / "gp_defaults.md",
                        "DSGGaussianProcessRegressor defaults against scikit-learn's optimised GP "
                        "(issue 14)", report(rows, fried, args.n_train, args.n_exact),
                        command=command_line(), machine=machine_line(1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
