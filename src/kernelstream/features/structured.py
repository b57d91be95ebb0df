"""Variance reduction for the Fourier families: orthogonal, quasi-Monte Carlo and Fastfood draws.

Each sampler replaces the i.i.d. standard normals of a block and keeps every frequency's marginal
law exactly ``N(0, I)``, so the features stay unbiased; what changes is the dependence *between*
the frequencies of one block, which lowers the variance of the Gram estimate.

- ``"orthogonal"`` (Yu et al., *Orthogonal Random Features*, NeurIPS 2016): groups of ``d``
  frequencies ``ω_i = s_i q_i``, ``Q = [q_1 … q_d]`` Haar-orthogonal (QR of a Gaussian matrix with
  the signs of ``diag(R)`` folded in), ``s_i ~ χ(d)`` independent.
- ``"sobol"`` / ``"halton"``: scrambled low-discrepancy points ``u_i ∈ (0, 1)^d`` (SciPy
  ``stats.qmc``, the scrambling seeded from ``(seed, block)``), mapped through ``Φ⁻¹``. Each
  scrambled point is uniform, so each frequency is ``N(0, I)``.
- Fastfood (Le, Sarlós & Smola, ICML 2013): ``V = S H G Π H B`` per stack of ``p = 2^⌈log₂ d⌉``
  frequencies, applied with the fast Walsh–Hadamard transform in ``O(p log p)`` instead of
  ``O(p d)``: :class:`FastfoodRBF`.

Draws go through the Philox generator of :mod:`kernelstream.rng`; QR, χ quantiles and the QMC
engines run on the CPU in float64 and are then moved, so a block is the same on every device.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np
import torch
from scipy.special import gammaincinv, ndtri
from scipy.stats import qmc

from .. import rng
from ..ops.trig import cos_into, sin_into
from .base import FeatureMap

__all__ = ["SAMPLINGS", "FastfoodRBF", "chi_radii", "fwht", "orthogonal_normal",
           "paired_cos_sin", "qmc_uniform", "standard_normal"]

#: frequency samplers of the Fourier families (``kernel_params={"sampling": ...}``)
SAMPLINGS = ("iid", "orthogonal", "sobol", "halton")


def chi_radii(n: int, dof: int, seed: int, block: int, stream: int, device=None) -> torch.Tensor:
    """``n`` χ(dof) draws by inversion: ``sqrt(2 P⁻¹(dof/2, u))``, float64 on ``device``."""
    u = rng.uniform((n,), seed, block, stream).numpy()
    radii = np.sqrt(2.0 * gammaincinv(dof / 2.0, u))  # χ² = 2·Gamma(dof/2, 1)
    return torch.as_tensor(radii, dtype=torch.float64, device=device)


def orthogonal_normal(d: int, h: int, seed: int, block: int, device=None) -> torch.Tensor:
    """``(d, h)`` columns marginally ``N(0, I_d)``, orthogonal within each group of ``d``."""
    groups = -(-h // d)
    G = rng.normal((groups, d, d), seed, block, rng.Stream.WEIGHTS)  # CPU float64
    Q, R = torch.linalg.qr(G)  # G = QR per group
    Q = Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1)).unsqueeze(-2)  # Haar: Q diag(sign R_ii)
    radii = chi_radii(groups * d, d, seed, block, rng.Stream.ORF_RADII).view(groups, 1, d)
    W = (Q * radii).permute(1, 0, 2).reshape(d, groups * d)  # ω = s_i q_i, s_i ~ χ(d)
    return W[:, :h].contiguous().to(device)


def qmc_uniform(n: int, dim: int, seed: int, block: int, engine: str = "sobol") -> np.ndarray:
    """``(n, dim)`` scrambled Sobol or Halton points in ``(0, 1)``, seeded by ``(seed, block)``."""
    words = [int(w) for w in rng.random_bits(4, seed, block, rng.Stream.QMC_SCRAMBLE)]
    generator = np.random.default_rng(words)
    cls = {"sobol": qmc.Sobol, "halton": qmc.Halton}[engine]
    with warnings.catch_warnings():  # Sobol's balance needs 2^m points; any n stays unbiased
        warnings.simplefilter("ignore", UserWarning)
        points = cls(dim, scramble=True, rng=generator).random(n)
    return np.clip(points, 2.0**-53, 1.0 - 2.0**-53)


def standard_normal(sampling: str, d: int, h: int, seed: int, block: int, device=None) -> torch.Tensor:
    """``(d, h)`` frequencies, each column ``N(0, I_d)``, drawn by ``sampling`` (see SAMPLINGS)."""
    if sampling == "iid":
        return rng.normal((d, h), seed, block, rng.Stream.WEIGHTS, device)
    if sampling == "orthogonal":
        return orthogonal_normal(d, h, seed, block, device)
    u = qmc_uniform(h, d, seed, block, sampling)  # point i is frequency i
    return torch.as_tensor(ndtri(u).T, dtype=torch.float64).contiguous().to(device)  # Φ⁻¹(u)


def paired_cos_sin(Z: torch.Tensor) -> torch.Tensor:
    """``sqrt(1/h) [cos Z, sin Z]`` along the last axis: ``(…, h) -> (…, 2h)``."""
    h = Z.shape[-1]
    out = torch.empty((*Z.shape[:-1], 2, h), dtype=Z.dtype, device=Z.device)
    cos_into(Z, out[..., 0, :])
    sin_into(Z, out[..., 1, :])
    return out.view(*Z.shape[:-1], 2 * h).mul_(h**-0.5)  # sqrt(2/r) with r = 2h


@lru_cache(maxsize=16)
def _hadamard(size: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    bits = torch.arange(size)
    popcount = torch.zeros(size, size, dtype=torch.int64)
    and_ = bits[:, None] & bits[None, :]
    while bool(and_.any()):
        popcount += and_ & 1
        and_ = and_ >> 1
    return (1 - 2 * (popcount % 2)).to(dtype=dtype, device=device)  # H[i, j] = (−1)^{popcount(i & j)}


def _radices(p: int, max_bits: int = 6) -> list[int]:
    """Split ``log₂ p`` bits into the fewest near-equal stages of at most ``max_bits`` bits."""
    bits = p.bit_length() - 1
    stages = max(1, -(-bits // max_bits))
    return [1 << (bits // stages + (i < bits % stages)) for i in range(stages)]


def fwht(x: torch.Tensor) -> torch.Tensor:
    """Unnormalised Walsh–Hadamard transform ``H_p x`` along the last axis (``p`` a power of 2).

    ``H_p = H_{R_1} ⊗ … ⊗ H_{R_k}`` with radices ``R_i ≤ 64``: stage ``i`` multiplies the last
    axis by a small Hadamard matrix (one GEMM) and rotates the factor to the front, so after ``k``
    stages the order is restored. ``O(p Σ R_i)`` work, ``k ≈ log₂ p / 6`` passes over memory
    (radix-2 butterflies would take ``log₂ p``); rows go in cache-sized chunks on the CPU.
    """
    p = x.shape[-1]
    if p < 1 or p & (p - 1):
        raise ValueError(f"fwht needs a power-of-2 length; got {p}.")
    y = x.reshape(-1, p)
    out = torch.empty_like(y)
    rows = max(1, 2**18 // p) if x.device.type == "cpu" else max(1, y.shape[0])
    radices = _radices(p)
    for i in range(0, y.shape[0], rows):
        z = y[i : i + rows]
        for R in radices:  # (m, p/R, R) @ H_R, then the transformed factor moves to the front
            z = (z.reshape(-1, R) @ _hadamard(R, x.dtype, x.device)).view(-1, p // R, R)
            z = z.transpose(1, 2).reshape(-1, p)
        out[i : i + rows] = z
    return out.view(x.shape)


class FastfoodRBF(FeatureMap):
    """Gaussian RBF kernel ``exp(−‖x − y‖² / (2σ²))`` with Fastfood frequencies.

    A block of ``r = 2h`` paired features uses ``⌈h/p⌉`` stacks, ``p = 2^⌈log₂ d⌉`` (inputs
    zero-padded to ``p``), each ``V = S H G Π H B / σ``: ``B`` random signs, ``H`` Walsh–Hadamard,
    ``Π`` a random permutation, ``G`` standard normal diagonal, ``S_ii = s_i / (‖g‖ √p)`` with
    ``s_i ~ χ(p)``. Row ``i`` of ``H G Π H B`` is ``Σ_k (h_ik g_k) u_π(k)`` over the orthogonal rows
    ``u`` of ``HB`` (norm ``√p``), hence ``N(0, p I)`` with norm ``√p ‖g‖``: every frequency is
    exactly ``N(0, σ⁻² I)`` and the features are unbiased (Le et al. 2013, Section 3).
    Cost ``O(h log p)`` per point and block instead of ``O(h d)``; block sizes must be even.
    """

    name = "rbf_fastfood"
    block_multiple = 2
    unit_diagonal = True
    bounded = True  # [cos, sin]/√(r/2)

    @property
    def padded_dim(self) -> int:
        return 1 << max(0, (self.n_features_in - 1).bit_length())  # p = 2^⌈log₂ d⌉

    def _stacks(self) -> int:
        return -(-(self.block_size // 2) // self.padded_dim)

    def block_param_numel(self) -> int:
        return 4 * self._stacks() * self.padded_dim

    def kernel_at(self, X, Y, sigma):
        return torch.exp(-torch.cdist(X, Y).square() / (2 * sigma**2))

    def _draw(self, block, device):
        m, p = self._stacks(), self.padded_dim
        bits = rng.random_bits(m * p, self.seed, block, rng.Stream.FASTFOOD_SIGNS)
        signs = 1.0 - 2.0 * (bits & 1).double()
        keys = rng.random_bits(m * p, self.seed, block, rng.Stream.FASTFOOD_PERM).view(m, p)
        perm = torch.argsort(keys, dim=1, stable=True).double()  # Π, one per stack
        g = rng.normal((m, p), self.seed, block, rng.Stream.FASTFOOD_GAUSS)
        s = chi_radii(m * p, p, self.seed, block, rng.Stream.FASTFOOD_RADII).view(m, p)
        scale = s / (g.norm(dim=1, keepdim=True) * math.sqrt(p))  # S_ii = s_i / (‖g‖ √p)
        return torch.stack([signs.view(m, p), perm, g, scale], dim=1).to(device)  # (m, 4, p)

    def _features(self, X, params):
        n, d, p, h = X.shape[0], X.shape[1], self.padded_dim, self.block_size // 2
        out = []
        for P in params:  # one block at a time bounds the (n, stacks, p) temporaries
            B, perm, G, S = P.unbind(dim=1)  # (m, p) each
            m = B.shape[0]
            U = X.new_zeros((n, m, p))
            torch.mul(X[:, None, :], B[:, :d], out=U[:, :, :d])  # B x, zero-padded to p
            U = fwht(U).view(n, m * p)  # H B x
            shuffle = (perm.long() + p * torch.arange(m, device=X.device)[:, None]).view(-1)
            U = U.index_select(1, shuffle).mul_(G.reshape(-1))  # G Π H B x
            U = fwht(U.view(n, m, p)).mul_(S / self.sigma)  # S H G Π H B x / σ
            out.append(paired_cos_sin(U.view(n, m * p)[:, :h]))
        return torch.stack(out, dim=1)  # (n, K, r)
