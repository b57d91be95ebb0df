"""State dicts: every public estimator round-trips through state_dict and through a model file
with identical predictions, and online models continue their stream identically."""

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression

from kernelstream import (AOGDClassifier, DSGClassifier, DSGDensityRatio,
                          DSGGaussianProcessRegressor, DSGOneClass, DSGRegressor, GoGPRegressor,
                          RandomFeatures, load)

FAST = dict(batch_size=64, block_size=64, random_state=0)

#: name -> (estimator, task); every public estimator, the online ones in their streaming modes
CASES = {
    "DSGRegressor": (DSGRegressor(average=True, n_components=256, **FAST), "regression"),
    "DSGClassifier": (DSGClassifier(**FAST), "binary"),
    "DSGClassifier-softmax": (DSGClassifier(**FAST), "multiclass"),
    "DSGOneClass": (DSGOneClass(**FAST), "unsupervised"),
    "DSGDensityRatio": (DSGDensityRatio(**FAST), "two-sample"),
    "DSGGaussianProcessRegressor": (DSGGaussianProcessRegressor(block_size=64, n_steps=8,
                                                                evidence_size=100, random_state=0),
                                    "regression"),
    "GoGPRegressor": (GoGPRegressor(random_state=0), "regression"),
    "GoGPRegressor-features": (GoGPRegressor(variant="random_features", n_components=32,
                                             random_state=0), "regression"),
    "AOGDClassifier": (AOGDClassifier(n_components=64, average=True, random_state=0), "binary"),
    "RandomFeatures": (RandomFeatures(n_components=100, random_state=0), "unsupervised"),
}


def _data(task, seed=0):
    if task == "regression":
        X, y = make_regression(300, 4, noise=1.0, random_state=seed)
        return X, y / 50
    if task in ("binary", "multiclass"):
        return make_classification(300, 4, n_informative=3, n_redundant=0,
                                   n_classes=2 if task == "binary" else 3, random_state=seed)
    X = np.random.default_rng(seed).normal(size=(300, 4))
    return (X, X + 0.5) if task == "two-sample" else (X, None)


def _fit(estimator, task):
    X, y = _data(task)
    return estimator.fit(X) if y is None else estimator.fit(X, y)


def _outputs(model, X):
    for method in ("decision_function", "predict", "transform", "log_ratio"):
        if hasattr(model, method):
            try:
                return getattr(model, method)(X)
            except AttributeError:
                continue
    raise AssertionError(type(model).__name__)


def _continue(model, task):
    X, y = _data(task, seed=1)
    if isinstance(model, RandomFeatures) or not hasattr(model, "partial_fit"):
        return model
    return model.partial_fit(X) if y is None else model.partial_fit(X, y)


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_round_trip(name):
    estimator, task = CASES[name]
    model = _fit(clone(estimator), task)
    state = model.state_dict()
    assert all(isinstance(k, str) for k in state)
    copy = clone(estimator).load_state_dict(state)
    X, _ = _data(task, seed=2)
    np.testing.assert_array_equal(_outputs(copy, X), _outputs(model, X))


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_file_round_trip_and_continuation(name, tmp_path):
    estimator, task = CASES[name]
    model = _fit(clone(estimator), task)
    model.save(tmp_path / "m.kst")
    loaded = load(tmp_path / "m.kst")
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    X, _ = _data(task, seed=2)
    np.testing.assert_array_equal(_outputs(loaded, X), _outputs(model, X))
    _continue(model, task), _continue(loaded, task)
    np.testing.assert_array_equal(_outputs(loaded, X), _outputs(model, X))


def test_a_stream_with_buffered_rows_resumes_exactly(tmp_path):
    X, y = _data("regression")
    model = DSGRegressor(**FAST).partial_fit(X[:100], y[:100])  # 1 step, 36 rows buffered
    model.save(tmp_path / "m.kst")
    loaded = load(tmp_path / "m.kst")
    for m in (model, loaded):
        m.partial_fit(X[100:], y[100:])
    assert loaded.t_ == model.t_ == 4
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_unknown_state_names_are_refused():
    with pytest.raises(ValueError, match="has no state"):
        DSGRegressor().load_state_dict({"not_a_state": 1})
