"""Roofline of the hot loop: block evaluation, fit and predict against torch.matmul + torch.cos.

For each input dimension d and block size r, on b rows (the default batch, 2048):

- ``t_matmul``: ``(b×d)·(d×r)`` with torch.matmul, ``t_cos``: ``torch.cos`` on ``b×r`` elements;
  the bound is ``1 / (t_matmul + t_cos)`` per row·feature (``b·r / (t_matmul + t_cos)`` per s);
- ours: evaluating one block of r features on the b rows, parameter draw included (cache off);
- end to end: ``DSGRegressor.fit`` (one pass, rows × live features evaluated per second, counting
  every step's evaluation of all live blocks) and ``predict`` of the fitted model.

Each number is the min (and median) of ``--repeats`` timed runs after a warm-up.

    python benchmarks/perf/roofline.py [--dims 2 54 123 784] [--blocks 256 1024 4096]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from kernelstream import DSGRegressor
from kernelstream.features import make_feature_map


def timed(fn, repeats: int) -> tuple[float, float]:
    fn()  # warm-up: allocations, caches, thread pool
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def bound(b: int, d: int, r: int, repeats: int) -> tuple[float, float, float]:
    """Seconds of the matmul and of the cosine, and the bound in row·features per second."""
    X, W = torch.randn(b, d), torch.randn(d, r)
    Z, out = torch.randn(b, r), torch.empty(b, r)
    t_mm = timed(lambda: torch.matmul(X, W), repeats)[0]
    t_cos = timed(lambda: torch.cos(Z, out=out), repeats)[0]
    return t_mm, t_cos, b * r / (t_mm + t_cos)


def block_rate(b: int, d: int, r: int, repeats: int) -> float:
    """Row·features per second of one block's evaluation, its draw included (cache off)."""
    fm = make_feature_map("rbf", d, 1.0, r, seed=0, cache_bytes=0)
    X = torch.randn(b, d)
    counter = iter(range(10**9))
    t = timed(lambda: fm.features(X, [next(counter)]), repeats)[0]
    return b * r / t


def end_to_end(n: int, b: int, d: int, r: int, repeats: int) -> tuple[float, float]:
    """Row·features per second of fit (one pass) and of predict."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d), dtype=np.float32)
    y = np.sin(X[:, 0]).astype(np.float32)
    model = DSGRegressor(batch_size=b, block_size=r, max_iter=1, sigma=float(np.sqrt(d)),
                         random_state=0, shuffle=False)
    steps = n // b
    fit_work = sum(b * t * r for t in range(steps))  # step t evaluates t live blocks on b rows
    t_fit = timed(lambda: model.fit(X, y), repeats)[0]
    predict_work = n * model.n_components_
    t_pred = timed(lambda: model.predict(X), repeats)[0]
    return fit_work / t_fit, predict_work / t_pred


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 54, 123, 784])
    parser.add_argument("--blocks", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--rows", type=int, default=2048, help="batch rows b")
    parser.add_argument("--n", type=int, default=16384, help="rows of the end-to-end fit")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "results")
    args = parser.parse_args(argv)

    header = ("| d | r | t_matmul (ms) | t_cos (ms) | bound (G row·feat/s) | block eval | fit | predict |\n"
              "|---|---|---|---|---|---|---|---|")
    lines = [header]
    print(header)
    for d in args.dims:
        for r in args.blocks:
            t_mm, t_cos, rate = bound(args.rows, d, r, args.repeats)
            ours = block_rate(args.rows, d, r, args.repeats)
            fit, pred = end_to_end(args.n, args.rows, d, r, max(1, args.repeats // 2))
            line = (f"| {d} | {r} | {1e3 * t_mm:.3f} | {1e3 * t_cos:.3f} | {rate / 1e9:.3f} | "
                    f"{ours / rate:.2f} | {fit / rate:.2f} | {pred / rate:.2f} |")
            lines.append(line)
            print(line, flush=True)
    machine = (f"{platform.machine()} ({platform.processor() or 'cpu'}), torch {torch.__version__}, "
               f"{torch.get_num_threads()} threads")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "roofline_cpu.md").write_text(
        "# Roofline of the hot loop (CPU)\n\n"
        f"Command: `python benchmarks/perf/roofline.py {' '.join(argv or [])}`\n\nMachine: {machine}\n\n"
        "Columns after the bound are fractions of it (ours / bound); paired cos/sin blocks do "
        "half the matmul of the bound's `(b×d)·(d×r)`, so a fraction above 1 is possible.\n\n"
        + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
