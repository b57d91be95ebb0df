"""A process's resident memory: now and its peak since it started.

The peak is ``VmHWM`` of ``/proc/self/status`` (the high-water mark of this process image):
``ru_maxrss`` is not, on Linux it survives ``fork`` and ``execve``, so a child of a big process
(a pytest worker) would report its parent's peak.
"""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["rss", "peak_rss"]


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def rss() -> int:
    """Resident bytes now."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()


def peak_rss() -> int:
    """Peak resident bytes of this process image (``VmHWM``; ``ru_maxrss`` off Linux)."""
    kib = _status_kib("VmHWM")
    return (kib if kib is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
