"""The exact GP posterior mean: by one Cholesky factorisation for a few thousand rows, by
conjugate gradients on the exact kernel for tens of thousands.

``L Lᵀ = K + s²I`` (float64, ``n³/3`` multiply-adds, ``8n²`` bytes) gives the mean's duals
``A = (K + s²I)⁻¹Y`` and the variance ``v(x) = k(x, x) − ‖L⁻¹k(X, x)‖²`` (Rasmussen & Williams
Algorithm 2.1). No Monte Carlo error and no step size: below a few thousand rows it is both the
cheapest and the most accurate route. Beyond, :func:`exact_kernel_cg` solves the same duals by
conjugate gradients preconditioned by the Nyström landmarks, each iteration one product with
``K`` evaluated in row chunks (``n²d`` multiply-adds and ``n²`` exponentials, nothing ``n × n``
kept). Measured against the dual iteration: docs/decisions/gp-exact-route.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..features.base import FeatureMap
from .gp_dual import DualGPResult, conjugate_gradients, kernel_diagonal, kernel_in_chunks
from .gp_variance import pack_lower, unpack_lower

__all__ = ["ExactVariance", "exact_posterior", "exact_bytes", "exact_kernel_cg", "kernel_operator"]

_CHUNK_ELEMENTS = 2**22  # test rows × training rows per chunk


@dataclass
class ExactVariance:
    """``v(x, x') = k(x, x') − bᵀb'`` with ``b = L⁻¹k(X, x)`` and ``L Lᵀ = K + s²I``."""

    rows: torch.Tensor  # X, (n, d) float64
    cholesky: torch.Tensor  # L, (n, n) lower

    def state_dict(self) -> dict:
        """The training rows and the factor's lower triangle, packed row by row:
        ``4·n(n+1) + 8·n·d`` bytes."""
        return {"rows": self.rows, "cholesky": pack_lower(self.cholesky)}

    @classmethod
    def from_state_dict(cls, state: dict, device="cpu") -> "ExactVariance":
        """The variance of :meth:`state_dict` (copies on ``device``)."""
        rows = torch.as_tensor(state["rows"]).clone().to(device)
        return cls(rows, unpack_lower(torch.as_tensor(state["cholesky"]).to(device)))

    def _projections(self, fm: FeatureMap, X: torch.Tensor) -> torch.Tensor:
        return torch.linalg.solve_triangular(self.cholesky, kernel_in_chunks(fm, self.rows, X),
                                             upper=False)  # b = L⁻¹ k(X_train, x), (n, m)

    def variance(self, fm: FeatureMap, X: torch.Tensor) -> torch.Tensor:
        """``v(x) = max(k(x, x) − ‖b‖², 0)`` in chunks of ``2^22/n`` test rows."""
        rows = max(1, _CHUNK_ELEMENTS // self.rows.shape[0])
        out = []
        for i in range(0, X.shape[0], rows):
            b = self._projections(fm, X[i:i + rows])
            out.append((kernel_diagonal(fm, X[i:i + rows]) - b.square().sum(0)).clamp(min=0))
        return torch.cat(out) if out else X.new_zeros(0)

    def covariance(self, fm: FeatureMap, X: torch.Tensor) -> torch.Tensor:
        """``k(X, X) − BᵀB``, ``(m, m)``: a Schur complement, PSD up to round-off."""
        b = self._projections(fm, X)
        return fm.kernel(X, X) - b.T @ b


def exact_posterior(fm: FeatureMap, X: torch.Tensor, Y: torch.Tensor,
                    noise: float) -> tuple[torch.Tensor, ExactVariance, float]:
    """``(A, variance, residual)``: the duals ``A = (K + s²I)⁻¹Y`` ``(n, c)`` of the exact
    kernel of ``fm`` on ``X`` (float64), the :class:`ExactVariance` sharing their factor, and
    the relative residual ``‖Y − (K + s²I)A‖/‖Y‖`` of the solve.

    Raises ``torch.linalg.LinAlgError`` when ``K + s²I`` is not positive definite in float64.
    """
    X = X.to(torch.float64).contiguous()
    Y = Y.to(torch.float64).reshape(X.shape[0], -1)
    C = fm.kernel(X, X)  # the own set's Gram: symmetric, its diagonal exact
    C.diagonal().add_(noise)
    L = torch.linalg.cholesky(C)
    duals = torch.cholesky_solve(Y, L).contiguous()  # row-major, as a loaded model holds it
    residual = float(torch.linalg.norm(Y - C @ duals) / max(float(torch.linalg.norm(Y)), 1e-300))
    return duals, ExactVariance(X, L.contiguous()), residual  # row-major: as loaded


def exact_bytes(n: int, n_outputs: int) -> int:
    """Peak of :func:`exact_posterior`: ``K + s²I`` and its factor (``16n²``), the residual's
    product and a prediction chunk (``2^22`` numbers), float64."""
    return 16 * n**2 + 8 * (n * n_outputs + 2**22)


def kernel_operator(fm: FeatureMap, X: torch.Tensor, noise: float):
    """``V ↦ (K + s²I)V`` with the exact kernel of ``fm`` on ``X``, evaluated in chunks of
    ``2^22/n`` rows: memory ``O(n)`` beyond ``V``, time ``n²(d + C)`` a call."""
    rows = max(1, _CHUNK_ELEMENTS // X.shape[0])

    def apply(V: torch.Tensor) -> torch.Tensor:
        out = noise * V
        for i in range(0, X.shape[0], rows):
            out[i:i + rows] += fm.kernel(X[i:i + rows], X) @ V
        return out

    return apply


def exact_kernel_cg(fm: FeatureMap, X: torch.Tensor, Y: torch.Tensor, noise: float, precond, *,
                    max_iter: int, tol: float = 1e-6, callback=None) -> DualGPResult:
    """The duals ``(K + s²I)A = Y`` of the exact kernel of ``fm`` on ``X`` (float64) by
    conjugate gradients preconditioned by ``precond`` (the Nyström landmarks':
    :class:`~.gp_dual.NystromPreconditioner`), to ``tol`` of each column's right-hand side or
    ``max_iter`` iterations (:func:`~.gp_dual.conjugate_gradients`)."""
    X = X.to(torch.float64).contiguous()
    apply = kernel_operator(fm, X, noise)
    result = conjugate_gradients(apply, Y.reshape(X.shape[0], -1), precond, max_iter=max_iter,
                                 tol=tol, callback=callback)
    result.duals = result.duals.contiguous()  # row-major, as a loaded model holds it
    return result
