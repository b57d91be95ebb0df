"""The Nyström map of the n- baselines: K_mm^{-1/2} k_m(x) on seeded landmarks, exact at m = n."""

import numpy as np
import pytest
import torch

from benchmarks.baselines import NystromFeatures
from benchmarks.baselines._kernel import exact_kernel


def kernel(X, Y, sigma):
    return exact_kernel("rbf", X.shape[1], sigma).kernel(torch.as_tensor(X), torch.as_tensor(Y)).numpy()


def test_all_rows_as_landmarks_reproduce_the_kernel_matrix():
    X = np.random.default_rng(0).uniform(-3, 3, (60, 3))
    Z = NystromFeatures(n_components=60, sigma=0.7).fit_transform(X)
    np.testing.assert_allclose(Z @ Z.T, kernel(X, X, 0.7), atol=1e-10)


def test_fewer_landmarks_give_the_nystrom_approximation():
    rng = np.random.default_rng(1)
    X, X_new = rng.normal(size=(200, 2)), rng.normal(size=(15, 2))
    nys = NystromFeatures(n_components=25, sigma=1.5, random_state=4).fit(X)
    L = nys.landmarks_.numpy()
    assert all((X == row).all(1).any() for row in L)  # landmarks are rows of X
    K_mm, K_xm = kernel(L, L, 1.5), kernel(X_new, L, 1.5)
    approx = K_xm @ np.linalg.solve(K_mm, K_xm.T)  # K_nm K_mm⁻¹ K_mn
    Z = nys.transform(X_new)
    np.testing.assert_allclose(Z @ Z.T, approx, atol=1e-8)
    np.testing.assert_allclose(nys.normalization_.numpy() @ K_mm @ nys.normalization_.numpy(),
                               np.eye(25), atol=1e-7)  # K_mm^{-1/2} K_mm K_mm^{-1/2} = I


def test_landmarks_are_seeded():
    X = np.random.default_rng(2).normal(size=(100, 2))
    first = NystromFeatures(n_components=10, random_state=0).fit_transform(X)
    assert np.array_equal(first, NystromFeatures(n_components=10, random_state=0).fit_transform(X))
    assert not np.allclose(first, NystromFeatures(n_components=10, random_state=1).fit_transform(X))


def test_bad_sizes_are_refused():
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="between 1 and the 5 rows"):
        NystromFeatures(n_components=6).fit(X)
    with pytest.raises(ValueError, match="X has 3 features"):
        NystromFeatures(n_components=2).fit(np.eye(5, 2)).transform(np.zeros((1, 3)))
