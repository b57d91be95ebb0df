"""NORMA (Kivinen, Smola & Williamson, "Online learning with kernels", IEEE TSP 2004): stochastic
gradient descent in the RKHS, keeping every support vector (the paper's "full kernel" method)."""

from __future__ import annotations

import torch

from ._kernel import exact_kernel, kernel_times
from .base import Baseline

__all__ = ["NORMA"]


class NORMA(Baseline):
    """Kernel SGD with every support vector kept (no truncation: Kivinen et al.'s τ = ∞).

    On a mini-batch ``B_t`` of ``b`` rows (``b = 1`` is Kivinen et al.'s NORMA update):

    ``f_{t+1} = (1 − η_t λ) f_t − (η_t/b) Σ_{i∈B_t} φ'(f_t(x_i), y_i) k(x_i, ·)``,

    so older coefficients shrink by ``1 − η_t λ`` and each batch row gets the coefficient
    ``−η_t φ'_i / b``. Step ``η_t = eta0 / (L t^power_t)``: ``power_t = 0.5`` is the
    ``η t^{-1/2}`` schedule of their convergence analysis, and ``L = λ_max(K_{B_1 B_1})/b`` on the
    first batch is the Lipschitz constant of the batch-mean squared-loss gradient in ``f`` (the
    largest stable step is 2/L), which puts ``eta0`` in units that do not depend on the
    bandwidth or the batch size. ``η_t λ < 1`` is required (Kivinen et al.'s condition); a
    larger step raises. With ``fit_intercept`` the unregularised offset follows their offset
    update, ``b_{t+1} = b_t − η_t L mean_i φ'_i``: the offset's own Lipschitz constant is 1, not
    ``L`` (at ``b = 1`` and ``k(x, x) = 1`` both are 1 and this is their update).

    The expansion is stored by row: a training row that recurs in a later pass of the same call
    adds to its coefficient rather than appending a copy (the same function, less memory).
    Each step costs ``O(b · n_SV · d)`` for ``f_t`` on the batch: ``O(n²)`` over a pass.

    Parameters
    ----------
    kernel : str, default="rbf"
    sigma : float
        Bandwidth of the library's exact kernel.
    kernel_params : dict, default=None
    loss : {"hinge", "squared"}, default="squared"
        Hinge (labels ±1) or squared; the squared loss takes several outputs (a 2-D ``y``).
    alpha : float, default=1e-6
        ``λ``.
    batch_size : int, default=1024
    eta0 : float, default=1.0
    power_t : float, default=0.5
    fit_intercept : bool, default=True
    random_state : int, default=0
    dtype : {"float64", "float32"}, default="float64"

    Attributes
    ----------
    support_vectors_ : tensor (n_SV, d)
    dual_coef_ : tensor (n_SV, C)
    intercept_ : tensor (C,)
    lipschitz_ : float
        ``L``.
    """

    def __init__(self, *, kernel="rbf", sigma: float, kernel_params=None, loss="squared",
                 alpha=1e-6, batch_size=1024, eta0=1.0, power_t=0.5, fit_intercept=True,
                 random_state=0, dtype="float64"):
        super().__init__(loss=loss, alpha=alpha, batch_size=batch_size, random_state=random_state,
                         dtype=dtype)
        self.kernel, self.sigma, self.kernel_params = kernel, sigma, kernel_params
        self.eta0, self.power_t, self.fit_intercept = eta0, power_t, fit_intercept

    @property
    def support_vectors_(self) -> torch.Tensor:
        return self._sv[:self.n_support_]

    @property
    def dual_coef_(self) -> torch.Tensor:
        return self._coef[:self.n_support_]

    def _begin(self, X, y) -> None:
        self.n_outputs_ = 1 if y.ndim == 1 else y.shape[1]
        self.feature_map_ = exact_kernel(self.kernel, X.shape[1], self.sigma, self.kernel_params)
        self._sv = torch.empty((0, X.shape[1]), dtype=X.dtype)
        self._coef = torch.empty((0, self.n_outputs_), dtype=X.dtype)
        self.n_support_ = 0
        self.intercept_ = torch.zeros(self.n_outputs_, dtype=torch.float64)
        self._slots = torch.full((X.shape[0],), -1, dtype=torch.long)

    def _resume(self, X, y) -> None:
        outputs = 1 if y.ndim == 1 else y.shape[1]
        if X.shape[1] != self._sv.shape[1] or outputs != self.n_outputs_:
            raise ValueError(f"this NORMA was fitted on {self._sv.shape[1]} features and "
                             f"{self.n_outputs_} outputs; got {X.shape[1]} and {outputs}.")
        self._slots = torch.full((X.shape[0],), -1, dtype=torch.long)  # new rows: new terms

    def _step(self, X, y, rows) -> None:
        X_batch, y_batch = X[rows], y[rows].reshape(len(rows), -1).double()
        if self.t_ == 0:
            K_batch = self.feature_map_.kernel(X_batch, X_batch).double()
            self.lipschitz_ = float(torch.linalg.eigvalsh(K_batch)[-1]) / len(rows)  # λ_max(K_BB)/b
        eta = self.eta0 / (self.lipschitz_ * (self.t_ + 1) ** self.power_t)
        if eta * self.alpha >= 1:
            raise ValueError(f"step {self.t_ + 1}: η_t λ = {eta * self.alpha:.3g} ≥ 1 makes "
                             "(1 − η_t λ) non-positive; lower eta0 or alpha.")
        grad = self._loss.derivative(self._decision(X_batch), y_batch)  # φ'(f_t(x_i), y_i), (b, C)
        self._coef[:self.n_support_] *= 1 - eta * self.alpha          # f ← (1 − η_t λ) f
        if self.fit_intercept:
            self.intercept_ -= eta * self.lipschitz_ * grad.mean(0)    # b −= η_t L mean φ'
        self._add_terms(X, rows, -eta * grad / len(rows))              # α_i = −η_t φ'_i / b

    def _add_terms(self, X, rows, coef) -> None:
        """Add ``coef`` (b, C) to the expansion at ``X[rows]``, merging rows already in it."""
        nonzero = (coef != 0).any(1)
        rows, coef = rows[nonzero], coef[nonzero].to(self._coef.dtype)
        slots = self._slots[rows]
        known = slots >= 0
        self._coef[slots[known]] += coef[known]
        fresh = rows[~known]
        end = self.n_support_ + len(fresh)
        if end > self._sv.shape[0]:  # grow the buffers geometrically
            capacity = max(end, 2 * self._sv.shape[0], 1024)
            spare = capacity - self.n_support_
            self._sv = torch.cat([self._sv[:self.n_support_], X.new_empty((spare, X.shape[1]))])
            self._coef = torch.cat([self._coef[:self.n_support_],
                                    self._coef.new_empty((spare, self.n_outputs_))])
        self._sv[self.n_support_:end] = X[fresh]
        self._coef[self.n_support_:end] = coef[~known]
        self._slots[fresh] = torch.arange(self.n_support_, end)
        self.n_support_ = end

    def _decision(self, X) -> torch.Tensor:
        """``Σ_j α_j k(x_j, x) + b``, O(n · n_SV · d)."""
        f = kernel_times(self.feature_map_, X, self.support_vectors_, self.dual_coef_)
        return f + self.intercept_
