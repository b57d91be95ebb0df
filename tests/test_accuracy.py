"""Accuracy on the issue's checks: the synthetic task against a peer, a9a, MNIST 8 vs 6, and a
binary boundary without label noise.

These are the slowest tests (seconds each); they use the library's defaults, as the checks do.
"""

import numpy as np
import pytest

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.planning import default_features
from kernelstream.datasets import synthetic_regression
from kernelstream.features import median_distance, sigma_to_gamma
from support import shared_dataset

pytestmark = pytest.mark.slow


def test_synthetic_one_pass_within_2x_and_default_within_1_3x_of_rbf_sampler_ridge():
    X, y, _ = synthetic_regression(2**16, random_state=0)
    X_test, _, f_test = synthetic_regression(10_000, random_state=1)
    sigma = 0.1 * median_distance(X)  # the paper's bandwidth for this set
    model = DSGRegressor(sigma=sigma, solver="one_pass", random_state=0).fit(X, y)
    ours = np.mean((model.predict(X_test) - f_test) ** 2)
    assert model.t_ == 32  # one pass of 2^16 / 2048
    default = DSGRegressor(sigma=sigma, alpha=1e-6, random_state=0).fit(X, y)
    converged = np.mean((default.predict(X_test) - f_test) ** 2)

    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import Ridge

    sampler = RBFSampler(gamma=sigma_to_gamma(sigma), n_components=4096, random_state=0)
    ridge = Ridge(alpha=1e-6 * len(X)).fit(sampler.fit_transform(X), y)
    peer = np.mean((ridge.predict(sampler.transform(X_test)) - f_test) ** 2)
    assert ours <= 2 * peer, (ours, peer)
    assert converged <= 1.3 * peer, (converged, peer)  # issue 16: the default solver


def test_a9a_default_classifier():
    data = shared_dataset("a9a")
    clf = DSGClassifier(random_state=0).fit(data["X_train"], data["y_train"])
    error = 1 - clf.score(data["X_test"], data["y_test"])
    assert error <= 0.150, error  # issue 16: at most 15.0% (measured 14.85-14.91%)


def test_mnist_8_vs_6_default_classifier():
    from sklearn.decomposition import PCA

    data = shared_dataset("mnist")
    train = np.isin(data["y_train"], (6, 8))
    test = np.isin(data["y_test"], (6, 8))
    pca = PCA(50, random_state=0).fit(data["X_train"][train] / 255.0)
    X_train = pca.transform(data["X_train"][train] / 255.0)
    X_test = pca.transform(data["X_test"][test] / 255.0)
    clf = DSGClassifier(random_state=0).fit(X_train, data["y_train"][train])
    error = 1 - clf.score(X_test, data["y_test"][test])
    assert error <= 0.006, error  # issue 16: no regression below 0.6% (measured 0.41%)


def test_a9a_stream_is_the_same_model_for_any_chunk_size():
    """Rows are buffered until a batch is full: chunks of 256 and 4096 give one model."""
    data = shared_dataset("a9a")
    X, y, X_test, y_test = data["X_train"], data["y_train"], data["X_test"], data["y_test"]
    models = []
    for chunk in (256, 4096):
        model = DSGClassifier(random_state=0)
        for i in range(0, len(X), chunk):
            model.partial_fit(X[i : i + chunk], y[i : i + chunk], classes=[-1, 1])
        models.append(model)
    small, large = models
    budget = -(-default_features(len(X)) // 1024) * 1024  # the stream's O(√n log n) budget, whole blocks
    assert small.n_components_ == large.n_components_ <= budget
    errors = [1 - m.score(X_test, y_test) for m in models]
    assert abs(errors[0] - errors[1]) <= 0.002 and max(errors) < 0.16


def test_binary_default_on_few_rows_finds_a_noise_free_boundary():
    """``make_hastie_10_2`` (a sphere's boundary in ten dimensions, no label noise) on 1,200
    training rows, the dual route: least squares and the squared hinge compared by leave-one-out
    on 512 of the rows, the hinge kept for fewer leave-one-out errors, every row then solved
    exactly: measured 2.46% test error on 1,300 rows in about a second (2.31% in 8 s when every
    row chose); least squares alone (the default before) chose a quarter of the bandwidth and
    reached 7.46%."""
    from sklearn.datasets import make_hastie_10_2
    from sklearn.preprocessing import StandardScaler

    X, y = make_hastie_10_2(2500, random_state=0)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    clf = DSGClassifier(random_state=0).fit(X[:1200], y[:1200])
    error = 1 - clf.score(X[1200:], y[1200:])
    assert clf.fit_plan_.route == "dual" and clf.loss_ == "squared_hinge" and error <= 0.035, error


def test_binary_default_finds_a_noise_free_boundary():
    """``make_hastie_10_2`` (labels: which side of a sphere in ten dimensions, no label noise),
    2,500 training rows, beyond the dual route: the subsample route compares least squares and
    the squared hinge by leave-one-out on 1,024 of the rows, keeps the hinge, and solves it by
    Newton's method at full size: measured 1.73% test error in 2.9 CPU s (the epochs route
    before: 2.27%; least squares, the default before that: 5.4%, the held-out failure of
    ``benchmarks/results/shared_defaults_loss.md``)."""
    from sklearn.datasets import make_hastie_10_2
    from sklearn.preprocessing import StandardScaler

    X, y = make_hastie_10_2(4000, random_state=0)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    clf = DSGClassifier(random_state=0).fit(X[:2500], y[:2500])
    error = 1 - clf.score(X[2500:], y[2500:])
    assert clf.fit_plan_.route == "subsample" and set(clf.cv_results_["n_rows"]) == {clf.fit_plan_.selection_rows}
    assert clf.loss_ == "squared_hinge" and error <= 0.025, error


def test_friedman1_regressor_finds_the_relevant_features(friedman1_issue33):
    """``make_friedman1`` with 20 irrelevant features of 25 (issue 33): ``sigma="auto"`` tries
    per-feature lengthscales of greatest GP marginal likelihood on 500 subsample rows and keeps
    them for a lower leave-one-out loss; measured RMSE 0.512 (noise 0.5) in 4.9 CPU s, against
    1.459 isotropic."""
    X, y, X_test, y_test = friedman1_issue33
    model = DSGRegressor(random_state=0).fit(X, y)
    rmse = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
    assert rmse <= 0.55, rmse
    assert model.lengthscales_[:5].max() < model.lengthscales_[5:].min()  # relevance
