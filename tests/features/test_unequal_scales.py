"""One bandwidth for every column: a column on a scale orders of magnitude wider than the others
gets a warning (it would decide every distance), standardised input none."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelstream import DSGClassifier, GoGPRegressor
from kernelstream.features.bandwidth import SCALE_RATIO, UnequalScalesWarning, median_distance


@pytest.fixture
def wide_column():
    X, y = make_classification(400, 6, random_state=0)
    X[:, 2] *= 1e6
    return X, y


def test_a_column_a_million_times_wider_warns_and_names_it(wide_column):
    X, y = wide_column
    with pytest.warns(UnequalScalesWarning, match="column 2's standard deviation"):
        DSGClassifier(random_state=0, n_components=128, max_iter=2).fit(X, y)


def test_gogp_warns_too(wide_column):
    X, y = wide_column
    with pytest.warns(UnequalScalesWarning):
        GoGPRegressor(random_state=0).fit(X[:200], y[:200].astype(float))


def test_standardised_input_does_not_warn(wide_column):
    X, y = wide_column
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnequalScalesWarning)
        make_pipeline(StandardScaler(), DSGClassifier(random_state=0, n_components=128,
                                                      max_iter=2)).fit(X, y)


def test_the_threshold_and_the_columns_that_do_not_vary():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 5))
    X[:, 0] = 1.0                                    # constant: not a scale
    X[:, 1] *= SCALE_RATIO / 2                       # within the ratio
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnequalScalesWarning)
        median_distance(X)
    X[:, 1] *= 4                                     # twice the ratio
    with pytest.warns(UnequalScalesWarning):
        median_distance(X)


def test_sparse_input_is_not_judged():
    X = sp.random(300, 50, density=0.05, random_state=0, format="csr")
    X[:, 3] = X[:, 3] * 1e6
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnequalScalesWarning)
        median_distance(sp.csr_matrix(X))
