"""Features regenerated in every pass: the data operator of rows whose features do not fit.

Where the training rows' features outgrow the cache's budget (10⁷ rows × 1,024 features are
20 GB in float16; the rows themselves, 10⁷ × 10 float32, 400 MB), the fit engine need not fall
back to epochs: :class:`RegeneratedFeatures` holds the rows and draws their features chunk by
chunk in every product, as the paper's doubly stochastic steps draw theirs from the seed. A
product then costs the features' ``nDd`` multiply-adds and ``nD`` cosines, not a read of
``nD`` stored bytes (the cost model's ``regenerates``: docs/decisions/cost-model.md); memory is
the rows and a chunk.
"""

from __future__ import annotations

import copy

import torch

from .cached import FeatureCache, HeldOutFeatures, chunk_rows, grown_gram
from .streams import subset

__all__ = ["RegeneratedFeatures"]


class RegeneratedFeatures(FeatureCache):
    """The products of :class:`~.cached.FeatureCache` with nothing cached: each pass draws
    ``Ψ`` of a chunk of rows from the map, uses it and lets it go. ``grow`` only raises the
    blocks used; ``redraw`` swaps the map. ``rows``: the rows of ``X`` it stands for (an index
    read a chunk at a time, not a copy of them; ``None``: every row)."""

    #: every product draws the features again (the cost model prices the passes so)
    regenerates = True

    def __init__(self, feature_map, X, budget: int | None = None, storage=None,
                 rows: torch.Tensor | None = None):
        super().__init__(feature_map, X, budget, None)
        self.index = rows
        self.n_rows = X.shape[0] if rows is None else len(rows)

    def _of(self, positions):
        """The rows of ``X`` at ``positions`` (a slice or an index) of this operator's rows."""
        if self.index is None:
            return self.X[positions] if isinstance(positions, slice) else subset(self.X, positions)
        return subset(self.X, self.index[positions])

    @property
    def nbytes(self) -> int:
        return 0

    def fits(self, n_blocks: int) -> bool:
        """Always: no features are held."""
        return True

    def grow(self, n_blocks: int) -> None:
        self.n_blocks = max(self.n_blocks, n_blocks)

    def redraw(self, feature_map) -> None:
        if feature_map.block_size != self.feature_map.block_size:
            raise ValueError("redraw needs a map of the same block size")
        self.feature_map, self._sketch_gram = feature_map, None

    def for_rows(self, X, once: bool = False) -> HeldOutFeatures:
        """Held-out rows' features, cached within the budget the training rows leave unused
        (``once``: read by one product, drawn in it)."""
        return HeldOutFeatures(self.feature_map, X, 0 if once else self.budget)

    def _features(self, X, first: int, last: int) -> torch.Tensor:
        """``Ψ`` of the rows ``X`` at blocks ``[first, last)`` ``(m, (last − first)·r)``."""
        features = self.feature_map.features(X, range(first, last)).reshape(X.shape[0], -1)
        if not bool(torch.isfinite(features.sum())):  # a sum of bounded features: finite
            raise FloatingPointError("The random features are not finite; standardise X.")
        return features

    def _chunks(self, n_columns: int):
        step = chunk_rows(self.n_features, n_columns, self.X.device)
        self._passes[0] += 1
        for i in range(0, self.n_rows, step):
            rows = slice(i, min(i + step, self.n_rows))
            yield rows, [self._features(self._of(rows), 0, self.n_blocks)]

    def _widths(self) -> list[int]:
        return [self.n_features]

    def psi(self, index: torch.Tensor) -> torch.Tensor:
        return self._features(self._of(index), 0, self.n_blocks)

    def gram(self, index: torch.Tensor, precise: bool = False) -> torch.Tensor:
        """``ΨΨᵀ`` of the rows ``index``; across doubling sizes only the new blocks are drawn."""
        gram, self._sketch_gram = grown_gram(
            self._sketch_gram, index, precise, self.n_blocks,
            lambda counted: self._features(self._of(index), counted, self.n_blocks))
        return gram

    def first_blocks(self, n_blocks: int) -> "RegeneratedFeatures":
        if n_blocks == self.n_blocks:
            return self
        view = copy.copy(self)
        view.n_blocks, view._sketch_gram = n_blocks, None
        return view

    def restricted(self, index: torch.Tensor) -> "RegeneratedFeatures":
        """The rows ``index`` alone (Newton's active rows)."""
        rows = RegeneratedFeatures(self.feature_map, self.X,
                                   rows=index if self.index is None else self.index[index])
        rows.n_blocks = self.n_blocks
        return rows
