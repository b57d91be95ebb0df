"""Test-session settings (the shared helpers are in ``support.py``)."""

import os

import pytest
import torch
from support import SHARED_DATA

# One torch thread per pytest-xdist worker: two workers with two OpenMP threads each on a
# 2-core CI machine spin-wait on each other (measured: a 50 ms fit took 2 s).
torch.set_num_threads(1)


def pytest_sessionstart(session):
    """Under ``CI=true`` the shared data sets must be there: their tests fail, not skip."""
    if os.environ.get("CI") == "true" and not SHARED_DATA.is_dir():
        raise pytest.UsageError(f"CI=true and {SHARED_DATA} is missing: the accuracy tests would "
                                "skip. Put the shared data sets in ../shared/data beside the "
                                "repository (or name their folder in KERNELSTREAM_SHARED_DATA).")
