"""One timer for every benchmark: wall and CPU clock, warm-up, repeats, min and median.

>>> from benchmarks.common.timing import measure
>>> timing = measure(lambda: sum(range(1000)), repeats=3)
>>> timing.result, len(timing.wall)
(499500, 3)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from threadpoolctl import threadpool_limits

__all__ = ["CLOCKS", "Stopwatch", "Timing", "measure", "milliseconds", "shape_arguments",
           "set_threads", "threads"]

#: clock name -> the function that reads it
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


class Stopwatch:
    """Both clocks over one span: ``with Stopwatch() as sw: ...`` then ``sw.wall``, ``sw.cpu``.

    ``pause()`` as a context manager leaves a part of the span out (evaluation inside a run).
    """

    @classmethod
    def started(cls) -> Stopwatch:
        """A running stopwatch, for a span that is not one block: read it with :meth:`elapsed`."""
        return cls().__enter__()

    def __enter__(self) -> Stopwatch:
        self.wall = self.cpu = 0.0
        self._start = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = self.elapsed("wall"), self.elapsed("cpu")

    def elapsed(self, clock: str = "wall") -> float:
        """Seconds since the start on ``clock`` ("wall" or "cpu"), pauses left out."""
        if clock not in CLOCKS:
            raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
        wall_start, cpu_start = self._start
        return CLOCKS[clock]() - (cpu_start if clock == "cpu" else wall_start)

    @contextmanager
    def pause(self) -> Iterator[None]:
        """Leave the body of this block out of the span."""
        before = (time.perf_counter(), time.process_time())
        try:
            yield
        finally:
            self._start = (self._start[0] + time.perf_counter() - before[0],
                           self._start[1] + time.process_time() - before[1])


@dataclass
class Timing:
    """Repeated measurements of one call: seconds per repeat on both clocks, and its last result."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    result: Any = None

    def seconds(self, clock: str = "wall") -> list[float]:
        """The per-repeat seconds on ``clock`` ("wall" or "cpu")."""
        if clock not in CLOCKS:
            raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
        return self.wall if clock == "wall" else self.cpu

    def min(self, clock: str = "wall") -> float:
        """The fastest repeat (the least disturbed by other jobs)."""
        return min(self.seconds(clock))

    def median(self, clock: str = "wall") -> float:
        """The median repeat."""
        return statistics.median(self.seconds(clock))


def measure(fn: Callable[[], Any], *, repeats: int = 3, warmup: int = 1) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then ``repeats`` times timed on both clocks.

    Parameters
    ----------
    fn : callable of no argument
        The work; its last return value is kept in ``Timing.result``.
    repeats : int
        Timed calls (at least 1).
    warmup : int
        Untimed calls first (allocations, caches, lazy imports).
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats} and {warmup}")
    for _ in range(warmup):
        fn()
    timing = Timing()
    for _ in range(repeats):
        with Stopwatch() as sw:
            timing.result = fn()
        timing.wall.append(sw.wall)
        timing.cpu.append(sw.cpu)
    return timing


def milliseconds(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Min and median wall milliseconds of ``fn`` over ``repeats`` after one warm-up."""
    timing = measure(fn, repeats=repeats, warmup=1)
    return 1e3 * timing.min("wall"), 1e3 * timing.median("wall")


def shape_arguments(doc: str, result: str, argv=None, repeats: int = 5,
                    quick: str = "one small shape: seconds"):
    """The arguments of a benchmark over shapes or sizes: ``--repeats``, ``--quick`` (its
    smallest case) and ``--out DIR`` (writes ``DIR/result``)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--out", type=Path, help=f"write DIR/{result}")
    return parser.parse_args(argv)


def set_threads(n: int) -> threadpool_limits:
    """Use ``n`` threads from now on: ``torch.set_num_threads`` and ``threadpoolctl`` (BLAS,
    OpenMP). Returns the limiter; its ``restore_original_limits()`` undoes the second part."""
    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    torch.set_num_threads(n)
    return threadpool_limits(n)


@contextmanager
def threads(n: int | None = 1) -> Iterator[None]:
    """Run the block on ``n`` threads (:func:`set_threads`); ``None`` changes nothing. Both
    settings are restored on exit."""
    if n is None:
        yield
        return
    before = torch.get_num_threads()
    limiter = set_threads(n)
    try:
        yield
    finally:
        limiter.restore_original_limits()
        torch.set_num_threads(before)
