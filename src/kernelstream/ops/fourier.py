"""Fused evaluation of Fourier random-feature blocks in torch ops (CPU and CUDA).

A Fourier block ``j`` has frequencies ``W_j`` (``d × h``) and, for odd block sizes, phases
``b_j``; its features are ``ψ_j(x) = h^{-1/2} [cos(W_jᵀx), sin(W_jᵀx)]`` (paired, ``r = 2h``) or
``sqrt(2/r) cos(W_jᵀx + b_j)`` (``r = h``). The expansion needs

    f(X) = Σ_j ψ_j(X) c_j                                    O(n·J·h·d) + O(n·J·r·C)

:func:`fourier_contract` evaluates it for groups of consecutive blocks with one GEMM per group
and row chunk, ``Z = X W_g`` into a reused buffer, then ``cos``/``sin`` into a second buffer and
the contraction ``out += cos(Z) C_cos + sin(Z) C_sin`` (``addmm``), so the ``n × J·r`` feature
matrix never exists: only one ``m × G`` chunk, sized to stay in cache for small ``d``. The
feature scale is folded into the coefficients once per call. Threads are torch's intra-op pool
(``torch.set_num_threads`` / ``OMP_NUM_THREADS``).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

import torch

from .trig import cos_into, sin_into
from .workspace import scratch

__all__ = ["fourier_block", "fourier_contract", "chunk_shape"]

#: columns of Z (frequencies) evaluated per group, and elements of one Z chunk
_GROUP_COLS = 2048
_CHUNK_ELEMS = 2**18  # 1 MiB of float32: Z and cos(Z) stay in the 1 MiB L2 for small d
_BIG_D = 96  # from here the GEMM dominates and long row chunks keep it efficient


def chunk_shape(n: int, d: int, h: int, n_blocks: int, cuda: bool = False) -> tuple[int, int]:
    """``(rows, blocks)`` per chunk: blocks per group and rows per GEMM (measured on the dev VM;
    on CUDA, large chunks fill the device: 2^25 elements of Z, 128 MiB in float32)."""
    if cuda:
        blocks = max(1, min(n_blocks, 2**15 // h))
        return max(16, min(n, 2**25 // (blocks * h))), blocks
    blocks = max(1, min(n_blocks, _GROUP_COLS // h))
    cols = blocks * h
    elems = _CHUNK_ELEMS if d < _BIG_D else 8 * _CHUNK_ELEMS
    rows = max(16, min(n, elems // cols))
    return rows, blocks


def fourier_block(X: torch.Tensor, W: torch.Tensor, paired: bool, out: torch.Tensor | None = None) -> torch.Tensor:
    """Features of one block, ``(n, r)``: ``h^{-1/2}[cos XW, sin XW]`` or ``sqrt(2/r) cos(XW + b)``."""
    n, d = X.shape
    h = W.shape[1]
    r = 2 * h if paired else h
    if out is None:
        out = torch.empty((n, r), dtype=X.dtype, device=X.device)
    if paired:
        Z = torch.matmul(X, W, out=scratch("block_z", (n, h), X.dtype, X.device))  # (n, h)
        cos_into(Z, out[:, :h])
        sin_into(Z, out[:, h:])
        return out.mul_(h**-0.5)  # sqrt(2/r) = h^{-1/2}
    torch.matmul(X, W[:d], out=out)
    out.add_(W[d])  # Wᵀx + b
    return cos_into(out, out).mul_(math.sqrt(2.0 / r))


def _scaled_coefficients(coef: torch.Tensor, h: int, paired: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(J·h, C)`` coefficients of the cos (and sin) features with the feature scale folded in."""
    J, r, C = coef.shape
    if not paired:
        C_cos = scratch("coef_cos", (J, r, C), coef.dtype, coef.device)
        torch.mul(coef, math.sqrt(2.0 / r), out=C_cos)
        return C_cos.view(J * r, C), None
    s = h**-0.5
    C_cos = scratch("coef_cos", (J, h, C), coef.dtype, coef.device)
    C_sin = scratch("coef_sin", (J, h, C), coef.dtype, coef.device)
    torch.mul(coef[:, :h], s, out=C_cos)
    torch.mul(coef[:, h:], s, out=C_sin)
    return C_cos.view(J * h, C), C_sin.view(J * h, C)


def fourier_contract(
    X: torch.Tensor,
    coef: torch.Tensor,
    groups: Callable[[int, int], Iterable[tuple[int, int, torch.Tensor]]],
    paired: bool,
    out: torch.Tensor,
) -> torch.Tensor:
    """``out += Σ_j ψ_j(X) coef_j`` over the ``J`` blocks of ``coef`` (``(J, r, C)``).

    ``groups(J, blocks_per_group)`` yields ``(j0, j1, W)`` covering ``0..J``, with ``W`` the
    parameters of blocks ``j0..j1−1`` side by side (``(d or d+1, (j1−j0)·h)``, any strides).
    """
    n, d = X.shape
    J, r, C = coef.shape
    if n == 0 or J == 0:
        return out
    h = r // 2 if paired else r
    rows, blocks = chunk_shape(n, d, h, J, X.is_cuda)
    C_cos, C_sin = _scaled_coefficients(coef, h, paired)
    Z_buf = scratch("contract_z", (rows * blocks * h,), X.dtype, X.device)
    P_buf = scratch("contract_p", (rows * blocks * h,), X.dtype, X.device)
    for j0, j1, W in groups(J, blocks):
        cols = slice(j0 * h, j1 * h)
        for i in range(0, n, rows):
            m = min(rows, n - i)
            Z = Z_buf[: m * (j1 - j0) * h].view(m, -1)
            P = P_buf[: m * (j1 - j0) * h].view(m, -1)
            torch.matmul(X[i : i + m], W[:d], out=Z)  # (m, G), one GEMM for the group
            target = out[i : i + m]
            if paired:
                cos_into(Z, P)
                target.addmm_(P, C_cos[cols])  # cos(Z) C_cos
                sin_into(Z, P)
                target.addmm_(P, C_sin[cols])  # sin(Z) C_sin
            else:
                Z.add_(W[d])  # + b
                cos_into(Z, P)
                target.addmm_(P, C_cos[cols])
    return out
