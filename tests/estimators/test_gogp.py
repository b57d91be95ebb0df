"""GoGP (issue 7): exact-GP oracle at join_threshold = 0, Schur/Sherman–Morrison state, sparsity,
streaming contract, bad input, scikit-learn conformance and the abalone checks."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF
from sklearn.model_selection import train_test_split

from kernelstream import GoGPRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.features import make_feature_map
from kernelstream.solvers.gogp import GoGPKernelState
from kernelstream.solvers.gogp_rf import GoGPFeatureState

from support import shared_dataset

@pytest.fixture(scope="module")
def synthetic():
    X, y, _ = synthetic_regression(400, random_state=0, dtype=np.float64)
    Xt, yt, _ = synthetic_regression(300, random_state=1, dtype=np.float64)
    return X, y, Xt, yt


def _exact(X, y, Xt, sigma, noise):
    gp = GaussianProcessRegressor(RBF(sigma), alpha=noise, optimizer=None).fit(X, y)
    return gp.predict(Xt, return_std=True)


@pytest.mark.parametrize("warmup_fraction", [0.0, 0.1, 1.0])
def test_join_threshold_zero_is_the_exact_gp(synthetic, warmup_fraction):
    """θ = 0 keeps every point: std (Prop. 1) and mean equal the exact posterior's."""
    X, y, Xt, _ = synthetic
    model = GoGPRegressor(sigma=1.0, noise=0.01, join_threshold=0.0, warmup_fraction=warmup_fraction,
                          max_inducing=None, random_state=0).fit(X, y)
    mean0, std0 = _exact(X, y - model.y_offset_, Xt, 1.0, 0.01)  # prior mean: y_offset_
    # scikit-learn's std with alpha=noise is that of f: compare GoGP's std of f, not of y
    mean, std = model.predict(Xt, return_std=True, include_noise=False)
    assert model.n_inducing_ == len(X)
    np.testing.assert_allclose(std, std0, rtol=1e-4)
    np.testing.assert_allclose(mean - model.y_offset_, mean0, rtol=1e-4, atol=1e-6)


def test_default_std_is_that_of_a_new_target():
    """Issue 30 item 8: ``predict(return_std=True)`` includes the noise by default, as
    DSGGaussianProcessRegressor's does, so its 95% intervals cover new targets (f's band alone
    covered 79-87% of them here)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (1000, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(1000)
    model = GoGPRegressor(random_state=0).fit(X[:400], y[:400])
    mean, std = model.predict(X[400:], return_std=True)
    _, std_f = model.predict(X[400:], return_std=True, include_noise=False)
    np.testing.assert_allclose(std**2, std_f**2 + model.noise_, rtol=1e-12)
    assert 0.90 <= np.mean(np.abs(y[400:] - mean) <= 1.96 * std) <= 0.99


def test_noise_is_fitted_on_more_than_the_warm_start(synthetic):
    """The "auto" hyper-parameters use the first min(n, 500) rows, not only the warm-start
    10%: on 40 rows the noise came out at 0.003 (true 0.01) and the intervals covered 79%."""
    X, y, Xt, yt = synthetic
    model = GoGPRegressor(random_state=0).fit(X, y)
    assert 0.006 < model.noise_ < 0.015
    mean, std = model.predict(Xt, return_std=True)
    assert 0.90 <= np.mean(np.abs(yt - mean) <= 1.96 * std) <= 0.98


def test_sparse_set_is_small_and_accurate(synthetic):
    X, y, Xt, yt = synthetic
    X2, y2, _ = synthetic_regression(1200, random_state=2, dtype=np.float64)
    X, y = np.vstack([X, X2]), np.concatenate([y, y2])
    mean0, _ = _exact(X, y - y.mean(), Xt, 1.0, 0.01)
    model = GoGPRegressor(sigma=1.0, noise=0.01, join_threshold=0.1, random_state=0).fit(X, y)
    rmse = np.sqrt(np.mean((model.predict(Xt) - yt) ** 2))
    rmse0 = np.sqrt(np.mean((mean0 + y.mean() - yt) ** 2))
    assert model.n_inducing_ < 0.2 * len(X)
    assert rmse <= 1.05 * rmse0


def test_schur_inverse_and_rls_state_match_direct_formulas():
    rng = np.random.default_rng(0)
    X = torch.tensor(rng.uniform(-2, 2, (120, 2)))
    z = torch.tensor(rng.standard_normal(120))
    fm = make_feature_map("rbf", 2, 0.7, 2, 0)
    state = GoGPKernelState(fm.kernel, 0.05, 0.2, n_features_in=2, max_inducing=12)
    for x, zi in zip(X, z):
        state.update(x, float(zi))
    G = fm.kernel(state.U, state.U) + 0.05 * torch.eye(state.size, dtype=torch.float64)
    torch.testing.assert_close(state.Ginv, torch.linalg.inv(G), rtol=1e-8, atol=1e-8)
    assert state.size == 12 and state.n_removed > 0
    # γ = P r and P stays symmetric positive definite through removals
    torch.testing.assert_close(state.gamma, state.P @ state.r, rtol=1e-8, atol=1e-8)
    assert torch.linalg.eigvalsh(state.P).min() > 0


def test_rls_without_removals_is_least_squares_on_projections():
    rng = np.random.default_rng(1)
    X = torch.tensor(rng.uniform(-2, 2, (80, 2)))
    z = torch.tensor(rng.standard_normal(80))
    fm = make_feature_map("rbf", 2, 1.0, 2, 0)
    state = GoGPKernelState(fm.kernel, 0.05, 0.3, n_features_in=2)
    for x, zi in zip(X, z):
        state.update(x, float(zi))
    # γ solves the least-squares problem over the projections each point had when it arrived
    replay = GoGPKernelState(fm.kernel, 0.05, 0.3, n_features_in=2)
    rows = []
    for x, zi in zip(X, z):
        k, d, var, same = replay.project(x)
        joins = same is None and var**0.5 > 0.3
        replay.update(x, float(zi))
        rows.append((d, joins, float(zi)))
    m = state.size
    A = torch.zeros((len(rows), m), dtype=torch.float64)
    for i, (d, joins, _) in enumerate(rows):
        if joins:
            A[i, sum(r[1] for r in rows[:i])] = 1.0
        else:
            A[i, :len(d)] = d
    b = torch.tensor([r[2] for r in rows], dtype=torch.float64)
    gamma = torch.linalg.lstsq(A, b[:, None]).solution[:, 0]
    torch.testing.assert_close(state.gamma, gamma, rtol=1e-7, atol=1e-7)


def test_random_feature_posterior_is_bayesian_linear_regression():
    rng = np.random.default_rng(0)
    Phi = torch.tensor(rng.standard_normal((50, 16))) / 4
    z = torch.tensor(rng.standard_normal(50))
    state = GoGPFeatureState(16, 0.1)
    for phi, zi in zip(Phi, z):
        state.update(phi, float(zi))
    Sigma = torch.linalg.inv(torch.eye(16, dtype=torch.float64) + Phi.T @ Phi / 0.1)
    torch.testing.assert_close(state.Sigma, Sigma, rtol=1e-8, atol=1e-10)
    torch.testing.assert_close(state.w, Sigma @ Phi.T @ z / 0.1, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("variant", ["kernel", "random_features"])
def test_partial_fit_rows_equal_fit_without_warm_start(synthetic, variant):
    X, y, Xt, _ = synthetic
    params = dict(sigma=1.0, noise=0.01, join_threshold=0.05, warmup_fraction=0.0, variant=variant,
                  n_components=64, random_state=0)
    chunks = np.array_split(np.arange(150), 7)
    y = y[:150].copy()  # first chunk and whole set share their mean (fit's prior mean)
    y[chunks[0]] -= y[chunks[0]].mean()
    y[chunks[0][-1] + 1:] -= y[chunks[0][-1] + 1:].mean()
    full = GoGPRegressor(**params).fit(X[:150], y)
    stream = GoGPRegressor(**params)
    for rows in chunks:
        stream.partial_fit(X[rows], y[rows])
    assert stream.n_inducing_ == full.n_inducing_ and stream.t_ == full.t_ == 150
    m1, s1 = full.predict(Xt, return_std=True)
    m2, s2 = stream.predict(Xt, return_std=True)
    np.testing.assert_allclose(s1, s2, rtol=1e-8)
    np.testing.assert_allclose(m1, m2, atol=1e-8)
    assert stream.progressive_rmse_ == pytest.approx(full.progressive_rmse_, rel=1e-8)


def test_pickle_mid_stream_continues_identically(synthetic):
    X, y, Xt, _ = synthetic
    a = GoGPRegressor(random_state=0).partial_fit(X[:100], y[:100])
    b = pickle.loads(pickle.dumps(a))
    a.partial_fit(X[100:200], y[100:200])
    b.partial_fit(X[100:200], y[100:200])
    np.testing.assert_array_equal(a.predict(Xt), b.predict(Xt))
    assert a.progressive_rmse_ == b.progressive_rmse_


def test_budget_is_kept(synthetic):
    X, y, Xt, yt = synthetic
    model = GoGPRegressor(sigma=1.0, noise=0.01, join_threshold=0.0, max_inducing=50,
                          random_state=0).fit(X, y)
    assert model.n_inducing_ == 50
    assert np.sqrt(np.mean((model.predict(Xt) - yt) ** 2)) < 0.3 * np.std(yt) + 0.1


@pytest.mark.parametrize("bad, message", [
    (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X), "NaN"),
    (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, np.inf, X), "infinity"),
    (lambda X: X[:, :1], "1 features, but GoGPRegressor is expecting 2"),
    (lambda X: X[:0], "0 sample"),
])
@pytest.mark.parametrize("method", ["partial_fit", "predict"])
def test_bad_input_is_refused_and_changes_nothing(synthetic, bad, message, method):
    X, y, Xt, _ = synthetic
    model = GoGPRegressor(random_state=0).fit(X[:100], y[:100])
    before = (model.predict(Xt, return_std=True), model.n_inducing_, model.t_,
              model.progressive_rmse_)
    Xbad = bad(X[:20].copy())
    with pytest.raises(ValueError, match=message):
        if method == "predict":
            model.predict(Xbad)
        else:
            model.partial_fit(Xbad, y[: len(Xbad)])
    after = (model.predict(Xt, return_std=True), model.n_inducing_, model.t_,
             model.progressive_rmse_)
    np.testing.assert_array_equal(after[0][0], before[0][0])
    np.testing.assert_array_equal(after[0][1], before[0][1])
    assert after[1:] == before[1:]


def test_bad_targets_and_parameters_are_named(synthetic):
    X, y, _, _ = synthetic
    model = GoGPRegressor(random_state=0).fit(X[:50], y[:50])
    t = model.t_
    with pytest.raises(ValueError, match="NaN"):
        model.partial_fit(X[:10], np.full(10, np.nan))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        model.partial_fit(X[:10], y[:5])
    assert model.t_ == t
    with pytest.raises(ValueError, match="Unknown kernel 'nope'"):
        GoGPRegressor(kernel="nope").fit(X, y)
    with pytest.raises(ValueError, match="'variant' parameter"):
        GoGPRegressor(variant="nope").fit(X, y)
    with pytest.raises(ValueError, match="'join_threshold' parameter"):
        GoGPRegressor(join_threshold=-1.0).fit(X, y)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["kernel", "random_features"])
def test_abalone_progressive_rmse_and_calibration(variant):
    """Issue 30 item 8: with the defaults, predict(return_std=True) gives 95% intervals that
    cover 0.90-0.98 of held-out targets (a seeded 80/20 split; 0.76, and 0.16 for the feature
    variant, when the default std was that of f)."""
    data = shared_dataset("abalone")
    X, y = data["X"].astype(np.float64), data["y"].astype(np.float64)
    order = np.random.default_rng(0).permutation(len(X))
    model = GoGPRegressor(variant=variant, random_state=0).fit(X[order], y[order])
    assert model.progressive_rmse_ <= 2.31
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
    held = GoGPRegressor(variant=variant, random_state=0).fit(X_train, y_train)
    mean, std = held.predict(X_test, return_std=True)
    coverage = np.mean(np.abs(mean - y_test) <= 1.96 * std)
    assert 0.90 <= coverage <= 0.98


@pytest.mark.slow
def test_friedman1_calibration_with_defaults():
    """A second data set for item 8 (noise variance 1, 1,600 training rows)."""
    X, y = make_friedman1(2000, noise=1.0, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
    model = GoGPRegressor(random_state=0).fit(X_train, y_train)
    mean, std = model.predict(X_test, return_std=True)
    assert 0.90 <= np.mean(np.abs(mean - y_test) <= 1.96 * std) <= 0.98
    assert 0.8 < model.noise_ < 1.25


def test_overflowing_inputs_raise_instead_of_predicting_nan():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X[:, 0]
    with pytest.raises(ValueError, match="values up to .*overflow float64.*StandardScaler"):
        GoGPRegressor(random_state=0).fit(X * 1e200, y)
    model = GoGPRegressor(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="overflow float64"):
        model.predict(X * 1e200)


def test_verbose_fit_and_stream_show_progress(capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = np.sin(X[:, 0])
    GoGPRegressor(verbose=1, random_state=0).fit(X, y)
    assert "GoGPRegressor" in capsys.readouterr().err
    stream = GoGPRegressor(verbose=1, random_state=0)
    for i in range(0, 120, 40):
        stream.partial_fit(X[i : i + 40], y[i : i + 40])
    assert stream._stream_progress._bar.n == 120
