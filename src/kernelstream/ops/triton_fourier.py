"""Fused Triton kernels for Gaussian Fourier blocks: draw, multiply, cosine, contract.

No frequency matrix ever exists in memory: each program regenerates the frequencies it needs
from the same Philox-4x32-10 counter scheme as :mod:`kernelstream.rng` — word ``i`` of block
``j`` is lane ``i mod 4`` of ``philox((i div 4, j mod 2^32, j >> 32, stream), seed)``, normals
by Box–Muller on word pairs in float64 — so a block drawn here equals the CPU draw
(``GaussianRFF._draw``) to float64 rounding of ``log``/``cos``, and a model trained on a GPU
predicts the same on a CPU.

- :func:`contract`: ``out = Σ_j ψ_j(X) c_j`` with ``ψ_j(x) = h^{-1/2}[cos(W_jᵀx), sin(W_jᵀx)]``,
  one pass: ``Z = X W_j`` tile by tile (``tl.dot``), cos/sin, contraction with the coefficients;
- :func:`block_gradient`: the new block's gradient ``Ψ_jᵀ G / b`` without materialising ``Ψ_j``.

Scope: Gaussian RBF, i.i.d. sampling, paired (even) block sizes; other families use the torch
path. Correctness is tested on CPU through ``TRITON_INTERPRET=1`` (``tests/test_triton.py``).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from .. import rng

__all__ = ["draw_normal", "contract", "block_gradient", "supports"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85


@triton.jit
def _philox_lanes(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 on uint32 counters (Salmon et al. 2011), as in ``rng.philox4x32``."""
    for _ in tl.static_range(10):
        hi0 = tl.umulhi(c0, 0xD2511F53)
        lo0 = c0 * 0xD2511F53
        hi1 = tl.umulhi(c2, 0xCD9E8D57)
        lo1 = c2 * 0xCD9E8D57
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = k0 + 0x9E3779B9
        k1 = k1 + 0xBB67AE85
    return c0, c1, c2, c3


@triton.jit
def _normal(index, block_lo, block_hi, stream, k0, k1):
    """Standard normal number ``index`` (int64 tensor) of the sequence ``(seed, block, stream)``."""
    call = (index // 4).to(tl.uint32)
    zero = tl.zeros_like(call)
    w0, w1, w2, w3 = _philox_lanes(call, zero + block_lo, zero + block_hi, zero + stream,
                                   k0 + zero, k1 + zero)
    first_pair = ((index // 2) % 2) == 0  # words (0, 1) or (2, 3) of the call
    a = tl.where(first_pair, w0, w2).to(tl.float64)
    b = tl.where(first_pair, w1, w3).to(tl.float64)
    u1 = (a + 0.5) * 2.3283064365386963e-10  # (u + ½) / 2^32
    u2 = (b + 0.5) * 2.3283064365386963e-10
    radius = tl.sqrt(-2.0 * tl.log(u1))
    angle = 6.283185307179586 * u2
    return tl.where(index % 2 == 0, radius * tl.cos(angle), radius * tl.sin(angle))


@triton.jit
def _draw_kernel(out_ptr, n, block_lo, block_hi, stream, k0, k1, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    z = _normal(offs, block_lo, block_hi, stream, k0, k1)
    tl.store(out_ptr + offs, z, mask=offs < n)


@triton.jit
def _frequencies(k_offs, f_offs, d, h, inv_sigma, block_lo, block_hi, k0, k1):
    """``W[k, f] = normal(k·h + f) / σ`` of one block, zero outside ``k < d, f < h``, float32."""
    index = k_offs[:, None].to(tl.int64) * h + f_offs[None, :]
    w = _normal(index, block_lo, block_hi, 1, k0, k1) * inv_sigma  # stream 1 = rng.Stream.WEIGHTS
    valid = (k_offs[:, None] < d) & (f_offs[None, :] < h)
    return tl.where(valid, w, 0.0).to(tl.float32)


@triton.jit
def _project(x_ptr, rows, row_ok, f_offs, d, h, inv_sigma, block_lo, block_hi, k0, k1,
             BLOCK_M: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """``Z = X_rows W[:, f_offs]`` in float32, the block's frequencies regenerated in place."""
    z = tl.zeros((BLOCK_M, BLOCK_H), dtype=tl.float32)
    for k0_ in range(0, d, BLOCK_K):
        k_offs = k0_ + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * d + k_offs[None, :],
                    mask=row_ok[:, None] & (k_offs[None, :] < d), other=0.0)
        w = _frequencies(k_offs, f_offs, d, h, inv_sigma, block_lo, block_hi, k0, k1)
        z += tl.dot(x, w, input_precision="ieee")
    return z


@triton.jit
def _contract_kernel(x_ptr, coef_ptr, out_ptr, n, d, h, n_blocks, inv_sigma, scale, k0, k1,
                     C: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_H: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n
    r = 2 * h
    acc = tl.zeros((BLOCK_M, C), dtype=tl.float32)
    c_offs = tl.arange(0, C)
    for j in range(0, n_blocks):
        block_lo = tl.cast(j, tl.uint32)  # J < 2^32 (checked by the wrapper)
        block_hi = tl.cast(0, tl.uint32)
        for f0 in range(0, h, BLOCK_H):
            f_offs = f0 + tl.arange(0, BLOCK_H)
            z = _project(x_ptr, rows, row_ok, f_offs, d, h, inv_sigma, block_lo, block_hi, k0, k1,
                         BLOCK_M, BLOCK_H, BLOCK_K)  # Z = X W_j, (BLOCK_M, BLOCK_H)
            f_ok = f_offs < h
            base = coef_ptr + j * r * C
            c_cos = tl.load(base + f_offs[:, None] * C + c_offs[None, :], mask=f_ok[:, None], other=0.0)
            c_sin = tl.load(base + (h + f_offs[:, None]) * C + c_offs[None, :], mask=f_ok[:, None], other=0.0)
            acc += tl.dot(tl.cos(z), c_cos, input_precision="ieee")  # cos(Z) c_cos
            acc += tl.dot(tl.sin(z), c_sin, input_precision="ieee")  # sin(Z) c_sin
    tl.store(out_ptr + rows[:, None] * C + c_offs[None, :], acc * scale, mask=row_ok[:, None])


@triton.jit
def _gradient_kernel(x_ptr, g_ptr, out_ptr, n, d, h, inv_sigma, scale, block_lo, block_hi, k0, k1,
                     C: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_H: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    f_offs = tl.program_id(0) * BLOCK_H + tl.arange(0, BLOCK_H)
    f_ok = f_offs < h
    c_offs = tl.arange(0, C)
    g_cos = tl.zeros((BLOCK_H, C), dtype=tl.float32)
    g_sin = tl.zeros((BLOCK_H, C), dtype=tl.float32)
    for m0 in range(0, n, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        row_ok = rows < n
        z = _project(x_ptr, rows, row_ok, f_offs, d, h, inv_sigma, block_lo, block_hi, k0, k1,
                     BLOCK_M, BLOCK_H, BLOCK_K)  # Z = X W, (BLOCK_M, BLOCK_H)
        g = tl.load(g_ptr + rows[:, None] * C + c_offs[None, :], mask=row_ok[:, None], other=0.0)
        g_cos += tl.dot(tl.trans(tl.cos(z)), g, input_precision="ieee")  # cos(Z)ᵀ G
        g_sin += tl.dot(tl.trans(tl.sin(z)), g, input_precision="ieee")  # sin(Z)ᵀ G
    out = out_ptr + f_offs[:, None] * C + c_offs[None, :]
    tl.store(out, g_cos * scale, mask=f_ok[:, None])
    tl.store(out + h * C, g_sin * scale, mask=f_ok[:, None])


def supports(feature_map) -> bool:
    """Whether the fused kernels implement this feature map (Gaussian, i.i.d., paired): the map
    says so by its ``gaussian_iid_paired`` (:class:`kernelstream.features.GaussianRFF`), so that
    ops never import the feature maps."""
    return bool(getattr(feature_map, "gaussian_iid_paired", False))


def _key(seed: int) -> tuple[int, int]:
    return seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF


def _padded(C: int) -> int:
    return max(16, triton.next_power_of_2(C))  # tl.dot needs dimensions >= 16


def draw_normal(n: int, seed: int, block: int, stream: int, device) -> torch.Tensor:
    """``rng.normal((n,), seed, block, stream)`` drawn by the kernel, float64 (for tests)."""
    out = torch.empty(n, dtype=torch.float64, device=device)
    k0, k1 = _key(seed)
    BLOCK = 1024
    _draw_kernel[(triton.cdiv(n, BLOCK),)](out, n, block & 0xFFFFFFFF, block >> 32, stream, k0, k1,
                                            BLOCK=BLOCK)
    return out


def contract(X: torch.Tensor, coef: torch.Tensor, feature_map, *, block_m: int = 64,
             block_h: int = 64, block_k: int = 32) -> torch.Tensor:
    """``Σ_j ψ_j(X) coef_j`` over blocks ``0..J−1`` of a Gaussian map, ``(n, C)`` float32."""
    n, d = X.shape
    J, r, C = coef.shape
    h, Cp = r // 2, _padded(C)
    if J >= 2**32:
        raise ValueError(f"contract supports fewer than 2^32 blocks; got {J}.")
    X = X.contiguous().float()
    coef_p = torch.zeros((J, r, Cp), dtype=torch.float32, device=X.device)
    coef_p[..., :C] = coef
    out = torch.empty((n, Cp), dtype=torch.float32, device=X.device)
    k0, k1 = _key(feature_map.seed)
    _contract_kernel[(triton.cdiv(n, block_m),)](
        X, coef_p, out, n, d, h, J, 1.0 / feature_map.sigma, h**-0.5, k0, k1,
        C=Cp, BLOCK_M=block_m, BLOCK_H=block_h, BLOCK_K=block_k)
    return out[:, :C]


def block_gradient(X: torch.Tensor, G: torch.Tensor, feature_map, block: int, *, block_m: int = 64,
                   block_h: int = 64, block_k: int = 32) -> torch.Tensor:
    """The new block's gradient ``Ψ_blockᵀ G / b``, ``(r, C)`` float32, without ``Ψ`` in memory."""
    n, d = X.shape
    C = G.shape[1]
    h, Cp = feature_map.block_size // 2, _padded(C)
    G_p = torch.zeros((n, Cp), dtype=torch.float32, device=X.device)
    G_p[:, :C] = G
    out = torch.empty((2 * h, Cp), dtype=torch.float32, device=X.device)
    k0, k1 = _key(feature_map.seed)
    _gradient_kernel[(triton.cdiv(h, block_h),)](
        X.contiguous().float(), G_p, out, n, d, h, 1.0 / feature_map.sigma, h**-0.5 / n,
        block & 0xFFFFFFFF, block >> 32, k0, k1,
        C=Cp, BLOCK_M=block_m, BLOCK_H=block_h, BLOCK_K=block_k)
    return out[:, :C]


assert rng.Stream.WEIGHTS == 1 and math.isclose(2.0**-32, 2.3283064365386963e-10)
