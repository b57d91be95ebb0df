"""GP posterior variance on Nyström landmarks (DTC), and the memory each variance route needs.

The deterministic-training-conditional posterior (Quiñonero-Candela & Rasmussen 2005, eq. 20b)
on ``M`` landmark rows ``Z`` of the training set:
``v(x, x') = k(x, x') − b(x)ᵀb(x') + s² c(x)ᵀc(x')`` with ``b = L⁻¹k(Z, x)``,
``c = R⁻¹b``, ``L Lᵀ = K_MM + δI`` and ``R Rᵀ = BᵀB + s²I`` (``B = K_nM L⁻ᵀ``) — the factors the
Nyström preconditioner of :mod:`kernelstream.solvers.gp_dual` already computes. It keeps
``O(M²)`` numbers after the fit and answers at any point. It equals the exact posterior when
the landmarks span the kernel's effective dimension and is larger otherwise (the prior part
``k − bᵀb`` the landmarks miss is added back): close to the exact variance at ``M = 1024`` on
the paper's narrow-bandwidth set, exact at wider bandwidths, far above it at ``M = 512``
(``benchmarks/research/gp_landmark_operator.py``; decision record:
docs/decisions/research-gp-variance.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..features.base import FeatureMap
from .gp_dual import NystromFactors, kernel_diagonal, kernel_in_chunks

__all__ = ["LandmarkVariance", "OperatorVariance", "targets_variance", "dual_fit_bytes",
           "operator_bytes", "landmark_bytes", "targets_bytes", "pack_lower", "unpack_lower"]

_CHUNK_ELEMENTS = 2**22  # test rows × landmarks per chunk


@dataclass
class LandmarkVariance:
    """``v(x, x') = k(x, x') − bᵀb' + s² cᵀc'`` from the landmarks and two ``M×M`` factors."""

    landmarks: torch.Tensor  # Z, (M, d) float64
    kmm_cholesky: torch.Tensor  # L
    inner_cholesky: torch.Tensor  # R
    noise: float

    def state_dict(self) -> dict:
        """The landmark rows, the lower triangles of both factors (packed row by row) and the
        noise: ``8·M(M+1) + 8·M·d`` bytes (:func:`landmark_bytes`)."""
        return {"landmarks": self.landmarks, "kmm_cholesky": pack_lower(self.kmm_cholesky),
                "inner_cholesky": pack_lower(self.inner_cholesky), "noise": self.noise}

    @classmethod
    def from_state_dict(cls, state: dict, device="cpu") -> "LandmarkVariance":
        """The variance of :meth:`state_dict` (copies on ``device``); full square factors, as
        files written before the packing hold them, are read too."""
        own = lambda value: torch.as_tensor(value).clone().to(device)  # noqa: E731
        landmarks = own(state["landmarks"])
        factors = [own(state[name]) for name in ("kmm_cholesky", "inner_cholesky")]
        factors = [f if f.ndim == 2 else unpack_lower(f) for f in factors]
        return cls(landmarks, *factors, float(state["noise"]))

    @classmethod
    def from_factors(cls, X: torch.Tensor, factors: NystromFactors) -> "LandmarkVariance":
        """Keep the landmark rows of ``X`` (float64) and the factors ``L``, ``R``, row-major as
        a loaded model holds them (so that its solves round the same way)."""
        Z = X[factors.landmarks].to(torch.float64)
        L, R = (f.clone(memory_format=torch.contiguous_format)
                for f in (factors.kmm_cholesky, factors.inner_cholesky))
        return cls(Z, L, R, factors.noise)

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


@dataclass
class OperatorVariance:
    """Route (b): ``v(x, x') = s² ψᵀ(ΦᵀΦ + s²I)⁻¹ψ'`` over the first ``n_blocks`` blocks, plus
    on the diagonal the prior variance the features miss, ``k(x, x) − ψᵀψ``. PSD by
    construction; ``8·D²`` bytes kept."""

    cholesky: torch.Tensor  # L = chol(ΦᵀΦ + s²I), (D, D) float64
    noise: float
    n_blocks: int

    @classmethod
    def fit(cls, fm: FeatureMap, X: torch.Tensor, n_blocks: int, noise: float) -> "OperatorVariance":
        """``ΦᵀΦ`` summed over row chunks in float64 (``Φ`` scaled so that ``ΦΦᵀ ≈ K``)."""
        D = n_blocks * fm.block_size
        gram = torch.zeros((D, D), dtype=torch.float64, device=X.device)
        rows = max(1, 2**24 // D)
        for i in range(0, X.shape[0], rows):
            Phi = fm.transform(X[i:i + rows], n_blocks).to(torch.float64)
            gram.addmm_(Phi.T, Phi)
        gram.diagonal().add_(noise)
        return cls(torch.linalg.cholesky(gram).contiguous(), float(noise), int(n_blocks))

    def state_dict(self) -> dict:
        """The factor's lower triangle (packed, ``4·D(D+1)`` bytes), the noise and the blocks."""
        return {"cholesky": pack_lower(self.cholesky), "noise": self.noise,
                "n_blocks": self.n_blocks}

    @classmethod
    def from_state_dict(cls, state: dict, device="cpu") -> "OperatorVariance":
        """The operator of :meth:`state_dict` on ``device``; a full square factor (files
        written before the packing) is read as is."""
        factor = torch.as_tensor(state["cholesky"]).clone().to(device)
        factor = factor if factor.ndim == 2 else unpack_lower(factor)
        return cls(factor, float(state["noise"]), int(state["n_blocks"]))

    def _block(self, fm: FeatureMap, X: torch.Tensor, diagonal: bool) -> torch.Tensor:
        Phi = fm.transform(X, self.n_blocks).to(torch.float64)
        Z = torch.linalg.solve_triangular(self.cholesky, Phi.T, upper=False)  # L⁻¹Φᵀ
        missed = (kernel_diagonal(fm, X).to(torch.float64) - Phi.square().sum(1)).clamp(min=0)
        if diagonal:
            return missed + self.noise * Z.square().sum(0)
        return self.noise * Z.T @ Z + torch.diag(missed)

    def variance(self, fm: FeatureMap, X: torch.Tensor) -> torch.Tensor:
        """The diagonal, in chunks of ``2^24/D`` rows (``8·2^24`` bytes)."""
        rows = max(1, 2**24 // self.cholesky.shape[0])
        return torch.cat([self._block(fm, X[i:i + rows], True) for i in range(0, X.shape[0], rows)])

    def covariance(self, fm: FeatureMap, X: torch.Tensor) -> torch.Tensor:
        return self._block(fm, X, False)


def pack_lower(L: torch.Tensor) -> torch.Tensor:
    """The lower triangle of a square matrix, row by row: ``M(M+1)/2`` numbers."""
    rows, cols = torch.tril_indices(L.shape[0], L.shape[0], device=L.device)
    return L[rows, cols].contiguous()


def unpack_lower(packed: torch.Tensor) -> torch.Tensor:
    """The lower-triangular ``(m, m)`` matrix of :func:`pack_lower` (zeros above), with
    ``m(m+1)/2`` the length of ``packed``."""
    m = math.isqrt(8 * packed.shape[0] + 1) // 2
    if m * (m + 1) // 2 != packed.shape[0]:
        raise ValueError(f"A packed triangle has m(m+1)/2 numbers; got {packed.shape[0]}.")
    rows, cols = torch.tril_indices(m, m, device=packed.device)
    L = packed.new_zeros((m, m))
    L[rows, cols] = packed
    return L


def targets_variance(fm: FeatureMap, Xv: torch.Tensor, K_star: torch.Tensor, duals: torch.Tensor,
                     cross: torch.Tensor, quadratic: torch.Tensor, noise: float,
                     max_covariance: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Route (a) at the test points ``Xv``: ``v̂_j = k**_j − 2 k̂*_jᵀā_j + ā_jᵀK̂ā_j + s²‖ā_j‖²``
    and, for at most ``max_covariance`` points, the covariance
    ``k(x*_i, x*_j) − (k*_iᵀā_j + k*_jᵀā_i)/2`` with ``v̂`` on its diagonal, projected on the
    PSD cone (its diagonal may then differ slightly from ``v̂``). float64."""
    prior = kernel_diagonal(fm, Xv)
    variance = (prior - 2 * cross + quadratic + noise * duals.square().sum(0)).to(torch.float64)
    variance = variance.clamp(min=0.0)
    if Xv.shape[0] > max_covariance:
        return variance, None
    half = (K_star.T @ duals).to(torch.float64)
    cov = kernel_in_chunks(fm, Xv, Xv).to(torch.float64) - (half + half.T) / 2
    cov.diagonal().copy_(variance)
    vals, vecs = torch.linalg.eigh(cov)  # nearest PSD matrix: clip negative eigenvalues
    return variance, (vecs * vals.clamp(min=0)) @ vecs.T


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
    """The landmark route after the fit: ``16·M²`` (``L`` and ``R``, float64, square in
    memory; a model file holds their lower triangles, ``8·M(M+1)``)."""
    return 16 * n_landmarks**2


def targets_bytes(n_test: int, block_size: int, itemsize: int, max_cov: int) -> int:
    """Route (a) beyond its ``n·m`` targets (counted by :func:`dual_fit_bytes`): the test
    points' features ``w·m·r`` and, for ``m ≤ max_cov``, the covariance and its eigendecomposition
    ``4·8·m²``."""
    cov = 32 * n_test**2 if n_test <= max_cov else 0
    return itemsize * n_test * block_size + cov
