"""Error against time as ``effort`` trades one for the other, on two sets, in one run.

``DSGClassifier(effort=...)`` on a9a (its own split) and ``DSGRegressor(effort=...)`` on
``make_friedman1(100000, 20, noise=1.0, random_state=1)`` (75/25, ``random_state=0``, the
scaling benchmark's regression set): the named levels (``"fast"``, ``"auto"``, ``"thorough"``:
the work budget of the growth times 0.25, 1 and 4) and two budgets in CPU seconds (a
machine-dependent choice), against ``StandardScaler + Nystroem(1024) + Ridge(alpha=1e-3)`` (a
``RidgeClassifier`` on a9a). One thread; CPU seconds of ``fit``, min and median of the repeats
after one warm-up fit; the features kept and why the growth stopped; a plot of test error
(RMSE) against the median seconds, one panel a set (``effort.png``).

    python -m benchmarks.effort --out benchmarks/results
    python -m benchmarks.effort --quick               # a9a's first 4,000 rows, two levels
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.common.data import official_split
from benchmarks.common.report import markdown_table, report_or_print
from benchmarks.common.timing import measure, shape_arguments, threads

LEVELS = ("fast", "auto", "thorough")
SECONDS = (1.0, 6.0)


def rows_of(name: str, quick: bool) -> tuple:
    """``(X_train, y_train, X_test, y_test)`` of a set."""
    if name == "a9a":
        X, y, X_test, y_test = official_split("a9a", 4000 if quick else None)
        return X, y, X_test, y_test
    from sklearn.datasets import make_friedman1
    from sklearn.model_selection import train_test_split
    X, y = make_friedman1(10_000 if quick else 100_000, 20, noise=1.0, random_state=1)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    return X_train, y_train, X_test, y_test


def make(name: str, effort):
    """Our estimator at ``effort``, or the peer pipeline where ``effort`` is ``None``."""
    if effort is None:
        from sklearn.kernel_approximation import Nystroem
        from sklearn.linear_model import Ridge, RidgeClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        last = RidgeClassifier(alpha=1e-3) if name == "a9a" else Ridge(alpha=1e-3)
        return make_pipeline(StandardScaler(), Nystroem(n_components=1024, random_state=0), last)
    from kernelstream import DSGClassifier, DSGRegressor
    return (DSGClassifier if name == "a9a" else DSGRegressor)(effort=effort, random_state=0)


def test_error(name: str, model, X, y) -> float:
    predicted = model.predict(X)
    if name == "a9a":
        return float(np.mean(predicted != y))
    return float(np.sqrt(np.mean((predicted - y) ** 2)))


def why_stopped(model) -> str:
    """The growth's last stage's reason, where the plan has one."""
    stages = getattr(getattr(model, "fit_plan_", None), "stages", ()) or ()
    stops = [s for s in stages if s.get("stage") == "growth_stop"]
    return str(stops[-1].get("why", "")) if stops else ""


def set_rows(name: str, quick: bool, repeats: int) -> list[dict]:
    X, y, X_test, y_test = rows_of(name, quick)
    efforts = ("fast", "auto") if quick else (*LEVELS, *SECONDS)
    results = []
    for effort in (*efforts, None):
        timing = measure(lambda: make(name, effort).fit(X, y), repeats=repeats, warmup=1)
        model = timing.result
        results.append(dict(set=name, effort="Nystroem(1024)+ridge" if effort is None else repr(effort),
                            ours=effort is not None, error=test_error(name, model, X_test, y_test),
                            min=timing.min("cpu"), median=timing.median("cpu"),
                            features=getattr(model, "n_components_", 1024), why=why_stopped(model)))
        row = results[-1]
        print(name, row["effort"], f"{row['error']:.4f}", f"{row['min']:.2f}", f"{row['median']:.2f}",
              row["features"], row["why"], flush=True)
    return results


def table(results: list[dict]) -> list[str]:
    peers = {r["set"]: r for r in results if not r["ours"]}
    rows = []
    for r in results:
        peer = peers[r["set"]]
        shown = f"{100 * r['error']:.2f}%" if r["set"] == "a9a" else f"{r['error']:.4f}"
        rows.append([r["set"], r["effort"], shown, f"{r['min']:.2f}", f"{r['median']:.2f}",
                     f"{r['features']:,}", f"{r['error'] / peer['error']:.3f}",
                     f"{r['median'] / peer['median']:.2f}", r["why"]])
    return markdown_table(["set", "effort", "test error / RMSE", "CPU s min", "CPU s median",
                           "features", "error / peer", "time / peer", "why the features stopped"],
                          rows)


def plot(results: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(dict.fromkeys(r["set"] for r in results))
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.8))
    for ax, name in zip(np.atleast_1d(axes), names):
        ours = [r for r in results if r["set"] == name and r["ours"]]
        ours.sort(key=lambda r: r["median"])
        ax.plot([r["median"] for r in ours], [r["error"] for r in ours], "o-", label="kernelstream")
        for r in ours:
            ax.annotate(r["effort"].strip("'"), (r["median"], r["error"]), textcoords="offset points",
                        xytext=(4, 4), fontsize=8)
        peer = next(r for r in results if r["set"] == name and not r["ours"])
        ax.plot([peer["median"]], [peer["error"]], "s", color="grey", label=peer["effort"])
        ax.set_xscale("log")
        ax.set_xlabel("fit CPU seconds (median, one thread)")
        ax.set_ylabel("test error rate" if name == "a9a" else "test RMSE")
        ax.set_title(name if name == "a9a" else "friedman1, 100,000 rows")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    args = shape_arguments(__doc__, "effort.md", argv, repeats=2, quick="a9a's first 4,000 rows, two levels")
    with threads(1):
        results = [r for name in ("a9a", "friedman1") for r in set_rows(name, args.quick, args.repeats)]
    body = ["`effort` sets the work the growth of the features may spend (a level) or its CPU "
            "seconds (a number); ratios to the peer of the same set, same run.", "",
            *table(results), "", "![error against time](effort.png)"]
    report_or_print(args.out, "effort.md", "Error against time by effort", body, threads=1)
    if args.out:
        plot(results, Path(args.out) / "effort.png")


if __name__ == "__main__":
    main()
