"""The Table 2 baselines as estimators (kernelstream.baselines) against the benchmark's grid
runners (benchmarks/aogd.py), and as scikit-learn estimators."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_moons
from sklearn.utils.estimator_checks import parametrize_with_checks

from benchmarks import aogd as table2
from kernelstream.baselines import OGDLastClassifier, ReservoirOGDClassifier
from kernelstream.conformance import expected_failed_checks


@parametrize_with_checks([OGDLastClassifier(n_components=64, random_state=0),
                          ReservoirOGDClassifier(n_components=64, buffer_size=4, random_state=0)],
                         expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _unit_rows(n=600, seed=0):
    """Mapped-like inputs with ‖z‖ = 1 exactly, so the linear kernel's step scale is 1."""
    X, y = make_moons(n, noise=0.2, random_state=seed)
    Z = np.c_[X, np.ones(n)]
    return Z / np.linalg.norm(Z, axis=1, keepdims=True), y


@pytest.mark.parametrize("cls, runner", [(OGDLastClassifier, table2.run_last),
                                         (ReservoirOGDClassifier, table2.run_reservoir)])
def test_estimator_equals_the_benchmark_runner(cls, runner):
    Z, y = _unit_rows()
    clf = cls(kernel="linear", eta0=0.3, alpha=1e-3, learning_rate="constant", shuffle=False,
              batch_size=7, random_state=0).fit(Z, y)
    seed = clf.seed_ % 2**32  # the reservoir's coin stream
    w = runner(torch.as_tensor(Z), y, torch.tensor([0.3], dtype=torch.float64),
               torch.tensor([[1e-3]], dtype=torch.float64), seed)
    np.testing.assert_allclose(clf.coef_, w[0].numpy(), rtol=1e-9, atol=1e-12)


def test_reservoir_result_does_not_depend_on_chunking():
    X, y = _unit_rows(500, seed=1)  # linear: float64 features, so exact up to summation order
    params = dict(kernel="linear", learning_rate="constant", eta0=0.3, shuffle=False, random_state=2)
    one = ReservoirOGDClassifier(**params, batch_size=1).fit(X, y)
    many = ReservoirOGDClassifier(**params, batch_size=50).fit(X, y)
    np.testing.assert_allclose(one.coef_, many.coef_, rtol=1e-9, atol=1e-12)
    assert one.buffers_.seen == many.buffers_.seen == [int((y == 0).sum()), int((y == 1).sum())]


@pytest.mark.parametrize("cls", [OGDLastClassifier, ReservoirOGDClassifier])
def test_baselines_rank_well_and_stream(cls):
    X, y = make_moons(1500, noise=0.2, random_state=0)
    clf = cls(n_components=256, random_state=0)
    for i in range(0, 1000, 250):
        clf.partial_fit(X[i : i + 250], y[i : i + 250], classes=[0, 1])
    assert clf.t_ == 1000 and clf.score(X[1000:], y[1000:]) > 0.95
