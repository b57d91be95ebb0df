"""Cost of ``GoGPRegressor.partial_fit`` one row at a time against the solver update itself.

A GoGP model is grown to ``--inducing`` inducing points (``theta=0``: every point joins, and
past ``max_inducing`` the most redundant one leaves, so every update is at full size). Then,
from copies of that model, the next ``--rows`` rows are learnt (a) by ``partial_fit(x, y)`` one
row per call — validation, rollback guard, progress — and (b) by the solver's ``update`` alone.
One thread, one warm-up pass, ``--repeats`` repeats; min and median seconds per row.

    python benchmarks/gogp_partial_fit.py        # writes benchmarks/results/gogp_partial_fit.md
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_model  # noqa: E402

from kernelstream import GoGPRegressor  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "gogp_partial_fit.md"


def _grown_model(n_inducing: int, rows: int):
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (n_inducing + 64 + rows, 4))
    y = np.sin(X).sum(1) + 0.1 * rng.standard_normal(len(X))
    model = GoGPRegressor(theta=0.0, max_inducing=n_inducing, warmup_fraction=0.0, random_state=0)
    model.fit(X[: n_inducing + 64], y[: n_inducing + 64])
    return model, X[n_inducing + 64 :], y[n_inducing + 64 :]


def _per_row(run, model, X, y, repeats: int) -> list[float]:
    times = []
    for i in range(repeats + 1):  # the first pass warms up
        m = copy.deepcopy(model)
        start = time.perf_counter()
        run(m, X, y)
        if i:
            times.append((time.perf_counter() - start) / len(X))
    return times


def _partial_fit(model, X, y) -> None:
    for i in range(len(X)):
        model.partial_fit(X[i : i + 1], y[i : i + 1])


def _update(model, X, y) -> None:
    Xt = torch.as_tensor(X, dtype=torch.float64)
    z = (y - model.y_offset_) / model.y_scale_
    for i in range(len(X)):
        model.state_.update(Xt[i], float(z[i]), 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inducing", type=int, default=1024)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, X, y = _grown_model(args.inducing, args.rows)
    assert model.n_inducing_ == args.inducing, model.n_inducing_
    fit = _per_row(_partial_fit, model, X, y, args.repeats)
    update = _per_row(_update, model, X, y, args.repeats)
    ratio = min(fit) / min(update)
    lines = ["# GoGP: partial_fit one row at a time against the update itself (issue 15)", "",
             f"Command: `python benchmarks/gogp_partial_fit.py --inducing {args.inducing} "
             f"--rows {args.rows} --repeats {args.repeats}`  ",
             f"Machine: {cpu_model()}, {os.cpu_count()} cores, 1 torch thread, load average "
             f"{os.getloadavg()[0]:.2f}; |U| = {model.n_inducing_} (at the budget: every "
             "update adds one point and removes the most redundant one).", "",
             "| per row | min (ms) | median (ms) |", "|---|---|---|",
             f"| `partial_fit(x, y)` | {1e3 * min(fit):.3f} | {1e3 * statistics.median(fit):.3f} |",
             f"| solver `update` alone | {1e3 * min(update):.3f} | "
             f"{1e3 * statistics.median(update):.3f} |", "",
             f"Ratio of the minima: **{ratio:.2f}×** (the bar is 2×)."]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
