"""The fused Triton kernels against the CPU torch path, run through Triton's interpreter.

``TRITON_INTERPRET=1`` executes the kernels with numpy on the CPU, so these tests check the
in-kernel Philox draws, the fused contraction and the block gradient without a GPU. Skipped
when Triton is not installed.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
import torch

pytest.importorskip("triton")

from kernelstream import rng  # noqa: E402
from kernelstream.features import make_feature_map  # noqa: E402
from kernelstream.ops import triton_fourier as tf  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() and os.environ["TRITON_INTERPRET"] != "1" else "cpu"
SEED = 2**40 + 12345  # both 32-bit halves of the key in use


@pytest.mark.parametrize("block", [0, 3, 2**33 + 5])
def test_in_kernel_draws_equal_the_cpu_generator(block):
    got = tf.draw_normal(1000, SEED, block, rng.Stream.WEIGHTS, DEVICE).cpu()
    expected = rng.normal((1000,), SEED, block, rng.Stream.WEIGHTS)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def _problem(d, r, J, C, n=70):
    fm = make_feature_map("rbf", d, 1.7, r, seed=SEED)
    g = torch.Generator().manual_seed(d + r)
    X = torch.randn(n, d, generator=g)
    coef = torch.randn(J, r, C, generator=g)
    return fm, X, coef


@pytest.mark.parametrize("d, r, J, C", [(2, 64, 3, 1), (5, 48, 2, 3), (40, 128, 2, 1)])
def test_fused_contraction_equals_the_torch_path(d, r, J, C):
    fm, X, coef = _problem(d, r, J, C)
    assert tf.supports(fm)
    got = tf.contract(X.to(DEVICE), coef.to(DEVICE), fm).cpu()
    expected = fm.contract(X.double(), coef.double()).float()  # CPU torch path, float64
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("d, r, C", [(2, 64, 1), (7, 96, 2)])
def test_block_gradient_equals_psi_transpose_g(d, r, C):
    fm, X, _ = _problem(d, r, 1, C)
    G = torch.randn(X.shape[0], C, generator=torch.Generator().manual_seed(7))
    got = tf.block_gradient(X.to(DEVICE), G.to(DEVICE), fm, block=5).cpu()
    Psi = fm.block_features(X.double(), 5)
    torch.testing.assert_close(got, (Psi.T @ G.double() / X.shape[0]).float(), rtol=1e-4, atol=1e-5)


def test_supports_only_gaussian_iid_paired():
    assert not tf.supports(make_feature_map("laplace", 3, 1.0, 64, 0))
    assert not tf.supports(make_feature_map("rbf", 3, 1.0, 63, 0))
    assert not tf.supports(make_feature_map("rbf_orf", 3, 1.0, 64, 0))
