"""GP posterior by doubly stochastic features against the closed form (issue 5; Dai et al. Fig. 5).

The paper's GP set: 2^11 training points of the 2-D synthetic model (noise variance 0.1),
2^10 test points, Gaussian RBF with bandwidth 0.1 × the median pairwise distance. For a ladder
of step counts ``T`` it fits ``DSGGaussianProcessRegressor`` (defaults otherwise, route (a) with
all 2^10 test points as ``X_variance``) and reports the relative L2 error of the posterior mean
and variance against eq. (9); route (b) (operator over ``D`` features) at the defaults; and the
exact ``GaussianProcessRegressor`` of scikit-learn (fixed kernel, ``alpha = 0.1``) as the peer.

    python benchmarks/gp.py [--steps 16 32 64 128 256] [--threads 2] [--out benchmarks/results]
    python benchmarks/gp.py --report     # rewrite gp.md and gp.png from gp.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF

from kernelstream import DSGGaussianProcessRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.features import median_distance

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/
from machine import cpu_model  # noqa: E402

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


def run(steps, out: Path) -> None:
    X, y, _ = synthetic_regression(2**11, random_state=0, noise=NOISE**0.5)
    X_test, _, _ = synthetic_regression(2**10, random_state=1)
    sigma = 0.1 * median_distance(X)
    mean, var = closed_form(X, y, X_test, sigma)
    rows = []
    for T in steps:
        gp = DSGGaussianProcessRegressor(sigma=sigma, noise=NOISE, n_steps=T, normalize_y=False,
                                         random_state=0)
        start = time.perf_counter()
        gp.fit(X, y, X_variance=X_test)
        elapsed = time.perf_counter() - start
        m_hat, s_hat = gp.predict(X_test, return_std=True, include_noise=False)
        rows.append(("targets", T, gp.n_components_, relative_error(m_hat, mean),
                     relative_error(s_hat**2, var), elapsed))
        print(rows[-1], flush=True)
    for D in (8192,):
        gp = DSGGaussianProcessRegressor(sigma=sigma, noise=NOISE, variance_method="operator",
                                         n_steps=max(steps), n_components=D,
                                         normalize_y=False, random_state=0)
        start = time.perf_counter()
        gp.fit(X, y)
        elapsed = time.perf_counter() - start
        m_hat, s_hat = gp.predict(X_test, return_std=True, include_noise=False)
        rows.append((f"operator D={D}", max(steps), gp.n_components_, relative_error(m_hat, mean),
                     relative_error(s_hat**2, var), elapsed))
        print(rows[-1], flush=True)
    exact = GaussianProcessRegressor(RBF(sigma, length_scale_bounds="fixed"), alpha=NOISE,
                                     optimizer=None)
    start = time.perf_counter()
    exact.fit(X, y)
    m_hat, s_hat = exact.predict(X_test, return_std=True)
    elapsed = time.perf_counter() - start
    rows.append(("sklearn GaussianProcessRegressor (exact)", "-", "-", relative_error(m_hat, mean),
                 relative_error(s_hat**2, var), elapsed))
    load = os.getloadavg()[0]
    meta = dict(steps=list(steps), threads=torch.get_num_threads(), load=load,
                machine=f"{platform.machine()} {cpu_model()}, {os.cpu_count()} cores",
                torch=torch.__version__)
    (out / "gp.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    write_report(rows, meta, out)


def write_report(rows, meta, out: Path) -> None:
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
    lines = [
        "# GP posterior against the closed form (issue 5, Dai et al. Fig. 5)",
        "",
        f"Command: `python benchmarks/gp.py --steps {' '.join(map(str, meta['steps']))} "
        f"--threads {meta['threads']}`.",
        f"Machine: {meta['machine']}, torch {meta['torch']}, {meta['threads']} torch threads; "
        f"**shared** with other jobs (load average at the end {meta['load']:.1f}), so seconds are "
        "indicative only.",
        "",
        "Data: the paper's 2-D synthetic model, 2^11 training points (seed 0, noise variance 0.1), "
        "2^10 test points (seed 1); Gaussian RBF, bandwidth 0.1 × median pairwise distance; "
        "noise 0.1. Errors are ‖estimate − exact‖/‖exact‖ over the 2^10 test points, the exact "
        "posterior from a float64 Cholesky. Route (a) takes all 2^10 test points as `X_variance`.",
        "",
        "| method | steps | features in the mean | mean error | variance error | fit seconds |",
        "|---|---|---|---|---|---|",
    ]
    for name, t, feats, em, ev, sec in rows:
        lines.append(f"| {name} | {t} | {feats} | {em:.4f} | {ev:.4f} | {sec:.1f} |")
    last = ladder[-1]
    lines += [
        "",
        f"Reading: with the defaults ({last[1]} steps) the mean is {100 * last[3]:.1f}% and the "
        f"variance {100 * last[4]:.1f}% from the closed form (issue bounds 5% and 10%). The mean "
        "error falls like 1/√t (Monte Carlo over the t·r features of the averaged duals); the "
        "variance error like 1/t, because the second-order form errs quadratically in the duals' "
        "error. Route (b) is the exact posterior of a D-feature kernel: its variance error is "
        "that kernel's, whatever the number of steps (the research probe "
        "`benchmarks/research/gp_random_feature_floor.py` measured 18% / 8.8% / 3.6% at "
        "D = 8k / 16k / 32k on 256 of these test points). The exact solver is "
        "faster at n = 2^11; the point of the random-feature solver is that it never forms the "
        "n × n kernel matrix (memory O(n(m + M)) for route (a)).",
        "", "![convergence](gp.png)", ""]
    (out / "gp.md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--report", action="store_true", help="only rewrite the report")
    args = parser.parse_args()
    if args.report:
        saved = json.loads((args.out / "gp.json").read_text())
        write_report(saved["rows"], saved["meta"], args.out)
        return
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    run(args.steps, args.out)


if __name__ == "__main__":
    main()
