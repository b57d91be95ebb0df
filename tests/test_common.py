"""scikit-learn conformance: parametrize_with_checks over every estimator, with reasons for xfails."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from kernelstream import (DSGClassifier, DSGGaussianProcessRegressor, DSGOneClass, DSGRegressor,
                         RandomFeatures)

# small, fast settings: the checks fit dozens of times on tiny data
SMALL = dict(batch_size=64, block_size=64, max_iter=3, random_state=0)

STOCHASTIC_WEIGHTS = (
    "Mini-batch SGD: a weight-2 row is one term of its batch, a repeated row is two rows that "
    "can fall in different batches and change the number of steps; equivalence holds only in "
    "expectation (scikit-learn's SGD estimators xfail this check too)."
)
FLOAT32_SUBSETS = (
    "float32 GEMM results depend on the number of rows in the call at the 1e-7 level; "
    "predictions on subsets agree to float32 tolerance (tested in test_estimators.py)."
)


def expected_failed_checks(estimator):
    # the GP fits in float32 but predicts in float64: no row-count dependence, no sample weights
    if isinstance(estimator, (RandomFeatures, DSGGaussianProcessRegressor)):
        return {}
    return {
        "check_sample_weight_equivalence_on_dense_data": STOCHASTIC_WEIGHTS,
        "check_sample_weight_equivalence_on_sparse_data": STOCHASTIC_WEIGHTS,
        "check_methods_subset_invariance": FLOAT32_SUBSETS,
        "check_methods_sample_order_invariance": FLOAT32_SUBSETS,
    }


# DSGDensityRatio.fit(X_p, X_q) takes two samples, not (X, y): outside the estimator contract.
@parametrize_with_checks(
    [DSGRegressor(**SMALL), DSGClassifier(**SMALL), DSGClassifier(loss="hinge", **SMALL),
     DSGOneClass(batch_size=64, block_size=64, max_iter=3, random_state=0),
     RandomFeatures(n_components=64, random_state=0),
     DSGGaussianProcessRegressor(block_size=64, max_iter=8, evidence_size=100, random_state=0)],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
