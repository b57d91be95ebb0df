"""GoGPRegressor() throughput on a 36,000-row, 8-feature stream, and its 95% interval coverage.

The stream is synthetic (seeded): ``X ~ N(0, I₈)`` and a smooth function of all eight features,

    f(x) = sin(x₀) + ½·x₁·cos(x₂) + ⅓·x₃x₄ + exp(−x₅²) + ½·sin(x₆ + x₇) + ¼·x₇,

plus Gaussian noise of standard deviation 0.3. Measured, one thread (issue 33):

- ``fit``: points per second of ``GoGPRegressor(random_state=0).fit`` on the 36,000 rows
  (hyper-parameters, warm start and the online pass all counted);
- ``partial_fit`` one row per call on the next ``--rows`` rows, from copies of the fitted model
  with its inducing set full (``max_inducing`` members);
- coverage of ``mean ± 1.96·std`` from ``predict(return_std=True)`` on ``--test`` held-out rows.

One warm-up run, ``--repeats`` timed runs, min and median. Optionally (``--river``) river's
``linear_model.LinearRegression`` on the same stream, learn_one row by row, as a speed reference.

    python -m benchmarks.gogp_throughput            # writes benchmarks/results/gogp_throughput.md
    python -m benchmarks.gogp_throughput --quick --out /tmp/bench
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.common.data import RESULTS
from benchmarks.common.machine import load_average, machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from kernelstream import GoGPRegressor

NOISE = 0.3


def smooth_stream(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of the seeded 8-feature stream: ``y = f(x) + 0.3·ε`` (module docstring)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8))
    f = (np.sin(X[:, 0]) + 0.5 * X[:, 1] * np.cos(X[:, 2]) + X[:, 3] * X[:, 4] / 3
         + np.exp(-X[:, 5] ** 2) + 0.5 * np.sin(X[:, 6] + X[:, 7]) + 0.25 * X[:, 7])
    return X, f + NOISE * rng.standard_normal(n)


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    """Wall and CPU seconds since ``start`` (CPU < wall when another process shares the core)."""
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def _time_fit(X, y, repeats: int):
    GoGPRegressor(random_state=0).fit(X[:2000], y[:2000])  # warm-up
    times, model = [], None
    for _ in range(repeats):
        start = _clock()
        model = GoGPRegressor(random_state=0).fit(X, y)
        times.append(_since(start))
    return times, model


def _time_partial_fit(model, X, y, repeats: int) -> list[float]:
    times = []
    for i in range(repeats + 1):  # the first pass warms up
        m = copy.deepcopy(model)
        start = _clock()
        for j in range(len(X)):
            m.partial_fit(X[j:j + 1], y[j:j + 1])
        if i:
            times.append(_since(start))
        assert m.n_inducing_ == model.max_inducing, m.n_inducing_
    return times


def _time_river(X, y) -> tuple[float, float] | None:
    try:
        from river import linear_model
    except ImportError:
        return None
    rows = [dict(enumerate(x)) for x in X]
    model = linear_model.LinearRegression()
    start = _clock()
    for x, t in zip(rows, y):
        model.predict_one(x)
        model.learn_one(x, t)
    return _since(start)


def _rate_row(name: str, n: int, times: list[tuple[float, float]]) -> list[str]:
    wall, cpu = [t[0] for t in times], [t[1] for t in times]
    return [name, f"{n:,}", f"{n / min(wall):,.0f}", f"{n / statistics.median(wall):,.0f}",
            f"{min(wall):.2f}", f"{statistics.median(wall):.2f}", f"{n / min(cpu):,.0f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=36_000, help="rows given to fit")
    parser.add_argument("--rows", type=int, default=2_000, help="rows for partial_fit")
    parser.add_argument("--test", type=int, default=4_000, help="held-out rows for coverage")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--river", action="store_true", help="also time river's LinearRegression")
    parser.add_argument("--quick", action="store_true", help="3,000 rows, 200 partial_fit rows")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.n, args.rows, args.test, args.repeats = 3_000, 200, 1_000, 1
    torch.set_num_threads(1)
    X, y = smooth_stream(args.n + args.rows + args.test)
    Xf, yf = X[:args.n], y[:args.n]
    Xp, yp = X[args.n:args.n + args.rows], y[args.n:args.n + args.rows]
    Xt, yt = X[args.n + args.rows:], y[args.n + args.rows:]
    fit_times, model = _time_fit(Xf, yf, args.repeats)
    full = model.n_inducing_ == model.max_inducing
    pf_times = _time_partial_fit(model, Xp, yp, args.repeats) if full else []
    mean, std = model.predict(Xt, return_std=True)
    coverage = float(np.mean(np.abs(yt - mean) <= 1.96 * std))
    rmse = float(np.sqrt(np.mean((yt - mean) ** 2)))
    rows = [_rate_row("`fit`", args.n, fit_times)]
    if pf_times:
        rows.append(_rate_row("`partial_fit`, one row per call, |U| full", args.rows, pf_times))
    if args.river:
        river = _time_river(Xf, yf)
        if river is not None:
            rows.append(_rate_row("river `LinearRegression` predict_one + learn_one (reference)",
                                  args.n, [river]))
    body = [f"Stream: synthetic, `X ~ N(0, I_8)`, a smooth f of all 8 features plus noise of std "
            f"{NOISE} (`benchmarks/gogp_throughput.py`), seed 0; {args.n:,} rows to `fit`, "
            f"{args.rows:,} more to `partial_fit`, {args.test:,} held out. "
            "`GoGPRegressor(random_state=0)`, one torch thread; one warm-up, "
            f"{args.repeats} timed runs.", "",
            *markdown_table(["what", "rows", "points/s (best)", "points/s (median)",
                             "min (s)", "median (s)", "points per CPU second (best)"], rows), "",
            f"Load average {load_average():.1f} at the end (2 cores; another process shared "
            "them, so wall time exceeds CPU time).", "",
            f"After `fit`: |U| = {model.n_inducing_} (budget {model.max_inducing}), "
            f"{model.state_.n_removed:,} removals, sigma = {np.array2string(np.asarray(model.sigma_), precision=3)}, "
            f"noise variance = {model.noise_:.4f} (true {NOISE ** 2:.4f}), "
            f"progressive RMSE = {model.progressive_rmse_:.4f}.", "",
            f"Held-out: RMSE = {rmse:.4f} (noise floor {NOISE}); 95% interval coverage = "
            f"**{coverage:.3f}** (target 0.90-0.98)."]
    path = write_report(args.out / "gogp_throughput.md", "GoGP throughput: fit and partial_fit "
                        "points per second, one thread (issue 33)", body, command=command_line(),
                        machine=machine_line(1))
    print(path.read_text())


if __name__ == "__main__":
    main()
