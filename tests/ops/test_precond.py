"""The preconditioner's CPU path (BLAS SYRK + LAPACK in place) against the torch ops and the direct solve."""

from __future__ import annotations

import pytest
import torch
from threadpoolctl import threadpool_info

from kernelstream.ops.precond import precond_direction, precond_direction_torch


def _direct(Psi, G, eps):
    """``(ΨᵀΨ/b + εI)⁻¹ ΨᵀG/b`` in float64 by a dense solve, ``ε = eps·tr(ΨᵀΨ/b)/r``."""
    b, r = Psi.shape
    P, G = Psi.double(), G.double()
    M = P.T @ P / b
    M += eps * torch.trace(M) / r * torch.eye(r, dtype=torch.float64)
    return torch.linalg.solve(M, P.T @ G / b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("b,r", [(24, 40), (40, 24), (32, 32), (7, 130)])
@pytest.mark.parametrize("eps", [1.0, 0.01])
def test_cpu_path_equals_torch_path_and_direct_solve(dtype, b, r, eps):
    g = torch.Generator().manual_seed(b * r)
    Psi = torch.randn(b, r, generator=g, dtype=dtype)
    G = torch.randn(b, 3, generator=g, dtype=dtype)
    got = precond_direction(Psi, G, eps)
    assert got.dtype == dtype and got.shape == (r, 3)
    expected = _direct(Psi, G, eps)
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    scale = float(expected.abs().max())
    torch.testing.assert_close(got.double(), expected, rtol=0, atol=tol * scale)
    torch.testing.assert_close(got, precond_direction_torch(Psi, G, eps), rtol=0, atol=tol * scale)


def test_stale_scratch_contents_do_not_leak():
    """The Gram buffers are reused and only one triangle is written: a second, different call
    (smaller, then larger) must not read the first call's values."""
    g = torch.Generator().manual_seed(3)
    for b, r in [(50, 80), (20, 30), (60, 90), (20, 30)]:
        Psi = torch.randn(b, r, generator=g, dtype=torch.float64) * 10
        G = torch.randn(b, 2, generator=g, dtype=torch.float64)
        torch.testing.assert_close(precond_direction(Psi, G, 0.5), _direct(Psi, G, 0.5), rtol=1e-10, atol=1e-12)


def test_non_contiguous_block_is_accepted():
    g = torch.Generator().manual_seed(4)
    Psi = torch.randn(64, 48, generator=g, dtype=torch.float64).T  # (48, 64), column-major
    G = torch.randn(48, 1, generator=g, dtype=torch.float64)
    torch.testing.assert_close(precond_direction(Psi, G, 1.0), _direct(Psi, G, 1.0), rtol=1e-10, atol=1e-12)


def test_singular_gram_without_regularisation_raises():
    Psi = torch.ones(8, 16, dtype=torch.float64)  # rank one
    with pytest.raises(torch.linalg.LinAlgError, match="positive definite"):
        precond_direction(Psi, torch.ones(8, 1, dtype=torch.float64), 0.0)


def test_blas_threads_are_restored():
    """The BLAS runs with torch's thread count inside the call and is left as it was after."""
    before = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    Psi = torch.randn(16, 24, dtype=torch.float64)
    precond_direction(Psi, torch.randn(16, 1, dtype=torch.float64), 1.0)
    after = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert after == before
