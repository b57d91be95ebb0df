"""What each stage of an engine fit cost: a record a stage, shown as it ends.

:class:`StageLog` times each stage of the engine (the selection, the narrowing, each feature
size's cache and solve, the refinement, the look back, a Newton iteration, the ``α`` path, the
hinge finish) in CPU seconds, beside the seconds the cost model predicted for it
(:mod:`kernelstream.planning.cost`), and keeps what it did (iterations, the held-out loss); a fitted
estimator's ``fit_plan_.stages`` holds the records and its ``print`` shows them. ``on_stage``
(the estimator's progress bar and log) sees each record as its stage ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["StageLog"]


class StageLog:
    """The stages of one fit, in order: dicts of ``stage`` (a name), ``seconds`` (CPU) and what
    the stage reports (``iterations``, ``features``, ``held_out_loss``, ...), and
    ``predicted_seconds`` where the stage was given its predicted work and the log a
    ``throughput`` (a :class:`~kernelstream.solvers.throughput.Throughput`)."""

    def __init__(self, on_stage: Callable[[dict], None] | None = None, throughput=None):
        self.records: list[dict] = []
        self._on_stage = on_stage
        self.throughput = throughput

    @contextmanager
    def stage(self, name: str, predicted=None, **facts) -> Iterator[dict]:
        """Time the block as stage ``name``; the caller adds facts to the yielded dict.
        ``predicted``: the stage's :class:`~kernelstream.planning.cost.Work`, as predicted
        before it runs."""
        record = {"stage": name, **facts}
        if predicted is not None and self.throughput is not None:
            record["predicted_seconds"] = predicted.seconds(self.throughput)
        start = time.process_time()
        yield record
        record["seconds"] = time.process_time() - start
        self._keep(record)

    def note(self, name: str, **facts) -> None:
        """A record of no cost: a decision (why the growth stopped)."""
        self._keep({"stage": name, **facts, "seconds": 0.0})

    def _keep(self, record: dict) -> None:
        self.records.append(record)
        if self._on_stage is not None:
            self._on_stage(record)

    def total(self) -> float:
        """CPU seconds of every stage."""
        return sum(r["seconds"] for r in self.records)
