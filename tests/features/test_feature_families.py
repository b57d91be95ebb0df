"""Feature families beyond plain Fourier features: the FeatureMap contract for each, their exact
kernels against closed forms and scikit-learn, variance reduction, and input checks."""

import math
import time

import numpy as np
import pytest
import torch

from kernelstream.features import KERNELS, make_feature_map
from kernelstream.features.structured import fwht
from support import DEVICES

# (kernel, kernel_params, data, sigma): "normal" rows N(0, I_8), "unit" the same rows normalised,
# "hist" Dirichlet(1) histograms.
RANDOM_FAMILIES = [
    ("polynomial", {"degree": 3, "coef0": 1.0}, "unit", 1.0),
    ("polynomial", {"degree": 2, "coef0": 0.0}, "normal", 3.0),
    ("exp_dot", {}, "unit", 1.0),
    ("dot_product", {"coefs": [0.5, 1.0, 0.5, 0.25]}, "unit", 1.0),
    ("arccos", {"order": 0}, "normal", 1.0),
    ("arccos", {"order": 1}, "normal", 3.0),
    ("arccos", {"order": 2, "sampling": "orthogonal"}, "unit", 1.0),
    ("chi2", {"order": 3}, "hist", 0.7),  # the default order 2 leaves a 2% VZ bias here
    ("rbf", {"sampling": "orthogonal"}, "normal", 2.0),
    ("rbf", {"sampling": "sobol"}, "normal", 2.0),
    ("rbf", {"sampling": "halton"}, "normal", 2.0),
    ("rbf_fastfood", {}, "normal", 2.0),
    ("matern", {"nu": 1.5, "sampling": "orthogonal"}, "normal", 2.0),
    ("matern", {"nu": 2.5, "sampling": "sobol"}, "normal", 2.0),
    ("laplace", {"sampling": "halton"}, "normal", 4.0),
]
VZ_FAMILIES = ["additive_chi2", "intersection", "js", "hellinger"]
ALL = RANDOM_FAMILIES + [(k, {}, "hist", 1.0) for k in VZ_FAMILIES]
NON_NEGATIVE = VZ_FAMILIES + ["chi2", "exp_chi2"]


def _data(kind, n=200, d=8, seed=0, dtype=torch.float64):
    g = np.random.default_rng(seed)
    if kind == "hist":
        X = g.dirichlet(np.ones(d), size=n)
    else:
        X = g.normal(size=(n, d))
        if kind == "unit":
            X /= np.linalg.norm(X, axis=1, keepdims=True)
    return torch.as_tensor(X, dtype=dtype)


def _ids(cases):
    return [f"{k}-{p}" for k, p, *_ in cases]


def _make(name, params, sigma, d=8, block_size=256, seed=3):
    return make_feature_map(name, d, sigma, block_size, seed, kernel_params=params)


# -- the contract, every family ------------------------------------------------------------
@pytest.mark.parametrize("name, params, data, sigma", RANDOM_FAMILIES, ids=_ids(RANDOM_FAMILIES))
def test_gram_error_shrinks_like_inverse_sqrt_D(name, params, data, sigma):
    X = _data(data)
    fm = _make(name, params, sigma)
    K = fm.kernel(X, X)
    scale = K.abs().max()
    errors = {}
    for D in (2**8, 2**10, 2**12, 2**14):
        Z = fm.transform(X, D // fm.block_size)
        E = Z @ Z.T - K
        errors[D] = float(E.abs().max() / scale)
    assert abs(E.mean()) <= 0.01 * scale  # unbiased (chi2: up to the VZ bias)
    assert list(errors.values()) == sorted(errors.values(), reverse=True), errors
    assert errors[2**14] <= 0.1, errors
    ratio = errors[2**8] / errors[2**14]  # 64x the features: about 8x smaller (4x..16x)
    assert 4 <= ratio <= 16, ratio


@pytest.mark.parametrize("name, params, data, sigma", ALL, ids=_ids(ALL))
def test_block_regenerated_identically(name, params, data, sigma):
    fm = _make(name, params, sigma, block_size=64)
    late = fm._draw(7, torch.device("cpu"))
    fm._draw(2, torch.device("cpu"))
    assert late.dtype == torch.float64
    assert torch.equal(late, _make(name, params, sigma, block_size=64)._draw(7, torch.device("cpu")))
    X = _data(data, n=10)
    together = fm.features(X, [3, 7])
    assert together.shape == (10, 2, 64)
    torch.testing.assert_close(together[:, 1], fm.features(X, [7])[:, 0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, params, data, sigma", ALL, ids=_ids(ALL))
def test_float32_agrees_with_float64(name, params, data, sigma):
    fm = _make(name, params, sigma)
    X = _data(data, n=50)
    Z64 = fm.features(X, [0, 1])
    Z32 = fm.features(X.float(), [0, 1])
    assert Z32.dtype == torch.float32
    tol = 3e-4 * float(Z64.abs().max())  # Cauchy frequencies are large: float32 phases
    torch.testing.assert_close(Z32.double(), Z64, atol=tol, rtol=1e-4)


@pytest.mark.parametrize("name, params, data, sigma", ALL, ids=_ids(ALL))
def test_config_rebuilds_the_same_map(name, params, data, sigma):
    fm = _make(name, params, sigma)
    config = dict(fm.config())
    kernel, d, s = config.pop("kernel"), config.pop("n_features_in"), config.pop("sigma")
    r, seed = config.pop("block_size"), config.pop("seed")
    again = make_feature_map(kernel, d, s, r, seed, kernel_params=config)
    X = _data(data, n=10)
    assert torch.equal(again.features(X, [0, 5]), fm.features(X, [0, 5]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, params, data, sigma", ALL, ids=_ids(ALL))
def test_same_block_on_every_device(name, params, data, sigma, device):
    fm = _make(name, params, sigma)
    X = _data(data, n=10)
    cpu = fm.features(X, [11])
    other = fm.features(X.to(device), [11]).cpu()
    torch.testing.assert_close(other, cpu, rtol=1e-9, atol=1e-9)


# -- Vedaldi–Zisserman maps ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["additive_chi2", "js"])  # intersection: random features
def test_vz_error_is_small_and_decreases_with_order(name):
    X = _data("hist")
    errors = []
    for order in (1, 2, 3, 4):
        fm = make_feature_map(name, 8, 1.0, 256, 0, kernel_params={"order": order})
        Z = fm.transform(X, 1)  # m = 8(2n+1) <= 256: one block is the whole embedding
        errors.append(float((Z @ Z.T - fm.kernel(X, X)).abs().max()))
    assert errors == sorted(errors, reverse=True), errors
    bound = {"additive_chi2": 0.01, "js": 0.005}[name]  # kernel values are <= 1
    assert errors[2] < bound, errors


def test_vz_blocks_split_a_large_embedding_without_bias():
    X = _data("hist", n=30)
    fm = make_feature_map("additive_chi2", 8, 1.0, 16, 5, kernel_params={"order": 2})  # m = 40: P = 3
    Phi = fm.embed(X)
    for first in (0, 3):  # P consecutive blocks from a multiple of P: exactly the embedding
        Z = fm.features(X, range(first, first + 3)).reshape(30, -1)
        torch.testing.assert_close(Z @ Z.T / 3, Phi @ Phi.T, rtol=1e-12, atol=1e-12)
    assert not torch.equal(fm.features(X, [0]), fm.features(X, [3]))  # a fresh permutation


def test_hellinger_map_is_exact():
    X = _data("hist")
    fm = make_feature_map("hellinger", 8, 1.0, 64, 0)
    Z = fm.transform(X, 3)
    torch.testing.assert_close(Z @ Z.T, fm.kernel(X, X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", NON_NEGATIVE)
def test_negative_input_raises(name):
    fm = make_feature_map(name, 8, 1.0, 64, 0)
    X = _data("hist", n=5)
    X[2, 3] = -0.1
    with pytest.raises(ValueError, match="non-negative"):
        fm.features(X, [0])
    with pytest.raises(ValueError, match="non-negative"):
        fm.kernel(X, X)


def test_estimator_rejects_negative_input_for_additive_kernels():
    from kernelstream import DSGClassifier

    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match="non-negative"):
        DSGClassifier(kernel="chi2", block_size=16, batch_size=8, random_state=0).fit(X, X[:, 0] > 0)
    with pytest.raises(ValueError, match="non-negative"):
        DSGClassifier(kernel="additive_chi2", block_size=16, batch_size=8,
                      random_state=0).fit(X, X[:, 0] > 0)


# -- exact kernels ---------------------------------------------------------------------------
def test_exact_kernels_match_scikit_learn_and_closed_forms():
    from sklearn.metrics.pairwise import additive_chi2_kernel, chi2_kernel, polynomial_kernel

    H, Hy = _data("hist", 20).numpy(), _data("hist", 15, seed=1).numpy()
    H[0, :4] = 0  # zeros in histograms are common
    X, Y = _data("normal", 20).numpy(), _data("normal", 15, seed=1).numpy()

    def ours(name, A, B, sigma=1.0, **params):
        fm = make_feature_map(name, A.shape[1], sigma, 8, 0, kernel_params=params)
        return fm.kernel(torch.as_tensor(A), torch.as_tensor(B)).numpy()

    close = np.testing.assert_allclose
    sums = H.sum(1)[:, None] + Hy.sum(1)[None, :]  # Σ 2xy/(x+y) = (Σx + Σy − Σ (x−y)²/(x+y))/2
    close(ours("additive_chi2", H, Hy), (sums + additive_chi2_kernel(H, Hy)) / 2, rtol=1e-12)
    close(ours("chi2", H, Hy, gamma=0.7), chi2_kernel(H, Hy, gamma=0.7), rtol=1e-12)  # same name
    close(ours("chi2", H, Hy, sigma=2.0), chi2_kernel(H, Hy, gamma=1 / 8), rtol=1e-12)
    close(ours("exp_chi2", H, Hy, gamma=0.7), chi2_kernel(H, Hy, gamma=0.7), rtol=1e-12)
    np.testing.assert_allclose(ours("polynomial", X, Y, 2.0, degree=3, coef0=0.5),
                               polynomial_kernel(X, Y, degree=3, gamma=0.25, coef0=0.5), rtol=1e-12)
    np.testing.assert_allclose(ours("exp_dot", X, Y, 3.0), np.exp(X @ Y.T / 9), rtol=1e-12)
    a, b = H[:, None, :], Hy[None, :, :]
    np.testing.assert_allclose(ours("intersection", H, Hy), np.minimum(a, b).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(ours("hellinger", H, Hy), np.sqrt(a * b).sum(-1), rtol=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        js = np.nan_to_num(a / 2 * np.log2((a + b) / a)) + np.nan_to_num(b / 2 * np.log2((a + b) / b))
    np.testing.assert_allclose(ours("js", H, Hy), js.sum(-1), rtol=1e-12)


def test_arccos_kernel_closed_forms_and_monte_carlo():
    x = torch.tensor([[3.0, 4.0, 0.0]], dtype=torch.float64)  # ‖x‖ = 5
    y = torch.tensor([[0.0, 0.0, 2.0]], dtype=torch.float64)  # orthogonal to x, ‖y‖ = 2
    zero = torch.zeros((1, 3), dtype=torch.float64)

    def k(order, A, B):
        fm = make_feature_map("arccos", 3, 1.0, 8, 0, kernel_params={"order": order})
        return float(fm.kernel(A, B))

    assert k(0, x, x) == pytest.approx(1) and k(0, x, -x) == pytest.approx(0, abs=1e-12)
    assert k(1, x, x) == pytest.approx(25) and k(2, x, x) == pytest.approx(3 * 625)
    assert k(0, x, y) == pytest.approx(0.5) and k(1, x, y) == pytest.approx(10 / math.pi)
    assert k(2, x, y) == pytest.approx(100 / 2)  # J_2(π/2) = π/2
    assert k(0, zero, x) == pytest.approx(0.5) and k(1, zero, x) == 0
    # k_n(x, y) = 2 E[Θ(wᵀx) Θ(wᵀy) (wᵀx)ⁿ (wᵀy)ⁿ] by brute force (Cho & Saul, Eq. 1)
    u, v = _data("normal", 2, d=3, seed=4)
    w = torch.as_tensor(np.random.default_rng(0).normal(size=(400_000, 3)))
    a, b = w @ u, w @ v
    for order in (0, 1, 2):
        mc = 2 * torch.mean((a > 0) * (b > 0) * (a * b) ** order)
        assert k(order, u[None], v[None]) == pytest.approx(float(mc), rel=0.03)


def test_zero_histogram_rows_are_handled():
    X = _data("hist", 6)
    X[1] = 0
    for name in NON_NEGATIVE:
        fm = make_feature_map(name, 8, 1.0, 256, 0)
        assert torch.isfinite(fm.kernel(X, X)).all() and torch.isfinite(fm.features(X, [0])).all()


def test_bad_family_parameters_are_clear():
    cases = [("polynomial", {"degree": 0}, "degree"), ("polynomial", {"coef0": -1}, "coef0"),
             ("arccos", {"order": 3}, "order"), ("additive_chi2", {"order": 0}, "order"),
             ("chi2", {"order": 0}, "order"),
             ("dot_product", {"coefs": [1, -1]}, "coefs"),
             ("exp_dot", {"max_degree": -1}, "max_degree"),
             ("laplace", {"sampling": "orthogonal"}, "sampling"),
             ("rbf", {"sampling": "lattice"}, "sampling"), ("chi2", {"gamma": -1.0}, "gamma")]
    for name, params, word in cases:
        with pytest.raises(ValueError, match=word):
            make_feature_map(name, 4, 1.0, 8, 0, kernel_params=params)
    with pytest.raises(ValueError, match="multiple of 2"):
        make_feature_map("rbf_fastfood", 4, 1.0, 7, 0)


# -- variance reduction ----------------------------------------------------------------------
def _mean_gram_error(sampling, d, sigma, block_size, D, seeds=range(6)):
    X = _data("normal", d=d)
    errors = []
    for seed in seeds:
        fm = make_feature_map("rbf", d, sigma, block_size, seed, kernel_params={"sampling": sampling})
        Z = fm.transform(X, D // block_size)
        errors.append(float((Z @ Z.T - fm.kernel(X, X)).abs().mean()))
    return np.mean(errors)


def test_orthogonal_features_beat_iid_features():
    iid = _mean_gram_error("iid", 16, 8.0, 64, 2**10)
    assert _mean_gram_error("orthogonal", 16, 8.0, 64, 2**10) < 0.8 * iid  # measured: 0.45x


def test_qmc_features_beat_iid_features_in_low_dimension():
    iid = _mean_gram_error("iid", 4, 1.0, 256, 2**10)
    assert _mean_gram_error("sobol", 4, 1.0, 256, 2**10) < 0.8 * iid  # measured: 0.56x
    assert _mean_gram_error("halton", 4, 1.0, 256, 2**10) < 0.8 * iid  # measured: 0.63x


def test_fwht_matches_the_hadamard_matrix():
    from scipy.linalg import hadamard

    for p in (1, 2, 64, 128, 2**13):
        x = torch.as_tensor(np.random.default_rng(p).normal(size=(3, p)))
        torch.testing.assert_close(fwht(x), x @ torch.as_tensor(hadamard(p), dtype=x.dtype).T)


def test_fastfood_regenerates_blocks_faster_than_dense_gaussian_blocks():
    """A loose speed check (the timings are in benchmarks/results/kernels.md): regenerating and
    evaluating a block at d = 1024 (r = 2d) measured 2.6x faster than dense; assert only faster."""
    X = _data("normal", n=128, d=1024, dtype=torch.float32)
    maps = {name: make_feature_map(name, 1024, 30.0, 2048, 0) for name in ("rbf", "rbf_fastfood")}
    best = {name: math.inf for name in maps}
    for block in range(4):
        for name, fm in maps.items():
            start = time.perf_counter()
            fm._features(X, [fm._draw(block, torch.device("cpu")).float()])
            best[name] = min(best[name], time.perf_counter() - start)
    assert best["rbf_fastfood"] < best["rbf"], best


# -- the registry and the estimators ----------------------------------------------------------
def test_every_family_is_registered():
    for name in ["polynomial", "exp_dot", "dot_product", "arccos", "arccos0", "arccos1", "arccos2",
                 "chi2", "additive_chi2", "intersection", "hellinger", "js", "exp_chi2", "rbf_orf",
                 "rbf_qmc",
                 "rbf_halton", "rbf_fastfood"]:
        assert name in KERNELS


@pytest.mark.slow
@pytest.mark.parametrize("kernel, params", [("polynomial", {"degree": 3}), ("arccos", None),
                                            ("exp_dot", None), ("chi2", None), ("additive_chi2", None),
                                            ("rbf_fastfood", None), ("rbf_orf", None)])
def test_estimators_accept_the_families_and_save_them(kernel, params, tmp_path):
    from kernelstream import DSGClassifier, RandomFeatures, load

    g = np.random.default_rng(0)
    X = g.uniform(0, 1, size=(300, 5))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.8).astype(int)
    model = DSGClassifier(kernel=kernel, kernel_params=params, block_size=32, batch_size=32,
                          max_iter=3, random_state=0).fit(X, y)
    assert model.score(X, y) > 0.8
    model.save(tmp_path / "model.safetensors")
    np.testing.assert_array_equal(load(tmp_path / "model.safetensors").decision_function(X),
                                  model.decision_function(X))
    features = RandomFeatures(kernel=kernel, kernel_params=params, n_components=64, random_state=0)
    Z = features.fit_transform(X)
    assert Z.shape == (300, 64) and np.isfinite(Z).all()


@pytest.mark.parametrize("kernel, params", [("additive_chi2", None), ("hellinger", None),
                                            ("js", None), ("arccos", {"order": 0}),
                                            ("arccos0", None)])
def test_sigma_free_families_report_sigma_one(kernel, params):
    from kernelstream import DSGClassifier, RandomFeatures

    X = np.random.default_rng(0).uniform(0, 1, size=(80, 4))
    fm = make_feature_map(kernel, 4, 7.0, 16, 0, kernel_params=params)
    assert fm.sigma == 1.0 and fm.config()["sigma"] == 1.0
    Z = fm.features(torch.as_tensor(X), [0])
    torch.testing.assert_close(Z, _make(kernel, params, 1.0, d=4, block_size=16, seed=0)
                               .features(torch.as_tensor(X), [0]))
    clf = DSGClassifier(kernel=kernel, kernel_params=params, block_size=16, batch_size=16,
                        max_iter=1, random_state=0).fit(X, X[:, 0] > 0.5)
    assert clf.sigma_ == 1.0
    rf = RandomFeatures(kernel=kernel, kernel_params=params, n_components=16, random_state=0).fit(X)
    assert rf.sigma_ == 1.0


def test_families_with_a_scale_keep_their_sigma():
    for kernel, params in [("arccos", None), ("arccos2", None), ("chi2", None)]:
        assert make_feature_map(kernel, 4, 7.0, 16, 0, kernel_params=params).sigma == 7.0


@pytest.mark.parametrize("kernel", ["chi2", "exp_chi2", "additive_chi2", "hellinger", "js"])
def test_negative_input_error_names_the_requested_kernel(kernel):
    """The exponentiated χ² map embeds with the additive one: its error still names the kernel
    the user asked for (not 'additive_chi2'), and says what to do."""
    fm = make_feature_map(kernel, 3, 1.0, 16, 0)
    X = torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match=f"kernel '{kernel}' needs non-negative.*MinMaxScaler"):
        fm.features(X, [0])
    with pytest.raises(ValueError, match=f"kernel '{kernel}' needs non-negative"):
        fm.kernel(X, X.abs())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_dense_count_sketch_is_the_scattered_one(dtype):
    """CUDA's default, the batched GEMM with signed one-hot matrices (deterministic: no atomics),
    gives the sketches that ``index_add_`` gives; and the same bits on every call."""
    from kernelstream.features.dot_product import count_sketch

    g = torch.Generator().manual_seed(3)
    X = torch.randn(40, 9, generator=g, dtype=dtype)
    index = torch.randint(0, 16, (3, 9), generator=g)
    signs = torch.randint(0, 2, (3, 9), generator=g).to(dtype) * 2 - 1
    scattered = count_sketch(X, index, signs, 16, dense=False)
    dense = count_sketch(X, index, signs, 16, dense=True)
    assert dense.shape == scattered.shape == (40, 3, 16)
    torch.testing.assert_close(dense, scattered)
    assert torch.equal(dense, count_sketch(X, index, signs, 16, dense=True))
