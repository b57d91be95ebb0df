"""Random-feature ridge solved exactly in the dual where the rows are few, with every ``α``'s
leave-one-out error in closed form.

The objective is the squared loss's of :mod:`.direct`,

    ``F(θ) = Σ_i w_i ½(φ̃_iᵀθ − y_i)²/n + (α/2)‖W‖²``  (``θ = [W; b/c]``, the intercept free).

With the rows scaled by ``s_i = √w_i`` and ``P = I − uuᵀ`` (``u = s/‖s‖``) removing the free
intercept, ``Z = PSΦ`` and ``ỹ = PSy``: ``W = Zᵀ(ZZᵀ + nαI)⁻¹ỹ``. The ``n × n`` matrix ``ZZᵀ``
costs ``O(n²D)`` and one eigendecomposition ``ZZᵀ = VΛVᵀ`` (``O(n³)``) then serves every ``α``:
the hat matrix ``H = uuᵀ + VΛ(Λ + nα)⁻¹Vᵀ`` gives the fitted values and the exact
leave-one-out residuals ``(y_i − ŷ_i)/(1 − H_ii)`` (Allen's PRESS for ridge regression).

Why, where ``n`` is small (``n ≤ DUAL_MAX_ROWS``): the stochastic solver holds out a tenth of
the rows for early stopping, and its candidates are chosen at 1024 features by 5-fold
cross-validation, where the error of so few features hides the difference between bandwidths
(digits odd vs even: 0.5× and 1× the median distance score 0.0778 and 0.0782). Here every
``(σ, α)`` is judged on every row at the number of features that is kept, and the model kept is
the exact optimum on all the rows. Memory ``O(n²)``: two ``n × n`` float64 matrices.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..features.base import FeatureMap
from ..ops.linalg import row_gram, symmetric_eigh, transposed_matmul
from .feature_rows import INTERCEPT_FEATURE

__all__ = ["DUAL_MAX_ROWS", "DualRidge", "DualSolution", "GramRows", "dual_ridge", "feature_gram", "gram_rows",
           "positive_rows"]

#: the dual route is taken up to this many rows (a few ``n × n`` float64 matrices of 34 MB each,
#: one bandwidth's at a time, and an eigendecomposition of about a second on one core at 2048 rows)
DUAL_MAX_ROWS = 2048
#: features evaluated at once for the Gram (float32 products over this many features, summed in
#: float64)
_GRAM_FEATURES = 1024


@dataclass
class _DualRows:
    """The features a dual model is written in: ``W = Φᵀ(dual coefficients)`` on these rows."""

    feature_map: FeatureMap
    n_blocks: int
    X: torch.Tensor  # (m, d) rows of positive weight


@dataclass
class GramRows(_DualRows):
    """The rows of positive weight with their targets and random-feature Gram matrix: what
    every dual solver starts from."""

    y: torch.Tensor  # (m, C) targets, float64
    weight: torch.Tensor  # (m,) float64
    n_rows: int  # n of the objective (rows of weight 0 included)
    gram: torch.Tensor  # (m, m) ΦΦᵀ, float64


@dataclass
class DualRidge(GramRows):
    """The eigendecomposition of ``ZZᵀ`` for one feature map, and what every ``α`` needs."""

    eigenvalues: torch.Tensor  # (m,) of ZZᵀ, clipped at 0
    eigenvectors: torch.Tensor  # (m, m)
    scale: torch.Tensor  # (m,) s = √w
    unit: torch.Tensor  # (m,) u = s/‖s‖
    projected: torch.Tensor  # (m, C) Vᵀỹ

    def _shrinkage(self, alpha: float) -> torch.Tensor:
        return self.eigenvalues / (self.eigenvalues + self.n_rows * alpha)  # Λ(Λ + nα)⁻¹

    def fitted(self, alpha: float, squared_vectors: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ŷ, H_ii)``: fitted values ``(m, C)`` and leverages ``(m,)`` at ``alpha``
        (``squared_vectors``: ``V²``, when the caller keeps it for several ``α``)."""
        shrink = self._shrinkage(alpha)
        V, s, u = self.eigenvectors, self.scale, self.unit
        V2 = V.square() if squared_vectors is None else squared_vectors
        mean = (self.weight @ self.y) / self.weight.sum()  # uuᵀSy / s = the weighted mean
        fitted = mean + (V @ (shrink[:, None] * self.projected)) / s[:, None]  # ŷ = S⁻¹HSy
        leverage = u.square() + V2 @ shrink  # H_ii = u_i² + Σ_j V_ij² λ_j/(λ_j + nα)
        return fitted, leverage

    def leave_one_out(self, alpha: float, squared_vectors: torch.Tensor | None = None) -> torch.Tensor:
        """Predictions ``(m, C)`` of each row by the model fitted without it:
        ``y_i − (y_i − ŷ_i)/(1 − H_ii)``."""
        fitted, leverage = self.fitted(alpha, squared_vectors)
        residual = (self.y - fitted) / (1 - leverage).clamp_min(1e-12)[:, None]
        return self.y - residual

    def leave_one_out_losses(self, alphas) -> torch.Tensor:
        """Weighted mean ``½‖y_i − ŷ_{−i}‖²`` for every ``α`` ``(A,)``: every ``α``'s fitted
        values in one product with ``V`` (``m × m`` read once, not once an ``α``)."""
        V, s, u = self.eigenvectors, self.scale, self.unit
        alphas = torch.as_tensor([float(a) for a in alphas], dtype=V.dtype, device=V.device)
        shrink = self.eigenvalues[:, None] / (self.eigenvalues[:, None] + self.n_rows * alphas)  # (m, A)
        A, C = len(alphas), self.y.shape[1]
        mean = (self.weight @ self.y) / self.weight.sum()
        shrunk = (shrink[:, :, None] * self.projected[:, None, :]).reshape(len(s), A * C)
        fitted = mean + (V @ shrunk).reshape(len(s), A, C) / s[:, None, None]  # ŷ = S⁻¹HSy
        leverage = u.square()[:, None] + V.square() @ shrink  # H_ii (m, A)
        residual = (self.y[:, None, :] - fitted) / (1 - leverage).clamp_min(1e-12)[:, :, None]
        return (self.weight[:, None] * 0.5 * residual.square().sum(dim=2)).sum(dim=0) / self.weight.sum()

    def solution(self, alpha: float) -> DualSolution:
        """The exact minimiser of ``F`` at ``alpha`` in ``O(m²)``, kept without the ``m × m``
        matrices: ``c = P V(Λ + nα)⁻¹Vᵀỹ`` (``W = ΦᵀSc``), ``b`` the weighted mean residual,
        ``F`` (with ``‖W‖² = (Sc)ᵀΦΦᵀ(Sc)``) and the leave-one-out predictions."""
        V, s, u = self.eigenvectors, self.scale, self.unit
        c = V @ (self.projected / (self.eigenvalues + self.n_rows * alpha)[:, None])
        c = c - u[:, None] * (u @ c)  # keep c ⊥ u: the intercept's direction is not penalised
        dual = s[:, None] * c  # Sc
        outputs = self.gram @ dual  # ΦW
        b = (self.weight @ (self.y - outputs)) / self.weight.sum()
        fit = float((self.weight * 0.5 * (outputs + b - self.y).square().sum(dim=1)).sum()) / self.n_rows
        penalty = 0.5 * alpha * float((dual * outputs).sum())  # (α/2)‖W‖²
        return DualSolution(self.feature_map, self.n_blocks, self.X, dual, b, fit + penalty,
                            self.leave_one_out(alpha), self.eigenvalues)


@dataclass
class DualSolution(_DualRows):
    """The dual optimum at one ``α``: what the primal ``θ`` needs, ``O(m)`` memory."""

    dual: torch.Tensor  # (m, C) Sc
    intercept: torch.Tensor  # (C,) b
    training_loss: float  # F at the optimum
    leave_one_out: torch.Tensor  # (m, C) each row predicted by the model fitted without it
    eigenvalues: torch.Tensor | None = None  # (m,) of ZZᵀ, where least squares solved it

    def theta(self) -> torch.Tensor:
        """``θ = [W; b/c]`` ``(D+1, C)``, ``W = ΦᵀSc`` (one pass over the features)."""
        W = _transposed_features(self.feature_map, self.X, self.n_blocks, self.dual)
        return torch.cat([W, (self.intercept / INTERCEPT_FEATURE)[None]])


def dual_ridge(rows: GramRows) -> DualRidge:
    """The eigendecomposition of ``ZZᵀ`` on ``rows`` (:func:`gram_rows`)."""
    gram, targets, w = rows.gram, rows.y, rows.weight
    s = w.sqrt()
    u = s / s.norm()
    scaled = s[:, None] * gram * s[None, :]  # SΦΦᵀS
    su = scaled @ u
    Z = scaled - su[:, None] * u[None, :] - u[:, None] * su[None, :] + (u @ su) * torch.outer(u, u)  # P(SΦΦᵀS)P
    eigenvalues, eigenvectors = symmetric_eigh(Z)
    projected_y = s[:, None] * targets
    projected_y = projected_y - u[:, None] * (u @ projected_y)  # ỹ = PSy
    return DualRidge(rows.feature_map, rows.n_blocks, rows.X, targets, w, rows.n_rows, gram,
                     eigenvalues.clamp_min(0.0), eigenvectors, s, u, eigenvectors.T @ projected_y)


def gram_rows(feature_map: FeatureMap, n_blocks: int, X: torch.Tensor, y: torch.Tensor,
              weight: torch.Tensor, exact: bool = False) -> GramRows:
    """The rows of ``(X, y, weight)`` of positive weight (rows of weight 0 leave the fit alone)
    and their ``ΦΦᵀ`` for ``feature_map`` at ``n_blocks``, checked finite; ``exact``: the
    kernel's own matrix ``k(X, X)`` in float64 instead (:mod:`.exact_kernel`)."""
    X, targets, w, n_rows = positive_rows(X, y, weight)
    if exact:
        X = X.double()
    gram = feature_map.kernel(X, X) if exact else feature_gram(feature_map, X, n_blocks)
    if not (torch.isfinite(gram).all() and torch.isfinite(targets).all() and torch.isfinite(w).all()):
        raise FloatingPointError(f"The {'kernel' if exact else 'random-feature Gram'} matrix is not "
                                 "finite; standardise X, and check y and sample_weight.")
    return GramRows(feature_map, n_blocks, X, targets, w, n_rows, gram)


def positive_rows(X: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> tuple:
    """``(X, y (m, C) float64, weight float64, n)``: the rows of positive weight (rows of weight
    0 leave the fit alone) and ``n``, every row's count."""
    targets = (y if y.ndim == 2 else y[:, None]).double()
    keep = weight > 0
    if not bool(keep.any()):
        raise ValueError("Every row has sample_weight 0: there is nothing to fit.")
    return X[keep], targets[keep], weight[keep].double(), X.shape[0]


def feature_gram(feature_map: FeatureMap, X: torch.Tensor, n_blocks: int) -> torch.Tensor:
    """``ΦΦᵀ`` in float64, ``φ = [ψ_1 … ψ_J]/√J``, a few blocks at a time."""
    G = torch.zeros((X.shape[0], X.shape[0]), dtype=torch.float64, device=X.device)
    for blocks in _block_groups(feature_map, n_blocks):
        Phi = feature_map.features(X, blocks).reshape(X.shape[0], -1)
        G += row_gram(Phi).double()
    return G / n_blocks


def _transposed_features(feature_map: FeatureMap, X: torch.Tensor, n_blocks: int,
                         dual: torch.Tensor) -> torch.Tensor:
    """``Φᵀ dual`` ``(D, C)`` in float64, a few blocks at a time."""
    parts = []
    for blocks in _block_groups(feature_map, n_blocks):
        Phi = feature_map.features(X, blocks).reshape(X.shape[0], -1).double()
        parts.append(transposed_matmul(Phi, dual))
    return torch.cat(parts) * n_blocks**-0.5


def _block_groups(feature_map: FeatureMap, n_blocks: int):
    group = max(1, _GRAM_FEATURES // feature_map.block_size)
    for j in range(0, n_blocks, group):
        yield range(j, min(j + group, n_blocks))
