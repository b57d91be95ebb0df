"""Dense kernels on the faster backend of the device and dtype: symmetric eigendecompositions,
and products with a matrix of few columns (record: docs/decisions/narrow-products.md)."""

from __future__ import annotations

import torch

__all__ = ["gaussian_gram", "narrow_matmul", "row_gram", "symmetric_eigh", "transposed_matmul"]

#: from this many columns on, ``A @ B`` is as fast in either operand order (float64)
WIDE_COLUMNS = 16


def symmetric_eigh(M: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Ascending eigenvalues and eigenvectors of the symmetric ``M``, as :func:`torch.linalg.eigh`.

    CPU float64 takes LAPACK's divide and conquer (``syevd``) through SciPy: 20–30% faster than
    torch's on one thread at 512–2,048 rows (float32 and other devices: the same as torch)."""
    if M.device.type != "cpu" or M.dtype != torch.float64:
        return torch.linalg.eigh(M)
    from scipy.linalg import eigh

    values, vectors = eigh(M.numpy(force=True), driver="evd", check_finite=False)
    return torch.from_numpy(values), torch.from_numpy(vectors)


def row_gram(A: torch.Tensor) -> torch.Tensor:
    """``AAᵀ`` ``(m, m)`` in ``A``'s dtype for ``A`` ``(m, D)``, exactly symmetric.

    CPU float32 and float64 take BLAS's symmetric rank-k update (``syrk``) through SciPy: one
    triangle, half GEMM's ``m²D`` multiply-adds (1,500 × 4,096 float32, one thread: 67 against
    120 ms), mirrored; other devices and dtypes ``A @ Aᵀ``, symmetrised."""
    if A.device.type != "cpu" or A.dtype not in (torch.float32, torch.float64) or A.dim() != 2:
        product = A @ A.T
        return (product + product.T) / 2
    from scipy.linalg import blas

    syrk = blas.ssyrk if A.dtype == torch.float32 else blas.dsyrk
    if _transposed_view(A):  # A itself column-major: syrk's C = AAᵀ as it lies
        upper = syrk(1.0, A.T.numpy().T, trans=0)
    else:  # row-major (m, D): its transpose is the column-major (D, m), C = (Aᵀ)ᵀAᵀ
        upper = syrk(1.0, A.contiguous().numpy().T, trans=1)
    upper = torch.from_numpy(upper).triu()
    return upper + upper.triu(1).T


def _transposed_view(A: torch.Tensor) -> bool:
    """Whether ``A`` is the transpose of a row-major matrix (``A.T`` contiguous, ``A`` not)."""
    return A.dim() == 2 and not A.is_contiguous() and A.T.is_contiguous()


def transposed_matmul(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``AᵀB`` for a tall ``A`` ``(n, D)`` and ``B`` ``(n, C)``, computed as ``(BᵀA)ᵀ``.

    The same product; on a CPU, MKL's GEMM of a transposed tall operand by 2–15 columns runs
    10–20× slower than this order (10,592 × 8,192 float32 by 10 columns, one thread: 651 ms
    against 61 ms), and the order is never slower where the columns are many. ``A`` itself a
    transposed view: ``AᵀB`` is the row-major ``(Aᵀ)B``, by :func:`narrow_matmul`."""
    if _transposed_view(A):
        return narrow_matmul(A.T, B)
    if B.dim() == 1 or B.shape[-1] == 1:
        return A.T @ B  # a matrix–vector product: the fast kernel either way
    return (B.T @ A).T


def narrow_matmul(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``AB`` for a tall ``A`` ``(n, D)`` and ``B`` ``(D, C)`` of few columns.

    float32 by 2–15 columns: computed as ``(BᵀAᵀ)ᵀ``, 1.5–2× faster on one CPU thread
    (10,592 × 8,192 by 10 columns: 123 ms against 71 ms); float64: that order from
    ``WIDE_COLUMNS`` columns on (by 16: 432 ms against 120 ms), as asked below it (by 10:
    159 ms against 197 ms). ``A`` a transposed view (the sketch preconditioner's ``U``):
    ``AB = (Aᵀ)ᵀB`` by :func:`transposed_matmul` of the row-major ``Aᵀ`` (32,769 × 1,024
    float64 by 10 columns: 394 ms as written against 121 ms)."""
    if _transposed_view(A):
        return transposed_matmul(A.T, B)
    columns = 1 if B.dim() == 1 else B.shape[-1]
    if columns == 1 or (A.dtype == torch.float64 and columns < WIDE_COLUMNS):
        return A @ B
    return (B.T @ A.T).T


#: rows of :func:`gaussian_gram` per matrix product (4,096 × 16,384 float32: 256 MB written
#: while the product's operands stay in the processor's cache)
GRAM_ROWS = 4096


def gaussian_gram(X: torch.Tensor, Y: torch.Tensor, sigma: float,
                  out: torch.Tensor | None = None) -> torch.Tensor:
    """``exp(−‖x − y‖²/2σ²)`` of the rows of ``X`` ``(n, d)`` and ``Y`` ``(m, d)`` as
    ``exp(min(0, (2xᵀy − ‖x‖² − ‖y‖²)/2σ²))``: one matrix product into ``out`` (where given)
    and three in-place passes, ``‖y‖²`` once (``torch.cdist`` then squared takes twice the
    time: 54,000 × 16,384 float32 at ``d = 784``, one thread). A set with itself (``X`` equal to ``Y``) has exactly ones on its diagonal: the
    cancellation in ``‖x‖² + ‖x‖² − 2xᵀx`` leaves about ``ε‖x‖²/σ²`` there (float32: 0.9999962
    measured on an AMD EPYC). No autograd."""
    scale = 1.0 / (2.0 * sigma**2)
    if out is None:
        out = torch.empty((X.shape[0], Y.shape[0]), dtype=X.dtype, device=X.device)
    own = X.shape == Y.shape and (X.data_ptr() == Y.data_ptr() or torch.equal(X, Y))
    column_term = (Y.square().sum(dim=1) * -scale)[None, :]  # −‖y‖²/2σ²
    for i in range(0, X.shape[0], GRAM_ROWS):
        rows, block = X[i:i + GRAM_ROWS], out[i:i + GRAM_ROWS]
        torch.addmm(column_term, rows, Y.T, beta=1.0, alpha=2.0 * scale, out=block)
        block.sub_(rows.square().sum(dim=1, keepdim=True) * scale).clamp_(max=0.0)
        if own:  # a row's distance to itself is zero
            block.diagonal(offset=i).zero_()
        block.exp_()
    return out

