"""MNIST 8 vs 6 at the peers' bandwidth: how much the fastest rung of ``benchmarks.perf.peers``
owes to its seed.

The time race of issue 16 (1.0% test error sooner than the fastest ``Nystroem(D)+LinearSVC``)
is decided by the cheapest ``DSGClassifier`` rung that reaches 1.0% at ``random_state=0``. Here
the same rungs (least squares on orthogonal random features of the Gaussian kernel at ``σ = 0.5 × median``,
``alpha=1e-5``, 1 or 2 epochs, no early stopping) run for several seeds: each seed's test error,
and the fit's process CPU time (one thread, a warm-up, then ``--repeats`` timed fits per seed;
min and median over all of them). ``Nystroem(64)+LinearSVC`` is timed the same way beside them.

    python -m benchmarks.research.mnist8v6_seeds
    python -m benchmarks.research.mnist8v6_seeds --rungs 256:1 --seeds 0 1 --out /tmp/s.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common.data import RESULTS
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import measure, threads
from benchmarks.perf.peers import mnist_8v6
from kernelstream import DSGClassifier
from kernelstream.features import median_distance, sigma_to_gamma


def rung(D: int, epochs: int, sigma: float, seed: int) -> DSGClassifier:
    return DSGClassifier(loss="squared", kernel="rbf_orf", sigma=sigma, alpha=1e-5, n_components=D, block_size=D,
                         max_iter=epochs, early_stopping=False, tol=None, random_state=seed,
                         device="cpu")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rungs", nargs="+", default=["256:1", "384:1", "384:2", "512:1", "512:2"],
                        help="FEATURES:EPOCHS")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "mnist8v6_seeds.md")
    args = parser.parse_args(argv)
    X, y, X_test, y_test = mnist_8v6()
    sigma = 0.5 * median_distance(X, seed=0)
    rows = []
    with threads(1):
        for spec in args.rungs:
            D, epochs = (int(v) for v in spec.split(":"))
            errors, seconds = [], []
            for seed in args.seeds:
                timing = measure(lambda: rung(D, epochs, sigma, seed).fit(X, y), repeats=args.repeats)
                seconds += timing.cpu
                errors.append(100 * (1 - timing.result.score(X_test, y_test)))
            print(D, epochs, [round(e, 2) for e in errors], flush=True)
            rows.append((f"DSGClassifier(kernel='rbf_orf', n_components={D}, max_iter={epochs})",
                         ", ".join(f"{e:.2f}" for e in errors), f"{np.mean(errors):.2f}",
                         sum(e <= 1.0 for e in errors), f"{min(seconds):.3f}", f"{np.median(seconds):.3f}"))
        from sklearn.kernel_approximation import Nystroem
        from sklearn.pipeline import make_pipeline
        from sklearn.svm import LinearSVC

        def nystroem(seed):
            return make_pipeline(Nystroem(gamma=sigma_to_gamma(sigma), n_components=64, random_state=seed),
                                 LinearSVC())
        errors, seconds = [], []
        for seed in args.seeds:
            timing = measure(lambda: nystroem(seed).fit(X, y), repeats=args.repeats)
            seconds += timing.cpu
            errors.append(100 * (1 - timing.result.score(X_test, y_test)))
        rows.append(("Nystroem(64)+LinearSVC", ", ".join(f"{e:.2f}" for e in errors), f"{np.mean(errors):.2f}",
                     sum(e <= 1.0 for e in errors), f"{min(seconds):.3f}", f"{np.median(seconds):.3f}"))
    table = markdown_table(["rung (σ = 0.5 × median, alpha=1e-5)", f"test error % (seeds {args.seeds})",
                            "mean %", "seeds ≤ 1.0%", "min CPU s", "median CPU s"], rows)
    print(write_report(args.out, "MNIST 8 vs 6: the fastest rungs over seeds", table, threads=1))


if __name__ == "__main__":
    main()
