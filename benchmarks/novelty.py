"""Novelty detection and the density ratio: the engine's Newton fit against the doubly
stochastic steps and scikit-learn's ``OneClassSVM``, every row in one run.

One class: the test suite's 2-D mixture (two Gaussians and 5% uniform outliers) at 4,000 and
40,000 inliers, ``nu=0.5`` and ``sigma`` 0.5 and 1, ``DSGOneClass(solver=...)`` against
``OneClassSVM(nu=0.5, gamma=1/(2σ²))``: the outliers' ROC AUC by the decision function and
the share of training rows flagged (ν = 0.5 bounds it). Density ratio: ``p = N(0, I)``,
``q = N(0.5, 1.5²I)`` in 2-D, ``n`` rows each, ``DSGDensityRatio(solver=...)``: the RMSE of
``log p/q`` on 5,000 draws of ``p`` and ``KL(p‖q)`` (0.3665). One thread; CPU seconds of
``fit``, min and median over ``--repeats`` after a warm-up fit.

    python -m benchmarks.novelty --out benchmarks/results
    python -m benchmarks.novelty --quick            # the smallest sizes
"""

from __future__ import annotations

import numpy as np

from benchmarks.common.report import markdown_table, report_or_print
from benchmarks.common.timing import measure, shape_arguments, threads

TRUE_KL = 0.5 * (2 / 2.25 + 0.5 / 2.25 - 2 + 2 * np.log(2.25))


def mixture(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` inliers of two Gaussians and 5% as many uniform outliers, and which are outliers."""
    rng = np.random.default_rng(seed)
    inliers = np.vstack([rng.normal([-2, 0], 0.7, (n // 2, 2)), rng.normal([2, 1], 1.0, (n // 2, 2))])
    outliers = rng.uniform(-6, 6, (int(0.05 * n / 0.95), 2))
    return np.vstack([inliers, outliers]), np.r_[np.zeros(len(inliers)), np.ones(len(outliers))]


def two_samples(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(0, 1, (n, 2)), 0.5 + 1.5 * rng.normal(0, 1, (n, 2))


def true_log_ratio(x: np.ndarray) -> np.ndarray:
    return -0.5 * (x**2).sum(1) + ((x - 0.5) ** 2).sum(1) / 4.5 + np.log(2.25)


def one_class_rows(sizes, repeats: int) -> list[list]:
    from sklearn.metrics import roc_auc_score
    from sklearn.svm import OneClassSVM

    from kernelstream import DSGOneClass
    from kernelstream.features import sigma_to_gamma
    rows = []
    for n in sizes:
        X, outlier = mixture(n)
        for sigma in (0.5, 1.0):
            makes = {"newton (default)": lambda: DSGOneClass(nu=0.5, sigma=sigma, random_state=0),
                     "sgd": lambda: DSGOneClass(nu=0.5, sigma=sigma, solver="sgd", random_state=0),
                     "OneClassSVM": lambda: OneClassSVM(nu=0.5, gamma=sigma_to_gamma(sigma))}
            peer = None
            for label, make in makes.items():
                timing = measure(lambda: make().fit(X), repeats=repeats, warmup=1)
                model = timing.result
                peer = timing.median("cpu") if label == "OneClassSVM" else peer
                rows.append([n, sigma, label, f"{roc_auc_score(outlier, -model.decision_function(X)):.4f}",
                             f"{np.mean(model.predict(X) == -1):.3f}", f"{timing.min('cpu'):.3f}",
                             f"{timing.median('cpu'):.3f}", timing.median("cpu")])
                print(" | ".join(map(str, rows[-1][:-1])), flush=True)
            for row in rows[-3:]:
                row[-1] = f"{row[-1] / peer:.2f}"
    return rows


def ratio_rows(sizes, repeats: int) -> list[list]:
    from kernelstream import DSGDensityRatio
    rows, x = [], np.random.default_rng(5).normal(0, 1, (5000, 2))
    for n in sizes:
        p, q = two_samples(n)
        base = None
        for label, solver in (("newton (default)", "auto"), ("sgd", "sgd")):
            timing = measure(lambda: DSGDensityRatio(solver=solver, random_state=0).fit(p, q),
                             repeats=repeats, warmup=1)
            model = timing.result
            rmse = np.sqrt(np.mean((model.log_ratio(x) - true_log_ratio(x)) ** 2))
            base = timing.median("cpu") if base is None else base
            rows.append([n, label, f"{rmse:.4f}", f"{model.kl_divergence_:.4f}", f"{model.alpha_:g}",
                         model.n_components_, f"{timing.min('cpu'):.3f}",
                         f"{timing.median('cpu'):.3f}", f"{timing.median('cpu') / base:.2f}"])
            print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def main(argv=None) -> None:
    args = shape_arguments(__doc__, "novelty.md", argv, repeats=2, quick="the smallest sizes")
    with threads(1):
        one = one_class_rows((4000,) if args.quick else (4000, 40000), args.repeats)
        ratio = ratio_rows((2000,) if args.quick else (2000, 10000, 100000), args.repeats)
    body = ["One class (ν = 0.5): outliers' AUC, the training rows flagged, CPU s, and the median "
            "over OneClassSVM's.", "",
            *markdown_table(["inliers", "sigma", "method", "AUC", "flagged", "CPU s min",
                             "CPU s median", "time / OneClassSVM"], one), "",
            f"Density ratio: RMSE of log p/q on 5,000 draws of p, KL(p‖q) (true {TRUE_KL:.4f}), "
            "the α kept, the features, CPU s, and the median over the Newton fit's.", "",
            *markdown_table(["rows each", "method", "RMSE", "KL", "alpha", "features", "CPU s min",
                             "CPU s median", "time / newton"], ratio)]
    report_or_print(args.out, "novelty.md", "Novelty and density ratio: Newton against SGD and "
                    "OneClassSVM", body, threads=1)


if __name__ == "__main__":
    main()
