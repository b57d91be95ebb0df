"""The solvers' feature rows ``φ̃(x) = [φ(x); c]``, evaluated in pieces of bounded size.

``φ = [ψ_1 … ψ_J]/√J`` are the random features of ``J`` blocks and ``c = INTERCEPT_FEATURE`` the
constant feature whose coefficient is the intercept (``b = c·θ_D``). Every solver on a fixed
feature budget (:mod:`.preconditioned`, :mod:`.conjugate`, :mod:`.direct`, :mod:`.dual`) reads
its rows through these: the features of a few blocks at a time (:func:`feature_matrix`), rows a
chunk at a time (:func:`row_chunks`), so that memory stays bounded whatever ``n`` and ``d``.
"""

from __future__ import annotations

from typing import Iterator

import torch

from ..features.base import CHUNK_FLOATS, FeatureMap

__all__ = ["INTERCEPT_FEATURE", "PARAM_BYTES", "CHUNK_FLOATS", "feature_matrix", "row_chunks",
           "augmented"]

#: the intercept is the coefficient of a constant feature of this value (``b = c·θ_{D}``): small,
#: so that it adds little to ``max‖φ̃‖²`` (``1 + c²``), which sets how far an epoch converges the
#: directions below the preconditioner's rank (``≈ n·η·λ/max‖φ̃‖²``); its own direction is
#: preconditioned like any other
INTERCEPT_FEATURE = 0.1
#: bytes of block parameters drawn at once by :func:`feature_matrix`
PARAM_BYTES = 4 * 2**20


def feature_matrix(feature_map: FeatureMap, X: torch.Tensor, n_blocks: int,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """``φ(X) = [ψ_1(X) … ψ_J(X)]/√J``, ``(n, J·r)``, evaluated a few blocks at a time so that
    the drawn parameters held at once stay near ``PARAM_BYTES`` whatever ``d``."""
    n, r = X.shape[0], feature_map.block_size
    if out is None:
        out = torch.empty((n, n_blocks * r), dtype=X.dtype, device=X.device)
    group = max(1, PARAM_BYTES // (feature_map.block_param_numel() * X.element_size()))
    for j in range(0, n_blocks, group):
        blocks = range(j, min(j + group, n_blocks))
        out[:, j * r:blocks.stop * r] = feature_map.features(X, blocks).reshape(n, -1)
    return out.mul_(n_blocks**-0.5)


def row_chunks(n: int, D: int) -> Iterator[slice]:
    """Slices of ``n`` rows whose ``D`` features hold at most ``CHUNK_FLOATS`` floats (at least
    one row each)."""
    step = max(1, min(n, CHUNK_FLOATS // max(D, 1)))
    for i in range(0, n, step):
        yield slice(i, min(i + step, n))


def augmented(Phi: torch.Tensor) -> torch.Tensor:
    """``φ̃ = [φ; c]`` with ``c = INTERCEPT_FEATURE``."""
    return torch.cat([Phi, Phi.new_full((Phi.shape[0], 1), INTERCEPT_FEATURE)], dim=1)
