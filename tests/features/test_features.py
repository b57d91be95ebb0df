"""Feature maps: the FeatureMap contract for every registered family (SciPy-QMC style mixin)."""

import numpy as np
import pytest
import torch

from kernelstream.features import (KERNELS, GaussianRFF, gamma_to_sigma, make_feature_map,
                                   median_distance, register_kernel, resolve_sigma, sigma_to_gamma)
from support import DEVICES

FAMILIES = [("rbf", {}), ("laplace", {}), ("matern", {"nu": 0.5}), ("matern", {"nu": 1.5}),
            ("matern", {"nu": 2.5})]


def _points(n=200, d=4, seed=0):
    return torch.as_tensor(np.random.default_rng(seed).normal(size=(n, d)), dtype=torch.float64)


@pytest.mark.parametrize("name, params", FAMILIES)
class TestFeatureMapContract:
    def make(self, name, params, block_size=256, seed=3, sigma=2.0):
        return make_feature_map(name, 4, sigma, block_size, seed, kernel_params=params)

    def test_block_identical_when_drawn_twice_and_out_of_order(self, name, params):
        fm = self.make(name, params)
        late = fm._draw(7, torch.device("cpu"))
        fm._draw(2, torch.device("cpu"))
        again = self.make(name, params)._draw(7, torch.device("cpu"))
        assert torch.equal(late, again)
        X = _points(10)
        together = fm.features(X, [3, 7])
        torch.testing.assert_close(together[:, 1], fm.features(X, [7])[:, 0], rtol=1e-12, atol=1e-12)

    def test_gram_error_shrinks_like_inverse_sqrt_D(self, name, params):
        X = _points()
        fm = self.make(name, params)
        K = fm.kernel(X, X)
        errors = {}
        for D in (2**8, 2**10, 2**12, 2**14):
            Z = fm.transform(X, D // fm.block_size)
            errors[D] = (Z @ Z.T - K).abs()
        # sklearn-style bounds at D = 2^14: bias, mean and max error
        E = Z @ Z.T - K
        assert abs(E.mean()) <= 0.01
        assert errors[2**14].mean() <= 0.05 and errors[2**14].max() <= 0.1
        # max error ~ 1/sqrt(D): 64x more features, about 8x smaller error (allow 4x..16x)
        ratio = errors[2**8].max() / errors[2**14].max()
        assert 4 <= ratio <= 16, ratio

    def test_float32_agrees_with_float64(self, name, params):
        fm = self.make(name, params)
        X = _points(50)
        Z64 = fm.features(X, [0, 1])
        Z32 = fm.features(X.float(), [0, 1])
        assert Z32.dtype == torch.float32
        torch.testing.assert_close(Z32.double(), Z64, atol=2e-5, rtol=1e-4)

    def test_kernel_is_one_on_the_diagonal_and_symmetric(self, name, params):
        X = _points(30)
        K = self.make(name, params).kernel(X, X)
        torch.testing.assert_close(torch.diagonal(K), torch.ones(30, dtype=K.dtype))
        torch.testing.assert_close(K, K.T)

    @pytest.mark.parametrize("device", DEVICES)
    def test_same_block_on_every_device(self, name, params, device):
        fm = self.make(name, params)
        cpu = fm._draw(11, torch.device("cpu"))
        other = fm._draw(11, torch.device(device)).cpu()
        torch.testing.assert_close(other, cpu, rtol=1e-12, atol=1e-12)


def test_exact_kernels_match_closed_forms():
    from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

    X = _points(20, 3)
    rbf = make_feature_map("rbf", 3, 1.5, 8, 0).kernel(X, X).numpy()
    np.testing.assert_allclose(rbf, rbf_kernel(X.numpy(), gamma=sigma_to_gamma(1.5)), rtol=1e-12)
    lap = make_feature_map("laplace", 3, 1.5, 8, 0).kernel(X, X).numpy()
    np.testing.assert_allclose(lap, laplacian_kernel(X.numpy(), gamma=1 / 1.5), rtol=1e-12)
    from sklearn.gaussian_process.kernels import Matern

    for nu in (0.5, 1.5, 2.5, 3.5):
        ours = make_feature_map("matern", 3, 1.5, 8, 0, kernel_params={"nu": nu}).kernel(X, X)
        np.testing.assert_allclose(ours.numpy(), Matern(length_scale=1.5, nu=nu)(X.numpy()),
                                   rtol=1e-8, atol=1e-12)


def test_odd_block_sizes_use_random_phases():
    X = _points(100)
    fm = make_feature_map("rbf", 4, 2.0, 255, 1)
    Z = fm.transform(X, 64)
    assert Z.shape == (100, 255 * 64)
    assert (Z @ Z.T - fm.kernel(X, X)).abs().max() < 0.1


def test_matern_rejects_non_half_integer_nu():
    with pytest.raises(ValueError, match="half-integer"):
        make_feature_map("matern", 2, 1.0, 8, 0, kernel_params={"nu": 0.7})


def test_unknown_kernel_and_bad_params_are_clear():
    with pytest.raises(ValueError, match="Unknown kernel 'nope'"):
        make_feature_map("nope", 2, 1.0, 8, 0)
    with pytest.raises(ValueError, match="Bad kernel_params"):
        make_feature_map("rbf", 2, 1.0, 8, 0, kernel_params={"degree": 3})


def test_register_a_user_kernel():
    class HalfRBF(GaussianRFF):
        name = "half_rbf_test"

    register_kernel("half_rbf_test", HalfRBF)
    try:
        assert isinstance(make_feature_map("half_rbf_test", 2, 1.0, 8, 0), HalfRBF)
    finally:
        KERNELS.pop("half_rbf_test")
    with pytest.raises(TypeError):
        register_kernel("bad", object)


def test_median_heuristic_is_seeded_and_scaled():
    X = np.random.default_rng(0).uniform(-5, 5, (5000, 2))
    m = median_distance(X, seed=1)
    assert m == median_distance(X, seed=1)
    assert 4.5 < m < 6.0  # median distance of U[-5,5]^2 is about 5.2
    assert resolve_sigma("median", X, "euclidean", 0.1, seed=1) == pytest.approx(0.1 * m)
    assert resolve_sigma(2.0, X, "euclidean", 3.0) == 2.0  # the multiplier is for "median" only
    assert median_distance(np.ones((10, 3))) == 1.0  # all distances zero
    with pytest.raises(ValueError, match="median"):
        resolve_sigma("mean", X, "euclidean")
    assert gamma_to_sigma(sigma_to_gamma(0.7)) == pytest.approx(0.7)


def test_cache_respects_its_budget():
    fm = make_feature_map("rbf", 100, 1.0, 64, 0, cache_bytes=3 * 100 * 32 * 4)
    for j in range(10):
        fm.draw(j)
    assert fm.n_cached_blocks() == 3 and fm._cached_bytes <= fm.cache_bytes
    assert torch.equal(fm.draw(9), fm._draw(9, torch.device("cpu")).float())
