"""The small end: the defaults against the peer a new user tries first, on the sets they start with.

Issue 51's table, one thread, every row in one run. Each set standardised (the scaler fitted on
the training rows), ``train_test_split(test_size=0.25, random_state=0)``; CPU seconds of
``fit``, min and median over ``--repeats`` fits after a warm-up fit (the grid searches: one
fit). Classification: ``DSGClassifier(random_state=0)`` against ``SVC()`` and
``GridSearchCV(SVC(), C × gamma 4 × 4, cv=3)``; regression: ``DSGRegressor(random_state=0)``
against ``Nystroem(n_components=1024) + Ridge()`` and, up to 2,000 rows, a
``GridSearchCV(KernelRidge(kernel="rbf"), alpha × gamma 4 × 4, cv=3)``; the GP:
``DSGGaussianProcessRegressor(random_state=0)`` against scikit-learn's
``GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(), normalize_y=True)``, with
the test targets' coverage by mean ± 1.96 std.

    python -m benchmarks.small_end --out benchmarks/results
    python -m benchmarks.small_end --quick                  # the three smallest sets: seconds
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common.report import markdown_table, report_or_print
from benchmarks.common.timing import measure, threads

C_GRID = [0.1, 1.0, 10.0, 100.0]
GAMMA_GRID = [0.001, 0.01, 0.1, 1.0]
ALPHA_GRID = [1e-3, 1e-2, 1e-1, 1.0]
KRR_MAX_ROWS = 2000


def classification_sets(quick: bool) -> list[tuple[str, np.ndarray, np.ndarray]]:
    from sklearn import datasets as ds
    sets = [("breast cancer", *ds.load_breast_cancer(return_X_y=True)),
            ("wine", *ds.load_wine(return_X_y=True)),
            ("digits", *ds.load_digits(return_X_y=True))]
    if not quick:
        sets += [("make_classification 4k", *ds.make_classification(4000, random_state=0)),
                 ("make_moons 10k", *ds.make_moons(10000, noise=0.3, random_state=0)),
                 ("make_circles 10k", *ds.make_circles(10000, noise=0.2, factor=0.5,
                                                       random_state=0))]
    return sets


def regression_sets(quick: bool) -> list[tuple[str, np.ndarray, np.ndarray]]:
    from sklearn import datasets as ds
    sets = [("diabetes", *ds.load_diabetes(return_X_y=True))]
    sizes = (2000,) if quick else (2000, 20000)
    sets += [(f"friedman1 {n // 1000}k", *ds.make_friedman1(n, noise=0.5, random_state=0))
             for n in sizes]
    return sets


def split(X, y):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def timed_fit(make, Xtr, ytr, repeats: int):
    """``(model, min CPU s, median CPU s)`` of ``make().fit``: after a warm-up fit, except for a
    grid search (``repeats=None``: one fit)."""
    timing = measure(lambda: make().fit(Xtr, ytr), repeats=repeats or 1,
                     warmup=0 if repeats is None else 1)
    return timing.result, timing.min("cpu"), timing.median("cpu")


def scored_rows(name: str, n_train: int, results: list, peer: int, scores) -> list[list[str]]:
    """A table row per fitted model ``(label, model, min s, median s)`` of ``results``: the set,
    its training rows, the label, ``scores(model)``, the times and the median over
    ``results[peer]``'s; each printed as it comes."""
    rows = []
    for label, model, low, mid in results:
        rows.append([name, n_train, label, *scores(model), f"{low:.3f}", f"{mid:.3f}",
                     f"{mid / results[peer][3]:.2f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def rows_of(sets, models_of, score) -> list[list[str]]:
    """Every set's rows: ``models_of(training rows)`` gives ``(label, factory, repeats)``, the
    second the peer the times are divided by; ``score(model, X_test, y_test)`` its cells."""
    rows = []
    for name, X, y in sets:
        Xtr, Xte, ytr, yte = split(X, y)
        results = [(label, *timed_fit(make, Xtr, ytr, r)) for label, make, r in models_of(len(ytr))]
        rows += scored_rows(name, len(ytr), results, 1, lambda model: score(model, Xte, yte))
    return rows


def classification_rows(quick: bool, repeats: int) -> list[list[str]]:
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    from kernelstream import DSGClassifier
    return rows_of(classification_sets(quick), lambda n: [
        ("DSGClassifier()", lambda: DSGClassifier(random_state=0), repeats),
        ("SVC()", SVC, repeats),
        ("GridSearchCV(SVC) 4x4", lambda: GridSearchCV(
            SVC(), {"C": C_GRID, "gamma": GAMMA_GRID}, cv=3), None)],
        lambda model, X, y: [f"{100 * float(np.mean(model.predict(X) != y)):.2f}%"])


def regression_rows(quick: bool, repeats: int) -> list[list[str]]:
    from sklearn.kernel_approximation import Nystroem
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    from kernelstream import DSGRegressor

    def models(n: int) -> list:
        grid = [("GridSearchCV(KernelRidge) 4x4", lambda: GridSearchCV(
            KernelRidge(kernel="rbf"), {"alpha": ALPHA_GRID, "gamma": GAMMA_GRID}, cv=3), None)]
        return [("DSGRegressor()", lambda: DSGRegressor(random_state=0), repeats),
                ("Nystroem(1024)+Ridge", lambda: make_pipeline(
                    Nystroem(n_components=min(1024, n), random_state=0), Ridge()), repeats),
                *(grid if n <= KRR_MAX_ROWS else [])]
    return rows_of(regression_sets(quick), models, lambda model, X, y: [
        f"{float(np.sqrt(np.mean((model.predict(X) - y) ** 2))):.4f}"])


def gp_rows(quick: bool, repeats: int) -> list[list[str]]:
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    from kernelstream import DSGGaussianProcessRegressor
    return rows_of(regression_sets(True), lambda n: [
        ("DSGGaussianProcessRegressor()", lambda: DSGGaussianProcessRegressor(random_state=0),
         repeats),
        ("GaussianProcessRegressor(C*RBF+White)", lambda: GaussianProcessRegressor(
            ConstantKernel() * RBF() + WhiteKernel(), normalize_y=True), repeats)],
        interval_scores)


def interval_scores(model, Xte, yte) -> list[str]:
    """RMSE of the mean and the coverage of mean ± 1.96 std on the test rows."""
    mean, std = model.predict(Xte, return_std=True)
    rmse = float(np.sqrt(np.mean((mean - yte) ** 2)))
    return [f"{rmse:.4f}", f"{float(np.mean(np.abs(mean - yte) <= 1.96 * std)):.3f}"]


@threads(1)
def body(quick: bool, repeats: int) -> list[str]:
    head = ["set", "train rows", "model"]
    times = ["fit CPU s min", "fit CPU s median"]
    return ["Classification (ratio: fit time median / `SVC()`'s):", "",
            *markdown_table(head + ["test error", *times, "/ SVC()"],
                            classification_rows(quick, repeats)),
            "", "Regression (ratio: / `Nystroem(1024)+Ridge`'s):", "",
            *markdown_table(head + ["RMSE", *times, "/ Nystroem"], regression_rows(quick, repeats)),
            "", "Gaussian processes (ratio: / scikit-learn's GP's):", "",
            *markdown_table(head + ["RMSE", "coverage", *times, "/ sklearn"],
                            gp_rows(quick, repeats))]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="the three smallest sets, once")
    parser.add_argument("--out", type=Path, help="write DIR/small_end.md")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    note = ("One thread (torch and the BLAS pool). Standardised inputs, 75/25 split "
            f"(`random_state=0`), CPU seconds of `fit`: min and median of {repeats} fits after a "
            "warm-up fit (grid searches: one fit, no warm-up).")
    report_or_print(args.out, "small_end.md", "The small end against the first peer a user tries",
                    [note, "", *body(args.quick, repeats)])


if __name__ == "__main__":
    main()
