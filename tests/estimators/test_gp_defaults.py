"""DSGGaussianProcessRegressor with its defaults (issue 14, item 3): fitted hyper-parameters,
noise in the standard deviation, a variance anywhere with bounded memory, clear linear-algebra
errors, and calibrated intervals on abalone."""

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.model_selection import train_test_split

import kernelstream.estimators.gp as gp_module
from support import shared_dataset
from kernelstream import DSGGaussianProcessRegressor

SMALL = dict(block_size=256, n_steps=32, random_state=0)


def coverage(mean, std, y):
    """Fraction of targets inside the 95% interval ``mean ± 1.96 std``."""
    return float(np.mean(np.abs(y - mean) <= 1.96 * std))


@pytest.fixture(scope="module")
def sine():
    """1-D sine, noise standard deviation 0.3 (variance 0.09), 600 train and 400 test rows."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (1000, 1))
    y = 5.0 + 2.0 * np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(1000)
    return X[:600], y[:600], X[600:], y[600:]


@pytest.fixture(scope="module")
def fitted_default(sine):
    X, y, _, _ = sine
    return DSGGaussianProcessRegressor(**SMALL).fit(X, y)


def test_hyperparameters_are_fitted_by_default(fitted_default):
    gp = fitted_default
    assert gp.get_params()["normalize_y"] is True
    assert 0.06 < gp.noise_ < 0.12  # true 0.09 (the old default was noise_ = 0.1, unfitted)
    assert 1.0 < gp.amplitude_ < 20.0  # signal variance 2² in y² units
    assert 0.2 < gp.sigma_ < 1.5  # sin(2x): a bandwidth well below the median distance (2)


def test_numbers_mean_exactly_those_numbers(sine):
    X, y, _, _ = sine
    gp = DSGGaussianProcessRegressor(sigma=0.7, noise=0.05, **SMALL).fit(X, y)
    assert gp.sigma_ == 0.7 and gp.noise_ == pytest.approx(0.05, rel=1e-12)
    only_noise = DSGGaussianProcessRegressor(noise=0.05, **SMALL).fit(X, y)
    assert only_noise.noise_ == pytest.approx(0.05, rel=1e-12) and only_noise.sigma_ != 0.7


def test_default_std_includes_the_noise_and_covers_the_targets(fitted_default, sine):
    _, _, Xs, ys = sine
    mean, std = fitted_default.predict(Xs, return_std=True)
    _, std_f = fitted_default.predict(Xs, return_std=True, include_noise=False)
    np.testing.assert_allclose(std**2, std_f**2 + fitted_default.noise_, rtol=1e-12)
    assert 0.90 <= coverage(mean, std, ys) <= 0.98
    assert coverage(mean, std_f, ys) < 0.6  # f's band alone is far too narrow for targets
    _, cov = fitted_default.predict(Xs[:5], return_cov=True)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std[:5], rtol=1e-10)


@pytest.mark.slow
def test_friedman1_coverage_with_defaults():
    X, y = make_friedman1(1500, noise=1.0, random_state=0)
    gp = DSGGaussianProcessRegressor(n_steps=64, random_state=0).fit(X[:1000], y[:1000])
    mean, std = gp.predict(X[1000:], return_std=True)
    assert 0.90 <= coverage(mean, std, y[1000:]) <= 0.98
    assert 0.7 < gp.noise_ < 1.4  # true 1.0


def test_variance_anywhere_after_fit_without_x_variance(fitted_default):
    assert fitted_default.variance_method_ == "exact"  # a few hundred rows: the exact posterior
    X_new = np.array([[-2.0], [0.5], [10.0]])
    mean, std = fitted_default.predict(X_new, return_std=True, include_noise=False)
    assert std[2] > 5 * std[0]  # far from the data the posterior returns to the prior
    assert std[2] == pytest.approx(np.sqrt(fitted_default.amplitude_), rel=1e-3)


def test_landmark_variance_matches_the_exact_posterior(sine):
    X, y, Xs, _ = sine
    gp = DSGGaussianProcessRegressor(sigma=0.5, noise=0.09, normalize_y=False,
                                     variance_method="landmarks", **SMALL).fit(X, y)
    assert gp.solver_ == "cg"  # the landmarks' variance: conjugate gradients for the mean
    exact = GaussianProcessRegressor(RBF(0.5), alpha=0.09, optimizer=None).fit(X, y)
    _, std = gp.predict(Xs, return_std=True, include_noise=False)
    _, std_exact = exact.predict(Xs, return_std=True)
    np.testing.assert_allclose(std, std_exact, rtol=0.05, atol=1e-3)


@pytest.mark.parametrize("method, solver, advice", [("operator", "auto", "n_components"),
                                                    ("landmarks", "auto", "n_landmarks"),
                                                    ("targets", "dual", "X_variance"),
                                                    ("auto", "auto", "solver='dual'"),
                                                    ("targets", "exact", "solver='dual'")])
def test_fits_that_cannot_fit_in_memory_are_refused(sine, monkeypatch, method, solver, advice):
    X, y, Xs, _ = sine
    monkeypatch.setattr(gp_module, "_available_memory", lambda device: 2**20)
    extra = {"X_variance": Xs} if method == "targets" else {}
    gp = DSGGaussianProcessRegressor(variance_method=method, solver=solver, **SMALL)
    with pytest.raises(MemoryError, match=advice):
        gp.fit(X, y, **extra)
    assert not hasattr(gp, "fit_plan_")  # refused before anything is kept


def test_operator_memory_estimate_bounds_the_2_1_gb_report():
    from kernelstream.solvers.gp_variance import operator_bytes

    assert 1.0e9 < operator_bytes(8192) < 2.5e9


@pytest.mark.parametrize("X_scale", [1e30, 1e200])
def test_linear_algebra_failures_are_clear_value_errors(sine, X_scale):
    X, y, _, _ = sine
    with pytest.raises(ValueError, match="(?i)standardise"):
        DSGGaussianProcessRegressor(**SMALL).fit(X * X_scale, y)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_non_finite_results_are_never_returned(sine):
    X, y, _, _ = sine
    with pytest.raises(FloatingPointError, match="divide y"):
        DSGGaussianProcessRegressor(**SMALL).fit(X, y * 1e306)


def test_failed_fit_leaves_the_fitted_model_unchanged(fitted_default, sine):
    X, y, Xs, _ = sine
    before = fitted_default.predict(Xs, return_std=True)
    with pytest.raises(ValueError):
        fitted_default.fit(X * 1e200, y)
    for a, b in zip(fitted_default.predict(Xs, return_std=True), before):
        np.testing.assert_array_equal(a, b)


def test_predictions_do_not_depend_on_the_rows_in_the_call(fitted_default, sine):
    _, _, Xs, _ = sine
    assert fitted_default.dtype == "float32"
    full = fitted_default.predict(Xs)
    one_by_one = np.concatenate([fitted_default.predict(Xs[i:i + 1]) for i in range(50)])
    np.testing.assert_allclose(one_by_one, full[:50], rtol=0, atol=1e-9)


def sklearn_reference(X, y, Xs):
    gp = GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(), normalize_y=True,
                                  random_state=0)
    return gp.fit(X, y).predict(Xs)


@pytest.mark.slow
def test_abalone_defaults_cover_the_targets_like_the_exact_gp():
    """3,000/1,177 split: coverage in [0.90, 0.98] and RMSE within 5% of scikit-learn's
    optimised GP on 2,000 of the training rows (timing: benchmarks/gp_defaults.py)."""
    data = shared_dataset("abalone")
    X, Xs, y, ys = train_test_split(data["X"], data["y"].astype(float), train_size=3000,
                                    random_state=0)
    mean, std = DSGGaussianProcessRegressor(random_state=0).fit(X, y).predict(Xs, return_std=True)
    assert 0.90 <= coverage(mean, std, ys) <= 0.98
    rmse = np.sqrt(np.mean((mean - ys) ** 2))
    rmse_exact = np.sqrt(np.mean((sklearn_reference(X[:2000], y[:2000], Xs) - ys) ** 2))
    assert rmse <= 1.05 * rmse_exact

