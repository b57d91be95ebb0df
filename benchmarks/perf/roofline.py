"""Roofline of the hot loop: block evaluation, fit and predict against torch.matmul + torch.cos.

For each input dimension d and block size r, on b rows (the default batch, 2048):

- ``t_matmul``: ``(b×d)·(d×r)`` with ``torch.matmul`` into a preallocated output, ``t_cos``:
  ``torch.cos`` on ``b×r`` elements into a preallocated output; the bound is
  ``1 / (t_matmul + t_cos)`` per row·feature, i.e. ``b·r / (t_matmul + t_cos)`` row·features/s;
- block: one block of r features on the b rows, its parameter draw included (cache off);
- fit: ``DSGRegressor`` with default settings (preconditioned steps) for ``--steps`` steps of b
  rows (n = steps·b), counted as rows × live features evaluated: step t evaluates t blocks
  (the t−1 live ones for f_t and the new one), ``Σ_t b·t·r`` in all;
- predict: ``predict`` of that model (steps·r features) on ``--predict-rows`` rows.

Each number is the min (and median) of the timed repeats after a warm-up; the table prints
each of ours as a fraction of the bound (paired cos/sin blocks do half the matmul of the bound's
``(b×d)·(d×r)``, so fractions above 1 are possible).

    python -m benchmarks.perf.roofline [--dims 2 54 123 784] [--blocks 256 1024 4096] [--threads 1]
    python -m benchmarks.perf.roofline --quick --out /tmp/bench/roofline.md   # seconds
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import torch

from benchmarks.common.data import RESULTS
from benchmarks.common.machine import load_average, machine_line
from benchmarks.common.report import command_line, write_report
from benchmarks.common.timing import measure, threads
from kernelstream import DSGRegressor
from kernelstream.features import make_feature_map

#: "wall" clock, or "cpu" time of this process (robust to other jobs on a shared machine when
#: torch runs one thread; set by --clock)
CLOCK = "wall"


def timed(fn, repeats: int, warmup=None) -> tuple[float, float]:
    """(min, median) seconds of ``repeats`` calls after one warm-up call (``warmup`` or ``fn``)."""
    (warmup or fn)()
    timing = measure(fn, repeats=repeats, warmup=0)
    return timing.min(CLOCK), timing.median(CLOCK)

def bound(b: int, d: int, r: int, repeats: int) -> tuple[float, float, float]:
    """Seconds of the matmul and of the cosine (min), and the bound in row·features per second."""
    X, W = torch.randn(b, d), torch.randn(d, r)
    Z, out = torch.randn(b, r), torch.empty(b, r)
    t_mm = timed(lambda: torch.matmul(X, W, out=out), repeats)[0]
    t_cos = timed(lambda: torch.cos(Z, out=out), repeats)[0]
    return t_mm, t_cos, b * r / (t_mm + t_cos)


def block_rate(b: int, d: int, r: int, repeats: int) -> tuple[float, float]:
    """Row·features per second (from min and median) of one block, its draw included (cache off)."""
    fm = make_feature_map("rbf", d, 1.0, r, seed=0, cache_bytes=0)
    X, out = torch.randn(b, d), torch.empty(b, r)
    counter = iter(range(10**9))
    t_min, t_med = timed(lambda: fm.block_features(X, next(counter), out), repeats)
    return b * r / t_min, b * r / t_med


def end_to_end(steps: int, b: int, d: int, r: int, n_pred: int, repeats: int):
    """Row·features per second (min-based, median-based) of fit and of predict, and fit seconds."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((steps * b, d), dtype=np.float32)
    y = np.sin(X[:, 0]).astype(np.float32)
    params = dict(batch_size=b, block_size=r, max_iter=1, sigma=float(np.sqrt(d)), random_state=0,
                  shuffle=False, device="cpu")
    model = DSGRegressor(**params)
    warm = DSGRegressor(**params)
    fit_work = sum(b * t * r for t in range(1, steps + 1))  # step t evaluates t blocks on b rows
    t_fit = timed(lambda: model.fit(X, y), repeats, warmup=lambda: warm.fit(X[: 2 * b], y[: 2 * b]))
    Xp = X[:n_pred]
    predict_work = Xp.shape[0] * model.n_components_
    t_pred = timed(lambda: model.predict(Xp), repeats)
    return ((fit_work / t_fit[0], fit_work / t_fit[1]), (predict_work / t_pred[0], predict_work / t_pred[1]),
            t_fit[0])


def main(argv=None) -> None:
    global CLOCK
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 54, 123, 784])
    parser.add_argument("--blocks", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--rows", type=int, default=2048, help="batch rows b")
    parser.add_argument("--steps", type=int, default=32, help="fit steps (n = steps·b rows)")
    parser.add_argument("--predict-rows", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fit-repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: process CPU time (use with --threads 1 on a shared machine)")
    parser.add_argument("--out", type=Path, default=RESULTS / "roofline.md")
    parser.add_argument("--quick", action="store_true",
                        help="d = 54, r = 256, b = 256, 4 steps, 2 repeats (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.dims, args.blocks, args.rows, args.steps, args.predict_rows = [54], [256], 256, 4, 512
        args.repeats, args.fit_repeats = 2, 1
    CLOCK = args.clock
    load_before = load_average()
    with threads(args.threads):
        lines = table(args)
        machine = machine_line(torch.get_num_threads())
    env = (f"KERNELSTREAM_CACHE_MB={os.environ['KERNELSTREAM_CACHE_MB']} "
           if "KERNELSTREAM_CACHE_MB" in os.environ else "")
    write_report(args.out, "Roofline of the hot loop (CPU)", [
        f"Clock: {args.clock} ({'process CPU time' if args.clock == 'cpu' else 'wall clock'}); "
        f"block-parameter cache budget {os.environ.get('KERNELSTREAM_CACHE_MB', '32')} MiB "
        "(KERNELSTREAM_CACHE_MB).", "",
        f"Load average before: {load_before:.2f}; after: {load_average():.2f}.", "",
        f"b = {args.rows} rows; fit = {args.steps} steps of default `DSGRegressor` "
        f"(preconditioned); predict on {args.predict_rows} rows with the fitted steps·r features. "
        "Columns after the bound are fractions of it (ours / bound), from the minimum and the "
        "median of the repeats; the bound uses the minimum times. Paired cos/sin blocks do half "
        "the matmul of the bound's `(b×d)·(d×r)`, so fractions above 1 are possible. *load*: the "
        "machine's 1-minute load average when the row finished.", "", *lines],
        command=env + command_line(), machine=machine)


def table(args) -> list[str]:
    """The table's lines, one row per (d, r), printed as they come."""
    lines = ["| d | r | t_matmul (ms) | t_cos (ms) | bound (M row·feat/s) | block (min / med) | "
             "fit (min / med) | predict (min / med) | fit time (s) | load |", "|" + "---|" * 10]
    print("\n".join(lines), flush=True)
    for d in args.dims:
        for r in args.blocks:
            t_mm, t_cos, rate = bound(args.rows, d, r, args.repeats)
            block = block_rate(args.rows, d, r, args.repeats)
            fit, pred, t_fit = end_to_end(args.steps, args.rows, d, r, args.predict_rows, args.fit_repeats)
            frac = lambda pair: f"{pair[0] / rate:.2f} / {pair[1] / rate:.2f}"  # noqa: E731
            lines.append(f"| {d} | {r} | {1e3 * t_mm:.2f} | {1e3 * t_cos:.2f} | {rate / 1e6:.0f} | "
                         f"{frac(block)} | {frac(fit)} | {frac(pred)} | {t_fit:.1f} | {load_average():.1f} |")
            print(lines[-1], flush=True)
    return lines


if __name__ == "__main__":
    main()
