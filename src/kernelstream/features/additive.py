"""Additive homogeneous kernels on histograms (Vedaldi–Zisserman maps), and the exponentiated χ².

Names follow scikit-learn: ``kernel="chi2"`` is the exponentiated χ² kernel
``exp(−γ Σ (x − y)²/(x + y))`` (:class:`ExpChi2`, scikit-learn's ``chi2_kernel``; ``"exp_chi2"``
is an alias), ``kernel="additive_chi2"`` the additive one ``Σ 2xy/(x + y)``
(:class:`AdditiveChi2`; scikit-learn's ``additive_chi2_kernel`` is ``−Σ (x − y)²/(x + y)``, which
differs from it by ``(Σx + Σy)/2`` terms and a factor ``−1/2``).

An additive kernel ``k(x, y) = Σ_i k(x_i, y_i)`` whose terms are 1-homogeneous
(``k(cx, cy) = c k(x, y)``) is ``k(x, y) = sqrt(xy) 𝒦(λ)``, ``λ = log y − log x``,
``𝒦(λ) = ∫ e^{−iωλ} κ(ω) dω``. Sampling the spectrum ``κ`` at ``ω = jL``, ``|j| ≤ n``, gives
``2n + 1`` deterministic features per coordinate (Vedaldi & Zisserman, TPAMI 2012, Eq. 11):

    ψ(x) = [sqrt(x L κ(0)), sqrt(2 x L κ(jL)) cos(jL log x), sqrt(2 x L κ(jL)) sin(jL log x)]_{j=1..n}

so that ``ψ(x)ᵀψ(y) = sqrt(xy) Σ_{|j|≤n} L κ(jL) cos(jLλ) ≈ k(x, y)``.

=============  ==========================================  ================================
kernel         k(x, y) per coordinate                      κ(ω)
=============  ==========================================  ================================
additive_chi2  2xy / (x + y)                               sech(πω)
intersection   min(x, y)                                   (2/π) / (1 + 4ω²)
hellinger      sqrt(xy)                                    δ(ω): ψ(x) = sqrt(x), exact
js             x/2 log₂((x+y)/x) + y/2 log₂((x+y)/y)       (2/ln 4) sech(πω) / (1 + 4ω²)
=============  ==========================================  ================================

``order`` is ``n``; the default ``interval`` is ``L = L₁ n^{−a}`` per kernel, fitted to minimise
the largest error relative to ``(x + y)/2`` over ``y/x ∈ [e^{−8}, e^8]``; that error falls with
the order, slowest for the intersection kernel, whose κ decays slowly (decision record:
docs/decisions/additive-kernel-intervals.md).

**Blocks.** The embedding has ``m = d(2n+1)`` coordinates. With ``P = ⌈m/r⌉``, block ``j`` holds
chunk ``j mod P`` of a random permutation (number ``⌊j/P⌋``) of ``P·r`` slots, the slots past ``m``
being zero, times ``√P``: each block is unbiased for the VZ kernel, and any ``P`` consecutive
blocks starting at a multiple of ``P`` give it exactly. When ``m ≤ r`` every block is the whole
embedding, zero-padded. Inputs must be non-negative.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from .. import rng
from .base import FeatureMap
from .shift_invariant import FourierMap, fourier_features

__all__ = ["AdditiveChi2", "ExpChi2", "Hellinger", "Intersection", "JensenShannon",
           "check_non_negative"]

_ROW_CHUNK_ELEMENTS = 2**22  # bounds the (rows, m, d) temporaries of the exact kernels


def check_non_negative(X, kernel: str) -> None:
    """Raise a ValueError naming ``kernel`` when ``X`` (a tensor, array or sparse matrix) has a
    negative entry: the χ² family and the additive kernels are for histograms."""
    values = X.data if hasattr(X, "tocsr") else X  # sparse: its stored entries
    negative = values < 0
    if bool(negative.any()):
        raise ValueError(
            f"kernel {kernel!r} needs non-negative features (such as histograms), but X has "
            f"{int(negative.sum())} negative entries (min {float(values.min()):.4g}). Rescale "
            "the features to be non-negative (e.g. with sklearn.preprocessing.MinMaxScaler), "
            "or use a kernel such as 'rbf'."
        )


def _pairwise_sum(term, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """``Σ_i term(x_i, y_i)`` for all pairs of rows, ``(n, m)``, in row chunks."""
    rows = max(1, _ROW_CHUNK_ELEMENTS // max(1, Y.shape[0] * X.shape[1]))
    return torch.cat([term(X[i : i + rows, None, :], Y[None, :, :]).sum(dim=-1)
                      for i in range(0, X.shape[0], rows)])


class _AdditiveVZ(FeatureMap):
    """Vedaldi–Zisserman features of an additive 1-homogeneous kernel, in blocks of ``r``.

    Parameters
    ----------
    order : int, default=2
        ``n``: ``2n + 1`` features per input coordinate.
    interval : float, default=None
        Sample interval ``L`` of the spectrum; ``None`` uses the kernel's fitted default.
    """

    non_negative = True
    #: (L₁, a): default interval L = L₁ · order^(−a)
    default_interval: ClassVar[tuple[float, float]] = (0.6, 0.25)

    def __init__(self, n_features_in, sigma=1.0, block_size=256, seed=0, *, order=2,
                 interval=None, **kw):
        if int(order) != order or order < 1:
            raise ValueError(f"order must be a positive integer; got {order!r}.")
        if interval is not None and not interval > 0:
            raise ValueError(f"interval must be positive; got {interval!r}.")
        super().__init__(n_features_in, sigma, block_size, seed, **kw)
        self.order = int(order)
        L1, a = self.default_interval
        self.interval = float(L1 * self.order**-a if interval is None else interval)

    def extra_params(self):
        return {"order": self.order, "interval": self.interval}

    @property
    def sigma(self) -> float:
        """1.0 always: a homogeneous additive kernel has no bandwidth, so a given σ (such as the
        estimators' median heuristic) is ignored and ``sigma_`` reports 1.0."""
        return 1.0

    @staticmethod
    def spectrum(omega: np.ndarray) -> np.ndarray:
        """``κ(ω)``, the inverse Fourier transform of ``𝒦``."""
        raise NotImplementedError

    @staticmethod
    def term(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The exact kernel of one coordinate, elementwise."""
        raise NotImplementedError

    @property
    def embedding_dim(self) -> int:
        return self.n_features_in * (2 * self.order + 1)  # m = d(2n + 1)

    def kernel_at(self, X, Y, sigma):
        """``Σ_i term(x_i, y_i)``; ``sigma`` is ignored (no bandwidth)."""
        check_non_negative(X, self.requested_name)
        check_non_negative(Y, self.requested_name)
        return _pairwise_sum(self.term, X, Y)

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        """All ``m`` VZ features of ``X``, ``(n, m)``, coordinate-major."""
        check_non_negative(X, self.requested_name)
        L, n = self.interval, self.order
        kappa = self.spectrum(L * np.arange(n + 1))
        w0 = math.sqrt(L * kappa[0])
        w = torch.as_tensor(np.sqrt(2 * L * kappa[1:]), dtype=X.dtype, device=X.device)
        root = X.sqrt()[..., None]  # sqrt(x), (n, d, 1)
        log_x = torch.log(torch.where(X > 0, X, 1.0))[..., None]  # log x (0 where x = 0)
        angle = log_x * (L * torch.arange(1, n + 1, dtype=X.dtype, device=X.device))  # jL log x
        parts = [root * w0, root * w * torch.cos(angle), root * w * torch.sin(angle)]
        return torch.cat(parts, dim=-1).reshape(X.shape[0], -1)

    def _chunks(self) -> int:
        return -(-self.embedding_dim // self.block_size)  # P = ⌈m/r⌉

    def block_param_numel(self):
        return self.block_size

    def _draw(self, block, device):
        m, r, P = self.embedding_dim, self.block_size, self._chunks()
        if P == 1:
            slots = torch.arange(r, dtype=torch.int64)
        else:
            keys = rng.random_bits(P * r, self.seed, block // P, rng.Stream.SLOT_PERMUTATION)
            slots = torch.argsort(keys, stable=True)[(block % P) * r : (block % P + 1) * r]
        return slots.clamp_(max=m).double().to(device)  # slot m is the zero feature

    def _features(self, X, params):
        Phi = self.embed(X)
        Phi = torch.cat([Phi, torch.zeros_like(Phi[:, :1])], dim=1)  # (n, m + 1)
        slots = torch.cat(params).long()
        return (Phi[:, slots] * math.sqrt(self._chunks())).view(X.shape[0], len(params), -1)


class AdditiveChi2(_AdditiveVZ):
    """Additive χ² kernel ``Σ_i 2 x_i y_i / (x_i + y_i)``; ``κ(ω) = sech(πω)``
    (``kernel="additive_chi2"``)."""

    name = "additive_chi2"
    default_interval = (0.6, 0.25)

    @staticmethod
    def spectrum(omega):
        return 1 / np.cosh(np.pi * omega)

    @staticmethod
    def term(x, y):
        s = x + y
        return torch.where(s > 0, 2 * x * y / torch.where(s > 0, s, 1), 0)


class Intersection(_AdditiveVZ):
    """Histogram intersection kernel ``Σ_i min(x_i, y_i)`` by random features of its spectrum.

    ``min(x, y) = sqrt(xy) e^{−|λ|/2}``, ``λ = log y − log x``, and ``κ(ω) = (2/π)/(1 + 4ω²)``
    is the density of Cauchy(0, ½): with ``ω ~ κ`` and a coordinate ``i`` drawn uniformly,
    ``E[d·sqrt(x_i y_i) cos(ω(log x_i − log y_i))] = Σ_i min(x_i, y_i)``. A block of ``r``
    features holds ``⌊r/2⌋`` pairs ``a·sqrt(x_i)[cos(ω log x_i), sin(ω log x_i)]`` (and, for
    odd ``r``, one ``a·sqrt(x_i) cos(ω log x_i + b)``), ``a = sqrt(2d/r)``: unbiased, with an
    error that falls like ``1/√D``. The spectrum decays too slowly for the deterministic VZ
    sampling, whose bias (0.099 of the kernel's maximum on MNIST at order 2) no ``D`` removed.
    Coordinates are stratified: feature unit ``u`` (a pair or the odd feature, numbered across
    blocks) reads coordinate ``π_{⌊u/d⌋}(u mod d)`` of a seeded permutation per round of ``d``.
    ``order`` and ``interval`` only set :meth:`embed` (the VZ embedding); the features ignore
    them (decision record: docs/decisions/intersection-random-features.md).
    """

    name = "intersection"
    default_interval = (0.94, 0.165)

    @staticmethod
    def spectrum(omega):
        return 2 / np.pi / (1 + 4 * omega**2)

    @staticmethod
    def term(x, y):
        return torch.minimum(x, y)

    def _units(self) -> int:
        """Feature units per block: ``⌊r/2⌋`` pairs, and one single feature when ``r`` is odd."""
        return self.block_size // 2 + self.block_size % 2

    def block_param_numel(self):
        return 3 * self._units()

    def _coordinates(self, block: int) -> torch.Tensor:
        """Coordinate of each unit of ``block``: stratified rounds of seeded permutations."""
        d, units = self.n_features_in, self._units()
        first, last = block * units, (block + 1) * units        # global unit numbers
        q0, q1 = first // d, -(-last // d)                      # rounds of d units
        stride = -(-d // 4) * 4                                 # words per round (Philox: ×4)
        bits = rng.random_bits((q1 - q0) * stride, self.seed, 0, rng.Stream.SLOT_PERMUTATION,
                               offset=q0 * stride).view(q1 - q0, stride)[:, :d]
        perms = torch.argsort(bits, dim=1, stable=True).reshape(-1)
        return perms[first - q0 * d:last - q0 * d]

    def _draw(self, block, device):
        units = self._units()
        u = rng.uniform((2, units), self.seed, block, rng.Stream.WEIGHTS)
        omega = 0.5 * torch.tan(math.pi * (u[0] - 0.5))         # Cauchy(0, ½) = κ
        phase = torch.zeros(units, dtype=torch.float64)
        if self.block_size % 2:
            phase[-1] = 2 * math.pi * u[1, -1]                  # b ~ U[0, 2π) for the odd one
        params = torch.stack([self._coordinates(block).double(), omega, phase], dim=1)
        return params.to(device)

    def _features(self, X, params):
        check_non_negative(X, self.requested_name)
        P = torch.stack(params).double()                        # (K, units, 3)
        Xi = X.double()[:, P[..., 0].long()]                    # x_i per unit, (n, K, units)
        root = Xi.sqrt() * math.sqrt(2 * self.n_features_in / self.block_size)
        angle = torch.log(torch.where(Xi > 0, Xi, 1.0)) * P[..., 1] + P[..., 2]
        pairs = self.block_size // 2
        parts = [root[..., :pairs] * torch.cos(angle[..., :pairs]),
                 root[..., :pairs] * torch.sin(angle[..., :pairs]),
                 root[..., pairs:] * torch.cos(angle[..., pairs:])]  # the odd feature, if any
        return torch.cat(parts, dim=-1).to(X.dtype)


class JensenShannon(_AdditiveVZ):
    """Jensen–Shannon kernel ``Σ_i x_i/2 log₂((x_i+y_i)/x_i) + y_i/2 log₂((x_i+y_i)/y_i)``;
    ``κ(ω) = (2/ln 4) sech(πω)/(1 + 4ω²)``."""

    name = "js"
    default_interval = (0.44, 0.27)

    @staticmethod
    def spectrum(omega):
        return 2 / math.log(4) / np.cosh(np.pi * omega) / (1 + 4 * omega**2)

    @staticmethod
    def term(x, y):
        s = x + y

        def half_xlog2(a):  # a/2 log₂(s/a), 0 when a = 0
            return torch.where(a > 0, a / 2 * torch.log2(s / torch.where(a > 0, a, 1)), 0)

        return half_xlog2(x) + half_xlog2(y)


class Hellinger(_AdditiveVZ):
    """Hellinger (Bhattacharyya) kernel ``Σ_i sqrt(x_i y_i)``: the exact map ``ψ(x) = sqrt(x)``
    (``κ = δ``; ``order`` and ``interval`` are kept for a uniform signature and ignored)."""

    name = "hellinger"

    @property
    def embedding_dim(self):
        return self.n_features_in

    def embed(self, X):
        check_non_negative(X, self.requested_name)
        return X.sqrt()

    @staticmethod
    def term(x, y):
        return torch.sqrt(x * y)


class ExpChi2(FourierMap):
    """Exponentiated χ² kernel ``exp(−γ Σ_i (x_i − y_i)² / (x_i + y_i))``, ``γ = 1/(2σ²)`` unless
    given: ``kernel="chi2"`` (alias ``"exp_chi2"``), scikit-learn's ``chi2_kernel``.

    ``Σ (x − y)²/(x + y) = Σx + Σy − 2 k_χ²(x, y) = ‖Φ(x) − Φ(y)‖²`` for the χ² embedding ``Φ``,
    so ``k`` is the Gaussian kernel on ``Φ``. Features: Fourier features of
    ``exp(−γ‖u − v‖²)``, ``ω ~ N(0, 2γ I_m)``, on the VZ χ² embedding ``u = Φ_VZ(x)`` (``m = d(2n+1)``)
    (Vedaldi & Zisserman 2012, Section 6). They are unbiased for ``exp(−γ‖Φ_VZ(x) − Φ_VZ(y)‖²)``,
    whose distance is exactly 0 at ``x = y`` and within the VZ error of the χ² distance elsewhere
    (``order`` and ``interval`` as for ``additive_chi2``); ``sampling`` as for the Fourier families.

    The default ``order=2`` (``m = 5d``) balances that bias against cost, which grows like ``m``
    per feature: on MNIST its bias is already below the Monte Carlo error of 16,384 features
    (decision record: docs/decisions/exp-chi2-order.md). Raise ``order`` when the bias matters
    more than time.
    """

    name = "chi2"
    non_negative = True

    def __init__(self, n_features_in, sigma=1.0, block_size=256, seed=0, *, gamma=None,
                 order=2, interval=None, **kw):
        if gamma is not None and not gamma > 0:
            raise ValueError(f"gamma must be positive or None; got {gamma!r}.")
        super().__init__(n_features_in, sigma, block_size, seed, **kw)
        self.embedding = AdditiveChi2(n_features_in, order=order, interval=interval)
        self.gamma = None if gamma is None else float(gamma)

    def extra_params(self):
        chi2 = self.embedding.extra_params()
        return {"gamma": self.gamma, **chi2, **super().extra_params()}

    def _gamma(self, sigma=None):
        """``γ``: as given, else ``1/(2σ²)`` at ``sigma`` (this map's σ when ``None``)."""
        if self.gamma is not None:
            return self.gamma
        return 1 / (2 * (self.sigma if sigma is None else sigma) ** 2)

    def _shape(self):
        return self.embedding.embedding_dim, super()._shape()[1]

    def kernel_at(self, X, Y, sigma):
        check_non_negative(X, self.requested_name)
        check_non_negative(Y, self.requested_name)

        def term(x, y):  # (x − y)² / (x + y), 0 when x = y = 0
            s = x + y
            return torch.where(s > 0, (x - y).square() / torch.where(s > 0, s, 1), 0)

        return torch.exp(-self._gamma(sigma) * _pairwise_sum(term, X, Y))

    def _draw(self, block, device):
        W = self._normal(block, device) * math.sqrt(2 * self._gamma())  # ω ~ N(0, 2γ I)
        return self._with_phases(W, block)

    def _features(self, X, params):
        check_non_negative(X, self.requested_name)  # (the embedding's check names additive_chi2)
        return fourier_features(self.embedding.embed(X), params)
