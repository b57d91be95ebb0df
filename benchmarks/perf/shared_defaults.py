"""Defaults against tuned peers: does ``DSGClassifier()`` / ``DSGRegressor()`` (only
``random_state`` set) come within 10% of the test error of a tuned scikit-learn peer?

Data sets (``../shared/data``): binary a9a (official split), diabetes and german_numer (seeded
stratified 75/25 splits, seeds 0, 1, 2), MNIST 8 vs 6 (official split restricted to the digits 6
and 8, ``X/255`` then PCA to 50 dimensions fitted on the training part); 10-class USPS (official
split); regression: abalone (seeded 75/25 splits, seeds 0, 1, 2). Proxies for the held-out sets
(not in ``../shared``, nobody tuned the defaults on them; seeded 75/25 splits, seeds 0, 1, 2):
scikit-learn's bundled breast cancer and digits odd vs even (binary), diabetes (regression), and
river's bundled Phishing and Bananas (binary; Bananas has 5,300 rows in two dimensions, so its
default fit trains by epochs after a 5-fold cross-validation, not by the dual route of few rows),
TrumpApproval and ChickWeights (regression); and five more, four of them above the dual route's
2048 training rows: river's Yeast (its first label, binary) and Shuttle (binary, 49,097 rows),
statsmodels' Fair affairs survey (binary "any affair", 6,366 rows) and RAND health insurance
experiment (regression of doctor visits, 20,190 rows), and scikit-learn's Friedman #1
(regression, 8,000 rows, noise 1).

Preprocessing, the user's job (as for ``SVC``): every set is standardised with a
``StandardScaler`` fitted on its training part, except a9a (binary features) and MNIST after PCA,
which are left as they are. Every model sees the same matrices.

Peers, tuned by a grid search with 3-fold CV (shuffled, stratified for classification) on a
seeded subsample of at most 5,000 training rows, then refitted on the whole training part:
``SVC(kernel="rbf")`` / ``SVR(epsilon=0.1)`` on standardised ``y`` (C in {0.1, 1, 10, 100}) and
``Nystroem(n_components=1024) + RidgeClassifier`` / ``Ridge`` (alpha in {1e-3, ..., 10}), both
with gamma in {0.25, 0.5, 1, 2, 4} x scikit-learn's "scale" ``1/(d * X.var())``. An SVM whose
full refit would take more than ``--svm-budget`` seconds (extrapolated from its refit on the
tuning subsample as n^2) is refitted on the largest seeded subsample that fits the budget.

Ours: ``DSGClassifier(random_state=seed)`` / ``DSGRegressor(random_state=seed)``, and the same
with ``solver="one_pass"`` (the paper's algorithm, the old default) for contrast. Metrics: test
error rate (classification), test RMSE (regression), means over the seeds. Wall-clock times, one
thread for everything (torch and BLAS/OpenMP).

    python -m benchmarks.perf.shared_defaults [--only diabetes abalone] [--seeds 0 1 2]
    python -m benchmarks.perf.shared_defaults --quick --out /tmp/bench/shared_defaults.md
                                    # seconds: diabetes and abalone, seed 0, tiny grids
"""

from __future__ import annotations

import argparse
import math
import platform
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.base import clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.decomposition import PCA
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import Ridge, RidgeClassifier
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR

from benchmarks.common.data import RESULTS, load, official_split, random_split
from benchmarks.common.machine import load_average, machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import Stopwatch, threads
from kernelstream import DSGClassifier, DSGRegressor


def _proxy(task: str) -> dict:
    """A bundled set outside ``../shared`` standing in for the held-out check: seeded random
    splits, standardised."""
    return dict(task=task, split="random", scale=True, proxy=True)


#: name -> task, split ("official" or "random") and whether the features are standardised
SETS = {
    "a9a": dict(task="classification", split="official", scale=False),
    "diabetes": dict(task="classification", split="random", scale=True),
    "german_numer": dict(task="classification", split="random", scale=True),
    "mnist_8v6": dict(task="classification", split="official", scale=False),
    "usps": dict(task="classification", split="official", scale=True),
    "abalone": dict(task="regression", split="random", scale=True),
    "breast_cancer": _proxy("classification"),
    "digits_odd_even": _proxy("classification"),
    "phishing": _proxy("classification"),
    "diabetes_regression": _proxy("regression"),
    "trump_approval": _proxy("regression"),
    "chick_weights": _proxy("regression"),
    "bananas": _proxy("classification"),
    "yeast_class1": _proxy("classification"),
    "fair_affairs": _proxy("classification"),
    "shuttle": _proxy("classification"),
    "friedman1": _proxy("regression"),
    "randhie": _proxy("regression"),
    "hastie_10_2": _proxy("classification"),
    "moons": _proxy("classification"),
    "friedman2": _proxy("regression"),
    "friedman3": _proxy("regression"),
}
#: the peers' grids: C of the SVMs, multiples of gamma="scale", alpha of the ridge
GRID = dict(C=[0.1, 1, 10, 100], gamma=[0.25, 0.5, 1, 2, 4], alpha=[1e-3, 1e-2, 1e-1, 1, 10])
#: --quick: two small sets, one seed, tiny grids
QUICK = dict(only=["diabetes", "abalone"], seeds=[0],
             grid=dict(C=[1, 10], gamma=[0.5, 1], alpha=[0.1, 1]))
#: the ratio ours / best peer that counts as "within 10%"
TOLERANCE = 1.10


# -- data ----------------------------------------------------------------------------------
def mnist_8v6():
    """MNIST digits 6 and 8 (labels kept), ``X/255`` projected on 50 PCA directions of the
    training part."""
    X, y, X_test, y_test = official_split("mnist")
    keep, keep_test = np.isin(y, (6, 8)), np.isin(y_test, (6, 8))
    X, X_test = X[keep] / np.float32(255), X_test[keep_test] / np.float32(255)
    pca = PCA(n_components=50, random_state=0).fit(X)
    return (pca.transform(X).astype(np.float32), y[keep], pca.transform(X_test).astype(np.float32),
            y_test[keep_test])


def _river(name: str):
    """``X, y`` of one of river's bundled data sets (its features in their first row's order)."""
    from river import datasets

    rows = list(getattr(datasets, name)())
    keys = list(rows[0][0])
    return np.array([[float(x[k]) for k in keys] for x, _ in rows]), np.array([y for _, y in rows])


def proxy(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``X, y`` of a proxy set (scikit-learn's or river's bundled data; no download)."""
    from sklearn import datasets

    if name == "breast_cancer":
        return datasets.load_breast_cancer(return_X_y=True)
    if name == "digits_odd_even":
        X, y = datasets.load_digits(return_X_y=True)
        return X, y % 2
    if name == "diabetes_regression":
        return datasets.load_diabetes(return_X_y=True)
    if name == "friedman1":  # y = 10 sin(πx₁x₂) + 20(x₃ − ½)² + 10x₄ + 5x₅ + N(0, 1), 5 useless inputs
        return datasets.make_friedman1(8000, noise=1.0, random_state=0)
    if name == "hastie_10_2":  # y = sign(Σ x_i² − χ²₁₀ median), x ~ N(0, I₁₀): a sphere's boundary
        X, y = datasets.make_hastie_10_2(12000, random_state=0)
        return X, y.astype(int)
    if name == "moons":  # two interleaved half circles, N(0, 0.3²) noise on both coordinates
        return datasets.make_moons(10000, noise=0.3, random_state=0)
    if name == "friedman2":  # y = √(x₁² + (x₂x₃ − 1/(x₂x₄))²) + N(0, 30²), inputs of very unequal ranges
        return datasets.make_friedman2(8000, noise=30.0, random_state=0)
    if name == "friedman3":  # y = atan((x₂x₃ − 1/(x₂x₄))/x₁) + N(0, 0.1²)
        return datasets.make_friedman3(8000, noise=0.1, random_state=0)
    if name in ("fair_affairs", "randhie"):
        return _statsmodels(name)
    if name == "yeast_class1":  # the first of Yeast's 14 labels
        X, labels = _river("Yeast")
        return X, np.array([row["Class1"] for row in labels], dtype=int)
    X, y = _river({"phishing": "Phishing", "trump_approval": "TrumpApproval",
                   "chick_weights": "ChickWeights", "bananas": "Bananas", "shuttle": "Shuttle"}[name])
    return X, (y.astype(int) if SETS[name]["task"] == "classification" else y.astype(float))


def _statsmodels(name: str) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels' bundled Fair (1978) affairs survey, binary "any affair" (6,366 rows, 8
    inputs), or the RAND health insurance experiment, regression of the number of doctor visits
    (20,190 rows, 9 inputs)."""
    from statsmodels import datasets

    if name == "fair_affairs":
        frame = datasets.fair.load_pandas().data
        return frame.drop(columns="affairs").to_numpy(float), (frame["affairs"] > 0).to_numpy(int)
    frame = datasets.randhie.load_pandas().data
    return frame.drop(columns="mdvis").to_numpy(float), frame["mdvis"].to_numpy(float)


def split(name: str, seed: int):
    """``X_train, y_train, X_test, y_test`` of ``name`` (the seeded split where there is no
    official one), standardised on the training part where ``SETS`` says so."""
    spec = SETS[name]
    if name == "mnist_8v6":
        parts = mnist_8v6()
    elif spec["split"] == "official":
        parts = official_split(name)
    else:
        data = dict(zip("Xy", proxy(name))) if spec.get("proxy") else load(name)
        parts = random_split(data["X"], data["y"], seed=seed, test_size=0.25,
                             stratify=spec["task"] == "classification")
    X, y, X_test, y_test = parts
    if spec["task"] == "regression":
        y, y_test = y.astype(np.float64), y_test.astype(np.float64)
    if spec["scale"]:
        scaler = StandardScaler().fit(X)
        X, X_test = scaler.transform(X).astype(np.float32), scaler.transform(X_test).astype(np.float32)
    return X, y, X_test, y_test


def subsample(n: int, size: int, seed: int) -> np.ndarray:
    """Sorted indices of a seeded subsample of ``min(n, size)`` of ``n`` rows (all rows if it fits)."""
    if size >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def error(task: str, model, X, y) -> float:
    """Test error rate (classification) or RMSE (regression)."""
    pred = model.predict(X)
    if task == "classification":
        return float(np.mean(pred != y))
    return float(np.sqrt(np.mean((pred - y) ** 2)))


# -- peers ---------------------------------------------------------------------------------
def peers(task: str, grid: dict, gamma_scale: float) -> dict:
    """name -> (estimator, parameter grid, is an SVM) for ``task``."""
    gammas = [f * gamma_scale for f in grid["gamma"]]
    nystroem = Nystroem(n_components=1024, random_state=0)
    if task == "classification":
        return {
            "SVC(rbf)": (SVC(kernel="rbf"), {"C": grid["C"], "gamma": gammas}, True),
            "Nystroem(1024)+RidgeClassifier": (
                Pipeline([("nystroem", nystroem), ("ridge", RidgeClassifier())]),
                {"nystroem__gamma": gammas, "ridge__alpha": grid["alpha"]}, False)}
    svr = TransformedTargetRegressor(SVR(kernel="rbf", epsilon=0.1), transformer=StandardScaler())
    return {
        "SVR(rbf), standardised y": (svr, {"regressor__C": grid["C"], "regressor__gamma": gammas}, True),
        "Nystroem(1024)+Ridge": (Pipeline([("nystroem", nystroem), ("ridge", Ridge())]),
                                 {"nystroem__gamma": gammas, "ridge__alpha": grid["alpha"]}, False)}


def tune(task: str, estimator, grid: dict, X, y, seed: int) -> tuple[GridSearchCV, float]:
    """Grid search with shuffled 3-fold CV on ``X, y`` (the tuning subsample); and its seconds
    (the refit on the subsample included)."""
    if task == "classification":
        cv, scoring = StratifiedKFold(3, shuffle=True, random_state=seed), "accuracy"
    else:
        cv, scoring = KFold(3, shuffle=True, random_state=seed), "neg_root_mean_squared_error"
    search = GridSearchCV(estimator, grid, cv=cv, scoring=scoring, refit=True)
    with Stopwatch() as sw:
        search.fit(X, y)
    return search, sw.wall


def refit_rows(search: GridSearchCV, n: int, n_tune: int, is_svm: bool, budget: float) -> int:
    """Rows of the final refit: all ``n``, or for an SVM whose refit extrapolated as n^2 from the
    tuning subsample exceeds ``budget`` seconds, the rows that fit it."""
    if not is_svm or n <= n_tune:
        return n
    predicted = search.refit_time_ * (n / n_tune) ** 2
    if predicted <= budget:
        return n
    return min(n, int(n_tune * math.sqrt(budget / max(search.refit_time_, 1e-3))))


def run_peer(name: str, peer: tuple, parts, task: str, seed: int, args) -> dict:
    """Tune one peer on the subsample, refit it with the best parameters, score it on the test set."""
    estimator, grid, is_svm = peer
    X, y, X_test, y_test = parts
    tune_rows = subsample(len(X), args.tune_rows, seed)
    search, tune_s = tune(task, estimator, grid, X[tune_rows], y[tune_rows], seed)
    n_fit = refit_rows(search, len(X), len(tune_rows), is_svm, args.svm_budget)
    rows = subsample(len(X), n_fit, seed)
    with Stopwatch() as sw:
        model = clone(estimator).set_params(**search.best_params_).fit(X[rows], y[rows])
    best = ", ".join(f"{k.split('__')[-1]}={v:.3g}" for k, v in search.best_params_.items())
    rows_note = "" if n_fit == len(X) else f"; **refit on {n_fit} of {len(X)} rows** (time budget)"
    return dict(method=name, seed=seed, error=error(task, model, X_test, y_test), fit_s=sw.wall,
                tune_s=tune_s, peer=True,
                detail=f"{best} (CV on {len(tune_rows)} rows, score {search.best_score_:.4f}){rows_note}")


# -- ours ----------------------------------------------------------------------------------
def run_ours(task: str, solver: str | None, parts, seed: int) -> dict:
    """``DSGClassifier`` / ``DSGRegressor`` with ``random_state=seed`` (and ``solver``) only."""
    X, y, X_test, y_test = parts
    estimator = DSGClassifier if task == "classification" else DSGRegressor
    kwargs = {} if solver is None else {"solver": solver}
    with Stopwatch() as sw:
        model = estimator(random_state=seed, **kwargs).fit(X, y)
    alpha = getattr(model, "alpha_", None)
    if alpha is None:  # the one-pass solver takes alpha as given ("auto" is its fixed 1e-6)
        alpha = f"{model._one_pass_alpha():g} (fixed)"
    else:
        alpha = f"{alpha:g}"
    label = f"{estimator.__name__}({'' if solver is None else f'solver={solver!r}'})"
    return dict(method=label, seed=seed, error=error(task, model, X_test, y_test), fit_s=sw.wall,
                tune_s=None, peer=False, ours="default" if solver is None else solver,
                detail=f"sigma_={np.array2string(np.asarray(model.sigma_), precision=3)}, alpha_={alpha}, "
                       f"n_components_={model.n_components_}, n_iter_={model.n_iter_}")


def log(name: str, result: dict) -> None:
    print(f"  {name} seed {result['seed']}: {result['method']}: error {result['error']:.4f}, "
          f"fit {result['fit_s']:.1f} s; {result['detail']}", flush=True)


def run_set(name: str, args) -> dict:
    """Every method on every seed of ``name``: the result rows and the set's shape."""
    task = SETS[name]["task"]
    seeds = args.seeds if SETS[name]["split"] == "random" else [0]
    results = []
    for seed in seeds:
        parts = split(name, seed)
        X = parts[0]
        tune_X = X[subsample(len(X), args.tune_rows, seed)]
        gamma_scale = 1.0 / (X.shape[1] * float(tune_X.var()))
        for solver in (None, "one_pass"):
            results.append(run_ours(task, solver, parts, seed))
            log(name, results[-1])
        for peer_name, peer in peers(task, args.grid, gamma_scale).items():
            results.append(run_peer(peer_name, peer, parts, task, seed, args))
            log(name, results[-1])
    shape = f"{len(parts[0])} / {len(parts[2])}, d = {parts[0].shape[1]}"
    return dict(name=name, task=task, seeds=seeds, shape=shape, results=results)


# -- report --------------------------------------------------------------------------------
def summary(run: dict) -> dict:
    """Mean errors over the seeds: ours (defaults, one pass), the best peer and the ratios."""
    methods: dict[str, list] = {}
    for r in run["results"]:
        methods.setdefault(r["method"], []).append(r)
    mean = {m: float(np.mean([r["error"] for r in rs])) for m, rs in methods.items()}
    peer_names = [m for m, rs in methods.items() if rs[0]["peer"]]
    best = min(peer_names, key=mean.get)
    default = next(m for m, rs in methods.items() if rs[0].get("ours") == "default")
    one_pass = next(m for m, rs in methods.items() if rs[0].get("ours") == "one_pass")
    return dict(mean=mean, best=best, ours=mean[default], one_pass=mean[one_pass],
                ratio=mean[default] / mean[best], one_pass_ratio=mean[one_pass] / mean[best])


def summary_table(runs: list) -> list[str]:
    rows = []
    for run in runs:
        s = summary(run)
        metric = "error rate" if run["task"] == "classification" else "RMSE"
        proxy = " (proxy)" if SETS[run["name"]].get("proxy") else ""
        rows.append((run["name"] + proxy, metric, run["shape"], len(run["seeds"]), f"{s['ours']:.4f}",
                     f"{s['mean'][s['best']]:.4f} ({s['best']})", f"**{s['ratio']:.3f}**",
                     "yes" if s["ratio"] <= TOLERANCE else "**no**", f"{s['one_pass']:.4f}",
                     f"{s['one_pass_ratio']:.3f}"))
    return markdown_table(["data set", "metric", "train / test, d", "seeds", "ours (defaults)",
                           "best tuned peer", "ratio ours / peer", f"within {TOLERANCE:.2f}",
                           "ours, one pass", "one-pass ratio"], rows)


def detail_table(run: dict) -> list[str]:
    rows = [(r["seed"], r["method"], f"{r['error']:.4f}", f"{r['fit_s']:.2f}",
             "—" if r["tune_s"] is None else f"{r['tune_s']:.1f}", r["detail"])
            for r in sorted(run["results"], key=lambda r: r["seed"])]
    metric = "test error" if run["task"] == "classification" else "test RMSE"
    return markdown_table(["seed", "method", metric, "fit s", "tuning s",
                           "fitted (ours) / chosen (peers) parameters"], rows)


def report(runs: list, args, load_before: float, seconds: float) -> list[str]:
    """The body of the result file: protocol, the summary, the misses, one table per set."""
    misses = [run["name"] for run in runs if summary(run)["ratio"] > TOLERANCE]
    grid = args.grid
    seeds = "seeds " + ", ".join(str(seed) for seed in args.seeds)  # the docstring says the default
    protocol = __doc__.replace("seeds 0, 1, 2", seeds).split("\n\n    python")[0].split("\n\n")
    lines = [*(line for part in protocol for line in (part.replace("\n", " "), "")),
             f"Grids: C in {grid['C']}, gamma in {grid['gamma']} x scale, alpha in {grid['alpha']}; "
             f"tuning on at most {args.tune_rows} rows; SVM refit budget {args.svm_budget:.0f} s. "
             f"scikit-learn {sklearn.__version__}, Python {platform.python_version()}. "
             f"Load average before: {load_before:.2f}, after: {load_average():.2f}; total "
             f"{seconds / 60:.1f} min.", "",
             "## Summary (means over the seeds)", "", *summary_table(runs), "",
             f"Defaults missing the {TOLERANCE:.2f} ratio: "
             + (", ".join(misses) if misses else "none") + ".", ""]
    for run in runs:
        lines += [f"## {run['name']} ({run['shape']})", "", *detail_table(run), ""]
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="seeds of the random splits (official splits use seed 0)")
    parser.add_argument("--tune-rows", type=int, default=5000, help="rows of the CV subsample")
    parser.add_argument("--svm-budget", type=float, default=300.0, help="seconds for an SVM refit")
    parser.add_argument("--out", type=Path, default=RESULTS / "shared_defaults.md")
    parser.add_argument("--quick", action="store_true", help=f"seconds: {QUICK}")
    args = parser.parse_args(argv)
    args.grid = GRID
    if args.quick:
        vars(args).update(QUICK)
    warnings.filterwarnings("ignore", message="n_components > n_samples")  # Nystroem on small sets
    load_before, clock = load_average(), Stopwatch.started()
    with threads(1):
        runs = [run_set(name, args) for name in args.only]
    path = write_report(args.out, "Defaults against tuned peers on the shared data sets",
                        report(runs, args, load_before, clock.elapsed()),
                        command=command_line(), machine=machine_line(1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
