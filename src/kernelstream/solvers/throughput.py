"""A machine's throughput, timed once a process: what the cost model
(:mod:`kernelstream.planning.cost`) turns work into seconds with."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from ..ops.linalg import symmetric_eigh
from .cached import chunk_rows, normal_pass

__all__ = ["Throughput", "measured_throughput"]


@dataclass(frozen=True)
class Throughput:
    """A machine's rates: float32 matrix products (multiply-adds a second), a pass over stored
    features as a conjugate-gradient iteration makes it (bytes of float16 features a second:
    each widened, multiplied by a vector and back), cosines a second and new memory's first
    write, on the threads the fit runs with."""

    madds_per_second: float
    bytes_per_second: float
    transcendentals_per_second: float
    #: bytes of new memory first written a second (its pages' faults), timed on 64 MiB
    allocated_bytes_per_second: float = float("inf")
    #: seconds of one small operation dispatched (the interpreter's and the library's share)
    seconds_per_call: float = 0.0
    #: float64 factorisations' multiply-adds a second (an eigendecomposition's ``9m³``); ``None``:
    #: the GEMM's rate
    factorised_madds_per_second: float | None = None
    #: new memory past ``warm_bytes`` a stage: the rate of pages the system has not touched
    #: lately (a virtual machine's host backs them first: 0.5-0.7 GiB/s where 64 MiB runs at
    #: 3.2-3.8, docs/decisions/cost-model.md), at most the timed rate
    fresh_bytes_per_second: float = float(2**30)
    #: new memory of a stage at the timed rate before the fresh rate
    warm_bytes: float = float(2**28)

    def as_dict(self) -> dict:
        return {"madds_per_second": self.madds_per_second,
                "bytes_per_second": self.bytes_per_second,
                "transcendentals_per_second": self.transcendentals_per_second,
                "allocated_bytes_per_second": self.allocated_bytes_per_second,
                "seconds_per_call": self.seconds_per_call,
                "factorised_madds_per_second": self.factorised_madds_per_second,
                "fresh_bytes_per_second": self.fresh_bytes_per_second,
                "warm_bytes": self.warm_bytes}

    def allocation_seconds(self, allocated: float) -> float:
        """Seconds of the first write of ``allocated`` bytes of new memory: the first
        :attr:`warm_bytes` at the timed rate, the rest at the fresh one."""
        warm = min(allocated, self.warm_bytes)
        fresh = min(self.fresh_bytes_per_second, self.allocated_bytes_per_second)
        return warm / self.allocated_bytes_per_second + (allocated - warm) / fresh


_MEASURED: dict = {}


def measured_throughput(device: torch.device | str = "cpu") -> Throughput:
    """This machine's :class:`Throughput` on ``device`` at the current thread count: a GEMM
    of ``1024 × 256`` by ``256 × 1024`` float32, a pass of the engine's :func:`~.cached.normal_pass` over ``32768 × 1024`` float16 features,
    the cosines of 1M floats and the first write of 64 MiB of new memory, 200 products of an
    ``8 × 8`` matrix by a vector and the float64 eigendecomposition of a ``384 × 384`` matrix
    (counted ``9m³``), each the best of three runs (0.3 CPU s in all on one core), measured once a
    process."""
    device = torch.device(device)
    key = (device.type, device.index, torch.get_num_threads())
    if key not in _MEASURED:
        _MEASURED[key] = _measure(device)
    return _MEASURED[key]


def _measure(device: torch.device) -> Throughput:
    A = torch.rand((1024, 256), device=device)
    B = torch.rand((256, 1024), device=device)
    # 64 MiB: past the caches (constant values: drawing 32M random floats took 0.2 s)
    stored = torch.full((32768, 1024), 0.5, dtype=torch.float16, device=device)
    x = torch.rand((1024, 1), device=device)
    weights = torch.rand((32768, 1), dtype=torch.float64, device=device)
    intercept = torch.zeros(1, dtype=torch.float64, device=device)
    angles = torch.rand(2**20, device=device)
    small, vector = torch.rand((8, 8), device=device), torch.rand((8, 1), device=device)
    square = torch.rand((384, 384), dtype=torch.float64, device=device)
    symmetric = square @ square.T
    step = chunk_rows(1024, 1, device)
    buffer = torch.empty((step, 1024), device=device)

    def one_pass():  # a conjugate-gradient iteration over float16 features, as the engine's
        chunks = ((slice(i, i + step), [buffer[:min(step, len(stored) - i)].copy_(stored[i:i + step])])
                  for i in range(0, len(stored), step))
        normal_pass(chunks, [x], intercept, weights)

    def best(run) -> float:
        run()  # warm
        seconds = math.inf
        for _ in range(3):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            start = time.perf_counter()
            run()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            seconds = min(seconds, time.perf_counter() - start)
        return max(seconds, 1e-9)

    return Throughput(1024 * 256 * 1024 / best(lambda: A @ B),
                      stored.numel() * stored.element_size() / best(one_pass),
                      angles.numel() / best(lambda: torch.cos(angles)),
                      64 * 2**20 / best(lambda: torch.empty(32 * 2**20, dtype=torch.float16,
                                                            device=device).fill_(1)),
                      best(lambda: [small @ vector for _ in range(200)]) / 200,
                      9 * 384**3 / best(lambda: symmetric_eigh(symmetric)),
                      float("inf") if device.type == "cuda" else Throughput.fresh_bytes_per_second)

