"""Thread policy on a loaded machine: a9a with defaults, while a busy process holds one core.

Each configuration fits ``DSGClassifier(random_state=0)`` on a9a in a fresh process (so
``OMP_NUM_THREADS`` takes effect), after one warm-up fit, ``--repeats`` times; the report gives
min and median wall-clock seconds and the ratio to the single-thread fit. A pure-Python busy
loop occupies one core for the whole run.

    python -m benchmarks.threads --repeats 3      # writes benchmarks/results/threads.md
    python -m benchmarks.threads --quick --out /tmp/bench   # seconds: 4,096 rows, one pass, one repeat
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

from threadpoolctl import threadpool_limits

from benchmarks.common.data import RESULTS, ROOT, official_split
from benchmarks.common.machine import machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import measure

#: name -> (environment overrides, estimator keyword arguments)
CONFIGS = {
    "OMP_NUM_THREADS=1, defaults": ({"OMP_NUM_THREADS": "1"}, {}),
    "environment default (2 threads allowed), defaults": ({}, {}),
    "environment default, n_jobs=-1 (2 threads)": ({}, {"n_jobs": -1}),
    "threadpool_limits(1) around fit, n_jobs=-1": ({}, {"n_jobs": -1, "limits": 1}),
}

def child(kwargs: dict, repeats: int, n_train: int | None) -> dict:
    """Runs in a fresh process: one warm-up fit, then ``repeats`` timed fits of a9a."""
    from kernelstream import DSGClassifier

    X, y, X_test, y_test = official_split("a9a", n_train)
    limits = kwargs.pop("limits", None)

    def fit():
        with threadpool_limits(limits) if limits is not None else nullcontext():
            return DSGClassifier(random_state=0, **kwargs).fit(X, y)

    timing = measure(fit, repeats=repeats, warmup=1)
    return {"times": timing.wall, "error": 1 - timing.result.score(X_test, y_test)}


def _busy(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def _run(env: dict, kwargs: dict, repeats: int, n_train: int | None) -> dict:
    """:func:`child` in a fresh interpreter (started in the repository root) with ``env``."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    code = (f"import json; from benchmarks.threads import child; "
            f"print(json.dumps(child({kwargs!r}, {repeats}, {n_train!r})))")
    out = subprocess.run([sys.executable, "-c", code], env={**environment, **env}, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-train", type=int, default=None, help="first training rows (all)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--max-iter", type=int, default=None, help="passes of each fit (default: the estimator's)")
    parser.add_argument("--quick", action="store_true", help="4,096 rows, one pass, one repeat (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.n_train, args.max_iter = 1, 4096, 1
    steps = {} if args.max_iter is None else {"max_iter": args.max_iter}
    stop = mp.Event()
    busy = mp.Process(target=_busy, args=(stop,), daemon=True)
    busy.start()
    try:
        rows = {name: _run(env, {**kwargs, **steps}, args.repeats, args.n_train)
                for name, (env, kwargs) in CONFIGS.items()}
    finally:
        stop.set()
        busy.join()
    base = min(rows["OMP_NUM_THREADS=1, defaults"]["times"])
    rows_text = "all 32,561" if args.n_train is None else f"the first {args.n_train}"
    lines = ["A busy Python loop holds one core for the whole run; the machine line's load "
             "average is the one at the end.",
             f"`DSGClassifier(random_state=0)` on a9a ({rows_text} rows), each configuration in a "
             "fresh process, one warm-up fit, then the repeats. Seconds of wall clock.", ""]
    lines += markdown_table(
        ["configuration", "min (s)", "median (s)", "min / single-thread min", "test error"],
        [(name, f"{min(r['times']):.2f}", f"{statistics.median(r['times']):.2f}",
          f"{min(r['times']) / base:.2f}", f"{r['error']:.4f}") for name, r in rows.items()])
    path = write_report(args.out / "threads.md", "Thread policy on a loaded machine (issue 14, item 1)",
                        lines, command=command_line(), machine=machine_line())
    print(path.read_text())


if __name__ == "__main__":
    main()
