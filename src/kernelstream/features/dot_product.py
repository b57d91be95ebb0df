"""Dot-product kernels: polynomial by TensorSketch, power series by random Maclaurin features,
and the arc-cosine kernels.

All three see the input as ``x/σ``: ``σ = 1`` gives the textbook kernels, and the estimators'
default ``sigma="median"`` keeps ``⟨x, y⟩/σ²`` of order one (scikit-learn's polynomial
``gamma`` is ``1/σ²``). For the arc-cosine kernel of order ``n`` this only rescales ``k`` by
``σ^{−2n}``.
"""

from __future__ import annotations

import math

import torch

from .. import rng
from .base import FeatureMap
from .structured import SAMPLINGS, standard_normal

__all__ = ["ArcCosine", "RandomMaclaurin", "TensorSketch", "count_sketch", "tensor_sketch"]


#: the one-hot matrices of a dense count sketch hold at most this many entries (1 GiB in float32)
DENSE_SKETCH_FLOATS = 2**28


def count_sketch(X: torch.Tensor, index: torch.Tensor, signs: torch.Tensor, width: int, *,
                 dense: bool | None = None) -> torch.Tensor:
    """``p`` count sketches of the rows of ``X``: ``C[:, k, h_k(i)] += s_k(i) x_i``.

    ``X`` is ``(n, m)``; ``index`` and ``signs`` are ``(p, m)``; returns ``(n, p, width)``.
    ``dense`` (default: on CUDA, where the one-hot matrices hold at most ``DENSE_SKETCH_FLOATS``)
    computes ``C[:, k] = X S_k`` with the signed one-hot ``S_k`` ``(m, width)``,
    ``O(n·p·m·width)`` by batched GEMM: CUDA's ``index_add_`` adds by atomics in a varying
    order, so its sketches differ between runs in the last bits; the GEMM's do not. Else
    ``index_add_``, ``O(n·p·m)``.
    """
    n, m = X.shape
    p = index.shape[0]
    if dense is None:
        dense = X.device.type == "cuda" and p * m * width <= DENSE_SKETCH_FLOATS
    if dense:
        S = torch.zeros((p, m, width), dtype=X.dtype, device=X.device)
        S.scatter_(2, index.long()[:, :, None], signs.to(X.dtype)[:, :, None])  # S_k[i, h_k(i)] = s_k(i)
        return torch.matmul(X, S).permute(1, 0, 2)  # (p, n, width) -> (n, p, width)
    slots = index.long() + width * torch.arange(p, device=X.device)[:, None]  # (p, m) into p·width
    source = (X[:, None, :] * signs).reshape(n, p * m)  # s_k(i) x_i
    C = torch.zeros((n, p * width), dtype=X.dtype, device=X.device)
    return C.index_add_(1, slots.reshape(-1), source).view(n, p, width)


def tensor_sketch(C: torch.Tensor) -> torch.Tensor:
    """TensorSketch ``IFFT(Π_k FFT(C_k))`` of ``p`` count sketches ``(n, p, r) -> (n, r)``.

    The circular convolution of the sketches is the count sketch of ``x^{⊗p}`` under the hash
    ``Σ_k h_k mod r`` and sign ``Π_k s_k`` (Pham & Pagh 2013, Section 3). O(n·p·r log r).
    """
    r = C.shape[-1]
    spectra = torch.fft.rfft(C, dim=-1)  # (n, p, r/2 + 1)
    return torch.fft.irfft(spectra.prod(dim=1), n=r, dim=-1)


class TensorSketch(FeatureMap):
    """Polynomial kernel ``(⟨x, y⟩/σ² + c)^p`` by TensorSketch (Pham & Pagh, KDD 2013).

    With ``x̃ = [x/σ, √c]``, ``k = ⟨x̃, ỹ⟩^p``; a block is the TensorSketch of ``x̃`` with ``p``
    independent count sketches of width ``r`` (hashes and signs from Philox), and
    ``E[TS(x̃)ᵀ TS(ỹ)] = ⟨x̃, ỹ⟩^p``.

    Parameters
    ----------
    degree : int, default=2
        ``p ≥ 1``.
    coef0 : float, default=1.0
        ``c ≥ 0``.
    """

    name = "polynomial"

    def __init__(self, n_features_in, sigma=1.0, block_size=256, seed=0, *, degree=2,
                 coef0=1.0, **kw):
        if int(degree) != degree or degree < 1:
            raise ValueError(f"degree must be a positive integer; got {degree!r}.")
        if not coef0 >= 0:
            raise ValueError(f"coef0 must be non-negative (else k is not a kernel); got {coef0!r}.")
        super().__init__(n_features_in, sigma, block_size, seed, **kw)
        self.degree, self.coef0 = int(degree), float(coef0)

    def extra_params(self):
        return {"degree": self.degree, "coef0": self.coef0}

    def block_param_numel(self):
        return 2 * self.degree * (self.n_features_in + 1)

    def kernel_at(self, X, Y, sigma):
        return (X @ Y.T / sigma**2 + self.coef0) ** self.degree  # (⟨x, y⟩/σ² + c)^p

    def _draw(self, block, device):
        n = self.degree * (self.n_features_in + 1)
        hashes = rng.random_bits(n, self.seed, block, rng.Stream.SKETCH_HASH, device)
        index = hashes % self.block_size  # h_k(i)
        bits = rng.random_bits(n, self.seed, block, rng.Stream.SKETCH_SIGN, device)
        signs = 1 - 2 * (bits & 1)  # s_k(i)
        return torch.stack([index, signs]).view(2, self.degree, -1).double()

    def _features(self, X, params):
        constant = torch.full((X.shape[0], 1), math.sqrt(self.coef0), dtype=X.dtype, device=X.device)
        Xa = torch.cat([X / self.sigma, constant], dim=1)  # ⟨x̃, ỹ⟩ = ⟨x, y⟩/σ² + c
        blocks = [tensor_sketch(count_sketch(Xa, P[0], P[1], self.block_size)) for P in params]
        return torch.stack(blocks, dim=1)


class RandomMaclaurin(FeatureMap):
    """Dot-product kernel ``f(⟨x, y⟩/σ²)``, ``f(t) = Σ_N a_N t^N`` with ``a_N ≥ 0``, by random
    Maclaurin features (Kar & Karnick, AISTATS 2012, Algorithm 1 with ``p = 2``).

    Each feature draws a degree ``N`` with ``P(N) ∝ 2^{−(N+1)}`` on ``0..max_degree`` and ``N``
    Rademacher vectors ``w_i``: ``φ(x) = sqrt(a_N / P(N)) Π_{i≤N} w_iᵀx/σ``, so
    ``E[φ(x) φ(y)] = Σ_{N ≤ max_degree} a_N t^N``. A block is ``r`` such features over ``√r``.

    Parameters
    ----------
    coefs : sequence of float, default=None
        ``a_0, a_1, …``; ``None`` is the exponential kernel ``exp(⟨x, y⟩/σ²)``,
        ``a_N = 1/N!``, truncated at ``max_degree`` (tail ``< t^{21}/21!``).
    max_degree : int, default=20
        Truncation of the default series (``len(coefs) − 1`` when ``coefs`` is given).
    """

    name = "dot_product"

    def __init__(self, n_features_in, sigma=1.0, block_size=256, seed=0, *, coefs=None,
                 max_degree=20, **kw):
        if coefs is not None:
            coefs = [float(a) for a in coefs]
            if not coefs or min(coefs) < 0:
                raise ValueError(f"coefs must be a non-empty list of non-negative Maclaurin "
                                 f"coefficients; got {coefs!r}.")
            max_degree = len(coefs) - 1
        if int(max_degree) != max_degree or max_degree < 0:
            raise ValueError(f"max_degree must be a non-negative integer; got {max_degree!r}.")
        super().__init__(n_features_in, sigma, block_size, seed, **kw)
        self.coefs, self.max_degree = coefs, int(max_degree)

    def extra_params(self):
        return {"coefs": self.coefs, "max_degree": self.max_degree}

    def block_param_numel(self):
        return self.block_size * (self.n_features_in + 1)  # E[N] < 1 vectors per feature

    def _series(self) -> torch.Tensor:
        if self.coefs is None:
            return torch.tensor([1 / math.factorial(N) for N in range(self.max_degree + 1)],
                                dtype=torch.float64)
        return torch.tensor(self.coefs, dtype=torch.float64)

    def _degree_law(self) -> torch.Tensor:
        law = 0.5 ** torch.arange(1, self.max_degree + 2, dtype=torch.float64)  # 2^{−(N+1)}
        return law / law.sum()

    def kernel_at(self, X, Y, sigma):
        t = X @ Y.T / sigma**2
        if self.coefs is None:
            return torch.exp(t)
        out = torch.zeros_like(t)
        for a in reversed(self.coefs):  # Horner: Σ a_N t^N
            out = out * t + a
        return out

    def _draw(self, block, device):
        u = rng.uniform((self.block_size,), self.seed, block, rng.Stream.MACLAURIN_DEGREE)
        cdf = torch.cumsum(self._degree_law(), 0)
        degrees = torch.searchsorted(cdf, u).clamp_(max=self.max_degree)  # N ~ P(N)
        n_vectors = int(degrees.sum())
        bits = rng.random_bits(n_vectors * self.n_features_in, self.seed, block,
                                rng.Stream.MACLAURIN_RADEMACHER)
        signs = (1 - 2 * (bits & 1)).double()  # w_i ∈ {±1}^d, vector-major
        return torch.cat([degrees.double(), signs]).to(device)

    def _features(self, X, params):
        r, d = self.block_size, self.n_features_in
        weights = (self._series() / self._degree_law()).sqrt().to(X.device, X.dtype)  # sqrt(a_N/P(N))
        out = []
        for P in params:
            degrees = P[:r].long()
            proj = (X / self.sigma) @ P[r:].view(-1, d).T  # (n, M): w_iᵀx/σ
            proj = torch.cat([proj, torch.ones_like(proj[:, :1])], dim=1)  # column M is 1
            first = torch.cumsum(degrees, 0) - degrees  # first vector of each feature
            feature = torch.ones((X.shape[0], r), dtype=X.dtype, device=X.device)
            for i in range(int(degrees.max())):
                feature *= proj[:, torch.where(degrees > i, first + i, proj.shape[1] - 1)]  # Π_i
            out.append(feature * weights[degrees] * r**-0.5)
        return torch.stack(out, dim=1)


class ArcCosine(FeatureMap):
    """Arc-cosine kernel of order ``n ∈ {0, 1, 2}`` (Cho & Saul, NeurIPS 2009, Eqs. 1–3 and 6).

    ``k_n(x, y) = (1/π) ‖x‖ⁿ ‖y‖ⁿ J_n(θ)`` on ``x/σ, y/σ`` (``θ`` the angle between them), with
    ``J_0 = π − θ``, ``J_1 = sin θ + (π − θ) cos θ``, ``J_2 = 3 sin θ cos θ + (π − θ)(1 + 2 cos² θ)``.
    Features ``ψ(x) = sqrt(2/r) Θ(Wᵀx) (Wᵀx)ⁿ``, ``W ~ N(0, I)``; ``Θ(0) = ½`` and ``cos θ = 0``
    for a zero vector keep the two consistent. ``sampling`` as for the Fourier families.
    """

    name = "arccos"

    def __init__(self, n_features_in, sigma=1.0, block_size=256, seed=0, *, order=1,
                 sampling="iid", **kw):
        if order not in (0, 1, 2):
            raise ValueError(f"arc-cosine order must be 0, 1 or 2; got {order!r}.")
        if sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}; got {sampling!r}.")
        super().__init__(n_features_in, sigma, block_size, seed, **kw)
        self.order, self.sampling = int(order), sampling

    def extra_params(self):
        return {"order": self.order, **({} if self.sampling == "iid" else {"sampling": self.sampling})}

    @property
    def sigma(self) -> float:
        """σ; 1.0 for order 0, whose kernel ``1 − θ/π`` has no scale (a given σ is ignored)."""
        return 1.0 if self.order == 0 else self._sigma

    def kernel_at(self, X, Y, sigma):
        if self.order == 0:
            sigma = 1.0  # no scale: k_0 = 1 − θ/π
        X, Y = X / sigma, Y / sigma
        norms = X.norm(dim=1)[:, None] * Y.norm(dim=1)[None, :]  # ‖x‖ ‖y‖
        cos = torch.where(norms > 0, X @ Y.T / torch.where(norms > 0, norms, 1), 0).clamp(-1, 1)
        theta, sin = torch.arccos(cos), torch.sqrt(1 - cos.square())
        J = [math.pi - theta,
             sin + (math.pi - theta) * cos,
             3 * sin * cos + (math.pi - theta) * (1 + 2 * cos.square())][self.order]
        return norms**self.order * J / math.pi  # (1/π) ‖x‖ⁿ ‖y‖ⁿ J_n(θ)

    def _draw(self, block, device):
        return standard_normal(self.sampling, self.n_features_in, self.block_size, self.seed,
                               block, device)

    def _features(self, X, params):
        n, K, r = X.shape[0], len(params), self.block_size
        Z = (X / self.sigma) @ torch.cat(params, dim=1)  # (n, K·r), one GEMM
        if self.order == 0:
            features = torch.heaviside(Z, torch.tensor(0.5, dtype=Z.dtype, device=Z.device))
        else:
            features = Z.relu_() if self.order == 1 else Z.relu_().square_()  # Θ(z) zⁿ, in place
        return features.mul_(math.sqrt(2 / r)).view(n, K, r)
