"""The dense kernels of ``ops.linalg`` compute the products they name, in every operand order
they choose."""

import pytest
import torch

from kernelstream.ops.linalg import (WIDE_COLUMNS, narrow_matmul, row_gram, symmetric_eigh,
                                     transposed_matmul)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("columns", [None, 1, 2, 10, WIDE_COLUMNS, 40])
def test_products_equal_the_plain_ones(dtype, columns):
    g = torch.Generator().manual_seed(columns or 0)
    A = torch.randn(300, 70, generator=g, dtype=dtype)
    shape = () if columns is None else (columns,)
    U = torch.randn(300, *shape, generator=g, dtype=dtype)
    V = torch.randn(70, *shape, generator=g, dtype=dtype)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-11)
    left, right = transposed_matmul(A, U), narrow_matmul(A, V)
    assert left.shape == (A.T @ U).shape and right.shape == (A @ V).shape
    torch.testing.assert_close(left, A.T @ U, **tol)
    torch.testing.assert_close(right, A @ V, **tol)


def test_products_of_views_and_slices():
    """The cache passes column slices and transposed views: the products read them as given."""
    A = torch.randn(64, 48, dtype=torch.float64)
    part, V, U = A[:, 8:40], torch.randn(48, 3, dtype=torch.float64)[8:40], torch.randn(3, 64, dtype=torch.float64).T
    torch.testing.assert_close(narrow_matmul(part, V), part @ V)
    torch.testing.assert_close(transposed_matmul(part, U), part.T @ U)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_the_row_gram_is_the_product_with_the_transpose_exactly_symmetric(dtype):
    """``AAᵀ`` of a row-major matrix, of a transposed view and of a column slice (syrk on the
    CPU's float32 and float64, ``A @ Aᵀ`` otherwise): within the dtype's round-off of the
    float64 product, in ``A``'s dtype, its two triangles equal."""
    g = torch.Generator().manual_seed(3)
    A = torch.randn(120, 70, generator=g, dtype=torch.float64)
    for M in (A, A.T.contiguous().T, A[:, ::2]):
        M = M.to(dtype)
        exact = M.double() @ M.double().T
        product = row_gram(M)
        assert product.dtype == dtype and torch.equal(product, product.T)
        scale = float(M.double().norm(dim=1).max()) ** 2
        eps = torch.finfo(dtype).eps
        assert float((product.double() - exact).abs().max()) <= 70 * eps * scale


def test_symmetric_eigh_reconstructs():
    M = torch.randn(50, 50, dtype=torch.float64)
    M = M @ M.T
    values, vectors = symmetric_eigh(M)
    assert bool((values[1:] >= values[:-1]).all())
    torch.testing.assert_close(vectors @ torch.diag(values) @ vectors.T, M)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("columns", [1, 3, 20])
def test_products_of_a_transposed_operand(dtype, columns):
    """The sketch preconditioner keeps ``U`` as the transposed view of a row-major matrix: both
    products read it through its row-major storage and give the plain products."""
    g = torch.Generator().manual_seed(columns)
    M = torch.randn(30, 200, generator=g, dtype=dtype)  # row-major; U = Mᵀ (200, 30)
    U = M.T
    inner = torch.randn(30, columns, generator=g, dtype=dtype)
    r = torch.randn(200, columns, generator=g, dtype=dtype)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-11)
    torch.testing.assert_close(narrow_matmul(U, inner), U @ inner, **tol)
    torch.testing.assert_close(transposed_matmul(U, r), U.T @ r, **tol)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_gaussian_gram_is_the_kernel_of_the_distances(dtype):
    """``exp(min(0, 2xᵀy − ‖x‖² − ‖y‖²)/2σ²)`` by one product against the distances themselves,
    into ``out`` in blocks of rows (more rows than one block), exactly ones on a set's own
    diagonal. Each entry within its round-off: the exponent's cancellation leaves up to a few
    ``ε(‖x‖² + ‖y‖²)/2σ²`` (float32 on an AMD EPYC: 3.8e-6 on a diagonal, before the diagonal
    was set), times the entry."""
    from kernelstream.ops.linalg import GRAM_ROWS, gaussian_gram

    generator = torch.Generator().manual_seed(0)
    X = torch.randn(GRAM_ROWS + 37, 12, generator=generator, dtype=torch.float64) * 3
    Y = torch.randn(50, 12, generator=generator, dtype=torch.float64) * 3
    exact = torch.exp(-torch.cdist(X, Y).square() / (2 * 2.5**2))
    out = torch.full((len(X), len(Y)), float("nan"), dtype=dtype)
    result = gaussian_gram(X.to(dtype), Y.to(dtype), 2.5, out=out)
    assert result.data_ptr() == out.data_ptr()
    norms = X.square().sum(dim=1)[:, None] + Y.square().sum(dim=1)[None, :]
    bound = 8 * torch.finfo(dtype).eps * norms / (2 * 2.5**2) * exact + torch.finfo(dtype).tiny
    assert bool(((out.double() - exact).abs() <= bound).all())
    own = gaussian_gram(Y.to(dtype), Y.to(dtype), 2.5)
    assert bool((own.diagonal() == 1).all()) and float(own.max()) <= 1.0
