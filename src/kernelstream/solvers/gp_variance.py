"""GP posterior variance on Nyström landmarks (DTC), and the memory each variance route needs.

The deterministic-training-conditional posterior (Quiñonero-Candela & Rasmussen 2005, eq. 20b)
on ``M`` landmark rows ``Z`` of the training set:
``v(x, x') = k(x, x') − b(x)ᵀb(x') + s² c(x)ᵀc(x')`` with ``b = L⁻¹k(Z, x)``,
``c = R⁻¹b``, ``L Lᵀ = K_MM + δI`` and ``R Rᵀ = BᵀB + s²I`` (``B = K_nM L⁻ᵀ``) — the factors the
Nyström preconditioner of :mod:`kernelstream.solvers.gp_dual` already computes. It keeps
``O(M²)`` numbers after the fit and answers at any point. It equals the exact posterior when
the landmarks span the kernel's effective dimension and is larger otherwise (the prior part
``k − bᵀb`` the landmarks miss is added back): 3.9% from the exact variance at ``M = 1024``
on the paper's narrow-bandwidth set, exact at wider bandwidths
(``benchmarks/research/gp_landmark_operator.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..features.base import FeatureMap
from .gp_dual import NystromFactors, kernel_diagonal

__all__ = ["LandmarkVariance", "dual_fit_bytes", "operator_bytes", "landmark_bytes",
           "targets_bytes"]

_CHUNK_ELEMENTS = 2**22  # test rows × landmarks per chunk


@dataclass
class LandmarkVariance:
    """``v(x, x') = k(x, x') − bᵀb' + s² cᵀc'`` from the landmarks and two ``M×M`` factors."""

    landmarks: torch.Tensor  # Z, (M, d) float64
    kmm_cholesky: torch.Tensor  # L
    inner_cholesky: torch.Tensor  # R
    noise: float

    def state_dict(self) -> dict:
        """The landmark rows, both factors and the noise (``16·M² + 8·M·d`` bytes)."""
        return {"landmarks": self.landmarks, "kmm_cholesky": self.kmm_cholesky,
                "inner_cholesky": self.inner_cholesky, "noise": self.noise}

    @classmethod
    def from_factors(cls, X: torch.Tensor, factors: NystromFactors) -> "LandmarkVariance":
        """Keep the landmark rows of ``X`` (float64) and the factors ``L``, ``R``."""
        Z = X[factors.landmarks].to(torch.float64)
        return cls(Z, factors.kmm_cholesky.clone(), factors.inner_cholesky.clone(), factors.noise)

    def _projections(self, fm: FeatureMap, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b = torch.linalg.solve_triangular(self.kmm_cholesky, fm.kernel(self.landmarks, X),
                                          upper=False)  # b = L⁻¹ k(Z, x), (M, n)
        c = torch.linalg.solve_triangular(self.inner_cholesky, b, upper=False)  # c = R⁻¹ b
        return b, c

    def variance(self, fm: FeatureMap, X: torch.Tensor) -> torch.Tensor:
        """``v(x) = max(k(x, x) − ‖b‖², 0) + s²‖c‖²`` in row chunks of ``2^22/M`` rows
        (``b`` and ``c``: 64 MiB)."""
        rows = max(1, _CHUNK_ELEMENTS // self.landmarks.shape[0])
        out = []
        for i in range(0, X.shape[0], rows):
            b, c = self._projections(fm, X[i:i + rows])
            missed = (kernel_diagonal(fm, X[i:i + rows]) - b.square().sum(0)).clamp(min=0)
            out.append(missed + self.noise * c.square().sum(0))
        return torch.cat(out)

    def covariance(self, fm: FeatureMap, X: torch.Tensor) -> torch.Tensor:
        """``k(X, X) − BᵀB + s² CᵀC``, ``(n, n)``: PSD (a Schur complement plus a Gram)."""
        b, c = self._projections(fm, X)
        return fm.kernel(X, X) - b.T @ b + self.noise * (c.T @ c)


def dual_fit_bytes(n: int, n_targets: int, n_landmarks: int, block_size: int, n_blocks: int,
                   itemsize: int) -> int:
    """Peak bytes of the dual fit: ``3·8·n·M`` (``K_nM``, ``B`` and its cast)
    ``+ 3·w·n·r`` (a block and its products) ``+ 5·w·n·c`` (targets, iterate, average,
    residual, step) ``+ w·T·r·c`` (the mean's coefficients), ``w`` bytes per number."""
    M = min(n, n_landmarks)
    c = n_targets
    return 24 * n * M + 3 * itemsize * n * block_size + 5 * itemsize * n * c \
        + itemsize * n_blocks * block_size * c


def operator_bytes(n_features: int) -> int:
    """Route (b): ``32·D²`` — the Gram ``ΦᵀΦ``, its Cholesky factor and the factorisation's
    working copy (``3·8·D²``) with a margin — plus a ``2^24``-number chunk of features. At
    ``D = 8192``: 2.3 GB planned, 1.95 GB measured (peak RSS over the process before the fit,
    3,000 abalone rows)."""
    return 32 * n_features**2 + 8 * 2**24


def landmark_bytes(n_landmarks: int) -> int:
    """The landmark route after the fit: ``16·M²`` (``L`` and ``R``, float64)."""
    return 16 * n_landmarks**2


def targets_bytes(n_test: int, block_size: int, itemsize: int, max_cov: int) -> int:
    """Route (a) beyond its ``n·m`` targets (counted by :func:`dual_fit_bytes`): the test
    points' features ``w·m·r`` and, for ``m ≤ max_cov``, the covariance and its eigendecomposition
    ``4·8·m²``."""
    cov = 32 * n_test**2 if n_test <= max_cov else 0
    return itemsize * n_test * block_size + cov
