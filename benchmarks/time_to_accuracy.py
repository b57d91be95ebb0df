"""Time to accuracy (issue 32): the defaults against the fastest tuned peers, in the same run.

Every method runs on one thread (``torch.set_num_threads(1)`` and
``threadpoolctl.threadpool_limits(1)``, :func:`benchmarks.common.timing.threads`) and is timed in
CPU seconds of ``fit`` alone (``time.process_time`` around ``fit``; data preparation and
prediction untimed), after one untimed warm-up fit on the first 256 training rows. A fit under
10 CPU seconds is repeated 3 times, a longer one once (``--repeats`` sets the count); the table
gives the min and the median, and the targets are judged on the min. Ours and the peers go through
one adapter (:class:`Adapter`: a name, ``fit``, ``predict``); a peer's bandwidth (the median
heuristic) is computed inside its ``fit``, as ours is.

Rows (``--rows``; the targets are issue 32's):

- ``a9a``, official split: ``DSGClassifier()`` against ``Nystroem(128)+LinearSVC`` and
  ``Nystroem(1024)+RidgeClassifier`` (both ``gamma = 1/(2σ²)``, σ the median distance); target:
  ours ≤ 15.0% test error in ≤ 5 CPU s.
- ``mnist8v6``, MNIST 8 vs 6, official split, ``X/255`` then PCA(50) fitted on the training
  rows: ``DSGClassifier()`` against ``Nystroem(1024)+RidgeClassifier`` and ``SVC(gamma="scale")``;
  target: ours ≤ 0.3% in ≤ 3 CPU s.
- ``hastie`` (``make_hastie_10_2(2000, random_state=0)``) and ``digits`` (``load_digits``, odd
  vs even): ``train_test_split(test_size=0.3, random_state=0)``, ``StandardScaler`` fitted on the
  training rows; ``DSGClassifier()`` against ``GridSearchCV(SVC(), C × gamma, cv=3)``; target:
  our error ≤ the grid's and our CPU s ≤ the grid's.
- ``synthetic``, the paper's 2-D regression (``kernelstream.datasets.synthetic_regression``):
  2^20 training points (seed 0), MSE against the noise-free f on 2^12 fresh points (seed 1), as
  in ``benchmarks.paper.synthetic_krr``: ``DSGRegressor()`` (it chooses σ) against
  ``RBFSampler(1024, gamma=1/(2σ²))+Ridge(alpha=ν·n)`` at the paper's σ = 0.1 × median distance,
  ν = 1e-6 (Ridge's alpha = ν·n, as in ``benchmarks.synthetic`` and ``benchmarks.perf.peers``);
  target: our MSE ≤ the peer's in less CPU time.
- ``mnist10``, MNIST ten classes, ``X/255``, 60k / 10k: ``DSGClassifier()``; target ≤ 1.5% in
  ≤ 600 CPU s. Minutes: only with ``--rows mnist10`` or ``--all``.

"Ours" is ``DSGClassifier(random_state=0, device="cpu", verbose=0)`` (``DSGRegressor`` alike):
every model parameter at its default. Writes ``time_to_accuracy.md`` and ``time_to_accuracy.json``
(the raw seconds) to ``--out``, with the command, date, machine and library version.

    python -m benchmarks.time_to_accuracy                 # every row but mnist10
    python -m benchmarks.time_to_accuracy --all           # and mnist10
    python -m benchmarks.time_to_accuracy --quick         # seconds: 600 training rows (2^9 for
                                                          # the 2-D set), 1 repeat, a temp folder

The quick run's 2-D set has 2^9 points, not 2^12: at 2^12 the default fit takes its
cross-validated route, about 30 CPU s on its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
import sklearn
import torch

import kernelstream
from benchmarks.common.data import RESULTS, ROOT, official_split
from benchmarks.common.machine import load_average, machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import Stopwatch, Timing, threads
from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.features import median_distance, sigma_to_gamma

NAME = "time_to_accuracy"
TITLE = "Time to accuracy: the defaults against the fastest tuned peers"
#: a fit shorter than this many CPU seconds is repeated SHORT_REPEATS times (unless --repeats)
SHORT_S, SHORT_REPEATS = 10.0, 3
#: the untimed warm-up fit of each method runs on this many leading training rows
WARMUP_ROWS = 256
#: --quick: training rows of the real sets, points of the 2-D set, most test rows
QUICK_TRAIN, QUICK_SYNTHETIC, QUICK_TEST = 600, 2**9, 2000
#: the 2-D set: training and test points, the paper's ν and bandwidth multiplier
SYNTHETIC_N, SYNTHETIC_TEST_N, NU, SIGMA_SCALE = 2**20, 2**12, 1e-6, 0.1
#: the SVC grid of the small sets
GRID = {"C": [0.1, 1, 10, 100], "gamma": ["scale", 0.01, 0.1, 1]}


class Row(str, Enum):
    """The data sets of the table (``--rows``)."""

    A9A = "a9a"
    MNIST_8V6 = "mnist8v6"
    HASTIE = "hastie"
    DIGITS = "digits"
    SYNTHETIC = "synthetic"
    MNIST10 = "mnist10"

    def __str__(self) -> str:
        return self.value


#: rows of minutes, run only when named (or with --all)
LONG_ROWS = (Row.MNIST10,)
DEFAULT_ROWS = [row for row in Row if row not in LONG_ROWS]


# -- the adapter: ours and every peer ------------------------------------------------------
@dataclass
class Adapter:
    """One method: a name, and ``fit``/``predict`` around an estimator built from the training
    ``X`` (so that a peer's median heuristic is part of its fit, as ours is)."""

    name: str
    build: Callable[[np.ndarray], Any]
    ours: bool = False
    model: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray) -> Adapter:
        self.model = self.build(X).fit(X, y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.model.predict(X)

    def details(self) -> str:
        """What the fit chose: our σ, α, loss and features; the grid's best parameters."""
        model = self.model
        if hasattr(model, "best_params_"):
            return f"best {model.best_params_}"
        if not self.ours:
            return ""
        parts = [f"{key}={getattr(model, attr):{spec}}" for key, attr, spec in
                 (("σ", "sigma_", ".4g"), ("α", "alpha_", ".3g"), ("loss", "loss_", "s"),
                  ("features", "n_components_", ",d"), ("epochs", "n_iter_", "d"))
                 if isinstance(getattr(model, attr, None), (str, int, float))]
        return ", ".join(parts)


def median_gamma(X: np.ndarray, scale: float = 1.0) -> float:
    """``1/(2σ²)`` with σ = ``scale`` × the median pairwise distance (1,000 seeded rows)."""
    return sigma_to_gamma(scale * median_distance(X, seed=0))


def ours_classifier() -> Adapter:
    return Adapter("DSGClassifier() (ours)", lambda X: DSGClassifier(
        random_state=0, device="cpu", verbose=0), ours=True)


def nystroem(n_components: int, head: str) -> Adapter:
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    heads = {"LinearSVC": LinearSVC, "RidgeClassifier": RidgeClassifier}
    return Adapter(f"Nystroem({n_components}, γ=1/(2·median²))+{head}", lambda X: make_pipeline(
        Nystroem(gamma=median_gamma(X), n_components=n_components, random_state=0),
        heads[head]()))


def svc_scale() -> Adapter:
    from sklearn.svm import SVC

    return Adapter('SVC(gamma="scale")', lambda X: SVC(gamma="scale"))


def svc_grid() -> Adapter:
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    return Adapter("GridSearchCV(SVC(), C × gamma 4 × 4, cv=3)",
                   lambda X: GridSearchCV(SVC(), GRID, cv=3))


def ours_regressor() -> Adapter:
    return Adapter("DSGRegressor() (ours)", lambda X: DSGRegressor(
        random_state=0, device="cpu", verbose=0), ours=True)


def rbf_ridge() -> Adapter:
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    return Adapter(f"RBFSampler(1024, σ={SIGMA_SCALE}·median)+Ridge(alpha=ν·n, ν={NU:g})",
                   lambda X: make_pipeline(
                       RBFSampler(n_components=1024, gamma=median_gamma(X, SIGMA_SCALE),
                                  random_state=0),
                       Ridge(alpha=NU * X.shape[0])))


# -- the data sets -------------------------------------------------------------------------
@dataclass
class Data:
    """Training and test rows; ``metric`` is "error" (rate) or "mse" (against ``y_test``)."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    metric: str = "error"

    def score(self, predicted: np.ndarray) -> float:
        if self.metric == "mse":
            return float(np.mean((np.asarray(predicted, dtype=np.float64) - self.y_test) ** 2))
        return float(np.mean(np.asarray(predicted) != self.y_test))


def first(n: int | None, *arrays: np.ndarray) -> list[np.ndarray]:
    """The first ``n`` rows of each array (all with ``None``)."""
    return [a[:n] for a in arrays]


def load_a9a(n_train: int | None, n_test: int | None) -> Data:
    X, y, X_test, y_test = official_split("a9a", n_train)
    return Data(X, y, *first(n_test, X_test, y_test))


def load_mnist_8v6(n_train: int | None, n_test: int | None) -> Data:
    """MNIST 8 vs 6 (label 1 for 8), ``X/255``, PCA(50) fitted on the training rows."""
    from sklearn.decomposition import PCA

    X, y, X_test, y_test = official_split("mnist")
    parts = []
    for rows, labels, n in ((X, y, n_train), (X_test, y_test, n_test)):
        keep = (labels == 8) | (labels == 6)
        parts += first(n, rows[keep] / np.float32(255), (labels[keep] == 8).astype(np.int64))
    pca = PCA(50, random_state=0).fit(parts[0])
    return Data(pca.transform(parts[0]).astype(np.float32), parts[1],
                pca.transform(parts[2]).astype(np.float32), parts[3])


def load_small(name: str, n_train: int | None) -> Data:
    """hastie or digits odd vs even: a 70/30 seeded split, standardised on the training rows."""
    from sklearn.datasets import load_digits, make_hastie_10_2
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if name == "hastie":
        X, y = make_hastie_10_2(2000, random_state=0)
    else:
        digits = load_digits()
        X, y = digits.data, digits.target % 2
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
    X_train, y_train = first(n_train, X_train, y_train)
    scaler = StandardScaler().fit(X_train)
    return Data(scaler.transform(X_train).astype(np.float32), y_train,
                scaler.transform(X_test).astype(np.float32), y_test)


def load_synthetic(n_train: int) -> Data:
    X, y, _ = synthetic_regression(n_train, random_state=0)
    X_test, _, f_test = synthetic_regression(SYNTHETIC_TEST_N, random_state=1)
    return Data(X, y, X_test, f_test.astype(np.float64), metric="mse")


def load_mnist10(n_train: int | None, n_test: int | None) -> Data:
    X, y, X_test, y_test = official_split("mnist", n_train)
    X_test, y_test = first(n_test, X_test, y_test)
    return Data(X / np.float32(255), y, X_test / np.float32(255), y_test)


# -- the targets ---------------------------------------------------------------------------
@dataclass
class Result:
    """One method's test score and its fit seconds on both clocks."""

    name: str
    ours: bool
    score: float
    timing: Timing
    details: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def cpu(self) -> float:
        return self.timing.min("cpu")


@dataclass(frozen=True)
class Target:
    """Issue 32's target of a row: an absolute error and CPU time, or every peer beaten on both
    (``strict``: in strictly less time)."""

    error: float | None = None
    seconds: float | None = None
    strict: bool = False

    def text(self, metric: str) -> str:
        if self.error is not None:
            return f"ours ≤ {self.error:.1%} in ≤ {self.seconds:g} CPU s"
        what = "MSE" if metric == "mse" else "error"
        return f"our {what} ≤ the peer's and our CPU s {'<' if self.strict else '≤'} the peer's"

    def met(self, ours: Result, peers: list[Result]) -> bool:
        if self.error is not None:
            return ours.score <= self.error and ours.cpu <= self.seconds
        faster = (lambda a, b: a < b) if self.strict else (lambda a, b: a <= b)
        return all(ours.score <= p.score and faster(ours.cpu, p.cpu) for p in peers)


@dataclass(frozen=True)
class Spec:
    """A row: its title, its data (``quick`` → a tiny subset), its methods and its target."""

    title: str
    load: Callable[[bool], Data]
    methods: Callable[[], list[Adapter]]
    target: Target


def subset(quick: bool) -> tuple[int | None, int | None]:
    """Training and test rows to keep: all, or the quick run's few."""
    return (QUICK_TRAIN, QUICK_TEST) if quick else (None, None)


SPECS: dict[Row, Spec] = {
    Row.A9A: Spec("a9a (official split)",
                  lambda q: load_a9a(*subset(q)),
                  lambda: [ours_classifier(), nystroem(128, "LinearSVC"),
                           nystroem(1024, "RidgeClassifier")],
                  Target(error=0.150, seconds=5.0)),
    Row.MNIST_8V6: Spec("MNIST 8 vs 6 (X/255, PCA 50 on the training rows)",
                        lambda q: load_mnist_8v6(*subset(q)),
                        lambda: [ours_classifier(), nystroem(1024, "RidgeClassifier"), svc_scale()],
                        Target(error=0.003, seconds=3.0)),
    Row.HASTIE: Spec("make_hastie_10_2(2000), 70/30, standardised",
                     lambda q: load_small("hastie", subset(q)[0]),
                     lambda: [ours_classifier(), svc_grid()], Target()),
    Row.DIGITS: Spec("digits odd vs even, 70/30, standardised",
                     lambda q: load_small("digits", subset(q)[0]),
                     lambda: [ours_classifier(), svc_grid()], Target()),
    Row.SYNTHETIC: Spec("the paper's 2-D regression (MSE against the noise-free f)",
                        lambda q: load_synthetic(QUICK_SYNTHETIC if q else SYNTHETIC_N),
                        lambda: [ours_regressor(), rbf_ridge()], Target(strict=True)),
    Row.MNIST10: Spec("MNIST ten classes (X/255, 60k / 10k)",
                      lambda q: load_mnist10(*subset(q)),
                      lambda: [ours_classifier()], Target(error=0.015, seconds=600.0)),
}


# -- the runs ------------------------------------------------------------------------------
def time_fits(adapter: Adapter, data: Data, repeats: int | None) -> Timing:
    """An untimed warm-up fit on the first rows, then timed fits of all rows: ``repeats`` of
    them, or by default SHORT_REPEATS when the first took under SHORT_S CPU seconds, else one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adapter.fit(data.X[:WARMUP_ROWS], data.y[:WARMUP_ROWS])
    timing = Timing()
    while True:
        with Stopwatch() as sw:
            adapter.fit(data.X, data.y)
        timing.wall.append(sw.wall)
        timing.cpu.append(sw.cpu)
        wanted = repeats or (SHORT_REPEATS if timing.cpu[0] < SHORT_S else 1)
        if len(timing.cpu) >= wanted:
            return timing


def run_method(adapter: Adapter, data: Data, repeats: int | None) -> Result:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        timing = time_fits(adapter, data, repeats)
    score = data.score(adapter.predict(data.X_test))
    seen = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0][:100]}" for w in caught})
    result = Result(adapter.name, adapter.ours, score, timing, adapter.details(), seen)
    print(f"    {adapter.name}: {fmt_score(score, data.metric)}, CPU s {fmt_seconds(timing)}"
          f"{'; ' + result.details if result.details else ''}", flush=True)
    return result


def run_row(row: Row, quick: bool, repeats: int | None) -> dict:
    spec = SPECS[row]
    data = spec.load(quick)
    print(f"  {row}: {spec.title}, {len(data.X)} / {len(data.X_test)} rows", flush=True)
    results = [run_method(adapter, data, repeats) for adapter in spec.methods()]
    ours, peers = results[0], results[1:]
    passed = spec.target.met(ours, peers)
    print(f"  {'PASS' if passed else 'FAIL'} {row}: {spec.target.text(data.metric)}", flush=True)
    return dict(row=row, spec=spec, data=data, results=results, passed=passed)


# -- the report ----------------------------------------------------------------------------
def fmt_score(score: float, metric: str) -> str:
    return f"{score:.3e}" if metric == "mse" else f"{score:.2%}"


def fmt_seconds(timing: Timing) -> str:
    return f"{timing.min('cpu'):.2f} / {timing.median('cpu'):.2f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 0 else ("1.00" if a == 0 else "inf")


def verdict(passed: bool) -> str:
    return "**PASS**" if passed else "**FAIL**"


def table_rows(run: dict) -> list[list[str]]:
    """The lines of one set in the main table: ours (the target, PASS/FAIL), then each peer
    (ours/peer ratios of the score and of the min CPU seconds)."""
    data, target = run["data"], run["spec"].target
    ours, lines = run["results"][0], []
    for r in run["results"]:
        is_ours = r is ours
        lines.append([str(run["row"]), r.name, f"{len(data.X):,} / {len(data.X_test):,}",
                      fmt_score(r.score, data.metric), fmt_seconds(r.timing), str(len(r.timing.cpu)),
                      "—" if is_ours else ratio(ours.score, r.score),
                      "—" if is_ours else ratio(ours.cpu, r.cpu),
                      target.text(data.metric) if is_ours else "—",
                      verdict(run["passed"]) if is_ours else "—"])
    return lines


def summary_rows(run: dict) -> list[str]:
    data, ours, peers = run["data"], run["results"][0], run["results"][1:]
    best = min(peers, key=lambda p: p.score, default=None)
    peer = "—" if best is None else f"{best.name}: {fmt_score(best.score, data.metric)} in {best.cpu:.2f} s"
    return [str(run["row"]), run["spec"].target.text(data.metric),
            f"{fmt_score(ours.score, data.metric)} in {ours.cpu:.2f} s", peer, verdict(run["passed"])]


def library_version() -> str:
    """``kernelstream 0.1.0, commit abc1234`` (and whether src/ had uncommitted changes)."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = " (with uncommitted changes in src/)" if git("status", "--porcelain", "--", "src") else ""
    return f"kernelstream {kernelstream.__version__}, commit {commit}{dirty}"


def header(args, date: str) -> list[str]:
    quick = (f"**Quick run** ({QUICK_TRAIN} training rows, {QUICK_SYNTHETIC} points of the 2-D "
             f"set, at most {QUICK_TEST} test rows): the targets are for the full sets; the "
             f"verdicts below only show the machinery. " if args.quick else "")
    return [f"Date: {date}", "", f"Library: {library_version()}; scikit-learn {sklearn.__version__}, "
            f"numpy {np.__version__}, torch {torch.__version__}", "",
            f"Load average before: {args.load_before:.2f}; after: {load_average():.2f} (other jobs "
            "on the machine share its caches and memory bandwidth even when CPU time leaves out "
            "their time slices).", "",
            f"{quick}One thread for everything (`torch.set_num_threads(1)` and "
            "`threadpoolctl.threadpool_limits(1)`). CPU s: `time.process_time` around `fit` only, "
            f"after one untimed warm-up fit on {WARMUP_ROWS} rows; min / median of the repeats "
            f"(fits under {SHORT_S:g} s repeated {SHORT_REPEATS} times by default); the targets and "
            "the ratios use the min. Ours: `random_state=0, device=\"cpu\", verbose=0`, every "
            "model parameter at its default. Ratios: ours / that peer (below 1: ours is better).", ""]


def report(runs: list[dict], args, date: str) -> list[str]:
    main = markdown_table(["set", "method", "train / test rows", "test error (MSE)",
                           "CPU s of fit (min / median)", "repeats", "error ours/peer",
                           "CPU s ours/peer", "target", "PASS/FAIL"],
                          [line for run in runs for line in table_rows(run)])
    summary = markdown_table(["set", "target (issue 32)", "ours", "best peer", "PASS/FAIL"],
                             [summary_rows(run) for run in runs])
    details = markdown_table(["set", "method", "what the fit chose", "warnings"],
                             [[str(run["row"]), r.name, r.details or "—", ", ".join(r.warnings) or "—"]
                              for run in runs for r in run["results"]])
    sets = [f"- `{run['row']}`: {run['spec'].title}" for run in runs]
    return [*header(args, date), "## Targets", "", *summary, "", "## Every method", "", *main, "",
            "## Fitted models", "", *details, "", "## Sets", "", *sets]


def raw(runs: list[dict], args, date: str) -> dict:
    """The JSON: the run's context and every method's seconds and score."""
    return {"title": TITLE, "command": command_line(), "date": date, "machine": machine_line(1),
            "library": library_version(), "versions": {"scikit-learn": sklearn.__version__,
            "numpy": np.__version__, "torch": torch.__version__}, "threads": 1,
            "load_before": args.load_before, "load_after": load_average(), "clock": "time.process_time around fit",
            "quick": args.quick, "sets": [{
                "row": str(run["row"]), "title": run["spec"].title, "metric": run["data"].metric,
                "n_train": len(run["data"].X), "n_test": len(run["data"].X_test),
                "target": run["spec"].target.text(run["data"].metric), "passed": run["passed"],
                "methods": [{"name": r.name, "ours": r.ours, "score": r.score,
                             "cpu_s": r.timing.cpu, "wall_s": r.timing.wall,
                             "cpu_min": r.cpu, "cpu_median": r.timing.median("cpu"),
                             "details": r.details, "warnings": r.warnings}
                            for r in run["results"]]} for run in runs]}


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=Row, choices=list(Row), nargs="+", default=None,
                        help=f"the sets to run (default: all but {', '.join(map(str, LONG_ROWS))})")
    parser.add_argument("--all", action="store_true", help="every row, mnist10 included")
    parser.add_argument("--repeats", type=int, default=None,
                        help=f"timed fits per method (default {SHORT_REPEATS} for fits under "
                             f"{SHORT_S:g} CPU s, 1 for longer ones)")
    parser.add_argument("--quick", action="store_true",
                        help=f"seconds: {QUICK_TRAIN} training rows ({QUICK_SYNTHETIC} for the 2-D "
                             "set), one repeat, a temporary folder unless --out")
    parser.add_argument("--out", type=Path, default=None, help=f"results folder (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    args.rows = list(Row) if args.all else (args.rows or DEFAULT_ROWS)
    if args.quick:
        args.repeats = args.repeats or 1
    if args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix=f"kernelstream-{NAME}-")) if args.quick else RESULTS
    return args


def main(argv=None) -> Path:
    args = parse(argv)
    date = datetime.now().astimezone().isoformat(timespec="seconds")
    args.load_before = load_average()
    with threads(1):
        runs = [run_row(row, args.quick, args.repeats) for row in args.rows]
    body = report(runs, args, date)
    path = write_report(args.out / f"{NAME}.md", TITLE, body, threads=1)
    (args.out / f"{NAME}.json").write_text(
        json.dumps(raw(runs, args, date), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("\n".join(markdown_table(["set", "target (issue 32)", "ours", "best peer", "PASS/FAIL"],
                                   [summary_rows(run) for run in runs])))
    print(f"wrote {path} and {path.with_suffix('.json')}")
    return path


if __name__ == "__main__":
    main()
