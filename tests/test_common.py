"""scikit-learn conformance of every public estimator, with the failures each one declares.

``kernelstream.conformance.expected_failed_checks`` is the single source of the expected
failures: a user's own ``check_estimator`` run with it agrees with this test (on CUDA it adds
the subset invariance, which asks for bit-identical rows across batch shapes).
"""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from kernelstream import (AOGDClassifier, DSGClassifier, DSGGaussianProcessRegressor,
                          DSGOneClass, DSGRegressor, GoGPRegressor, RandomFeatures)
from kernelstream.conformance import expected_failed_checks

# small, fast settings: the checks fit dozens of times on tiny data
SMALL = dict(batch_size=64, block_size=64, max_iter=3, random_state=0)

ESTIMATORS = [
    DSGRegressor(**SMALL), DSGClassifier(**SMALL), DSGClassifier(loss="hinge", **SMALL),
    DSGOneClass(**SMALL), RandomFeatures(n_components=64, random_state=0),
    GoGPRegressor(random_state=0),
    GoGPRegressor(variant="random_features", n_components=32, random_state=0),
    GoGPRegressor(solver="sgd", max_inducing=20, random_state=0),
    AOGDClassifier(n_components=64, random_state=0),
    AOGDClassifier(kernel="linear", loss="hinge", random_state=0),
    DSGGaussianProcessRegressor(block_size=64, n_steps=8, evidence_size=100, random_state=0),
]


# DSGDensityRatio.fit(X_p, X_q) takes two samples, not (X, y): outside the estimator contract.
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_expected_failures_are_declared_with_a_reason(estimator):
    for name, reason in expected_failed_checks(estimator).items():
        assert name.startswith("check_") and len(reason) > 40


def test_on_cuda_the_subset_invariance_is_declared(monkeypatch):
    """A user's ``check_estimator`` on a GPU gets the float32 batch-shape failure declared."""
    import torch

    from kernelstream.conformance import CUDA_SUBSET_INVARIANCE

    estimator = DSGRegressor(**SMALL)
    on_cpu = expected_failed_checks(estimator)
    monkeypatch.setattr(DSGRegressor, "_resolve_device", lambda self: torch.device("cuda"))
    on_cuda = expected_failed_checks(estimator)
    assert on_cuda == {**on_cpu, "check_methods_subset_invariance": CUDA_SUBSET_INVARIANCE}
