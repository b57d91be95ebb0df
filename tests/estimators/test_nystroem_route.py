"""The subsample route on a Nyström basis (``basis="nystroem"``, and ``basis="auto"`` for three
or more classes): the fitted model is the kernel's columns at training rows times ``β``, it is
saved and loaded whole, it does as well as the random-feature route at the same size, ``α`` is
challenged at the final size and the squared hinge finishes least squares only where that pays
on the held-out rows, and a model that cannot continue says so and is kept."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.features.kernel_columns import KernelColumns
from kernelstream.io import load, save_model

CENTRES = 1024


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=4000, n_features=24, n_informative=12, n_classes=3,
                               n_clusters_per_class=2, class_sep=1.2, random_state=0)
    return train_test_split(X.astype(np.float32), y, test_size=0.25, random_state=0)


@pytest.fixture(scope="module")
def fitted(data):
    X, X_test, y, y_test = data
    params = dict(block_size=128, n_components=CENTRES, random_state=0)
    return (DSGClassifier(basis="nystroem", **params).fit(X, y),
            DSGClassifier(basis="random_features", **params).fit(X, y))


def test_the_model_is_the_kernels_columns_at_training_rows_times_beta(data, fitted):
    X, X_test, y, _ = data
    model, _ = fitted
    assert model.fit_plan_.basis == "nystroem"
    feature_map = model.expansion_.feature_map
    assert isinstance(feature_map, KernelColumns)
    assert {g["n_components"] for g in model.feature_growth_} == {CENTRES}
    assert feature_map.centres.shape[0] == CENTRES
    # every centre is a training row
    distances = torch.cdist(feature_map.centres.double(), torch.tensor(X, dtype=torch.float64))
    assert float(distances.min(dim=1).values.max()) < 1e-5  # (cdist's round-off)
    coef, intercept = model.expansion_.prediction_parameters()
    J = coef.shape[0]
    beta = coef.reshape(J * feature_map.block_size, -1).double()
    C = feature_map.centres[:J * feature_map.block_size].double()
    by_hand = feature_map.kernel(torch.tensor(X_test, dtype=torch.float64), C) @ beta + intercept.double()
    np.testing.assert_allclose(model.decision_function(X_test), by_hand.numpy(), rtol=1e-3, atol=1e-3)


def test_it_does_as_well_as_random_features_of_the_same_size(data, fitted):
    X, X_test, y, y_test = data
    nystroem, features = fitted
    error = float(np.mean(nystroem.predict(X_test) != y_test))
    rff = float(np.mean(features.predict(X_test) != y_test))
    assert features.fit_plan_.basis == "random_features"
    assert error <= rff + 0.01, (error, rff)
    assert error < 0.12


def test_the_model_file_keeps_its_centres(data, fitted, tmp_path):
    _, X_test, _, _ = data
    model, _ = fitted
    save_model(model, tmp_path / "model.safetensors")
    loaded = load(tmp_path / "model.safetensors")
    assert isinstance(loaded.expansion_.feature_map, KernelColumns)
    np.testing.assert_array_equal(loaded.decision_function(X_test), model.decision_function(X_test))


def test_a_warm_start_or_partial_fit_says_the_basis_cannot_continue_and_keeps_the_model(data, fitted):
    X, X_test, y, _ = data
    model, _ = fitted
    before = model.decision_function(X_test)
    model.set_params(warm_start=True)
    try:
        with pytest.raises(ValueError, match="Nystrom basis.*a warm start cannot continue"):
            model.fit(X, y)
    finally:
        model.set_params(warm_start=False)
    with pytest.raises(ValueError, match="partial_fit cannot continue"):
        model.partial_fit(X[:512], y[:512])
    np.testing.assert_array_equal(model.decision_function(X_test), before)


def test_a_regressor_takes_the_same_basis():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 24)).astype(np.float32)
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] / 2 + 0.1 * rng.standard_normal(3000)
    model = DSGRegressor(basis="nystroem", block_size=128, n_components=CENTRES,
                         random_state=0).fit(X[:2500], y[:2500])
    assert model.fit_plan_.basis == "nystroem"
    assert isinstance(model.expansion_.feature_map, KernelColumns)
    residual = model.predict(X[2500:]) - y[2500:]
    assert float(np.mean(residual**2)) < 0.5 * float(np.var(y[2500:]))


def test_auto_takes_the_centres_for_three_classes_and_random_features_for_two(data, fitted):
    X, X_test, y, y_test = data
    nystroem, _ = fitted
    params = dict(block_size=128, n_components=CENTRES, random_state=0)
    auto = DSGClassifier(**params).fit(X, y)
    assert auto.fit_plan_.basis == "nystroem" and auto.fit_plan_.hinge_finish
    assert auto.fit_plan_.alpha_path
    np.testing.assert_array_equal(auto.decision_function(X_test), nystroem.decision_function(X_test))
    two = DSGClassifier(**params).fit(X[y < 2], y[y < 2])
    assert two.fit_plan_.basis == "random_features" and not two.fit_plan_.hinge_finish


def test_each_alpha_and_hinge_step_is_recorded_and_the_kept_one_is_the_models(fitted):
    model, _ = fitted
    first, *growth = model.feature_growth_
    assert "alpha" not in first  # the solve at the carried α
    path = [g for g in growth if g["loss_function"] == "squared"]
    hinge = [g for g in growth if g["loss_function"] == "squared_hinge"]
    assert path and len(path) + len(hinge) == len(growth)
    alphas = [g["alpha"] for g in path]  # each challenger a quarter of the last
    np.testing.assert_allclose(alphas[1:], np.array(alphas[:-1]) / 4)
    assert model.alpha_ in [*alphas, alphas[0] * 4]
    assert 1 <= len(hinge) <= 4 and all(g["alpha"] == model.alpha_ for g in hinge)
    losses = [g["loss"] for g in hinge]  # the steps went on while each lowered the loss
    assert all(b < a for a, b in zip(losses[:-2], losses[1:-1]))
    assert "challenges the carried alpha" in str(model.fit_plan_)


def test_the_hinge_finish_does_better_than_least_squares_alone(data):
    X, X_test, y, y_test = data
    params = dict(block_size=128, n_components=CENTRES, random_state=0)
    finished = DSGClassifier(**params).fit(X, y)
    plain = DSGClassifier(alpha=finished.alpha_, loss="squared", basis="nystroem",
                          **params).fit(X, y)  # least squares at the α kept
    assert not plain.fit_plan_.alpha_path and not plain.fit_plan_.hinge_finish
    error = float(np.mean(finished.predict(X_test) != y_test))
    least_squares = float(np.mean(plain.predict(X_test) != y_test))
    assert error <= least_squares + 0.005, (error, least_squares)
