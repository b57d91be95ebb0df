"""Stochastic dual coordinate ascent (Shalev-Shwartz & Zhang, "Stochastic dual coordinate ascent
methods for regularized loss minimization", JMLR 2013): on the exact kernel (k-SDCA) and on a
fixed feature map (r-SDCA with random features, n-SDCA with Nyström features).

Dual of ``P(w) = (1/n) Σ φ(wᵀx_i, y_i) + λ/2 ‖w‖²``:
``D(α) = (1/n) Σ −φ*(−α_i) − λ/2 ‖w(α)‖²`` with ``w(α) = (1/(λn)) Σ α_i x_i``. Each update
maximises ``D`` over one coordinate in closed form (their hinge and squared-loss cases;
:mod:`.losses`). A
mini-batch of ``b`` coordinates is one sequential pass over them in order ("SDCA-Perm"): the
margins ``u = X_B w`` come from one product and later coordinates see earlier increments
through the batch Gram ``G = X_B X_Bᵀ/(λn)``, so the iterates are those of one-at-a-time SDCA.
``P(w(α)) − D(α) ≥ 0`` is the duality gap, a certificate of sub-optimality.
"""

from __future__ import annotations

import torch

from ._feature_map import OnFeatureMap
from ._kernel import exact_kernel, kernel_times
from .base import Baseline

__all__ = ["KernelSDCA", "SDCA"]


class _DualAscent(Baseline):
    """The coordinate updates shared by the kernel and the feature versions."""

    def _resume(self, X, y) -> None:
        same = X.shape == self._X.shape and torch.equal(X, self._X) and torch.equal(y.double(), self._y)
        if not same:
            raise ValueError(f"SDCA's duals belong to the {self._X.shape[0]} rows it was fitted "
                             f"on; got {X.shape[0]} other rows. Call fit to start on new data.")

    def _coordinate_pass(self, rows, gram, margins, y_batch) -> torch.Tensor:
        """Δα of one sequential pass over ``rows``; the duals are updated in place."""
        lam_n = self.alpha * self.dual_coef_.shape[0]
        delta = self._loss.sdca_sweep((gram / lam_n).double(), margins.double(), y_batch.double(),
                                      self.dual_coef_[rows])
        self.dual_coef_[rows] += delta
        return delta

    def objectives(self) -> tuple[float, float]:
        """``(P(w(α)), D(α))`` on the training rows: primal, dual; their gap bounds the
        sub-optimality of both."""
        alpha, y = self.dual_coef_, self._y
        margins = self._training_margins()                     # u_i = x_iᵀ w(α)
        norm_w2 = float(alpha @ margins) / (self.alpha * len(alpha))  # ‖w‖² = αᵀu/(λn)
        primal = float(self._loss.value(margins, y).mean()) + self.alpha / 2 * norm_w2
        dual = float(self._loss.dual_value(alpha, y).mean()) - self.alpha / 2 * norm_w2
        return primal, dual


class KernelSDCA(_DualAscent):
    """k-SDCA: SDCA on the exact kernel, ``f(x) = (1/(λn)) Σ_i α_i k(x_i, x)``.

    A step computes ``u = (1/(λn)) K_{B,S} α_S`` over the rows ``S`` with ``α_i ≠ 0`` and the
    batch kernel ``K_BB``: ``O(b · |S| · d)``, so a pass costs ``O(n² d)`` time and ``O(n d)``
    memory (the kernel matrix is never stored). Use it on as many rows as that allows.

    Parameters
    ----------
    kernel, sigma, kernel_params
        The library's exact kernel.
    loss : {"hinge", "squared"}, default="hinge"
    alpha : float, default=1e-6
        ``λ``.
    batch_size : int, default=1024
    random_state : int, default=0
    dtype : {"float64", "float32"}, default="float64"
        Of the kernel evaluations (duals and sweeps are float64).

    Attributes
    ----------
    dual_coef_ : tensor (n,)
        ``α`` (float64).
    """

    def __init__(self, *, kernel="rbf", sigma: float, kernel_params=None, loss="hinge",
                 alpha=1e-6, batch_size=1024, random_state=0, dtype="float64"):
        super().__init__(loss=loss, alpha=alpha, batch_size=batch_size, random_state=random_state,
                         dtype=dtype)
        self.kernel, self.sigma, self.kernel_params = kernel, sigma, kernel_params

    def _begin(self, X, y) -> None:
        if y.ndim != 1:
            raise ValueError(f"SDCA takes one output; y has shape {tuple(y.shape)}.")
        self.feature_map_ = exact_kernel(self.kernel, X.shape[1], self.sigma, self.kernel_params)
        self._X, self._y = X, y.double()
        self.dual_coef_ = torch.zeros(X.shape[0], dtype=torch.float64)

    def _step(self, X, y, rows) -> None:
        X_batch = X[rows]
        margins = self._decision(X_batch)[:, 0]                       # u_B = (1/(λn)) K_{B,S} α_S
        gram = self.feature_map_.kernel(X_batch, X_batch)             # K_BB
        self._coordinate_pass(rows, gram, margins, self._y[rows])

    def _decision(self, X) -> torch.Tensor:
        support = self.dual_coef_.nonzero()[:, 0]
        lam_n = self.alpha * self.dual_coef_.shape[0]
        return kernel_times(self.feature_map_, X, self._X[support],
                            self.dual_coef_[support, None] / lam_n)

    def _training_margins(self) -> torch.Tensor:
        return self._decision(self._X)[:, 0]


class SDCA(OnFeatureMap, _DualAscent):
    """SDCA on a fixed feature map ``z``: ``w = (1/(λn)) Σ_i α_i z(x_i)``, ``f(x) = wᵀz(x)``.

    ``features`` is fitted on the first call's ``X`` and the features of every row are computed
    once then (``setup_seconds_``); a step is ``O(b·D + b²·D)``. r-SDCA passes
    :func:`~.features.random_features`, n-SDCA :class:`~.features.NystromFeatures`, ``None``
    is the linear kernel on ``X`` itself.

    Parameters
    ----------
    features : transformer or None
        An unfitted scikit-learn style transformer (``fit``, ``transform``); cloned.
    loss, alpha, batch_size, random_state, dtype
        As :class:`~.base.Baseline`; by default ``"hinge"``, ``1e-6``, ``1024``, ``0`` and
        ``"float64"``.

    Attributes
    ----------
    coef_, features_
        As :class:`~._feature_map.OnFeatureMap`.
    dual_coef_ : tensor (n,)
    """

    def __init__(self, *, features=None, loss="hinge", alpha=1e-6, batch_size=1024,
                 random_state=0, dtype="float64"):
        super().__init__(loss=loss, alpha=alpha, batch_size=batch_size, random_state=random_state,
                         dtype=dtype)
        self.features = features

    def _begin(self, X, y) -> None:
        if y.ndim != 1:
            raise ValueError(f"SDCA takes one output; y has shape {tuple(y.shape)}.")
        self._X, self._Z, self._y = X, self._fit_features(X), y.double()
        self.dual_coef_ = torch.zeros(X.shape[0], dtype=torch.float64)

    def _step(self, X, y, rows) -> None:
        Z_batch = self._Z[rows]                                       # (b, D)
        margins = Z_batch.double() @ self.coef_                        # u_B = Z_B w
        delta = self._coordinate_pass(rows, Z_batch @ Z_batch.T, margins, self._y[rows])
        self.coef_ += Z_batch.T.double() @ delta / (self.alpha * self._Z.shape[0])  # w += Z_Bᵀ Δ/(λn)

    def _training_margins(self) -> torch.Tensor:
        return self._Z.double() @ self.coef_
