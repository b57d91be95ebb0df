"""Bandwidth by the median heuristic, and the σ ↔ γ conversion of scikit-learn.

``sigma="median"`` is the median pairwise distance on a seeded subsample (Dai et al. 2014,
Section 7: the "median trick"), times a user multiplier. ``gamma = 1 / (2σ²)``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import pdist

__all__ = ["median_distance", "resolve_sigma", "sigma_to_gamma", "gamma_to_sigma"]


def median_distance(X, metric: str = "euclidean", n_subsample: int = 1000, seed: int = 0) -> float:
    """Median of the pairwise distances between at most ``n_subsample`` seeded rows of ``X``.

    Zero distances (duplicate rows) are left out; 1.0 is returned when every distance is zero.
    """
    n = X.shape[0]
    rows = np.random.default_rng(seed).choice(n, size=min(n, n_subsample), replace=False)
    sample = X[np.sort(rows)]
    sample = sample.toarray() if sp.issparse(sample) else np.asarray(sample)
    distances = pdist(sample.astype(np.float64, copy=False), metric=metric)
    distances = distances[distances > 0]
    return float(np.median(distances)) if distances.size else 1.0


def resolve_sigma(sigma, X, metric: str, scale: float = 1.0, seed: int = 0) -> float:
    """The bandwidth: ``sigma`` itself when a number, else ``scale ×`` the median distance."""
    if isinstance(sigma, str):
        if sigma != "median":
            raise ValueError(f"sigma must be a positive number or 'median'; got {sigma!r}.")
        return float(scale) * median_distance(X, metric=metric, seed=seed)
    return float(sigma)


def sigma_to_gamma(sigma: float) -> float:
    return 1.0 / (2.0 * sigma**2)


def gamma_to_sigma(gamma: float) -> float:
    return (2.0 * gamma) ** -0.5
