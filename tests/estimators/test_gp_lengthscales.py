"""DSGGaussianProcessRegressor's per-feature lengthscales (issue 33): ``sigma="auto"`` fits one
per feature by the marginal likelihood, ``lengthscales_`` reads as relevance, a number or
"median" keeps one bandwidth, and the friedman1 check of the issue holds."""


import numpy as np
import pytest

from kernelstream import DSGGaussianProcessRegressor

SMALL = dict(block_size=256, n_steps=32, random_state=0)


@pytest.mark.slow
def test_irrelevant_features_get_larger_lengthscales(friedman):
    X, y = friedman
    gp = DSGGaussianProcessRegressor(**SMALL).fit(X, y)
    ell = gp.lengthscales_
    assert ell.shape == (10,) and np.array_equal(gp.sigma_, ell)
    assert ell[5:].min() > ell[:5].max(), ell
    assert np.median(ell[5:]) > 10 * np.median(ell[:3]), ell
    assert 0.1 < gp.noise_ < 0.5  # true 0.25
    assert "by the marginal likelihood" in str(gp.fit_plan_)
    assert gp.kernel_choice_ == "per_feature"
    loo = gp.kernel_choice_loo_  # the guard: per-feature LOO error well below the isotropic's
    assert loo.shape == (2,) and loo[0] <= 0.8 * loo[1], loo


def test_equally_relevant_features_keep_one_bandwidth():
    """The guard: per-feature lengthscales that do not clearly pay on the evidence rows give way
    to the isotropic fit; ``lengthscales_`` is then ``sigma_`` repeated."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = np.sin(X).sum(1) + 0.3 * rng.normal(size=400)
    gp = DSGGaussianProcessRegressor(**SMALL).fit(X, y)
    assert gp.kernel_choice_ == "isotropic" and isinstance(gp.sigma_, float)
    np.testing.assert_array_equal(gp.lengthscales_, np.full(4, gp.sigma_))
    assert gp.kernel_choice_loo_[0] > 0.8 * gp.kernel_choice_loo_[1], gp.kernel_choice_loo_
    given = DSGGaussianProcessRegressor(sigma=np.ones(4), **SMALL).fit(X, y)
    assert given.kernel_choice_ == "per_feature" and np.isnan(given.kernel_choice_loo_).all()


@pytest.mark.slow
def test_one_bandwidth_when_given_or_median_or_one_feature(friedman):
    X, y = friedman
    given = DSGGaussianProcessRegressor(sigma=2.0, **SMALL).fit(X, y)
    assert given.sigma_ == 2.0 and np.array_equal(given.lengthscales_, np.full(10, 2.0))
    assert given.kernel_choice_ == "isotropic"
    median = DSGGaussianProcessRegressor(sigma="median", **SMALL).fit(X, y)
    assert isinstance(median.sigma_, float)
    one = DSGGaussianProcessRegressor(**SMALL).fit(X[:, :1], y)
    assert isinstance(one.sigma_, float) and one.lengthscales_.shape == (1,)
    laplace = DSGGaussianProcessRegressor(kernel="laplace", **SMALL).fit(X, y)
    assert laplace.lengthscales_[5:].min() > laplace.lengthscales_[:3].max()


def test_given_lengthscales_and_noise_are_kept(friedman):
    X, y = friedman
    ell = np.linspace(1.0, 2.0, 10)
    gp = DSGGaussianProcessRegressor(sigma=ell, **SMALL).fit(X, y)
    np.testing.assert_array_equal(gp.sigma_, ell)
    assert "noise (and the amplitude)" in str(gp.fit_plan_)
    fixed = DSGGaussianProcessRegressor(noise=0.3, **SMALL).fit(X, y)
    assert fixed.noise_ == pytest.approx(0.3, rel=1e-12)
    assert fixed.amplitude_ == pytest.approx(np.var(y), rel=1e-12)  # a = 1 in y's units
    assert fixed.lengthscales_[5:].min() > fixed.lengthscales_[:3].max()


@pytest.mark.slow
def test_several_outputs_share_the_lengthscales(friedman):
    X, y = friedman
    gp = DSGGaussianProcessRegressor(**SMALL).fit(X, np.c_[y, -2 * y])
    assert gp.predict(X[:3]).shape == (3, 2) and gp.lengthscales_.shape == (10,)
    assert gp.lengthscales_[5:].min() > gp.lengthscales_[:3].max()


@pytest.mark.parametrize("sigma", [np.ones(3), np.array([1.0, -1.0] + [1.0] * 8),
                                   np.array([np.inf] * 10)])
def test_bad_lengthscales_are_refused(friedman, sigma):
    X, y = friedman
    with pytest.raises(ValueError):
        DSGGaussianProcessRegressor(sigma=sigma, **SMALL).fit(X, y)


@pytest.mark.slow
def test_friedman1_defaults_reach_the_noise_floor(friedman1_issue33):
    """Issue 33: 6,000 standardised training rows of friedman1 (5 of 25 features relevant, noise
    0.5): test RMSE ≤ 0.55 (isotropic default: 1.29; fit 43–51 CPU s on one thread, which is a
    benchmark's to time, not a test's)."""
    X, y, X_test, y_test = friedman1_issue33
    gp = DSGGaussianProcessRegressor(random_state=0).fit(X, y)
    rmse = np.sqrt(np.mean((gp.predict(X_test) - y_test) ** 2))
    assert rmse <= 0.55, rmse
    assert gp.lengthscales_[5:].min() > 3 * gp.lengthscales_[:5].max()


def _counted_lengthscale_fits(monkeypatch) -> list:
    """The rows of every per-feature fit the GP runs, in order."""
    from kernelstream.estimators import gp as gp_module
    rows, fit = [], gp_module.fit_lengthscales
    monkeypatch.setattr(gp_module, "fit_lengthscales",
                        lambda X, *args, **kwargs: rows.append(len(X)) or fit(X, *args, **kwargs))
    return rows


def test_a_screen_on_half_the_evidence_rows_spares_the_full_per_feature_fit(monkeypatch):
    """Equally relevant features: per-feature lengthscales fitted on the first half of the
    evidence rows do not beat the isotropic fit there by the screen's margin, so none is fitted
    on every row; ``kernel_choice_loo_`` is the screen's evidence."""
    from kernelstream.solvers.lengthscales import PER_FEATURE_SCREEN_RATIO
    rows = _counted_lengthscale_fits(monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = np.sin(X).sum(1) + 0.3 * rng.normal(size=400)
    gp = DSGGaussianProcessRegressor(**SMALL).fit(X, y)
    assert rows == [200] and gp.kernel_choice_ == "isotropic"
    loo = gp.kernel_choice_loo_
    assert np.isfinite(loo).all() and loo[0] > PER_FEATURE_SCREEN_RATIO * loo[1], loo


@pytest.mark.slow
def test_relevant_features_pass_the_screen_and_the_guard(friedman, monkeypatch):
    """friedman1's five noise features: the screen on half the evidence rows passes, the
    per-feature fit on every row is kept by the guard."""
    rows = _counted_lengthscale_fits(monkeypatch)
    X, y = friedman
    gp = DSGGaussianProcessRegressor(**SMALL).fit(X, y)
    assert len(rows) == 2 and rows[0] < rows[1] and gp.kernel_choice_ == "per_feature"
