"""Novelty detection and density-ratio estimation on the shared solver."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.svm import OneClassSVM

from kernelstream import DSGDensityRatio, DSGOneClass
from kernelstream.features import sigma_to_gamma


def _mixture(seed=0, n=4000):
    rng = np.random.default_rng(seed)
    inliers = np.vstack([rng.normal([-2, 0], 0.7, (n // 2, 2)), rng.normal([2, 1], 1.0, (n // 2, 2))])
    outliers = rng.uniform(-6, 6, (int(0.05 * n / 0.95), 2))
    X = np.vstack([inliers, outliers])
    return X, np.r_[np.zeros(len(inliers)), np.ones(len(outliers))]


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.5, 1.0])
def test_one_class_auc_matches_one_class_svm(sigma):
    X, is_outlier = _mixture()
    svm = OneClassSVM(nu=0.5, gamma=sigma_to_gamma(sigma)).fit(X)
    ours = DSGOneClass(nu=0.5, sigma=sigma, random_state=0).fit(X)
    auc_svm = roc_auc_score(is_outlier, -svm.decision_function(X))
    auc_ours = roc_auc_score(is_outlier, -ours.decision_function(X))
    assert abs(auc_ours - auc_svm) <= 0.02, (auc_ours, auc_svm)


def test_one_class_api_and_nu_property():
    X, _ = _mixture()
    det = DSGOneClass(nu=0.5, sigma=1.0, random_state=0).fit(X)
    np.testing.assert_allclose(det.score_samples(X) - det.offset_, det.decision_function(X))
    pred = det.predict(X)
    assert set(np.unique(pred)) <= {-1, 1}
    assert 0.3 < np.mean(pred == -1) < 0.6  # about ν of the training points are flagged
    assert det.predict([[0.0, 10.0]])[0] == -1


def test_one_class_partial_fit_equals_fit_on_the_same_stream():
    X = _mixture(n=2048)[0][:2048]  # whole batches: a stream buffers an incomplete last batch
    a = DSGOneClass(sigma=1.0, shuffle=False, max_iter=1, solver="sgd", random_state=0).fit(X)
    b = DSGOneClass(sigma=1.0, shuffle=False, random_state=0).partial_fit(X)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def _gaussians(seed, n=10000):
    rng = np.random.default_rng(seed)
    return rng.normal(0, 1, (n, 2)), 0.5 + 1.5 * rng.normal(0, 1, (n, 2))


def _true_log_ratio(x):  # log N(x; 0, I) − log N(x; 0.5, 1.5² I) in 2-D
    return -0.5 * (x**2).sum(1) + ((x - 0.5) ** 2).sum(1) / 4.5 + np.log(2.25)


TRUE_KL = 0.5 * (2 / 2.25 + 0.5 / 2.25 - 2 + 2 * np.log(2.25))


@pytest.mark.slow
def test_density_ratio_recovers_log_ratio_and_kl():
    p, q = _gaussians(0)
    est = DSGDensityRatio(random_state=0).fit(p, q)
    x = np.random.default_rng(5).normal(0, 1, (5000, 2))
    rmse = np.sqrt(np.mean((est.log_ratio(x) - _true_log_ratio(x)) ** 2))
    assert rmse < 0.15, rmse
    assert abs(est.kl_divergence_ - TRUE_KL) / TRUE_KL < 0.10, est.kl_divergence_
    np.testing.assert_allclose(est.ratio(x[:10]), np.exp(est.log_ratio(x[:10])))


def test_density_ratio_unequal_sizes_and_streaming():
    p, q = _gaussians(1, n=6000)
    est = DSGDensityRatio(random_state=0)
    for i in range(0, 6000, 2000):
        est.partial_fit(p[i : i + 2000], q[i // 2 : i // 2 + 1000])  # q arrives half as fast
    x = np.random.default_rng(5).normal(0, 1, (3000, 2))
    assert np.sqrt(np.mean((est.log_ratio(x) - _true_log_ratio(x)) ** 2)) < 0.3


def test_density_ratio_partial_fit_equals_fit_on_the_same_stream():
    p, q = _gaussians(2, n=2048)
    a = DSGDensityRatio(shuffle=False, max_iter=1, solver="sgd", random_state=0).fit(p, q)
    b = DSGDensityRatio(shuffle=False, random_state=0).partial_fit(p, q)
    np.testing.assert_array_equal(a.log_ratio(p[:100]), b.log_ratio(p[:100]))


def test_bad_input_is_refused_and_changes_nothing():
    p, q = _gaussians(3, n=1000)
    est = DSGDensityRatio(batch_size=256, block_size=64, random_state=0).fit(p, q)
    before = est.log_ratio(p[:50])
    with pytest.raises(ValueError, match="NaN"):
        est.fit(np.full_like(p, np.nan), q)
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(p, q[:, :1])
    with pytest.raises(ValueError, match="0 sample"):
        est.partial_fit(p[:0], q)
    np.testing.assert_array_equal(est.log_ratio(p[:50]), before)
    det = DSGOneClass(batch_size=256, block_size=64, random_state=0).fit(p)
    before = det.decision_function(p[:50])
    with pytest.raises(ValueError, match="infinity"):
        det.partial_fit(np.where(p > 2, np.inf, p))
    with pytest.raises(ValueError, match="'nu' parameter"):
        DSGOneClass(nu=1.5).fit(p)
    np.testing.assert_array_equal(det.decision_function(p[:50]), before)


def _features(model, X):
    """``Φ̃`` of ``X`` on a fitted model's map (its blocks, scaled ``1/√J``)."""
    import torch
    feature_map, J = model.expansion_.feature_map, model.expansion_.n_blocks
    rows = torch.as_tensor(X, dtype=torch.float32)
    return (feature_map.features(rows, range(J)).reshape(len(X), -1) / np.sqrt(J)).double().numpy()


def test_the_newton_one_class_is_the_one_class_svm_on_its_features():
    """Scaled by ``1/ν`` the objective is scikit-learn's ``½‖w‖² + Σξ/(νn) − ρ``: on the kernel
    ``Φ̃Φ̃ᵀ`` of the model's own features OneClassSVM ranks new rows as the model does and
    flags the same share; a share ν of the training rows is flagged."""
    X, _ = _mixture(n=1000)
    model = DSGOneClass(nu=0.3, sigma=1.0, random_state=0).fit(X)
    assert model.n_components_ == 1024 and abs(np.mean(model.predict(X) == -1) - 0.3) <= 0.01
    Phi = _features(model, X)
    svm = OneClassSVM(nu=0.3, kernel="precomputed").fit(Phi @ Phi.T)
    test = np.random.default_rng(1).uniform(-5, 5, (500, 2))
    ours, theirs = model.decision_function(test), svm.decision_function(_features(model, test) @ Phi.T)
    assert np.corrcoef(ours, theirs)[0, 1] > 0.995
    assert np.mean((ours >= 0) == (theirs >= 0)) > 0.97


def test_the_newton_density_ratio_chooses_alpha_and_normalises():
    """``alpha="auto"`` keeps an ``α`` of the table by the held-out loss, a given ``α`` is
    solved as given; at the optimum the free intercept gives ``E_q[e^f] = 1`` on the rows."""
    from kernelstream.planning import LIMITS
    p, q = _gaussians(4, n=3000)
    chosen = DSGDensityRatio(random_state=0).fit(p, q)
    assert chosen.alpha_ in LIMITS.density_ratio_alphas
    assert chosen.n_components_ == LIMITS.novelty_features
    given = DSGDensityRatio(alpha=1e-3, random_state=0).fit(p, q)
    assert given.alpha_ == 1e-3
    for model in (chosen, given):
        assert abs(np.mean(model.ratio(q)) - 1) < 1e-3
    x = np.random.default_rng(5).normal(0, 1, (3000, 2))
    rmse = np.sqrt(np.mean((chosen.log_ratio(x) - _true_log_ratio(x)) ** 2))
    sgd = DSGDensityRatio(solver="sgd", random_state=0).fit(p, q)
    assert rmse <= np.sqrt(np.mean((sgd.log_ratio(x) - _true_log_ratio(x)) ** 2)) + 0.01


def test_a_changed_table_reaches_the_novelty_fits_without_patching():
    """``fit(limits=...)`` runs the fit on that table (nothing patched): the one-class fit's
    features are ``novelty_features``, the density ratio's ``α`` is chosen among
    ``density_ratio_alphas``; a table of the wrong type is refused and changes nothing."""
    import dataclasses

    from kernelstream.planning import LIMITS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 2))
    small = dataclasses.replace(LIMITS, novelty_features=256)
    assert DSGOneClass(nu=0.1, random_state=0).fit(X, limits=small).n_components_ == 256
    assert DSGOneClass(nu=0.1, random_state=0).fit(X).n_components_ == LIMITS.novelty_features
    one = dataclasses.replace(LIMITS, density_ratio_alphas=(3e-3,))
    ratio = DSGDensityRatio(random_state=0).fit(X, rng.normal(0, 2, size=(1500, 2)), limits=one)
    assert ratio.alpha_ == 3e-3
    fitted = DSGOneClass(nu=0.1, random_state=0).fit(X)
    before = fitted.decision_function(X[:5])
    with pytest.raises(TypeError, match="dataclasses.replace"):
        fitted.fit(X, limits={"novelty_features": 256})
    np.testing.assert_array_equal(fitted.decision_function(X[:5]), before)
