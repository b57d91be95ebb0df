"""a9a as two LIBSVM shards: the fit in memory, streamed by one process, and under ``torchrun``
with two ranks (one shard a rank), all with ``DSGClassifier(random_state=0)`` defaults.

Each way runs in a fresh process (two for the ranks), one thread a process: a warm-up fit, then
``--repeats`` timed fits; wall and CPU seconds of ``fit`` (the ranks': the slower rank's wall,
each rank's CPU), min and median over the repeats, the test error and the route and features
of the plan. The ranks' model is checked against the one-process stream's: the largest
difference of their decision functions on the test rows.

    python -m benchmarks.scale.ranks --out benchmarks/results
    python -m benchmarks.scale.ranks --quick        # one repeat, printed
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common.data import DATA, ROOT
from benchmarks.common.report import markdown_table, report_or_print

A9A = DATA / "a9a.npz"
WAYS = ("memory", "stream", "ranks")


def write_shards(folder: Path) -> str:
    """a9a's training rows as ``part-0.svm`` (the first half) and ``part-1.svm``; the glob."""
    from sklearn.datasets import dump_svmlight_file

    data = np.load(A9A)
    X, y = data["X_train"], data["y_train"]
    half = len(y) // 2
    for k, rows in enumerate((slice(0, half), slice(half, None))):
        dump_svmlight_file(X[rows], y[rows], str(folder / f"part-{k}.svm"), zero_based=True)
    return str(folder / "part-*.svm")


def worker(way: str, pattern: str, repeats: int, out: Path) -> None:
    """One process of ``way``: a warm-up fit, ``repeats`` timed ones; writes its JSON."""
    import torch

    torch.set_num_threads(1)
    from kernelstream import DSGClassifier, distributed
    from kernelstream.data import open_source

    comm = distributed.init(backend="gloo") if way == "ranks" else None
    data = np.load(A9A)
    X_test, y_test = data["X_test"], data["y_test"]

    def fit():
        if way == "memory":
            return DSGClassifier(random_state=0).fit(data["X_train"], data["y_train"])
        source = open_source(pattern, n_features=X_test.shape[1])
        return DSGClassifier(random_state=0).fit(
            distributed.shard_for_this_rank(source) if comm is not None else source)

    fit()
    walls, cpus, model = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        model = fit()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    rank = 0 if comm is None else comm.rank
    result = dict(way=way, rank=rank, wall=walls, cpu=cpus,
                  error=float(np.mean(model.predict(X_test) != y_test)),
                  route=model.fit_plan_.route, features=int(model.n_components_),
                  decision=model.decision_function(X_test[:4000]).tolist())
    (out / f"{way}{rank}.json").write_text(json.dumps(result))
    if comm is not None:
        distributed.shutdown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_way(way: str, pattern: str, repeats: int, out: Path) -> list[dict]:
    """``way`` in fresh processes; every process's result."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "src"),
                                                       os.environ.get("PYTHONPATH")]))}
    args = ["-m", "benchmarks.scale.ranks", "--worker", way, pattern, str(repeats), str(out)]
    if way == "ranks":
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                   f"--master_port={_free_port()}", "--no-python", sys.executable, *args]
    else:
        command = [sys.executable, *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"{way} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return [json.loads(path.read_text()) for path in sorted(out.glob(f"{way}*.json"))]


def rows_of(results: dict[str, list[dict]]) -> list[list]:
    """One table row a way: the slower rank's wall each repeat."""
    base = None
    rows = []
    for way in WAYS:
        ranks = results[way]
        walls = np.max([r["wall"] for r in ranks], axis=0)
        cpus = np.mean([r["cpu"] for r in ranks], axis=0)
        base = np.median(walls) if way == "stream" else base
        rows.append([way, len(ranks), f"{100 * ranks[0]['error']:.2f}%", ranks[0]["route"],
                     ranks[0]["features"], f"{walls.min():.2f}", f"{np.median(walls):.2f}",
                     f"{cpus.min():.2f}", np.median(walls)])
    for row in rows:
        row[-1] = f"{row[-1] / base:.2f}"
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one repeat")
    parser.add_argument("--worker", nargs=4, metavar=("WAY", "PATTERN", "REPEATS", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        way, pattern, repeats, out = args.worker
        return worker(way, pattern, int(repeats), Path(out))
    repeats = 1 if args.quick else args.repeats
    with tempfile.TemporaryDirectory() as folder:
        pattern = write_shards(Path(folder))
        results = {way: run_way(way, pattern, repeats, Path(folder)) for way in WAYS}
    rows = rows_of(results)
    stream, ranks = np.array(results["stream"][0]["decision"]), np.array(results["ranks"][0]["decision"])
    same = np.array_equal(results["ranks"][0]["decision"], results["ranks"][1]["decision"])
    body = [f"{repeats} timed fits a way after a warm-up, each way in fresh processes, one thread a "
            "process; wall and CPU seconds of `fit` (ranks: the slower rank's wall, the ranks' mean "
            "CPU); `wall / stream`: the median wall over the one-process stream's.", "",
            *markdown_table(["way", "processes", "test error", "route", "features", "wall s min",
                             "wall s median", "CPU s min", "wall / stream"], rows), "",
            f"Both ranks end with the same model: {same}. Largest difference of the ranks' and "
            f"the one-process stream's decision function on 4,000 test rows: "
            f"{float(np.max(np.abs(ranks - stream))):.2e} (their standard deviation "
            f"{float(np.std(stream)):.3f})."]
    report_or_print(args.out, "ranks.md", "a9a as two shards: in memory, one stream, two ranks",
                    body, threads=1)


if __name__ == "__main__":
    main()
