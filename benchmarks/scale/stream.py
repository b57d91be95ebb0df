"""Streaming at scale: one epoch's throughput with 1 and 2 processes, and resident memory over
time while a fit streams a generated file.

Files of ``D_FEATURES`` standard-normal features and a label ``[sin(3x₀) + x₁x₂ > 0]``, written
by pyarrow in blocks (CSV or Parquet). Each measurement runs in fresh processes, one thread each:

- **throughput**: ``DSGClassifier(sigma, alpha, n_components=1024, max_iter=2, tol=None,
  early_stopping=False)`` on ``open_source(file)``; the rows of the file over the seconds of the
  second epoch (reading, parsing and training; the first pass and the setup are left out), with
  one process and with two (``torchrun --nproc_per_node=2``, each rank streaming its shard);
- **memory**: ``DSGClassifier(n_components=2048, max_iter=1)`` (bandwidth and α raced on the
  sample, early stopping on the held-out rows) on the whole file, the process's RSS sampled
  every ``SAMPLE_S`` seconds by the parent (psutil); its peak (``VmHWM``) against
  ``RSS_LIMIT``.

    python -m benchmarks.scale.stream --size-gb 5 --format csv      # the issue's measurement
    python -m benchmarks.scale.stream --quick --out /tmp/b          # a 2 MB file (seconds)
    python -m benchmarks.scale.stream --size-gb 0.5 --measure memory # the memory run alone
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common.data import RESULTS, ROOT
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.scale.memory import peak_rss

D_FEATURES = 16
BLOCK_ROWS = 200_000
SAMPLE_S = 0.5
#: the issue's bound on the peak RSS of a fit streaming a 5 GB file
RSS_LIMIT = 1.5 * 2**30
THROUGHPUT_MODEL = dict(sigma=2.0, alpha=1e-5, n_components=1024, max_iter=2, tol=None,
                        early_stopping=False, random_state=0)
MEMORY_MODEL = dict(n_components=2048, max_iter=1, random_state=0)
#: --quick: 20,000-row blocks and smaller models
QUICK = dict(block_rows=20_000, throughput=dict(THROUGHPUT_MODEL, n_components=256),
             memory=dict(MEMORY_MODEL, n_components=256))
SOURCE = dict(label="label", chunk_rows=4096, shuffle_buffer=65536, seed=0)


def block(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` rows of the generated files: standard-normal features (4 decimals) and the
    label ``[sin(3x₀) + x₁x₂ > 0]``."""
    X = rng.standard_normal((rows, D_FEATURES), dtype=np.float32).round(4)
    return X, (np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] > 0).astype(np.float32)


def generate(path: Path, size_bytes: int, file_format: str, block_rows: int = BLOCK_ROWS,
             seed: int = 0, max_rows: int | None = None) -> int:
    """Write blocks of rows until the file holds ``size_bytes`` (or ``max_rows`` rows are
    written); returns the rows written."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    names = [f"x{j}" for j in range(D_FEATURES)] + ["label"]
    written, rows = 0, 0
    csv_writer = None
    try:
        while written < size_bytes and (max_rows is None or rows < max_rows):
            X, label = block(rng, block_rows)
            table = pa.table(dict(zip(names, [*X.T, label])))
            rows += block_rows
            if file_format == "parquet":  # one file per block: data.parquet, data-1.parquet, ...
                part = path if rows == block_rows else path.with_name(
                    f"{path.stem}-{rows // block_rows - 1}{path.suffix}")
                pq.write_table(table, part)
                written += part.stat().st_size
                continue
            csv_writer = csv_writer or pacsv.CSVWriter(path, table.schema)
            csv_writer.write(table)
            written = path.stat().st_size
    finally:
        if csv_writer is not None:
            csv_writer.close()
    return rows


def worker(params: str, path: str, out: str, world_size: int) -> None:
    """One process of a measurement: ``DSGClassifier(**json.loads(params))`` on the file;
    rank 0 writes ``out``."""
    import torch

    torch.set_num_threads(1)
    from kernelstream import DSGClassifier, distributed
    from kernelstream.data import open_source
    from kernelstream.planning import LIMITS

    source = open_source(sorted(Path(path).parent.glob(Path(path).name)), **SOURCE)
    rank = 0
    if world_size > 1:
        rank = distributed.init(backend="gloo", timeout=600).rank
        source = distributed.shard_for_this_rank(source)
    model = DSGClassifier(**json.loads(params))
    epochs: list[float] = []
    model._progress = lambda: (lambda epoch, loss: epochs.append(time.perf_counter()))
    start = time.perf_counter()
    # read as a stream however few its rows (a process would read a small file into memory)
    model.fit(source, limits=dataclasses.replace(LIMITS, stream_rows_bytes=0))
    result = dict(seconds=time.perf_counter() - start, epoch_ends=[t - start for t in epochs],
                  n_components=model.n_components_, sigma=model.sigma_, alpha=model.alpha_,
                  max_rss=peak_rss())
    if rank == 0:
        Path(out).write_text(json.dumps(result))
    if world_size > 1:
        distributed.shutdown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(mode: str, params: dict, path: Path, world_size: int, folder: Path) -> tuple[dict, list]:
    """Run :func:`worker` in fresh processes; returns its result and the RSS timeline
    ``[(seconds, bytes)]`` of the (rank-0) process, sampled every ``SAMPLE_S``."""
    import psutil

    out = folder / f"{mode}-{world_size}.json"
    args = ["-m", "benchmarks.scale.stream", "--worker", json.dumps(params), str(path), str(out)]
    if world_size > 1:
        args = ["-m", "torch.distributed.run", f"--nproc_per_node={world_size}",
                f"--master_port={_free_port()}", *args, "--world-size", str(world_size)]
    process = subprocess.Popen([sys.executable, *args], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    timeline, start = [], time.perf_counter()
    watched = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            rss = sum(p.memory_info().rss for p in [watched, *watched.children(recursive=True)]
                      if "python" in p.name()) if world_size > 1 else watched.memory_info().rss
            timeline.append((time.perf_counter() - start, rss))
        except psutil.Error:
            pass
        time.sleep(SAMPLE_S)
    if process.returncode:
        raise RuntimeError(f"{mode} with {world_size} process(es) failed:\n"
                           f"{process.stderr.read()[-4000:]}")
    return json.loads(out.read_text()), timeline


def measure(path: Path, n_rows: int, folder: Path, models: dict, parts: str = "all") -> dict:
    """Throughput with 1 and 2 processes, then the memory run (module docstring); ``parts``:
    "all", "throughput" or "memory"."""
    results = {}
    for world_size in (1, 2) if parts in ("all", "throughput") else ():
        result, _ = launch("throughput", models["throughput"], path, world_size, folder)
        epoch = result["epoch_ends"][1] - result["epoch_ends"][0]
        results[f"throughput_{world_size}"] = dict(result, epoch_seconds=epoch,
                                                   rows_per_second=n_rows / epoch)
    if parts in ("all", "memory"):
        result, timeline = launch("memory", models["memory"], path, 1, folder)
        sampled = max((rss for _, rss in timeline), default=0)
        results["memory"] = dict(result, timeline=timeline, peak=max(sampled, result["max_rss"]))
    return results


def plot(timeline: list, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5), constrained_layout=True)
    seconds, rss = zip(*timeline)
    ax.plot(seconds, np.array(rss) / 2**20)
    ax.axhline(RSS_LIMIT / 2**20, color="grey", linestyle="--", label="1.5 GB")
    ax.set(xlabel="seconds", ylabel="RSS (MB)", title=title)
    ax.legend()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _model(params: dict) -> str:
    return f"`DSGClassifier({', '.join(f'{k}={v!r}' for k, v in params.items())})`"


def report(results: dict, n_rows: int, size: int, file_format: str, models: dict, out: Path) -> Path:
    MB = 2**20
    lines = [f"A generated {file_format.upper()} file: {n_rows:,} rows of {D_FEATURES} features "
             f"and a label, {size / 2**30:.2f} GiB. Fresh processes, one thread each.", ""]
    rows = [(f"{k[-1]} process{'es' if k[-1] == '2' else ''}", f"{r['epoch_seconds']:.1f}",
             f"{r['rows_per_second']:,.0f}") for k, r in results.items() if k.startswith("through")]
    if rows:
        lines += ["**Throughput** of the second epoch (reading, parsing and training): "
                  f"{_model(models['throughput'])}; two processes: `torchrun "
                  "--nproc_per_node=2`, each rank streaming its shard.", ""]
        lines += markdown_table(["processes", "epoch (s)", "rows/s"], rows) + [""]
    memory = results.get("memory")
    if memory:
        lines += [f"**Memory** of {_model(models['memory'])} streaming the file (first pass, race "
                  f"on the sample, one epoch, validation): peak RSS {memory['peak'] / MB:.0f} MB "
                  f"(limit {RSS_LIMIT / MB:.0f} MB) over {memory['seconds']:.0f} s; "
                  f"{memory['n_components']} features, sigma {memory['sigma']:.3g}, alpha "
                  f"{memory['alpha']:g}.", "", "![RSS over time](stream_memory.png)"]
        plot(memory["timeline"], out / "stream_memory.png", f"RSS streaming {size / 2**30:.2f} GiB")
    return write_report(out / "stream.md", "Streaming at scale (issue 17, item 4 (d))", lines,
                        command=command_line(), threads=1)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=5.0)
    parser.add_argument("--format", choices=["csv", "parquet"], default="csv")
    parser.add_argument("--quick", action="store_true", help="a 2 MB file, small models (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--folder", type=Path, default=None, help="where the file is written")
    parser.add_argument("--measure", choices=["all", "throughput", "memory"], default="all")
    parser.add_argument("--worker", nargs=3, metavar=("MODE", "PATH", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--world-size", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(*args.worker, args.world_size)
    size = int(2**20 if args.quick else args.size_gb * 2**30)
    block_rows = QUICK["block_rows"] if args.quick else BLOCK_ROWS
    models = QUICK if args.quick else dict(throughput=THROUGHPUT_MODEL, memory=MEMORY_MODEL)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        path = Path(folder) / f"data.{args.format}"
        n_rows = generate(path, size, args.format, block_rows)
        on_disk = sum(p.stat().st_size for p in Path(folder).glob(f"data*.{args.format}"))
        pattern = path if args.format == "csv" else Path(folder) / f"data*.{args.format}"
        results = measure(pattern, n_rows, Path(folder), models, args.measure)
    (args.out / "stream.json").write_text(json.dumps(results))
    print(report(results, n_rows, on_disk, args.format, models, args.out).read_text())
    return results


if __name__ == "__main__":
    main()
