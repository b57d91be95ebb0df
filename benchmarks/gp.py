"""GP posterior by doubly stochastic features against the closed form (issue 5; Dai et al. Fig. 5).

The paper's GP set: 2^11 training points of the 2-D synthetic model (noise variance 0.1),
2^10 test points, Gaussian RBF with bandwidth 0.1 × the median pairwise distance. For a ladder
of step counts ``T`` it fits ``DSGGaussianProcessRegressor`` (defaults otherwise, route (a) with
all 2^10 test points as ``X_variance``) and reports the relative L2 error of the posterior mean
and variance against eq. (9); route (b) (operator over ``D`` features) at the defaults; and the
exact ``GaussianProcessRegressor`` of scikit-learn (fixed kernel, ``alpha = 0.1``) as the peer.

    python -m benchmarks.gp [--steps 16 32 64 128 256] [--threads 2] [--out benchmarks/results]
    python -m benchmarks.gp --report     # rewrite gp.md and gp.png from gp.json
    python -m benchmarks.gp --quick --out /tmp/bench   # seconds: 4 and 8 steps, D = 1024
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF

from benchmarks.common.data import RESULTS
from benchmarks.common.machine import load_average, machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import measure
from kernelstream import DSGGaussianProcessRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.features import median_distance

NOISE = 0.1


def relative_error(estimate, truth) -> float:
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))


def closed_form(X, y, X_test, sigma):
    """Eq. (9): mean ``k*ᵀ(K + s²I)⁻¹y`` and variance ``k** − k*ᵀ(K + s²I)⁻¹k*`` (float64)."""
    K, K_star = RBF(sigma)(X), RBF(sigma)(X_test, X)
    L = np.linalg.cholesky(K + NOISE * np.eye(len(X)))
    mean = K_star @ np.linalg.solve(L.T, np.linalg.solve(L, y))
    V = np.linalg.solve(L, K_star.T)
    return mean, 1.0 - (V * V).sum(0)


def run(steps, out: Path, operator_features: int = 8192) -> None:
    X, y, _ = synthetic_regression(2**11, random_state=0, noise=NOISE**0.5)
    X_test, _, _ = synthetic_regression(2**10, random_state=1)
    sigma = 0.1 * median_distance(X)
    mean, var = closed_form(X, y, X_test, sigma)
    rows = []
    for T in steps:
        gp = DSGGaussianProcessRegressor(sigma=sigma, noise=NOISE, n_steps=T, normalize_y=False,
                                         solver="dual", random_state=0)
        elapsed = measure(lambda: gp.fit(X, y, X_variance=X_test), repeats=1, warmup=0).min()
        m_hat, s_hat = gp.predict(X_test, return_std=True, include_noise=False)
        rows.append(("targets", T, gp.n_components_, relative_error(m_hat, mean),
                     relative_error(s_hat**2, var), elapsed))
        print(rows[-1], flush=True)
    for D in (operator_features,):
        gp = DSGGaussianProcessRegressor(sigma=sigma, noise=NOISE, variance_method="operator",
                                         n_steps=max(steps), n_components=D,
                                         normalize_y=False, random_state=0)
        elapsed = measure(lambda: gp.fit(X, y), repeats=1, warmup=0).min()
        m_hat, s_hat = gp.predict(X_test, return_std=True, include_noise=False)
        rows.append((f"operator D={D}", max(steps), gp.n_components_, relative_error(m_hat, mean),
                     relative_error(s_hat**2, var), elapsed))
        print(rows[-1], flush=True)
    exact = GaussianProcessRegressor(RBF(sigma, length_scale_bounds="fixed"), alpha=NOISE,
                                     optimizer=None)
    timing = measure(lambda: exact.fit(X, y).predict(X_test, return_std=True), repeats=1, warmup=0)
    (m_hat, s_hat), elapsed = timing.result, timing.min()
    rows.append(("sklearn GaussianProcessRegressor (exact)", "-", "-", relative_error(m_hat, mean),
                 relative_error(s_hat**2, var), elapsed))
    meta = dict(steps=list(steps), threads=torch.get_num_threads(), load=load_average(),
                machine=machine_line(), torch=torch.__version__, command=command_line())
    (out / "gp.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    report(rows, meta, out)


def report(rows, meta, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ladder = [r for r in rows if r[0] == "targets"]
    T = np.array([r[1] for r in ladder], dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, col, title in ((axes[0], 3, "posterior mean"), (axes[1], 4, "posterior variance")):
        err = np.array([r[col] for r in ladder])
        ax.loglog(T, err, "o-", label="DSGGaussianProcessRegressor (route a)")
        ax.loglog(T, err[0] * np.sqrt(T[0] / T), ":", color="gray", label="1/√t guide")
        ax.loglog(T, err[0] * T[0] / T, "--", color="gray", lw=0.8, label="1/t guide")
        ax.axhline(0.05 if col == 3 else 0.10, color="red", lw=0.8, label="issue bound")
        ax.set_xticks(T, [str(int(t)) for t in T])
        ax.minorticks_off()
        ax.set_xlabel("steps t (2048 features each)")
        ax.set_ylabel("relative L2 error vs eq. (9)")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "gp.png", dpi=120)
    command = meta.get("command") or (f"python benchmarks/gp.py --steps {' '.join(map(str, meta['steps']))} "
                                      f"--threads {meta['threads']}")
    base = meta["machine"] if "command" in meta else f"{meta['machine']}, torch {meta['torch']}"
    machine = (f"{base}, {meta['threads']} torch threads; **shared** with other jobs (load average "
               f"at the end {meta['load']:.1f}), so seconds are indicative only")
    lines = [
        "Data: the paper's 2-D synthetic model, 2^11 training points (seed 0, noise variance 0.1), "
        "2^10 test points (seed 1); Gaussian RBF, bandwidth 0.1 × median pairwise distance; "
        "noise 0.1. Errors are ‖estimate − exact‖/‖exact‖ over the 2^10 test points, the exact "
        "posterior from a float64 Cholesky. Route (a) takes all 2^10 test points as `X_variance`.",
        "",
        *markdown_table(["method", "steps", "features in the mean", "mean error", "variance error",
                         "fit seconds"], [(name, t, feats, f"{em:.4f}", f"{ev:.4f}", f"{sec:.1f}")
                                          for name, t, feats, em, ev, sec in rows]),
    ]
    last = ladder[-1]
    lines += [
        "",
        f"Reading: with the defaults ({last[1]} steps) the mean is {100 * last[3]:.1f}% and the "
        f"variance {100 * last[4]:.1f}% from the closed form (issue bounds 5% and 10%). The mean "
        "error falls like 1/√t (Monte Carlo over the t·r features of the averaged duals); the "
        "variance error like 1/t, because the second-order form errs quadratically in the duals' "
        "error. Route (b) is the exact posterior of a D-feature kernel: its variance error is "
        "that kernel's, whatever the number of steps (a research probe measured 18% / 8.8% / "
        "3.6% at D = 8k / 16k / 32k on 256 of these test points: "
        "`docs/decisions/research-gp-dual-solver.md`). The exact solver is "
        "faster at n = 2^11; the point of the random-feature solver is that it never forms the "
        "n × n kernel matrix (memory O(n(m + M)) for route (a)).",
        "", "![convergence](gp.png)"]
    write_report(out / "gp.md", "GP posterior against the closed form (issue 5, Dai et al. Fig. 5)",
                 lines, command=command, machine=machine)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--operator-features", type=int, default=8192, help="D of route (b)")
    parser.add_argument("--report", action="store_true", help="only rewrite the report")
    parser.add_argument("--quick", action="store_true", help="4 and 8 steps, D = 1024 (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.operator_features = [4, 8], 1024
    if args.report:
        saved = json.loads((args.out / "gp.json").read_text())
        report(saved["rows"], saved["meta"], args.out)
        return
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    run(args.steps, args.out, args.operator_features)


if __name__ == "__main__":
    main()
