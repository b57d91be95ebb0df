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


@pytest.fixture(scope="session")
def friedman1_issue33():
    """Issue 33's problem: ``make_friedman1(8000, n_features=25, noise=0.5, random_state=0)``,
    the first 6,000 rows train, the last 2,000 test, X standardised on the training rows:
    ``(X_train, y_train, X_test, y_test)``."""
    from sklearn.datasets import make_friedman1
    from sklearn.preprocessing import StandardScaler

    X, y = make_friedman1(8000, n_features=25, noise=0.5, random_state=0)
    scaler = StandardScaler().fit(X[:6000])
    return scaler.transform(X[:6000]), y[:6000], scaler.transform(X[6000:]), y[6000:]
