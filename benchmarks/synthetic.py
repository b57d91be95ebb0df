"""Synthetic regression (Dai et al. 2014, Section 7.1): one pass of DSGRegressor vs kernel peers.

x ~ U[-5, 5]^2, y = cos(0.5 pi |x|) exp(-0.1 pi |x|) + 0.1 N(0, 1); sigma = 0.1 x the median
pairwise distance; MSE against the noise-free function on 10,000 fresh points. Peers, fitted on
the same points with the same bandwidth and the paper's nu = 1e-6 (Ridge alpha = nu * n):
scikit-learn RBFSampler(4096) + Ridge and Nystroem(4096) + Ridge.

Also records the test error after every step, for the current iterate and for the averaged
iterate (``average=True``), and plots both against t with a 1/t reference (the paper's
Figure 1(2)).

    python -m benchmarks.synthetic [--n 65536] [--seeds 3] [--out benchmarks/results]
    python -m benchmarks.synthetic --quick --out /tmp/bench   # seconds: n = 2^13, one seed
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from benchmarks.common.data import RESULTS
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import measure
from kernelstream import DSGRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.features import median_distance, sigma_to_gamma


def mse(pred, f):
    return float(np.mean((pred - f) ** 2))


def fit_peer(name, X, y, X_test, f_test, sigma, n_components=4096, seed=0):
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import Ridge

    gamma = sigma_to_gamma(sigma)
    sampler = {"RBFSampler": RBFSampler, "Nystroem": Nystroem}[name.split("(")[0]]
    transform = sampler(gamma=gamma, n_components=n_components, random_state=seed)
    timing = measure(lambda: Ridge(alpha=1e-6 * len(X)).fit(transform.fit_transform(X), y),
                     repeats=1, warmup=0)
    return mse(timing.result.predict(transform.transform(X_test)), f_test), timing.min()


def convergence_curve(X, y, X_test, f_test, sigma, average, seed=0):
    """Test MSE after each step of one pass, feeding partial_fit one mini-batch at a time."""
    model = DSGRegressor(sigma=sigma, average=average, random_state=seed)
    order = np.random.default_rng(seed).permutation(len(X))
    errors = []
    for rows in np.array_split(order, max(1, round(len(X) / model.batch_size))):
        model.partial_fit(X[rows], y[rows])
        errors.append(mse(model.predict(X_test), f_test))
    return np.array(errors)


def plot(curves: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for label, errors in curves.items():
        t = np.arange(1, len(errors) + 1)
        ax.loglog(t, errors, marker="o", markersize=3, label=label)
    t = np.arange(1, len(next(iter(curves.values()))) + 1)
    first = next(iter(curves.values()))[0]
    ax.loglog(t, first / t, "k--", linewidth=1, label="O(1/t)")
    ax.set_xlabel("step t (mini-batches of 2048, one pass)")
    ax.set_ylabel("test MSE vs noise-free f")
    ax.set_title("DSG on the 2-D synthetic regression")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2**16)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--peer-components", type=int, default=4096)
    parser.add_argument("--quick", action="store_true",
                        help="n = 2^13, one seed, 256 peer components (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.seeds, args.peer_components = 2**13, 1, 256
    args.out.mkdir(parents=True, exist_ok=True)

    X, y, _ = synthetic_regression(args.n, random_state=0)
    X_test, _, f_test = synthetic_regression(10_000, random_state=1)
    sigma = 0.1 * median_distance(X)
    rows = []
    for sampler in ("RBFSampler", "Nystroem"):
        name = f"{sampler}({args.peer_components})+Ridge"
        err, elapsed = fit_peer(name, X, y, X_test, f_test, sigma, args.peer_components)
        rows.append((name, err, elapsed, args.peer_components))
    best_peer = min(r[1] for r in rows)
    for seed in range(args.seeds):
        model = DSGRegressor(sigma=sigma, random_state=seed)
        elapsed = measure(lambda: model.fit(X, y), repeats=1, warmup=0).min()
        rows.append((f"DSGRegressor() seed {seed}", mse(model.predict(X_test), f_test), elapsed,
                     model.n_components_))

    table = markdown_table(["method", "test MSE", "MSE / best peer", "fit time (s)", "features"],
                           [(name, f"{err:.3e}", f"{err / best_peer:.2f}", f"{elapsed:.2f}", features)
                            for name, err, elapsed, features in rows])
    print("\n".join(table))

    curves = {
        "current iterate (default)": convergence_curve(X, y, X_test, f_test, sigma, average=False),
        "averaged iterate (average=True)": convergence_curve(X, y, X_test, f_test, sigma, average=True),
    }
    png = args.out / "synthetic_convergence.png"
    plot(curves, png)
    summaries = [f"- {label}: {_steps_summary(errors)}" for label, errors in curves.items()]
    print("\n".join(summaries))
    path = write_report(args.out / "synthetic.md",
                        f"Synthetic regression, one pass (n = {args.n}, sigma = 0.1 x median = {sigma:.4f})",
                        table + ["", *summaries, "", f"![convergence]({png.name})"],
                        threads=torch.get_num_threads())
    print(f"wrote {path} and {png}")


def _steps_summary(errors: np.ndarray) -> str:
    """``MSE after steps 1, 4, 16, T: ...`` (the steps the run has)."""
    steps = [i for i in (1, 4, 16) if i < len(errors)] + [len(errors)]
    return (f"MSE after steps {', '.join(map(str, steps))}: "
            + ", ".join(f"{errors[i - 1]:.3e}" for i in steps))


if __name__ == "__main__":
    main()
