"""Thread policy on a loaded machine: a9a with defaults, while a busy process holds one core.

Each configuration fits ``DSGClassifier(random_state=0)`` on a9a in a fresh process (so
``OMP_NUM_THREADS`` takes effect), after one warm-up fit, ``--repeats`` times; the report gives
min and median wall-clock seconds and the ratio to the single-thread fit. A pure-Python busy
loop occupies one core for the whole run.

    python benchmarks/threads.py --repeats 3      # writes benchmarks/results/threads.md
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "a9a.npz"
RESULTS = ROOT / "benchmarks" / "results" / "threads.md"

#: name -> (environment overrides, estimator keyword arguments)
CONFIGS = {
    "OMP_NUM_THREADS=1, defaults": ({"OMP_NUM_THREADS": "1"}, {}),
    "environment default (2 threads allowed), defaults": ({}, {}),
    "environment default, n_jobs=-1 (2 threads)": ({}, {"n_jobs": -1}),
    "threadpool_limits(1) around fit, n_jobs=-1": ({}, {"n_jobs": -1, "limits": 1}),
}

CHILD = """
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
from kernelstream import DSGClassifier
kwargs = json.loads(sys.argv[1]); repeats = int(sys.argv[2])
limits = kwargs.pop("limits", None)
d = np.load(sys.argv[3])
times, errors = [], []
for i in range(repeats + 1):  # the first fit warms up
    clf = DSGClassifier(random_state=0, **kwargs)
    start = time.perf_counter()
    if limits is None:
        clf.fit(d["X_train"], d["y_train"])
    else:
        with threadpool_limits(limits):
            clf.fit(d["X_train"], d["y_train"])
    elapsed = time.perf_counter() - start
    if i:
        times.append(elapsed); errors.append(1 - clf.score(d["X_test"], d["y_test"]))
print(json.dumps({"times": times, "error": errors[-1]}))
"""


def _busy(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def _run(env: dict, kwargs: dict, repeats: int) -> dict:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(kwargs), str(repeats), str(DATA)],
                         env={**environment, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    stop = mp.Event()
    busy = mp.Process(target=_busy, args=(stop,), daemon=True)
    busy.start()
    try:
        rows = {name: _run(env, kwargs, args.repeats) for name, (env, kwargs) in CONFIGS.items()}
    finally:
        stop.set()
        busy.join()
    base = min(rows["OMP_NUM_THREADS=1, defaults"]["times"])
    lines = ["# Thread policy on a loaded machine (issue 14, item 1)", "",
             f"Command: `python benchmarks/threads.py --repeats {args.repeats}`  ",
             f"Machine: {cpu_model()}, {os.cpu_count()} cores; a busy Python loop holds one core "
             f"for the whole run. Load average at the end: {os.getloadavg()[0]:.2f}.  ",
             "`DSGClassifier(random_state=0)` on a9a (32,561 rows), each configuration in a "
             "fresh process, one warm-up fit, then the repeats. Seconds of wall clock.", "",
             "| configuration | min (s) | median (s) | min / single-thread min | test error |",
             "|---|---|---|---|---|"]
    for name, row in rows.items():
        times = row["times"]
        lines.append(f"| {name} | {min(times):.2f} | {statistics.median(times):.2f} | "
                     f"{min(times) / base:.2f} | {row['error']:.4f} |")
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
