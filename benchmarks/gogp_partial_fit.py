"""Cost of ``GoGPRegressor.partial_fit`` one row at a time against the solver update itself.

A GoGP model is grown to ``--inducing`` inducing points (``join_threshold=0``: every point joins, and
past ``max_inducing`` the most redundant one leaves, so every update is at full size). Then,
from copies of that model, the next ``--rows`` rows are learnt (a) by ``partial_fit(x, y)`` one
row per call — validation, rollback guard, progress — and (b) by the solver's ``update`` alone.
One thread, one warm-up pass, ``--repeats`` repeats; min and median seconds per row.

    python -m benchmarks.gogp_partial_fit          # writes benchmarks/results/gogp_partial_fit.md
    python -m benchmarks.gogp_partial_fit --quick --out /tmp/bench
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
from benchmarks.common.machine import machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from kernelstream import GoGPRegressor


def _grown_model(n_inducing: int, rows: int):
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (n_inducing + 64 + rows, 4))
    y = np.sin(X).sum(1) + 0.1 * rng.standard_normal(len(X))
    model = GoGPRegressor(join_threshold=0.0, max_inducing=n_inducing, warmup_fraction=0.0, random_state=0)
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
    parser.add_argument("--quick", action="store_true", help="64 inducing points, 20 rows")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.inducing, args.rows, args.repeats = 64, 20, 1
    torch.set_num_threads(1)
    model, X, y = _grown_model(args.inducing, args.rows)
    assert model.n_inducing_ == args.inducing, model.n_inducing_
    fit = _per_row(_partial_fit, model, X, y, args.repeats)
    update = _per_row(_update, model, X, y, args.repeats)
    rows = [[name, f"{1e3 * min(t):.3f}", f"{1e3 * statistics.median(t):.3f}"]
            for name, t in (("`partial_fit(x, y)`", fit), ("solver `update` alone", update))]
    body = [f"|U| = {model.n_inducing_} (at the budget: every update adds one point and removes "
            "the most redundant one); one torch thread.", "",
            *markdown_table(["per row", "min (ms)", "median (ms)"], rows), "",
            f"Ratio of the minima: **{min(fit) / min(update):.2f}×** (the bar is 2×)."]
    path = write_report(args.out / "gogp_partial_fit.md", "GoGP: partial_fit one row at a time "
                        "against the update itself (issue 15)", body, command=command_line(),
                        machine=machine_line(1))
    print(path.read_text())


if __name__ == "__main__":
    main()
