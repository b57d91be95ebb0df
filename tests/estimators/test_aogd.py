"""AOGDClassifier and the pairwise solver: oracle loop, chunk invariance, O(D) state, conformance."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification, make_moons

from kernelstream import AOGDClassifier
from kernelstream.solvers.pairwise import (PairwiseState, aogd_chunk, chunk_update,
                                           pair_directions, pairwise_loss_derivative)

from support import FLOAT32_EPS, runs_on_cuda, shared_dataset

SMALL = dict(n_components=64, random_state=0)


# -- the solver against a plain per-example loop (Algorithm 1 as printed) ---------------------
def naive_aogd(Z, positive, coins, eta, gamma, lam, loss, weights=None):
    """The last iterate, or with ``weights`` (one per example) also ``Σ_t ω_t w_t``."""
    G, D = eta.shape[0], Z.shape[1]
    w = torch.zeros(G, D, dtype=torch.float64)
    total = torch.zeros(G, D, dtype=torch.float64)
    sums, counts, random = torch.zeros(2, D, dtype=torch.float64), [0, 0], [None, None]
    for t in range(Z.shape[0]):
        c = int(positive[t])
        o, sign = 1 - c, (1.0 if c else -1.0)
        if counts[o]:
            for partner, step in ((sums[o] / counts[o], eta[:, t]), (random[o], gamma[:, t])):
                d = sign * (Z[t] - partner)  # z⁺ − z⁻
                g = pairwise_loss_derivative(loss, w @ d)
                w = w - step[:, None] * (g[:, None] * d + lam * w)
        sums[c] += Z[t]
        if counts[c] == 0 or coins[t]:
            random[c] = Z[t].clone()
        counts[c] += 1
        if weights is not None:
            total += weights[t] * w
    return w if weights is None else (w, total)


def _stream(m=150, D=12, G=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    Z = torch.randn(m, D, generator=g, dtype=torch.float64) / 3
    positive = torch.rand(m, generator=g) < 0.3
    coins = torch.rand(m, generator=g) < 0.4
    eta = torch.rand(G, m, generator=g, dtype=torch.float64) * 0.3
    gamma = torch.rand(G, m, generator=g, dtype=torch.float64) * 0.3
    lam = torch.tensor([[1e-3], [0.0], [0.1]], dtype=torch.float64)[:G]
    return Z, positive, coins, eta, gamma, lam


@pytest.mark.parametrize("loss, chunk, D", [
    ("squared", 1, 12), ("squared", 7, 12), ("squared", 150, 12), ("squared", 150, 200),
    ("squared", 150, 3),  # few features: the affine maps are composed instead
    ("hinge", 1, 12), ("hinge", 150, 12), ("logistic", 7, 12), ("logistic", 150, 3),
])
def test_chunked_solver_equals_the_per_example_loop(loss, chunk, D):
    Z, positive, coins, eta, gamma, lam = _stream(D=D)
    expected = naive_aogd(Z, positive, coins, eta, gamma, lam, loss)
    state, w = PairwiseState.empty(Z.shape[1]), torch.zeros(3, Z.shape[1], dtype=torch.float64)
    for i in range(0, Z.shape[0], chunk):
        s = slice(i, i + chunk)
        w = aogd_chunk(w, state, Z[s], positive[s], coins[s], eta[:, s], gamma[:, s], lam, loss)
    torch.testing.assert_close(w, expected, rtol=1e-10, atol=1e-12)
    assert state.t == Z.shape[0] and state.counts.tolist() == [int((~positive).sum()), int(positive.sum())]


@pytest.mark.parametrize("loss, chunk, D", [
    ("squared", 7, 12), ("squared", 150, 200), ("squared", 150, 3), ("squared", 40, 3),
    ("hinge", 150, 12), ("logistic", 7, 3),
])
def test_iterate_sum_equals_the_per_example_loop(loss, chunk, D):
    """The weighted sum of the per-example iterates (an averaged model), on every solver path."""
    Z, positive, coins, eta, gamma, lam = _stream(D=D)
    weights = (torch.arange(Z.shape[0]) >= 20).to(torch.float64)  # average from example 21 on
    expected_w, expected_sum = naive_aogd(Z, positive, coins, eta, gamma, lam, loss, weights)
    state, w = PairwiseState.empty(D), torch.zeros(3, D, dtype=torch.float64)
    total = torch.zeros(3, D, dtype=torch.float64)
    for i in range(0, Z.shape[0], chunk):
        s = slice(i, i + chunk)
        w = aogd_chunk(w, state, Z[s], positive[s], coins[s], eta[:, s], gamma[:, s], lam, loss,
                       example_weights=weights[s], iterate_sum=total)
    torch.testing.assert_close(w, expected_w, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(total, expected_sum, rtol=1e-10, atol=1e-11)


def test_iterate_sum_needs_both_arguments():
    with pytest.raises(ValueError, match="both"):
        chunk_update(torch.zeros(1, 2, dtype=torch.float64), torch.eye(1, dtype=torch.float64),
                     torch.ones(1, 2, dtype=torch.float64), torch.ones(1, 1, dtype=torch.float64),
                     torch.zeros(1, 1, dtype=torch.float64), iterate_weights=torch.ones(1))


@pytest.mark.parametrize("loss", ["squared", "hinge"])
def test_steps_with_several_rows_average_their_gradients(loss):
    """``step_of_row`` (a buffer of pairs per step, as reservoir OGD uses) against a loop."""
    g = torch.Generator().manual_seed(1)
    R, D, K = 20, 6, 8
    dirs = torch.randn(R, D, generator=g, dtype=torch.float64)
    step_of_row = torch.sort(torch.randint(0, K, (R,), generator=g)).values
    alphas = torch.rand(2, K, generator=g, dtype=torch.float64) * 0.2
    lam = torch.tensor([[0.05], [0.0]], dtype=torch.float64)
    w0 = torch.randn(2, D, generator=g, dtype=torch.float64)
    w = w0.clone()
    for k in range(K):
        rows = dirs[step_of_row == k]
        if len(rows):
            grad = (pairwise_loss_derivative(loss, w @ rows.T).unsqueeze(2) * rows).mean(1)
            w = w - alphas[:, k : k + 1] * (grad + lam * w)
    got = chunk_update(w0, torch.eye(R, dtype=torch.float64), dirs, alphas, lam, loss, step_of_row)
    torch.testing.assert_close(got, w, rtol=1e-10, atol=1e-12)


def test_random_example_replacement():
    """p = 1 pairs with the previous opposite example; p = 0 keeps the first one forever."""
    Z = torch.arange(6, dtype=torch.float64).unsqueeze(1) + 1.0  # z_t = t + 1; partner: its value
    positive = torch.tensor([True, False, False, True, False, True])
    for coin, partner in ((True, [0, 1, 1, 3, 4, 5]), (False, [0, 1, 1, 2, 1, 2])):
        T, B, valid = pair_directions(Z, positive, torch.full((6,), coin), PairwiseState.empty(1))
        d_random = (T @ B)[1::2, 0]
        z_plus_minus = torch.where(positive, Z[:, 0] - torch.tensor(partner, dtype=torch.float64),
                                   torch.tensor(partner, dtype=torch.float64) - Z[:, 0])
        assert valid.tolist() == [False, True, True, True, True, True]
        torch.testing.assert_close(d_random[1:], z_plus_minus[1:])


def test_mean_direction_uses_the_running_mean_of_the_opposite_class():
    Z = torch.tensor([[1.0], [2.0], [4.0], [8.0]], dtype=torch.float64)
    positive = torch.tensor([True, True, False, True])
    state = PairwiseState.empty(1)
    T, B, _ = pair_directions(Z[:2], positive[:2], torch.ones(2, dtype=torch.bool), state)
    T, B, valid = pair_directions(Z[2:], positive[2:], torch.ones(2, dtype=torch.bool), state)
    mean_dirs = (T @ B)[0::2, 0]
    torch.testing.assert_close(mean_dirs, torch.tensor([1.5 - 4.0, 8.0 - 4.0], dtype=torch.float64))
    assert valid.all() and state.counts.tolist() == [1, 3]


# -- the estimator ---------------------------------------------------------------------------
def _assert_same_coef(online, full):
    """Chunked and whole fits: equal up to float64 summation order on the CPU (a row's float32
    features come out in the same bits in any batch there). On CUDA a row's features round
    with its batch's shape, and 600+ data-dependent steps carry that round-off (an H100: 0.4
    float32 eps of max |coef|, 1.6e-5 relative on a small entry): atol = 64 float32 eps of it."""
    if runs_on_cuda(full):
        atol = 64 * FLOAT32_EPS * np.abs(full.coef_).max()
        np.testing.assert_allclose(online.coef_, full.coef_, rtol=0, atol=atol)
    else:
        np.testing.assert_allclose(online.coef_, full.coef_, rtol=1e-9, atol=1e-12)


def test_partial_fit_in_any_chunks_equals_fit_without_shuffle():
    X, y = make_moons(700, noise=0.2, random_state=0)
    params = dict(n_components=128, sigma=0.7, random_state=3, shuffle=False)  # (median: 1st chunk)
    full = AOGDClassifier(**params, batch_size=50).fit(X, y)
    online = AOGDClassifier(**params, batch_size=17)
    for i in range(0, 700, 123):
        online.partial_fit(X[i : i + 123], y[i : i + 123], classes=[0, 1])
    _assert_same_coef(online, full)
    assert online.t_ == full.t_ == 700 and online.n_iter_ == 6


def test_gamma0_defaults_to_eta0():
    X, y = make_moons(400, noise=0.2, random_state=0)
    params = dict(n_components=64, eta0=0.3, random_state=1)
    default = AOGDClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(default.coef_, AOGDClassifier(**params, gamma0=0.3).fit(X, y).coef_)
    assert not np.allclose(default.coef_, AOGDClassifier(**params, gamma0=0.075).fit(X, y).coef_)


@pytest.mark.parametrize("average, first, kernel, atol", [
    (True, 0, "linear", 1e-12), (150, 149, "linear", 1e-12),
    (True, 0, "rbf", 1e-6),  # float32 features round differently in a 1-row and a 37-row GEMM
])
@pytest.mark.slow
def test_average_is_the_mean_of_the_per_example_iterates(average, first, kernel, atol):
    """Oracle: feed one example at a time without averaging and average the iterates by hand."""
    X, y = make_moons(400, noise=0.3, random_state=2)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)  # k(x, x) = 1: one step scale however started
    params = dict(kernel=kernel, n_components=64, sigma=0.7, eta0=0.2, learning_rate="constant",
                  random_state=5)
    stepper, iterates = AOGDClassifier(**params), []
    for i in range(400):
        stepper.partial_fit(X[i : i + 1], y[i : i + 1], classes=[0, 1])
        iterates.append(stepper.coef_)
    averaged = AOGDClassifier(**params, average=average, shuffle=False, batch_size=37).fit(X, y)
    np.testing.assert_allclose(averaged.coef_, np.mean(iterates[first:], axis=0), rtol=1e-9, atol=atol)
    np.testing.assert_allclose(averaged.iterate_, stepper.coef_, rtol=1e-9, atol=atol)
    assert averaged.n_averaged_ == 400 - first and stepper.n_averaged_ == 0


def test_averaged_partial_fit_in_pieces_equals_fit():
    X, y = make_moons(600, noise=0.2, random_state=0)
    params = dict(n_components=128, sigma=0.7, random_state=3, shuffle=False, average=100)
    full = AOGDClassifier(**params).fit(X, y)
    online = AOGDClassifier(**params, batch_size=11)
    for i in range(0, 600, 70):  # averaging starts inside the second piece
        online.partial_fit(X[i : i + 70], y[i : i + 70], classes=[0, 1])
    _assert_same_coef(online, full)
    assert online.n_averaged_ == full.n_averaged_ == 501
    assert online.score(X, y) > 0.9


def test_average_before_its_start_is_the_last_iterate():
    X, y = make_moons(200, noise=0.2, random_state=0)
    clf = AOGDClassifier(n_components=32, random_state=0, average=1000).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, clf.iterate_)
    assert clf.n_averaged_ == 0


@pytest.mark.parametrize("loss", ["squared", "hinge", "logistic"])
@pytest.mark.parametrize("kernel", ["rbf", "laplace"])
def test_losses_rank_well(loss, kernel):
    X, y = make_moons(1500, noise=0.2, random_state=1)
    clf = AOGDClassifier(loss=loss, kernel=kernel, n_components=256, random_state=0).fit(X[:1000], y[:1000])
    assert clf.score(X[1000:], y[1000:]) > 0.95
    assert (clf.predict(X[1000:]) == y[1000:]).mean() > 0.85


def test_linear_kernel_and_string_labels():
    X, y = make_classification(600, 5, random_state=0)
    labels = np.array(["no", "yes"])[y]
    clf = AOGDClassifier(kernel="linear", random_state=0).fit(X, labels)
    assert clf.n_components_ == 5 and clf.feature_map_ is None
    assert clf.score(X, labels) > 0.9 and set(clf.predict(X)) <= {"no", "yes"}


def test_state_is_O_of_D_after_a_million_examples():
    """10^6 examples from a drifting stream: the fitted state holds 5·D + 2 numbers, as after 10^3."""
    D, n, chunk = 8, 10**6, 100_000
    rng = np.random.default_rng(0)
    direction = rng.normal(size=D)
    clf = AOGDClassifier(kernel="linear", batch_size=20_000, random_state=0)
    sizes = []
    for i in range(0, n, chunk):
        X = rng.normal(size=(chunk, D))
        y = (X @ direction + rng.normal(size=chunk) > 0).astype(int)
        clf.partial_fit(X, y, classes=[0, 1])
        sizes.append(clf.state_.numel() + clf.coef_.size)
    assert clf.t_ == n and sizes == [5 * D + 2] * len(sizes)
    assert int(clf.state_.counts.sum()) == n
    X = rng.normal(size=(5000, D))
    assert clf.score(X, (X @ direction > 0).astype(int)) > 0.99


# -- bad input: clear errors, nothing changed ------------------------------------------------
@pytest.fixture
def fitted():
    X, y = make_classification(300, 4, random_state=0)
    return X, y, AOGDClassifier(n_components=64, random_state=0).fit(X, y)


def _snapshot(clf, X):
    return (clf.decision_function(X), clf.coef_.copy(), clf.threshold_, clf.t_,
            clf.state_.sums.clone(), clf.state_.counts.clone(), clf.state_.random.clone())


def _host(value):
    return value.cpu() if isinstance(value, torch.Tensor) else value


def _assert_unchanged(clf, X, before):
    for a, b in zip(_snapshot(clf, X), before):
        np.testing.assert_array_equal(np.asarray(_host(a)), np.asarray(_host(b)))


BAD = {
    "nan": (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X), y), "NaN"),
    "inf": (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 5, np.inf, X), y), "infinity"),
    "features": (lambda X, y: (X[:, :3], y), "3 features, but AOGDClassifier is expecting 4"),
    "empty": (lambda X, y: (X[:0], y[:0]), "0 sample"),
    "three_classes": (lambda X, y: (X, np.arange(len(y)) % 3), "not in classes_"),
    "lengths": (lambda X, y: (X, y[:10]), "inconsistent numbers of samples"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("method", ["partial_fit", "decision_function"])
def test_bad_input_is_refused_and_changes_nothing(fitted, case, method):
    X, y, clf = fitted
    if method == "decision_function" and case in ("three_classes", "lengths"):
        pytest.skip("no labels")
    before = _snapshot(clf, X)
    Xbad, ybad = BAD[case][0](X.copy(), y.copy())
    with pytest.raises(ValueError, match=BAD[case][1]):
        clf.partial_fit(Xbad, ybad) if method == "partial_fit" else clf.decision_function(Xbad)
    _assert_unchanged(clf, X, before)


@pytest.mark.parametrize("y_bad, params, message", [
    (lambda y: np.arange(len(y)) % 3, {}, "Only binary classification is supported"),
    (lambda y: np.zeros(len(y)), {}, "needs at least 2 classes"),
    (lambda y: np.linspace(0, 1, len(y)), {}, "Unknown label type"),
    (lambda y: y, {"kernel": "nope"}, "Unknown kernel 'nope'"),
    (lambda y: y, {"loss": "nope"}, "'loss' parameter of AOGDClassifier"),
    (lambda y: y, {"p": 1.5}, "'p' parameter"),
    (lambda y: y, {"alpha": 10.0, "eta0": 0.5, "learning_rate": "constant"}, "eta \\* lambda"),
])
def test_bad_fit_is_refused_and_changes_nothing(fitted, y_bad, params, message):
    X, y, clf = fitted
    before = _snapshot(clf, X)
    defaults = {k: clf.get_params()[k] for k in params}
    clf.set_params(**params)
    with pytest.raises(ValueError, match=message):
        clf.fit(X, y_bad(y))
    clf.set_params(**defaults)
    _assert_unchanged(clf, X, before)


def test_first_partial_fit_with_one_class_needs_classes():
    X, y = make_classification(100, 4, random_state=0)
    with pytest.raises(ValueError, match="needs at least 2 classes"):
        AOGDClassifier().partial_fit(X[y == 0], y[y == 0])
    clf = AOGDClassifier(n_components=64).partial_fit(X[y == 0], y[y == 0], classes=[0, 1])
    assert not clf.coef_.any()  # nothing to pair with yet
    clf.partial_fit(X[y == 1], y[y == 1])
    assert clf.coef_.any()


# -- defaults on real data (the acceptance numbers) ----------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name, floor", [("a9a", 0.88), ("usps", 0.90)])
def test_default_parameters_reach_the_required_auc(name, floor):
    data = shared_dataset(name)
    y_train, y_test = data["y_train"], data["y_test"]
    if name == "usps":  # even digits vs odd digits (the documented binary split)
        y_train, y_test = y_train % 2, y_test % 2
    clf = AOGDClassifier(random_state=0).fit(data["X_train"], y_train)
    assert clf.score(data["X_test"], y_test) >= floor


def test_score_refuses_foreign_or_single_class_labels():
    X, y = make_moons(300, noise=0.2, random_state=0)
    labels = np.array(["a", "b"])[y]
    clf = AOGDClassifier(n_components=32, random_state=0).fit(X, labels)
    with pytest.raises(ValueError, match="not in classes_"):
        clf.score(X, y)  # 0/1 instead of "a"/"b": would be an undefined AUC
    with pytest.raises(ValueError, match="both classes"):
        clf.score(X[labels == "a"], labels[labels == "a"])
    assert clf.score(X, labels) > 0.9


@pytest.mark.parametrize("kernel, expected", [("rbf", 1.0), ("laplace", 1.0), ("linear", None)])
def test_step_scale_is_one_over_the_mean_kernel_diagonal(kernel, expected):
    X, y = make_moons(500, noise=0.2, random_state=0)
    X = 3.0 * X  # ‖x‖² ≈ 9: the linear kernel's steps shrink accordingly
    clf = AOGDClassifier(kernel=kernel, n_components=64, random_state=0).fit(X, y)
    want = expected if expected is not None else 1.0 / np.mean(np.sum(X**2, axis=1))
    assert clf.step_scale_ == pytest.approx(want, rel=1e-12)


def test_linear_default_step_is_stable_on_raw_features():
    """Unscaled inputs (‖x‖² ≈ 14 on average): the default η = 0.5 would overshoot."""
    X, y = make_classification(3000, 14, n_informative=6, random_state=0)
    X = 2.0 * X
    clf = AOGDClassifier(kernel="linear", random_state=0).fit(X[:2000], y[:2000])
    assert clf.score(X[2000:], y[2000:]) > 0.85


def test_verbose_fit_and_stream_show_progress(capsys):
    from sklearn.datasets import make_classification

    X, y = make_classification(300, 5, random_state=0)
    AOGDClassifier(verbose=1, n_components=64, random_state=0).fit(X, y)
    assert "AOGDClassifier" in capsys.readouterr().err
    stream = AOGDClassifier(verbose=1, n_components=64, random_state=0)
    for i in range(0, 300, 100):
        stream.partial_fit(X[i : i + 100], y[i : i + 100], classes=[0, 1])
    assert stream._stream_progress._bar.n == 300
