"""What the tests share: paths, the device matrix (CPU always, CUDA when present) and the
shared data sets. ``tests/`` is on ``sys.path`` (``pythonpath`` in pyproject.toml), so a test in
any folder imports it as ``from support import ...``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SRC = ROOT / "src" / "kernelstream"
#: the shared data sets (``../shared/data``; ``KERNELSTREAM_SHARED_DATA`` names another folder)
SHARED_DATA = Path(os.environ.get("KERNELSTREAM_SHARED_DATA", ROOT.parent / "shared" / "data"))

cuda_mark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=[cuda_mark, pytest.mark.cuda])]

#: float32's machine epsilon, the unit of the tolerances of comparisons run on CUDA
FLOAT32_EPS = float(np.finfo(np.float32).eps)

def runs_on_cuda(estimator) -> bool:
    """Whether ``estimator`` computes on CUDA: its ``device`` resolved as the estimator itself
    resolves it (``"auto"``, the default, is CUDA when ``torch.cuda.is_available()``, except
    GoGP's, which is the CPU). Comparisons written for the CPU's bits take a float32 tolerance
    where this is true."""
    return estimator._resolve_device().type == "cuda"


def shared_dataset(name: str) -> dict:
    """Arrays of ``../shared/data/<name>.npz`` (see :func:`require_shared`)."""
    path = SHARED_DATA / f"{name}.npz"
    require_shared(path)
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def require_shared(path: Path = SHARED_DATA) -> None:
    """Skip the test when ``path`` (a shared data set) is absent; under ``CI=true``, fail it."""
    if path.exists():
        return
    message = f"{path} is not present (the shared data sets belong in ../shared/data)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI=true: a missing data set fails the run", pytrace=False)
    pytest.skip(message)


def _writes(path, process, count, timeout=120.0):
    """Wait until ``path`` has been (re)written ``count`` times (each write is a new file)."""
    seen, deadline = set(), time.monotonic() + timeout
    while len(seen) < count and process.poll() is None and time.monotonic() < deadline:
        try:
            stat = os.stat(path)
            seen.add((stat.st_ino, stat.st_mtime_ns))
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    return len(seen)


def kill_after_writes(script: str, path, count: int) -> None:
    """Run ``script`` (one thread, ``path`` its argument) in a real process and SIGKILL it
    once it has (re)written its checkpoint at ``path`` ``count`` times, while it still runs."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    process = subprocess.Popen([sys.executable, "-c", script, str(path)], env=env,
                               stderr=subprocess.PIPE)
    try:
        writes = _writes(path, process, count=count)
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert writes == count and process.returncode == -signal.SIGKILL
