"""a9a's training rows in memory and as a Dask array on a ``LocalCluster`` of two worker
processes (one thread each), both fitted by ``DSGClassifier(random_state=0)`` defaults.

One process, one thread for the in-memory fit and the client; the cluster is started before
the clock and its rows persisted on the workers (``dask_array.persist()``), so that a fit's
seconds are the engine's: a warm-up fit each way, then ``--repeats`` timed fits; wall seconds of
``fit``, min and median. The Dask model is checked against the in-memory one: the largest
difference of their decision functions on the test rows, the plan's stages and features.

    python -m benchmarks.scale.dask_fit --out benchmarks/results
    python -m benchmarks.scale.dask_fit --quick        # one repeat, printed
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.common.data import DATA
from benchmarks.common.report import markdown_table, report_or_print

A9A = DATA / "a9a.npz"
#: rows of a Dask block: two blocks a worker
CHUNK_ROWS = 8192


def timed(fit, repeats: int) -> tuple[list[float], object]:
    """A warm-up ``fit()``, then ``repeats`` timed ones: their wall seconds and the last model."""
    fit()
    walls, model = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        model = fit()
        walls.append(time.perf_counter() - start)
    return walls, model


def run(repeats: int) -> tuple[list[list], dict]:
    """The table's rows (memory, Dask) and the comparison of the two models."""
    import dask.array as da
    import distributed
    import torch

    from kernelstream import DSGClassifier

    torch.set_num_threads(1)
    data = np.load(A9A)
    X, y = data["X_train"].astype(np.float32), data["y_train"]
    X_test, y_test = data["X_test"].astype(np.float32), data["y_test"]
    memory_walls, memory = timed(lambda: DSGClassifier(random_state=0).fit(X, y), repeats)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        dX = da.from_array(X, chunks=(CHUNK_ROWS, X.shape[1])).persist()
        dy = da.from_array(y, chunks=CHUNK_ROWS).persist()
        dask_walls, on_dask = timed(lambda: DSGClassifier(random_state=0).fit(dX, dy), repeats)
    rows = []
    for way, walls, model in (("memory", memory_walls, memory), ("dask, 2 workers", dask_walls, on_dask)):
        rows.append([way, f"{100 * float(np.mean(model.predict(X_test) != y_test)):.2f}%",
                     model.fit_plan_.route, model.n_components_, model.fit_plan_.passes,
                     f"{min(walls):.2f}", f"{np.median(walls):.2f}",
                     f"{np.median(walls) / np.median(memory_walls):.2f}"])
    ours, theirs = on_dask.decision_function(X_test), memory.decision_function(X_test)
    same = dict(difference=float(np.max(np.abs(ours - theirs))), std=float(np.std(theirs)),
                stages=[s["stage"] for s in on_dask.fit_plan_.stages]
                == [s["stage"] for s in memory.fit_plan_.stages])
    return rows, same


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one repeat")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    rows, same = run(repeats)
    body = [f"{repeats} timed fits a way after a warm-up; wall seconds of `fit`; the cluster "
            f"started and the rows persisted on its workers ({CHUNK_ROWS:,} rows a block) before "
            "the clock; the in-memory fit and the client on one thread, each worker one thread "
            "in a process of its own; `wall / memory`: the medians' ratio.", "",
            *markdown_table(["way", "test error", "route", "features", "passes", "wall s min",
                             "wall s median", "wall / memory"], rows), "",
            f"The same stages: {same['stages']}. Largest difference of the two models' decision "
            f"functions on a9a's 16,281 test rows: {same['difference']:.2e} (their standard "
            f"deviation {same['std']:.3f})."]
    report_or_print(args.out, "dask_fit.md", "a9a in memory and on a Dask LocalCluster", body,
                    threads=1)


if __name__ == "__main__":
    main()
