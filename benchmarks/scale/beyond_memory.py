"""A fit beyond its cache: a generated CSV of 10⁷ rows (1.4 GB) streamed by ``fit(source)``
with ``cache_bytes`` a fraction of its features, against the in-memory fit on 10⁶ of its rows.

The file is :mod:`benchmarks.scale.stream`'s (16 standard-normal features, the label
``[sin(3x₀) + x₁x₂ > 0]``). ``DSGClassifier(cache_bytes=1 GiB, random_state=0)`` reads it with
``open_source``; its rows fit ``stream_rows_bytes`` in float32 (640 MB), their features do not
fit the cache one block at a time (9·10⁶ training rows × 256 features × 2 bytes = 4.6 GB), so the
engine draws them in every pass (:class:`~kernelstream.solvers.regenerated.RegeneratedFeatures`).
Each fit runs in a fresh process, one thread: wall and CPU seconds, the process's peak RSS
(``VmHWM``), the passes over the training rows (``fit_plan_.passes``) and the seconds of the
full-size stages a pass; test error on 200,000 fresh rows. One run each (the 10⁷-row fit takes
minutes).

    python -m benchmarks.scale.beyond_memory --out benchmarks/results
    python -m benchmarks.scale.beyond_memory --rows 400000 --reference-rows 100000   # minutes less
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common.data import ROOT
from benchmarks.common.report import markdown_table, report_or_print
from benchmarks.scale.memory import peak_rss
from benchmarks.scale.stream import BLOCK_ROWS, block, generate

CACHE_BYTES = 2**30
TEST_ROWS = 200_000


def test_rows() -> tuple[np.ndarray, np.ndarray]:
    return block(np.random.default_rng(1), TEST_ROWS)


def first_rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The file's first ``n`` rows (its generator replayed from seed 0, block by block)."""
    rng, parts = np.random.default_rng(0), []
    while sum(len(p[1]) for p in parts) < n:
        parts.append(block(rng, BLOCK_ROWS))
    return np.concatenate([p[0] for p in parts])[:n], np.concatenate([p[1] for p in parts])[:n]


def worker(way: str, path: str, rows: int, out: str) -> None:
    """One fit in this process; writes its JSON to ``out``."""
    import torch

    torch.set_num_threads(1)
    from kernelstream import DSGClassifier
    from kernelstream.data import open_source

    X_test, y_test = test_rows()
    wall, cpu = time.perf_counter(), time.process_time()
    if way == "stream":
        model = DSGClassifier(cache_bytes=CACHE_BYTES, random_state=0).fit(
            open_source(path, label="label", chunk_rows=65536))
    else:
        X, y = first_rows(rows)
        wall, cpu = time.perf_counter(), time.process_time()
        model = DSGClassifier(random_state=0).fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    plan = model.fit_plan_
    full_size = sum(r["seconds"] for r in plan.stages if r["stage"] in ("features", "solve"))
    Path(out).write_text(json.dumps(dict(
        way=way, rows=plan.shape.n_rows, wall=wall, cpu=cpu, peak_rss=peak_rss(),
        passes=plan.passes, full_size_seconds=full_size, route=plan.route,
        regenerate=plan.regenerate, features=int(model.n_components_),
        error=float(np.mean(model.predict(X_test) != y_test)), plan=str(plan))))


def run(way: str, path: Path, rows: int, folder: Path) -> dict:
    out = folder / f"{way}.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "benchmarks.scale.beyond_memory", "--worker", way,
                           str(path), str(rows), str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{way} failed:\n{done.stderr[-4000:]}")
    return json.loads(out.read_text())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--worker", nargs=4, metavar=("WAY", "PATH", "ROWS", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        way, path, rows, out = args.worker
        return worker(way, path, int(rows), out)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.csv"
        start = time.perf_counter()
        written = generate(path, 2**62, "csv", max_rows=args.rows)
        size, wrote = path.stat().st_size, time.perf_counter() - start
        print(f"{written:,} rows, {size / 1e9:.2f} GB written in {wrote:.0f} s", flush=True)
        stream = run("stream", path, written, Path(folder))
        print(stream["plan"], flush=True)
        reference = run("memory", path, args.reference_rows, Path(folder))
    rows = []
    for result, what in ((stream, f"fit(open_source(csv)), cache_bytes={CACHE_BYTES:,}"),
                         (reference, f"fit(X, y) on the first {args.reference_rows:,} rows")):
        per_pass = result["full_size_seconds"] / max(result["passes"] or 1, 1)
        rows.append([what, f"{result['rows']:,}", result["route"] + (" (drawn every pass)" if
                     result["regenerate"] else ""), result["features"], result["passes"],
                     f"{per_pass:.1f}", f"{result['wall']:.0f}", f"{result['cpu']:.0f}",
                     f"{result['peak_rss'] / 2**30:.2f}", f"{100 * result['error']:.2f}%"])
    ratio = stream["error"] / reference["error"]
    per_row = stream["full_size_seconds"] / max(stream["passes"] or 1, 1) / stream["rows"]
    rank_rows = 10**9 / 64
    projection = (f"Projected from the stream: {stream['passes']} passes at {1e6 * per_row:.2f} µs a "
                  f"row a pass; 10^9 rows on 64 ranks ({rank_rows:,.0f} rows a rank) would spend "
                  f"{stream['passes'] * per_row * rank_rows / 3600:.1f} h a rank in the passes, "
                  "plus one all-reduce of a (D+1)-vector a product.")
    body = [f"A CSV of {written:,} rows ({size / 1e9:.2f} GB); one thread, one fresh process a fit; "
            "`s a pass`: CPU seconds of the full-size stages (features and solves) over the "
            f"passes. Test error on {TEST_ROWS:,} fresh rows.", "",
            *markdown_table(["fit", "rows", "route", "features", "passes", "s a pass", "wall s",
                             "CPU s", "peak RSS GiB", "test error"], rows), "",
            f"Error of the stream over the in-memory fit's: {ratio:.3f}.", "", projection, "",
            "The stream's plan:", "", "```", stream["plan"], "```"]
    report_or_print(args.out, "beyond_memory.md", "Beyond the cache: 10^7 rows streamed, features "
                    "drawn every pass", body, threads=1)


if __name__ == "__main__":
    main()
