"""What the Section-7 scripts share: timed runs with checkpoints, our estimators as a stream of
steps like the baselines', and the output files (markdown, PNG, JSON).

A run is a sequence of updates (:class:`benchmarks.baselines.Progress`); :func:`run_trace`
times it on one stopwatch, pauses the clock while it evaluates the model at checkpoints (steps
1, 2, 3, 4, 6, 8, 11, 16, ... ≈ 2^(k/2), every end of a pass, the step that first passes a marked
time and the last step), and stops it at a budget.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchmarks.baselines import Progress
from benchmarks.common.machine import load_average, machine_line
from benchmarks.common.report import write_report
from benchmarks.common.timing import Stopwatch

__all__ = ["Limits", "add_clock_option", "command", "dsg_stream", "run_trace", "setup_seconds",
           "single_fit", "write_outputs"]

#: checkpoint steps: round(2^(k/2)), two per octave
CHECKPOINTS = frozenset(round(2 ** (k / 2)) for k in range(100))


@dataclass(frozen=True)
class Limits:
    """When a run stops: after ``max_epochs`` passes, or once ``budget_s`` seconds are spent and
    ``min_epochs`` passes are done, or at ``limit_s`` seconds whatever else; ``mark_s`` (the
    SC2 budget) forces a checkpoint at the first step past it."""

    max_epochs: float | None = None
    budget_s: float = math.inf
    min_epochs: float = 0.0
    limit_s: float = math.inf
    mark_s: float | None = None

    def stop(self, progress: Progress, seconds: float) -> bool:
        return ((self.max_epochs is not None and progress.epochs >= self.max_epochs - 1e-9)
                or (seconds >= self.budget_s and progress.epochs >= self.min_epochs)
                or seconds >= self.limit_s)


def run_trace(label: str, steps: Iterator[Progress], evaluate: Callable[[], dict],
              limits: Limits, setup_seconds: Callable[[], float] = lambda: 0.0,
              count_setup: bool = True, clock: str = "wall") -> list[dict]:
    """Time ``steps`` on ``clock`` ("wall", or "cpu": this process's CPU time), evaluation
    excluded, evaluating at checkpoints; one dict per checkpoint: ``step, epochs, seconds,
    setup_seconds, end_of_epoch, mark`` and ``evaluate()``'s entries. ``seconds`` includes the
    setup (:func:`setup_seconds`, on the same clock); the limits see it only with
    ``count_setup``."""
    trace, marked = [], False
    watch = Stopwatch.started()
    for progress in steps:
        seconds = watch.elapsed(clock)
        counted = seconds - (0.0 if count_setup else setup_seconds())  # what the limits count
        crossed = limits.mark_s is not None and not marked and counted >= limits.mark_s
        marked |= crossed
        stop = limits.stop(progress, counted)
        if progress.step in CHECKPOINTS or progress.end_of_epoch or crossed or stop:
            with watch.pause():
                trace.append(dict(step=progress.step, epochs=progress.epochs, seconds=seconds,
                                  setup_seconds=setup_seconds(), end_of_epoch=progress.end_of_epoch,
                                  mark=crossed, **evaluate()))
            metrics = ", ".join(f"{k} {v:.4g}" for k, v in trace[-1].items()
                                if k not in ("step", "epochs", "seconds", "setup_seconds",
                                             "end_of_epoch", "mark"))
            print(f"  {label}: step {progress.step}, {progress.epochs:.2f} passes, "
                  f"{counted:.2f} s, {metrics}", flush=True)
        if stop:
            break
    return trace


def dsg_stream(model, X: np.ndarray, y: np.ndarray, *, batch_size: int, seed: int = 0,
               **partial_fit_kw) -> Iterator[Progress]:
    """One pass of a DSG estimator's ``partial_fit`` (the paper's Algorithm 1), one mini-batch
    of a seeded permutation per call (full batches only), as a stream of steps."""
    order = np.random.default_rng(seed).permutation(X.shape[0])
    n_steps = X.shape[0] // batch_size
    for i in range(n_steps):
        rows = order[i * batch_size:(i + 1) * batch_size]
        model.partial_fit(X[rows], y[rows], **partial_fit_kw)
        yield Progress(i + 1, (i + 1) / n_steps, i + 1 == n_steps)


def single_fit(label: str, model, X, y, evaluate: Callable[[object], dict], *,
               clock: str = "wall", **fit_kw) -> list[dict]:
    """A one-point trace: the seconds of ``model.fit(X, y, **fit_kw)`` on ``clock`` and
    ``evaluate(model)``."""
    with Stopwatch() as watch:
        model.fit(X, y, **fit_kw)
    seconds = getattr(watch, clock)
    row = dict(step=getattr(model, "t_", 1), epochs=getattr(model, "n_iter_", 1),
               seconds=seconds, setup_seconds=0.0, end_of_epoch=True, mark=False,
               **evaluate(model))
    print(f"  {label}: fit in {seconds:.2f} s, {row}", flush=True)
    return [row]


def setup_seconds(model, clock: str) -> Callable[[], float]:
    """A baseline's setup time on ``clock`` (0 before it has started)."""
    name = "setup_seconds_" if clock == "wall" else "setup_cpu_seconds_"
    return lambda: getattr(model, name, 0.0)


def add_clock_option(parser) -> None:
    """``--clock wall|cpu``: what the runs are timed on."""
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: this process's CPU time (one thread: the wall time of a quiet "
                        "machine; use it on a shared one)")


def command(module: str, argv: Sequence[str] | None) -> str:
    """``python -m benchmarks.paper.NAME ARGS`` for the arguments given (or ``sys.argv``)."""
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])


def write_outputs(out: Path, name: str, title: str, body: list[str], payload: dict, *,
                  command_text: str, figure: Callable[[Path], None]) -> list[Path]:
    """``NAME.md`` (title, command, machine on one thread, ``body``, the figure), ``NAME.png``
    (drawn by ``figure``) and ``NAME.json`` (``payload`` plus the same metadata) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    png, js = out / f"{name}.png", out / f"{name}.json"
    figure(png)
    meta = dict(command=command_text, machine=machine_line(torch.get_num_threads()),
                load_average_after=load_average(), threads=torch.get_num_threads())
    js.write_text(json.dumps(dict(meta=meta, **payload), indent=1, default=float))
    md = write_report(out / f"{name}.md", title, [*body, "", f"![{name}]({png.name})"],
                      command=command_text, machine=meta["machine"])
    print(f"wrote {md}, {png} and {js}", flush=True)
    return [md, png, js]
