"""Fixtures shared by the estimator tests."""

import pytest
from sklearn.datasets import make_friedman1
from sklearn.preprocessing import StandardScaler


@pytest.fixture(scope="session")
def friedman():
    """Friedman #1 with 5 relevant and 5 irrelevant features, standardised: 600 rows."""
    X, y = make_friedman1(600, n_features=10, noise=0.5, random_state=0)
    return StandardScaler().fit_transform(X), y
