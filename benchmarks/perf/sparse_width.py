"""Sparse input at growing width (issue 30, item 4): one epoch on CSR rows of 20 non-zeros.

The same 20,000 rows (20 non-zeros each, the same values, columns drawn uniformly) at 1,000 and
at 40,000 columns; ``DSGRegressor(sigma="median", alpha=1e-3, n_components=1024, max_iter=1)``
fits one epoch at 1,024 features. The must-show: the wide fit in at most 3× the time and the
memory of the narrow one.

- **time**: both widths in one process, back to back, ``--repeats`` times (one torch thread);
  min and median per width, and the ratio of each back-to-back pair;
- **memory**: every width in fresh processes (``--memory-repeats`` each): peak RSS (``VmHWM``)
  and the fit's own peak, peak RSS less the RSS before the fit (data made, imports done);
- scikit-learn's ``RBFSampler(n_components=1024).fit_transform`` of the same CSR for scale.

    python -m benchmarks.perf.sparse_width                     # writes results/sparse_width.md
    python -m benchmarks.perf.sparse_width --repeats 1 --memory-repeats 1 --rows 2000 --out /tmp/b
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common.data import RESULTS, ROOT
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.scale.memory import peak_rss, rss

WIDTHS = (1000, 40000)
PER_ROW = 20
PARAMS = dict(sigma="median", alpha=1e-3, n_components=1024, max_iter=1, random_state=0)
MB = 2**20


def make_rows(n_rows: int, width: int, per_row: int = PER_ROW, seed: int = 0):
    """``(X, y)``: CSR of ``per_row`` non-zeros a row at distinct uniform columns; the values
    and the target are the same at every width (the target depends on the values only)."""
    import scipy.sparse as sp

    g = np.random.default_rng(seed)
    values = g.normal(size=n_rows * per_row)
    y = np.sin(values.reshape(n_rows, per_row) @ g.normal(size=per_row)) + 0.1 * g.normal(size=n_rows)
    columns = np.random.default_rng((seed, width))
    indices = np.concatenate([np.sort(columns.choice(width, per_row, replace=False))
                              for _ in range(n_rows)])
    indptr = np.arange(0, n_rows * per_row + 1, per_row)
    return sp.csr_matrix((values, indices, indptr), shape=(n_rows, width)), y


def fit_seconds(X, y) -> float:
    """Seconds of one ``DSGRegressor(**PARAMS).fit(X, y)``."""
    from kernelstream import DSGRegressor

    start = time.perf_counter()
    DSGRegressor(**PARAMS).fit(X, y)
    return time.perf_counter() - start


def sampler_seconds(X) -> float:
    """Seconds of scikit-learn's ``RBFSampler(1024).fit_transform(X)``."""
    from sklearn.kernel_approximation import RBFSampler

    start = time.perf_counter()
    RBFSampler(n_components=1024, random_state=0).fit_transform(X)
    return time.perf_counter() - start


def time_widths(n_rows: int, repeats: int) -> dict:
    """Fit seconds per width over ``repeats`` rounds of the widths back to back (one process)."""
    import torch

    torch.set_num_threads(1)
    data = {width: make_rows(n_rows, width) for width in WIDTHS}
    fit_seconds(*make_rows(500, WIDTHS[0]))  # warm-up: imports, first allocations
    seconds = {width: [] for width in WIDTHS}
    for _ in range(repeats):
        for width in WIDTHS:
            seconds[width].append(fit_seconds(*data[width]))
    sampler = {width: sampler_seconds(data[width][0]) for width in WIDTHS}
    return dict(seconds=seconds, sampler=sampler)


def memory_child(n_rows: int, width: int) -> dict:
    """One fit in this (fresh) process: peak RSS and RSS before the fit, in bytes."""
    import torch

    torch.set_num_threads(1)
    import kernelstream  # noqa: F401  (imports before the baseline)

    X, y = make_rows(n_rows, width)
    before = rss()
    seconds = fit_seconds(X, y)
    return dict(width=width, peak=peak_rss(), before=before, seconds=seconds)


def run_memory_child(n_rows: int, width: int) -> dict:
    code = ("import json; from benchmarks.perf.sparse_width import memory_child; "
            f"print(json.dumps(memory_child({n_rows}, {width})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the fit at {width} columns failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def machine_details() -> list[str]:
    """``nproc`` and the first ten lines of ``lscpu``, as a code block (empty where missing)."""
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()[:10]
    except OSError:
        return []
    return ["```", "$ nproc", nproc, "$ lscpu | head", *lscpu, "```", ""]


def _summary(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    return f"{min(values) / scale:.{digits}f} / {statistics.median(values) / scale:.{digits}f}"


def report(timing: dict, memory: dict, n_rows: int, out: Path, before: dict | None) -> Path:
    narrow, wide = WIDTHS
    t, m = timing["seconds"], memory
    pairs = [b / a for a, b in zip(t[narrow], t[wide])]
    rows = [(f"{w:,}", _summary(t[w]), _summary([r["peak"] for r in m[w]], MB, 0),
             _summary([r["peak"] - r["before"] for r in m[w]], MB, 0), f"{timing['sampler'][w]:.2f}")
            for w in WIDTHS]
    peak_ratio = [min(r["peak"] for r in m[wide]) / min(r["peak"] for r in m[narrow]),
                  statistics.median(r["peak"] for r in m[wide]) / statistics.median(r["peak"] for r in m[narrow])]
    lines = [f"`DSGRegressor({', '.join(f'{k}={v!r}' for k, v in PARAMS.items())})` on {n_rows:,} "
             f"CSR rows of {PER_ROW} non-zeros (the same values at both widths), one torch thread. "
             f"Time: {len(t[narrow])} rounds of the two widths back to back in one process. "
             f"Memory: {len(m[narrow])} fresh process(es) per width; the fit's peak is the peak RSS "
             "less the RSS before the fit (imports done, data made). Cells are min / median.", ""]
    lines += machine_details()
    lines += markdown_table(["columns", "fit (s)", "peak RSS (MB)", "fit's peak (MB)",
                             "RBFSampler(1024).fit_transform (s)"], rows)
    lines += ["", f"Wide / narrow: time {min(pairs):.2f}× / {statistics.median(pairs):.2f}× "
              f"(back-to-back pairs, min / median), peak RSS {peak_ratio[0]:.2f}× / {peak_ratio[1]:.2f}×."]
    if before is not None:
        lines += ["", before["line"]]
    return write_report(out / "sparse_width.md", "Sparse input at 1,000 and 40,000 columns "
                        "(issue 30, item 4)", lines, command=command_line(), threads=1)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--memory-repeats", type=int, default=2)
    parser.add_argument("--before", type=Path, default=None,
                        help="JSON with a 'line' describing the same run before the change")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    memory = {w: [run_memory_child(args.rows, w) for _ in range(args.memory_repeats)] for w in WIDTHS}
    timing = time_widths(args.rows, args.repeats)
    before = json.loads(args.before.read_text()) if args.before else None
    path = report(timing, memory, args.rows, args.out, before)
    print(path.read_text())
    return dict(timing=timing, memory=memory)


if __name__ == "__main__":
    main()
