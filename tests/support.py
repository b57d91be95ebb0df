"""What the tests share: paths, the device matrix (CPU always, CUDA when present) and the
shared data sets. ``tests/`` is on ``sys.path`` (``pythonpath`` in pyproject.toml), so a test in
any folder imports it as ``from support import ...``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SRC = ROOT / "src" / "kernelstream"
SHARED_DATA = ROOT.parent / "shared" / "data"

cuda_mark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=[cuda_mark, pytest.mark.cuda])]


def shared_dataset(name: str) -> dict:
    """Arrays of ``../shared/data/<name>.npz``; skips the test when the file is absent."""
    path = SHARED_DATA / f"{name}.npz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    with np.load(path) as data:
        return {key: data[key] for key in data.files}
