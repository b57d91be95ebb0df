"""Sparse rows kept sparse up to the feature maps, and their projection ``X W`` by non-zeros.

A CSR matrix of ``n`` rows, ``d`` columns and ``nnz`` non-zeros projects onto ``h`` frequencies
in ``O(nnz·h)`` by a sparse × dense GEMM, where its dense rows cost ``O(n·d)`` memory and
``O(n·d·h)`` time; and the product reads only the rows of ``W`` of the columns that occur, so
those are the only rows a feature map has to draw.

:class:`CSRRows` holds such rows for the solvers: indexing it gives :class:`CSRRows` again
(never a dense tensor), and the Fourier feature maps project it by :func:`sparse_matmul`; the
other families densify the rows they are given, a batch at a time. :func:`keeps_sparse` says
which matrices are worth it: wide and sparse ones. Narrow or dense-ish matrices keep the dense
route of :class:`kernelstream.solvers.streams.SparseRows` (densified a batch at a time), whose
fit is the dense fit bit for bit; a projected one agrees with it to float rounding (the GEMM
sums the products in another order).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["CSRRows", "keeps_sparse", "sparse_matmul", "SPARSE_MIN_WIDTH", "SPARSE_MAX_DENSITY"]

#: CSR input is projected sparse from this many columns ...
SPARSE_MIN_WIDTH = 256
#: ... when at most this fraction of its entries are stored (the sparse product is then the
#: faster; see docs/decisions/sparse-projection-density.md)
SPARSE_MAX_DENSITY = 1 / 16


def keeps_sparse(X) -> bool:
    """Whether ``X`` is a sparse matrix whose rows the feature maps should project sparse: at
    least ``SPARSE_MIN_WIDTH`` columns, at most ``SPARSE_MAX_DENSITY`` of its entries stored."""
    if not sp.issparse(X):
        return False
    n, d = X.shape
    return d >= SPARSE_MIN_WIDTH and X.nnz <= SPARSE_MAX_DENSITY * n * d


def sparse_matmul(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor,
                  W: torch.Tensor) -> torch.Tensor:
    """``X W`` for the CSR matrix ``X`` of row pointers ``crow``, column indices ``col`` (rows
    of ``W``) and ``values``: ``(n, h)``, ``O(nnz·h)``; ``W`` is never densified further."""
    n = crow.shape[0] - 1
    if n == 0 or W.shape[0] == 0:
        return torch.zeros((n, W.shape[1]), dtype=W.dtype, device=W.device)
    with warnings.catch_warnings():  # torch calls sparse CSR support "beta"
        warnings.simplefilter("ignore", UserWarning)
        X = torch.sparse_csr_tensor(crow, col, values, (n, W.shape[0]), check_invariants=False)
    return X @ W.contiguous()


class CSRRows:
    """Rows of a CSR matrix that stay sparse on their way to the feature maps.

    The interface of :class:`kernelstream.solvers.streams.SparseRows` (``shape``, indexing,
    :meth:`subset`, ``matrix``, ``dtype``, ``device``), but indexing gives :class:`CSRRows`
    of the rows asked for instead of dense tensors. :meth:`tensors` gives a batch's CSR arrays
    on ``device`` for :func:`sparse_matmul`; :meth:`to_dense` the dense rows for the families
    that need them.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> rows = CSRRows(sp.random(5, 300, density=0.01, format="csr", random_state=0),
    ...                torch.float32, torch.device("cpu"))
    >>> rows[1:3].shape, rows[torch.tensor([4, 0])].to_dense().shape
    ((2, 300), torch.Size([2, 300]))
    """

    def __init__(self, matrix, dtype: torch.dtype, device: torch.device):
        matrix = sp.csr_matrix(matrix)
        if not matrix.has_canonical_format:  # sorted, no duplicates: without touching the caller's
            matrix = matrix.copy()
            matrix.sum_duplicates()
        self.matrix = matrix
        self.dtype, self.device = dtype, torch.device(device)
        self._tensors = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape

    def __len__(self) -> int:
        return self.matrix.shape[0]

    def __getitem__(self, index) -> "CSRRows":
        if isinstance(index, torch.Tensor):
            index = index.cpu().numpy()
        return CSRRows(self.matrix[index], self.dtype, self.device)

    def subset(self, index) -> "CSRRows":
        """The rows ``index``, still sparse (the same as indexing)."""
        return self[index]

    def new_zeros(self, shape) -> torch.Tensor:
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def element_size(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(crow, col, values)`` on ``device``: int64 row pointers and column indices, the
        values in ``dtype`` (made once per instance)."""
        if self._tensors is None:
            m = self.matrix
            self._tensors = (torch.from_numpy(m.indptr.astype(np.int64)).to(self.device),
                             torch.from_numpy(m.indices.astype(np.int64)).to(self.device),
                             torch.tensor(m.data, dtype=self.dtype, device=self.device))
        return self._tensors

    def padded(self, n_rows: int) -> "CSRRows":
        """These rows followed by empty ones up to ``n_rows`` (a prediction chunk of fixed size)."""
        empty = sp.csr_matrix((n_rows - self.shape[0], self.shape[1]), dtype=self.matrix.dtype)
        return CSRRows(sp.vstack([self.matrix, empty], format="csr"), self.dtype, self.device)

    def to_dense(self) -> torch.Tensor:
        """The dense rows, ``(n, d)``: the values a dense copy of the matrix gives."""
        return torch.from_numpy(self.matrix.toarray()).to(device=self.device, dtype=self.dtype)
