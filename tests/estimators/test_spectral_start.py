"""The growth's first size from the subsample's spectrum: the training rows' effective dimension
in closed form, the plan re-laid in smaller blocks where it asks for fewer features than the
default start, and a fit that takes it where the kernel's spectrum decays fast."""

import dataclasses

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_moons

from kernelstream import DSGClassifier
from kernelstream.planning import (LIMITS, DataShape, effective_dimension, plan_fit,
                                   spectral_start_features, with_spectral_start)

#: the limits of a growth that always starts at the default size
DEFAULT_START = dataclasses.replace(LIMITS, least_start_features=LIMITS.solve_start_features)


def test_the_effective_dimension_scales_the_subsample_spectrum_to_the_training_rows():
    """``Σ μ_j/(μ_j + nα)`` with ``μ_j = (n/m)λ_j``: equal eigenvalues at the penalty count
    half; more rows at the same penalty count more; zero eigenvalues count nothing."""
    assert effective_dimension([2.0] * 10, 1.0, 100, 100, 2.0) == pytest.approx(5.0)
    assert effective_dimension([2.0] * 10 + [0.0] * 5, 1.0, 100, 100, 2.0) == pytest.approx(5.0)
    assert effective_dimension([2.0] * 10, 1.0, 100, 300, 2.0) == pytest.approx(10 * 6 / 8)
    assert effective_dimension([1.0] * 7, 0.0, 100, 300, 0.0) == 7.0  # no penalty: every one


@pytest.mark.parametrize("dimension, features", [(10.0, LIMITS.least_start_features),
                                                 (200.0, 512), (1e4, LIMITS.solve_start_features)])
def test_the_start_is_a_power_of_two_per_dimension_between_the_bounds(dimension, features):
    assert spectral_start_features(dimension, LIMITS.solve_start_features) == features


def _growth_plan(n_rows=20000, **params):
    params = {**DSGClassifier(random_state=0).get_params(), **params}
    return plan_fit("DSGClassifier", DataShape(n_rows=n_rows, n_features=5, n_classes=2), params)


def test_a_low_dimension_re_lays_the_growth_in_smaller_blocks_up_to_the_same_features():
    plan = _growth_plan()
    assert plan.start_blocks * plan.block_size == LIMITS.solve_start_features < plan.n_components
    small = with_spectral_start(plan, 30.0, 18000)
    assert (small.block_size, small.start_blocks) == (LIMITS.least_start_features, 1)
    assert small.n_components == plan.n_components
    assert with_spectral_start(plan, 1e4, 18000) is plan  # as many as the default: unchanged
    assert with_spectral_start(plan, None, 18000) is plan  # no spectrum (the hinge chose alone)
    given = _growth_plan(n_components=2048)  # a budget given: no growth to re-lay
    assert with_spectral_start(given, 30.0, 18000) is given


def _moons(n=6000):
    X, y = make_moons(n, noise=0.3, random_state=0)
    return X[: n - 1000], y[: n - 1000], X[n - 1000:], y[n - 1000:]


def test_two_dimensional_moons_start_small_and_lose_no_accuracy():
    """make_moons' kernel spectrum decays fast: the growth starts at fewer features than the
    default and grows only while they pay, at the test error of a growth from the default start
    (within 1.5 points of 1,000 test rows), with fewer features."""
    X, y, X_test, y_test = _moons()
    small = DSGClassifier(random_state=0).fit(X, y)
    notes = [r for r in small.fit_plan_.stages if r["stage"] == "spectral_start"]
    assert notes and notes[0]["features"] < LIMITS.solve_start_features
    assert notes[0]["effective_dimension"] * LIMITS.start_features_per_dimension <= notes[0]["features"]
    default = DSGClassifier(random_state=0).fit(X, y, limits=DEFAULT_START)
    assert not [r for r in default.fit_plan_.stages if r["stage"] == "spectral_start"]
    assert small.n_components_ < default.n_components_
    assert abs(small.score(X_test, y_test) - default.score(X_test, y_test)) <= 0.015
    assert small.score(X_test, y_test) >= 0.90  # the Bayes error at noise 0.3 is near 8%


def test_a_spectrum_that_does_not_decay_keeps_the_default_start():
    """Ten informative features of twenty: an effective dimension past the default start's."""
    X, y = make_classification(4000, 20, n_informative=10, random_state=0)
    model = DSGClassifier(random_state=0).fit(X.astype(np.float32), y)
    assert not [r for r in model.fit_plan_.stages if r["stage"] == "spectral_start"]
