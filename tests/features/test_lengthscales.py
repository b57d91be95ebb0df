"""Per-feature lengthscales (ARD) in the shift-invariant maps: ``W = diag(1/ℓ)·G`` and the exact
kernel ``k₁((x − y)/ℓ)``; one number keeps the isotropic map exactly."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone

import kernelstream.estimators as estimators
from kernelstream._state import feature_map_from_config
from kernelstream.features import make_feature_map, resolve_bandwidth
from kernelstream.io import from_json, params_json
from kernelstream.ops.sparse import CSRRows

FAMILIES = [("rbf", {}), ("laplace", {}), ("matern", {"nu": 0.5}), ("matern", {"nu": 1.5}),
            ("matern", {"nu": 2.5}), ("rbf", {"sampling": "orthogonal"}), ("rbf", {"sampling": "sobol"})]
ELL = np.array([0.5, 1.0, 2.0, 40.0])


def _points(n=150, d=4, seed=0):
    return torch.as_tensor(np.random.default_rng(seed).normal(size=(n, d)), dtype=torch.float64)


def _naive_ard(name: str, nu: float, X: torch.Tensor, Y: torch.Tensor, ell) -> torch.Tensor:
    """The ARD kernel written out: rbf exp(−½Σ((x−y)/ℓ)²), laplace exp(−Σ|x−y|/ℓ), Matérn of
    ρ = ‖(x−y)/ℓ‖."""
    diff = (X[:, None, :] - Y[None, :, :]) / torch.as_tensor(ell)
    if name == "laplace":
        return torch.exp(-diff.abs().sum(-1))
    rho = diff.square().sum(-1).sqrt()
    if name == "rbf":
        return torch.exp(-0.5 * rho.square())
    s = math.sqrt(2 * nu) * rho
    poly = {0.5: 1.0, 1.5: 1 + s, 2.5: 1 + s + s.square() / 3}[nu]
    return poly * torch.exp(-s)


@pytest.mark.parametrize("name, params", FAMILIES)
def test_the_exact_kernel_is_the_ard_kernel(name, params):
    X, Y = _points(30), _points(20, seed=1)
    fm = make_feature_map(name, 4, ELL, 256, 0, kernel_params=params)
    expected = _naive_ard(name, params.get("nu", 1.5), X, Y, ELL)
    torch.testing.assert_close(fm.kernel(X, Y), expected, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(fm.kernel_at(X, Y, torch.as_tensor(ELL)), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, params", FAMILIES)
def test_the_vector_map_converges_to_the_ard_kernel(name, params):
    X = _points()
    fm = make_feature_map(name, 4, ELL, 256, 3, kernel_params=params)
    K = fm.kernel(X, X)
    errors = [float((fm.transform(X, J) @ fm.transform(X, J).T - K).abs().max()) for J in (1, 16)]
    assert errors[1] < 0.09 and errors[1] < errors[0] / 2, errors


@pytest.mark.parametrize("name, params", FAMILIES)
def test_equal_lengthscales_give_the_scalar_features(name, params):
    X = _points(40)
    scalar = make_feature_map(name, 4, 1.7, 256, 3, kernel_params=params)
    vector = make_feature_map(name, 4, np.full(4, 1.7), 256, 3, kernel_params=params)
    assert torch.equal(scalar.features(X, range(3)), vector.features(X, range(3)))
    torch.testing.assert_close(scalar.kernel(X, X), vector.kernel(X, X), rtol=0, atol=1e-7)  # cdist's √ at 0
    assert isinstance(scalar.sigma, float) and np.array_equal(vector.lengthscales, np.full(4, 1.7))


@pytest.mark.parametrize("name", ["rbf", "laplace", "matern"])
def test_sparse_rows_are_scaled_by_their_columns_lengthscales(name):
    S = sp.random(30, 4, density=0.5, format="csr", random_state=0)
    fm = make_feature_map(name, 4, ELL, 64, 0)
    dense = fm.features(torch.as_tensor(S.toarray()), range(2))
    sparse = fm.features(CSRRows(S, torch.float64, torch.device("cpu")), range(2))
    torch.testing.assert_close(sparse, dense, rtol=1e-10, atol=1e-12)


def test_autograd_flows_through_the_lengthscales():
    X = _points(25)
    ell = torch.tensor(ELL, requires_grad=True)
    make_feature_map("matern", 4, 1.0, 2, 0).kernel_at(X, X, ell).sum().backward()
    assert torch.isfinite(ell.grad).all() and (ell.grad > 0).all()


def test_a_saved_config_rebuilds_the_same_map():
    fm = make_feature_map("matern", 4, ELL, 64, 5)
    again = feature_map_from_config(fm.config())
    assert isinstance(fm.config()["sigma"], list) and np.array_equal(again.sigma, ELL)
    X = _points(10)
    assert torch.equal(fm.features(X, range(2)), again.features(X, range(2)))


@pytest.mark.parametrize("sigma, message", [
    (np.ones(3), "sigma has 3 lengthscales but X has 4 features"),
    (np.array([1.0, 0.0, 1.0, 1.0]), r"sigma\[1\] = 0.0 is not a lengthscale"),
    (np.array([1.0, 1.0, -2.0, 1.0]), r"sigma\[2\] = -2.0 is not a lengthscale"),
    (np.array([1.0, 1.0, 1.0, np.nan]), r"sigma\[3\] = nan"),
    (np.array([np.inf, 1.0, 1.0, 1.0]), r"sigma\[0\] = inf .* positive and finite"),
    (np.ones((2, 2)), r"shape \(2, 2\)"),
    (["a", "b", "c", "d"], "not numeric"),
])
def test_bad_lengthscales_say_what_is_wrong(sigma, message):
    with pytest.raises(ValueError, match=message):
        make_feature_map("rbf", 4, sigma, 64, 0)
    with pytest.raises(ValueError, match=message):
        resolve_bandwidth("rbf", np.zeros((5, 4)), sigma)


def test_a_family_without_lengthscales_refuses_a_vector():
    with pytest.raises(ValueError, match="takes one bandwidth, not one per feature"):
        make_feature_map("polynomial", 4, ELL, 64, 0)


def test_resolve_bandwidth_passes_lengthscales_through():
    ell = resolve_bandwidth("laplace", np.zeros((5, 4)), [1, 2, 3, 4])
    assert ell.dtype == np.float64 and np.array_equal(ell, [1, 2, 3, 4]) and not ell.flags.writeable
    assert resolve_bandwidth("rbf", np.zeros((5, 4)), 2.5) == 2.5


def test_model_file_parameters_keep_arrays():
    params = {"sigma": ELL, "alpha": 1e-3, "kernel_params": {"nu": 1.5}}
    back = from_json(params_json(params))
    assert isinstance(back["sigma"], np.ndarray) and np.array_equal(back["sigma"], ELL)
    assert back["alpha"] == 1e-3 and back["kernel_params"] == {"nu": 1.5}


ESTIMATORS = ["DSGRegressor", "DSGClassifier", "DSGGaussianProcessRegressor", "GoGPRegressor"]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_clone_keeps_the_lengthscales(name):
    model = getattr(estimators, name)(sigma=ELL)
    assert clone(model).get_params()["sigma"] is not ELL
    assert np.array_equal(clone(model).get_params()["sigma"], ELL)


def _accepts_arrays(name: str) -> bool:
    return "array-like" in getattr(estimators, name)._parameter_constraints["sigma"]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimators_fit_save_and_load_with_lengthscales(name, tmp_path):
    if not _accepts_arrays(name):
        pytest.xfail(f"{name}'s sigma constraint is not glossary.sigma_constraint yet")
    from kernelstream.io import load

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=300)
    y = np.sign(y) if name == "DSGClassifier" else y
    model = getattr(estimators, name)(sigma=ELL, random_state=0).fit(X, y)
    assert np.array_equal(model.sigma_, ELL)
    model.save(tmp_path / "m.ks")
    again = load(tmp_path / "m.ks")
    assert isinstance(again.get_params()["sigma"], np.ndarray)
    np.testing.assert_array_equal(again.predict(X[:20]), model.predict(X[:20]))
