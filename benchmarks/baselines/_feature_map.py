"""The part of r-/n-SDCA and r-/n-Pegasos that is the same: a linear model ``f(x) = wᵀz(x)`` on
a fixed feature map ``z``, fitted once on the first call's rows."""

from __future__ import annotations

import torch
from sklearn.base import clone


class OnFeatureMap:
    """Mixin for a :class:`~.base.Baseline` with a ``features`` parameter: ``f(x) = wᵀz(x)``,
    ``z`` a clone of ``features`` fitted on the first call's ``X`` (``None``: ``z(x) = x``).

    Attributes
    ----------
    coef_ : tensor (D,)
        ``w`` (float64).
    features_ : the fitted transformer (None for the linear kernel)
    """

    def _fit_features(self, X: torch.Tensor) -> torch.Tensor:
        """Fit ``features_`` on ``X``, set ``w = 0`` and return the features ``Z = z(X)``."""
        self.features_ = None if self.features is None else clone(self.features).fit(X.numpy())
        Z = self._transform(X)
        self.coef_ = torch.zeros(Z.shape[1], dtype=torch.float64)
        return Z

    def _transform(self, X: torch.Tensor) -> torch.Tensor:
        """``z(X)`` in the dtype of ``X``."""
        if self.features_ is None:
            return X
        return torch.as_tensor(self.features_.transform(X.numpy()), dtype=X.dtype)

    def _decision(self, X: torch.Tensor) -> torch.Tensor:
        """``f(X) = z(X) w`` as one column."""
        return (self._transform(X).double() @ self.coef_)[:, None]
