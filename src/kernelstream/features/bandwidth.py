"""Bandwidth by the median heuristic, and the σ ↔ γ conversion of scikit-learn.

``sigma="median"`` is the median pairwise distance on a seeded subsample (Dai et al. 2014,
Section 7: the "median trick"), times a user multiplier. ``gamma = 1 / (2σ²)``.

A wide sparse subsample (:func:`~kernelstream.ops.sparse.keeps_sparse`) is not densified: the
differences of its pairs of rows are taken sparse, ``O(pairs · nnz per row)`` instead of
``O(pairs · d)`` (1,000 rows of 40,000 columns would be 320 MB dense and 2·10¹⁰ operations).

A 1-D array for ``sigma`` is one lengthscale per column (ARD): ``k(x, y) = k₁((x − y)/ℓ)``, the
kernel at unit bandwidth of the rescaled difference; :func:`check_lengthscales` validates it.

One bandwidth for every column assumes columns of comparable scale: a dense sample whose
widest column's standard deviation is more than ``SCALE_RATIO`` times the median column's gets a
:class:`UnequalScalesWarning` (the widest columns would decide every distance).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import pdist

from ..ops.sparse import keeps_sparse

__all__ = ["median_distance", "resolve_sigma", "sigma_to_gamma", "gamma_to_sigma",
           "UnequalScalesWarning", "SCALE_RATIO", "check_lengthscales", "is_lengthscale_vector"]

#: warn when the widest column's standard deviation exceeds the median column's this many times
SCALE_RATIO = 100.0


class UnequalScalesWarning(UserWarning):
    """The columns' scales differ by orders of magnitude: standardise the input."""

#: metrics whose distances of sparse rows are computed sparse
_SPARSE_METRICS = ("euclidean", "cityblock")
#: pairs of sparse rows differenced at a time
_PAIR_CHUNK = 2**15


def median_distance(X, metric: str = "euclidean", n_subsample: int = 1000, seed: int = 0) -> float:
    """Median of the pairwise distances between at most ``n_subsample`` seeded rows of ``X``.

    Zero distances (duplicate rows) are left out; 1.0 is returned when every distance is zero.
    """
    n = X.shape[0]
    rows = np.random.default_rng(seed).choice(n, size=min(n, n_subsample), replace=False)
    sample = X[np.sort(rows)]
    if keeps_sparse(sample) and metric in _SPARSE_METRICS:
        distances = sparse_pdist(sample, metric)
    else:
        dense = not sp.issparse(sample)
        sample = np.asarray(sample) if dense else sample.toarray()
        if dense:
            warn_unequal_scales(sample)
        distances = pdist(sample.astype(np.float64, copy=False), metric=metric)
    distances = distances[distances > 0]
    return float(np.median(distances)) if distances.size else 1.0


def warn_unequal_scales(sample: np.ndarray) -> None:
    """Warn when the widest column of ``sample`` has a standard deviation above ``SCALE_RATIO``
    times the median column's (columns that do not vary left out)."""
    scales = np.std(sample, axis=0, dtype=np.float64)
    varying = scales[scales > 0]
    if varying.size < 2:
        return
    widest, typical = int(np.argmax(scales)), float(np.median(varying))
    if scales[widest] > SCALE_RATIO * typical:
        warnings.warn(
            f"The columns of X have unequal scales: column {widest}'s standard deviation is "
            f"{scales[widest]:.3g}, {scales[widest] / typical:.3g} times the median column's "
            f"({typical:.3g}), so it decides every kernel distance. Standardise X (e.g. "
            "make_pipeline(StandardScaler(), estimator)).", UnequalScalesWarning, stacklevel=2)


def sparse_pdist(S, metric: str = "euclidean") -> np.ndarray:
    """The distances of every pair ``i < j`` of rows of the sparse matrix ``S`` (``pdist``'s
    order), from the sparse differences ``S[i] − S[j]``: ``euclidean`` or ``cityblock``."""
    if metric not in _SPARSE_METRICS:
        raise ValueError(f"metric must be one of {_SPARSE_METRICS}; got {metric!r}.")
    S = sp.csr_matrix(S, dtype=np.float64)
    first, second = np.triu_indices(S.shape[0], k=1)
    distances = np.empty(first.shape[0], dtype=np.float64)
    for start in range(0, first.shape[0], _PAIR_CHUNK):
        pairs = slice(start, start + _PAIR_CHUNK)
        D = S[first[pairs]] - S[second[pairs]]  # the non-zeros of x_i − x_j
        total = (D.multiply(D) if metric == "euclidean" else abs(D)).sum(axis=1)
        distances[pairs] = np.asarray(total).ravel()
    return np.sqrt(distances) if metric == "euclidean" else distances


def resolve_sigma(sigma, X, metric: str, scale: float = 1.0, seed: int = 0) -> float | np.ndarray:
    """The bandwidth: ``sigma`` itself when a number, a validated float64 copy when a 1-D array
    of per-feature lengthscales (:func:`check_lengthscales`), else ``scale ×`` the median
    distance."""
    if isinstance(sigma, str):
        if sigma != "median":
            raise ValueError(f"sigma must be a positive number, a 1-D array of per-feature "
                             f"lengthscales or 'median'; got {sigma!r}.")
        return float(scale) * median_distance(X, metric=metric, seed=seed)
    if is_lengthscale_vector(sigma):
        return check_lengthscales(sigma, X.shape[1])
    return float(sigma)


def is_lengthscale_vector(sigma) -> bool:
    """Whether ``sigma`` is an array of lengthscales (any non-scalar array-like or tensor), not
    one number or a string."""
    if isinstance(sigma, (str, bytes)) or sigma is None:
        return False
    return np.ndim(sigma) > 0 if not hasattr(sigma, "dim") else sigma.dim() > 0


def check_lengthscales(sigma, n_features: int | None = None) -> np.ndarray:
    """``sigma`` as a read-only float64 vector of ``n_features`` positive, finite lengthscales
    ``ℓ`` (``k(x, y) = k₁((x − y)/ℓ)``); a ``ValueError`` says what is wrong otherwise."""
    if hasattr(sigma, "detach"):
        sigma = sigma.detach().cpu().numpy()
    try:
        ell = np.array(sigma, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sigma must be a number or a 1-D array of per-feature lengthscales; "
                         f"got {sigma!r}, which is not numeric ({exc}).") from None
    if ell.ndim != 1 or ell.size == 0:
        raise ValueError(f"sigma must be a number or a 1-D array of per-feature lengthscales; got "
                         f"an array of shape {ell.shape}. Pass one lengthscale per column of X.")
    if n_features is not None and ell.shape[0] != n_features:
        raise ValueError(f"sigma has {ell.shape[0]} lengthscales but X has {n_features} features: "
                         f"pass one lengthscale per column of X (or one number for all).")
    bad = np.flatnonzero(~(np.isfinite(ell) & (ell > 0)))
    if bad.size:
        raise ValueError(f"sigma[{bad[0]}] = {float(ell[bad[0]])!r} is not a lengthscale: every entry "
                         f"must be positive and finite ({bad.size} are not). A feature that should "
                         f"not count gets a large lengthscale (e.g. 1e6), not zero or inf.")
    ell.setflags(write=False)
    return ell


def sigma_to_gamma(sigma: float) -> float:
    return 1.0 / (2.0 * sigma**2)


def gamma_to_sigma(gamma: float) -> float:
    return (2.0 * gamma) ** -0.5
