"""GoGPRegressor's per-feature lengthscales (issue 33): ``sigma="auto"`` fits one per feature by
the marginal likelihood on the first rows and keeps them when the leave-one-out guard says they
clearly pay; a given array is used exactly; the friedman1 check of the issue holds."""


import numpy as np
import pytest
import torch
from sklearn.base import clone

from kernelstream import GoGPRegressor


def test_irrelevant_features_get_larger_lengthscales(friedman):
    X, y = friedman
    model = GoGPRegressor(random_state=0).fit(X, y)
    ell = model.lengthscales_
    assert model.kernel_choice_ == "per_feature" and np.array_equal(model.sigma_, ell)
    assert ell.shape == (10,) and ell[5:].min() > ell[:5].max(), ell
    assert model.kernel_choice_loo_[0] <= 0.8 * model.kernel_choice_loo_[1]
    assert 0.15 < model.noise_ < 0.4  # true 0.25
    x, step = torch.zeros(1, 10, dtype=torch.float64), torch.zeros(1, 10, dtype=torch.float64)
    step[0, 7] = float(ell[7])  # one lengthscale along feature 7: k = exp(−½) for the rbf
    assert float(model.feature_map_.kernel(x, step)) == pytest.approx(np.exp(-0.5), rel=1e-12)


def test_equally_relevant_features_keep_one_bandwidth():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = np.sin(X).sum(1) + 0.3 * rng.normal(size=400)
    model = GoGPRegressor(random_state=0).fit(X, y)
    assert model.kernel_choice_ == "isotropic" and isinstance(model.sigma_, float)
    np.testing.assert_array_equal(model.lengthscales_, np.full(4, model.sigma_))


def test_given_lengthscales_are_used_exactly_and_survive_clone(friedman):
    X, y = friedman
    ell = np.linspace(1.0, 3.0, 10)
    model = GoGPRegressor(sigma=ell, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.sigma_, ell)
    assert model.kernel_choice_ == "per_feature" and np.isnan(model.kernel_choice_loo_).all()
    again = clone(model).fit(X, y)
    np.testing.assert_array_equal(again.predict(X[:5]), model.predict(X[:5]))
    stream = GoGPRegressor(sigma=ell, random_state=0)
    for a in range(0, 100, 10):
        stream.partial_fit(X[a:a + 10], y[a:a + 10])
    np.testing.assert_array_equal(stream.lengthscales_, ell)
    with pytest.raises(ValueError):
        GoGPRegressor(sigma=np.ones(3)).fit(X, y)


@pytest.mark.slow
def test_friedman1_defaults(friedman1_issue33):
    """Issue 33: 6,000 standardised training rows of friedman1 (5 of 25 features relevant, noise
    0.5): GoGPRegressor() test RMSE ≤ 0.75 (isotropic default: 1.57; fit about 4 CPU s, which
    is a benchmark's to time, not a test's)."""
    X, y, X_test, y_test = friedman1_issue33
    model = GoGPRegressor(random_state=0).fit(X, y)
    rmse = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
    assert rmse <= 0.75, rmse  # 0.515 measured
    assert model.lengthscales_[5:].min() > 3 * model.lengthscales_[:5].max()
