"""Pegasos (Shalev-Shwartz, Singer, Srebro & Cotter, "Pegasos: primal estimated sub-gradient
solver for SVM", Math. Programming 2011; ICML 2007) on a fixed feature map: r-Pegasos with
random features, n-Pegasos with Nyström features."""

from __future__ import annotations

import torch

from ._feature_map import OnFeatureMap
from .base import Baseline

__all__ = ["Pegasos"]


class Pegasos(OnFeatureMap, Baseline):
    """Mini-batch Pegasos on features ``z``: ``f(x) = wᵀz(x)``.

    Step ``t`` on the batch ``A_t`` of ``k`` rows (their mini-batch iteration):
    ``η_t = 1/(λt)``, ``w ← (1 − η_t λ) w − (η_t/k) Σ_{i∈A_t} φ'(wᵀz_i, y_i) z_i``, then the
    optional projection ``w ← min(1, R/‖w‖) w`` onto the ball that holds the optimum:
    ``R = 1/√λ`` for the hinge loss, ``√(mean y²/λ)`` for the squared loss
    (:meth:`~.losses.Squared.ball_radius`). The output is the last iterate (that of their
    pseudo-code). For the hinge loss ``φ' = −y`` on the rows with ``y wᵀz < 1``, which is their
    update. Batches are the rows of a seeded permutation per pass (their analysis draws them
    i.i.d.). The squared loss is the same step on ridge regression, as the paper's r-/n-Pegasos
    for kernel ridge regression; with small ``λ`` its first steps ``1/(λt)`` are far above the
    stable ``2/‖z‖²`` and the projection alone bounds them.

    Parameters
    ----------
    features : transformer or None
        An unfitted transformer (cloned, fitted on the first call's ``X``, every row's features
        computed once then); ``None`` is ``X`` itself.
    project : bool, default=True
    loss, alpha, batch_size, random_state, dtype
        As :class:`~.base.Baseline` (``alpha`` is ``λ``); by default ``"hinge"``, ``1e-6``,
        ``1024``, ``0`` and ``"float64"``.

    Attributes
    ----------
    coef_, features_
        As :class:`~._feature_map.OnFeatureMap`.
    radius_ : float
        ``R``.
    """

    def __init__(self, *, features=None, loss="hinge", alpha=1e-6, batch_size=1024,
                 project=True, random_state=0, dtype="float64"):
        super().__init__(loss=loss, alpha=alpha, batch_size=batch_size, random_state=random_state,
                         dtype=dtype)
        self.features, self.project = features, project

    def _begin(self, X, y) -> None:
        if y.ndim != 1:
            raise ValueError(f"Pegasos takes one output; y has shape {tuple(y.shape)}.")
        self._Z = self._fit_features(X)
        self.radius_ = self._loss.ball_radius(y.double(), self.alpha)

    def _resume(self, X, y) -> None:
        self._Z = self._transform(X)  # online: a later call may bring new rows

    def _step(self, X, y, rows) -> None:
        Z_batch = self._Z[rows].double()                                  # (k, D)
        eta = 1 / (self.alpha * (self.t_ + 1))                             # η_t = 1/(λt)
        grad = self._loss.derivative(Z_batch @ self.coef_, y[rows].double())  # φ'(wᵀz_i, y_i)
        self.coef_ = (1 - eta * self.alpha) * self.coef_ - eta * (Z_batch.T @ grad) / len(rows)
        norm = float(self.coef_.norm())
        if self.project and norm > self.radius_:
            self.coef_ *= self.radius_ / norm                               # onto ‖w‖ ≤ R

