"""The data operator: everything the fit engine asks of the training rows.

The engine (:mod:`.engine`, :mod:`.newton`, :func:`~.cached.ridge_pcg`) reaches the rows only
through this interface, so that the rows can live anywhere: a feature cache in memory
(:class:`~.cached.FeatureCache`, :class:`~.nystroem.NystroemCache`, the two homes today), and
next features regenerated chunk by chunk, a stream read once per product, ranks whose products
are all-reduced, or Dask blocks (``../shared/DESIGN.md`` §9). ``Φ̃ = [Φ, c₀1]`` is the
augmented feature matrix of the ``n_rows`` rows at ``n_blocks`` blocks (``φ = Ψ/√J``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

__all__ = ["DataOperator"]


@runtime_checkable
class DataOperator(Protocol):
    """Products with the training rows' features, their sketch rows and their growth."""

    #: the rows and the blocks of features held; the map that draws them
    n_rows: int
    n_blocks: int
    feature_map: object
    #: whether :meth:`rows` reads the rows' features (a Nyström cache solves for them)
    reads_rows: bool

    @property
    def n_features(self) -> int:
        """``D = n_blocks · block_size``."""

    def matmul(self, theta: torch.Tensor) -> torch.Tensor:
        """``Φ̃θ`` ``(n, C)`` float64 for ``θ`` ``(D+1, C)``."""

    def rmatmul(self, U: torch.Tensor) -> torch.Tensor:
        """``Φ̃ᵀU`` ``(D+1, C)`` float64 for ``U`` ``(n, C)``."""

    def normal_matmul(self, theta: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """``Φ̃ᵀ(w ⊙ Φ̃θ)`` ``(D+1, C)`` float64 in one pass over the rows (a Newton system)."""

    def psi(self, index: torch.Tensor) -> torch.Tensor:
        """``Ψ`` of the sketch rows ``index`` ``(m, D)``."""

    def rows(self, index: torch.Tensor) -> torch.Tensor:
        """``Φ`` of the rows ``index`` ``(m, D)`` (few rows: an exact solve in the dual)."""

    def gram(self, index: torch.Tensor, precise: bool = False) -> torch.Tensor:
        """``ΨΨᵀ`` of the sketch rows ``index`` ``(m, m)`` float64."""

    def for_rows(self, X, once: bool = False) -> "DataOperator":
        """The same map on other rows (the held-out ones); ``once``: they are read by one
        product (an operator that caches draws them in it instead)."""

    def fits(self, n_blocks: int) -> bool:
        """Whether ``n_blocks`` blocks stay within the byte budget."""

    def grow(self, n_blocks: int) -> None:
        """Hold ``n_blocks`` blocks (the first ones of a seed are the same at every size)."""

    def first_blocks(self, n_blocks: int) -> "DataOperator":
        """The operator read at its first ``n_blocks`` blocks (a size kept before the last)."""

    def extended(self, theta: torch.Tensor, n_blocks: int) -> torch.Tensor:
        """``θ`` of the blocks held as a start at ``n_blocks`` blocks (the same outputs)."""

    def redraw(self, feature_map) -> None:
        """The same blocks under another map of the same block size (another bandwidth)."""

    def fitted(self, theta: torch.Tensor, cache_bytes: int | None = None) -> tuple:
        """The model ``θ`` as ``(map, coefficients)`` for prediction."""
