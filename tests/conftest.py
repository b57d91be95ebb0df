"""Shared fixtures: the device matrix (CPU always, CUDA when present) and data loaders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

# One torch thread per pytest-xdist worker: two workers with two OpenMP threads each on a
# 2-core CI machine spin-wait on each other (measured: a 50 ms fit took 2 s).
torch.set_num_threads(1)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

cuda_mark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=[cuda_mark, pytest.mark.cuda])]


def shared_dataset(name: str) -> dict:
    """Arrays of ``../shared/data/<name>.npz``; skips the test when the file is absent."""
    path = SHARED_DATA / f"{name}.npz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    with np.load(path) as data:
        return {key: data[key] for key in data.files}
