"""Two classes on few rows: least squares or the squared hinge on the exact dual route?

Binary sets whose training part fits the dual route (at most 2048 rows): scikit-learn's
``make_hastie_10_2`` (a sphere's boundary in ten dimensions, no label noise; 2,000 rows, and
2,730 for 2,048 training rows) and ``make_moons(2000, noise=0.3)``, and the small binary sets of
``benchmarks.perf.shared_defaults`` (diabetes, german_numer, breast cancer, digits odd vs even,
Phishing, Yeast's first label). Seeded stratified 75/25 splits (those of ``shared_defaults`` for
its sets), standardised on the training part.

Test error and fit time of ``DSGClassifier(loss="squared")`` (least squares, one eigendecomposition
per bandwidth: :mod:`kernelstream.solvers.dual`), ``DSGClassifier(loss="squared_hinge")`` (finite
Newton: :mod:`kernelstream.solvers.dual_hinge`), the default ``DSGClassifier()`` (both, the hinge
kept only with fewer leave-one-out errors; which one it kept), and a tuned ``SVC`` (C in {0.1, 1,
10, 100}, gamma in {0.25, …, 4} × "scale", 3-fold stratified CV). One thread.

    python -m benchmarks.research.dual_hinge
    python -m benchmarks.research.dual_hinge --sets breast_cancer --seeds 0 --out /tmp/h.md
    python -m benchmarks.research.dual_hinge --sets hastie_2550 --seeds 0 1 \
        --out benchmarks/results/dual_hinge_epochs.md   # above the dual route: by epochs
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn import datasets
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from benchmarks.common.data import RESULTS
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import threads
from benchmarks.perf.shared_defaults import split
from kernelstream import DSGClassifier

GENERATED = {"hastie_1500": lambda: datasets.make_hastie_10_2(2000, random_state=0),
             "hastie_2048": lambda: datasets.make_hastie_10_2(2730, random_state=0),
             "moons_1500": lambda: datasets.make_moons(2000, noise=0.3, random_state=0),
             # 2,550 training rows: by epochs, sigma and alpha from a dual subsample of 2048 rows
             "hastie_2550": lambda: datasets.make_hastie_10_2(3400, random_state=0)}
SHARED = ["diabetes", "german_numer", "breast_cancer", "digits_odd_even", "phishing", "yeast_class1"]
METHODS = {"least squares": dict(loss="squared"), "squared hinge": dict(loss="squared_hinge"),
           "default": {}}


def parts(name: str, seed: int):
    """``X_train, y_train, X_test, y_test``, standardised on the training part."""
    if name not in GENERATED:
        return split(name, seed)
    X, y = GENERATED[name]()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(X_train)
    return (scaler.transform(X_train).astype(np.float32), y_train,
            scaler.transform(X_test).astype(np.float32), y_test)


def tuned_svc_error(X_train, y_train, X_test, y_test, seed: int) -> float:
    scale = 1.0 / (X_train.shape[1] * X_train.var())
    grid = dict(C=[0.1, 1, 10, 100], gamma=[f * scale for f in (0.25, 0.5, 1, 2, 4)])
    svc = GridSearchCV(SVC(), grid, cv=StratifiedKFold(3, shuffle=True, random_state=seed))
    return float(np.mean(svc.fit(X_train, y_train).predict(X_test) != y_test))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=[*GENERATED, *SHARED],
                        default=[name for name in [*GENERATED, *SHARED] if name != "hastie_2550"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default=str(RESULTS / "dual_hinge.md"))
    args = parser.parse_args()
    rows, detail = [], []
    with threads(1):
        for name in args.sets:
            errors = {m: [] for m in [*METHODS, "SVC"]}
            seconds = {m: [] for m in METHODS}
            kept = []
            for seed in args.seeds:
                X_train, y_train, X_test, y_test = parts(name, seed)
                for method, params in METHODS.items():
                    start = time.perf_counter()
                    model = DSGClassifier(random_state=seed, **params).fit(X_train, y_train)
                    seconds[method].append(time.perf_counter() - start)
                    errors[method].append(float(np.mean(model.predict(X_test) != y_test)))
                    if method == "default":
                        kept.append(model.loss_)
                    detail.append([name, str(seed), method, f"{errors[method][-1]:.4f}",
                                   f"{seconds[method][-1]:.1f}",
                                   f"loss_={model.loss_}, sigma_={model.sigma_:.3g}, alpha_={model.alpha_:.3g}"])
                errors["SVC"].append(tuned_svc_error(X_train, y_train, X_test, y_test, seed))
                detail.append([name, str(seed), "SVC (tuned)", f"{errors['SVC'][-1]:.4f}", "", ""])
                print(name, seed, {m: round(e[-1], 4) for m, e in errors.items()}, kept[-1], flush=True)
            svc = np.mean(errors["SVC"])
            rows.append([f"{name} ({len(y_train)} / {len(y_test)}, d = {X_train.shape[1]})",
                         *(f"{np.mean(errors[m]):.4f} ({np.mean(seconds[m]):.1f} s)" for m in METHODS),
                         ", ".join(k.replace("squared_hinge", "hinge").replace("squared", "ls") for k in kept),
                         f"{svc:.4f}", f"{np.mean(errors['default']) / svc:.3f}" if svc > 0 else "—"])
    body = [f"Seeds {args.seeds}; mean test error (mean fit time) over the seeds; one thread. "
            "\"kept\": the default's loss per seed (ls = least squares, hinge = squared hinge).", "",
            *markdown_table(["data set (train / test, d)", *(f"{m} (dual)" if m != "default" else "default (both, one kept)"
                                                            for m in METHODS),
                             "kept", "SVC (tuned)", "default / SVC"], rows),
            "", "## Every fit", "",
            *markdown_table(["set", "seed", "method", "test error", "fit s", "fitted"], detail), ""]
    print(write_report(Path(args.out), "Two classes on few rows: least squares or the squared hinge (dual route)",
                       body, threads=1))


if __name__ == "__main__":
    main()
