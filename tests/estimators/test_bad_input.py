"""Bad input gets a clear error and leaves a fitted model exactly as it was."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from kernelstream import DSGClassifier, DSGRegressor, RandomFeatures

FAST = dict(batch_size=64, block_size=64, random_state=0)


@pytest.fixture
def fitted():
    X, y = make_classification(300, 4, random_state=0)
    clf = DSGClassifier(**FAST).fit(X, y)
    reg = DSGRegressor(**FAST).fit(X, X[:, 0])
    return X, y, clf, reg


def _snapshot(model, X):
    return (model.decision_function(X) if hasattr(model, "decision_function") else model.predict(X),
            model.t_, model.n_components_, model.expansion_.coef.clone())


def _assert_unchanged(model, X, before):
    after = _snapshot(model, X)
    np.testing.assert_array_equal(after[0], before[0])
    assert after[1:3] == before[1:3]
    assert np.array_equal(after[3].cpu().numpy(), before[3].cpu().numpy())


BAD_X = {
    "nan": (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X), "NaN"),
    "inf": (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, np.inf, X), "infinity"),
    "1d": (lambda X: X[:, 0], "Expected 2D array"),
    "3d": (lambda X: X[:, :, None], "dim 3"),
    "features": (lambda X: X[:, :3], "3 features, but .* is expecting 4"),
    "empty": (lambda X: X[:0], "0 sample"),
}


@pytest.mark.parametrize("case", sorted(BAD_X))
@pytest.mark.parametrize("method", ["fit", "partial_fit", "predict"])
def test_bad_X_is_refused_and_changes_nothing(fitted, case, method):
    X, y, clf, _ = fitted
    corrupt, message = BAD_X[case]
    if method == "fit" and case == "features":
        pytest.skip("fit may change the number of features")
    before = _snapshot(clf, X)
    Xbad = corrupt(X.copy())
    with pytest.raises(ValueError, match=message):
        if method == "predict":
            clf.predict(Xbad)
        else:
            getattr(clf, method)(Xbad, y[: len(Xbad)])
    _assert_unchanged(clf, X, before)


def test_one_class_is_refused(fitted):
    X, y, clf, _ = fitted
    before = _snapshot(clf, X)
    with pytest.raises(ValueError, match="needs at least 2 classes"):
        clf.fit(X, np.zeros(len(X)))
    _assert_unchanged(clf, X, before)


def test_continuous_labels_are_refused_by_a_classifier(fitted):
    X, y, clf, _ = fitted
    before = _snapshot(clf, X)
    with pytest.raises(ValueError, match="Unknown label type"):
        clf.fit(X, np.linspace(0, 1, len(X)))
    _assert_unchanged(clf, X, before)


def test_new_label_in_partial_fit_is_refused(fitted):
    X, y, clf, _ = fitted
    before = _snapshot(clf, X)
    with pytest.raises(ValueError, match="pass every label in classes="):
        clf.partial_fit(X, np.where(y == 1, 7, y))
    _assert_unchanged(clf, X, before)


def test_bad_targets_for_a_regressor(fitted):
    X, _, _, reg = fitted
    before = _snapshot(reg, X)
    with pytest.raises(ValueError, match="NaN"):
        reg.fit(X, np.full(len(X), np.nan))
    with pytest.raises(ValueError, match="2 outputs, but this model was fitted with 1"):
        reg.partial_fit(X, np.column_stack([X[:, 0], X[:, 1]]))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        reg.fit(X, X[:10, 0])
    _assert_unchanged(reg, X, before)


def test_bad_sample_weight(fitted):
    X, y, clf, _ = fitted
    before = _snapshot(clf, X)
    with pytest.raises(ValueError, match="negative"):
        clf.fit(X, y, sample_weight=-np.ones(len(X)))
    with pytest.raises(ValueError, match="at least one non-zero"):
        clf.partial_fit(X, y, sample_weight=np.zeros(len(X)))
    _assert_unchanged(clf, X, before)


@pytest.mark.parametrize("params, message", [
    ({"kernel": "nope"}, "Unknown kernel 'nope'"),
    ({"loss": "nope"}, "'loss' parameter of DSGClassifier must be"),
    ({"sigma": -1.0}, "'sigma' parameter"),
    ({"sigma": "mean"}, "'sigma' parameter"),
    ({"kernel": "matern", "kernel_params": {"nu": 0.3}}, "half-integer"),
    ({"dtype": "float16"}, "'dtype' parameter"),
])
def test_bad_parameters_are_named(fitted, params, message):
    X, y, clf, _ = fitted
    before = _snapshot(clf, X)
    clf.set_params(**params)
    with pytest.raises(ValueError, match=message):
        clf.fit(X, y)
    clf.set_params(**{k: DSGClassifier().get_params()[k] for k in params})
    _assert_unchanged(clf, X, before)


def test_regression_loss_on_classifier_is_refused():
    X, y = make_classification(100, 4, random_state=0)
    with pytest.raises(ValueError, match="'loss' parameter of DSGClassifier"):
        DSGClassifier(loss="huber").fit(X, y)
    with pytest.raises(ValueError, match="'loss' parameter of DSGRegressor"):
        DSGRegressor(loss="hinge").fit(X, y)


def test_random_features_errors():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="block of 35 features, which kernel 'rbf_fastfood'"):
        RandomFeatures(kernel="rbf_fastfood", n_components=99, block_size=64).fit(X)
    with pytest.raises(ValueError, match="n_components=101 .* multiple of 2"):
        RandomFeatures(kernel="rbf_fastfood", n_components=101).fit(X)
    rf = RandomFeatures(n_components=64).fit(X)
    with pytest.raises(ValueError, match="2 features, but RandomFeatures is expecting 3"):
        rf.transform(X[:, :2].copy())


def test_unfitted_predict():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        DSGRegressor().predict(np.zeros((2, 2)))


def test_overflowing_inputs_say_so_and_not_to_tune_the_step():
    X, y = make_classification(300, 4, random_state=0)
    for model in (DSGClassifier(**FAST), DSGRegressor(**FAST)):
        with pytest.raises(ValueError, match=r"values up to .*e\+200.*overflow float32.*StandardScaler"):
            model.fit(X * 1e200, y)
    with pytest.raises(ValueError, match="overflow float32"):
        DSGRegressor(**FAST).fit(X * 1e19, X[:, 0])
    DSGRegressor(dtype="float64", **FAST).fit(X * 1e19, X[:, 0])  # fine in float64


def test_divergence_message_matches_the_configuration():
    from kernelstream.solvers.doubly_sgd import DSGConfig, _divergence_message

    class _Step:
        step = 4

    X = torch.ones(3, 2)
    on = _divergence_message(_Step(), X, DSGConfig(schedule=None, precondition=True))
    off = _divergence_message(_Step(), X, DSGConfig(schedule=None, precondition=False))
    assert "step 5" in on and "enable" not in on and "precond_eps" in on
    assert "precondition=True" in off
