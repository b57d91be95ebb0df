"""What the benchmarks say about the machine they ran on."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

__all__ = ["cpu_model", "load_average", "machine_line"]


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


def machine_line(threads: int | None = None) -> str:
    """``x86_64, <CPU model>, 2 cores, load 1.3, torch 2.13.0[, 1 thread(s)]``: one line."""
    line = (f"{platform.machine()}, {cpu_model()}, {os.cpu_count()} cores, "
            f"load {load_average():.1f}, torch {torch.__version__}")
    return line if threads is None else f"{line}, {threads} thread(s)"
