"""Parameter constraints and shared error templates (the one file importing sklearn internals)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions  # noqa: F401  (private API)
from sklearn.utils.validation import check_array

__all__ = ["Interval", "StrOptions", "Integral", "Real", "check_labels_for_loss",
           "check_sample_weight", "check_sample_weight_values", "check_magnitude"]


def check_labels_for_loss(n_classes: int, loss: str) -> None:
    """A classifier needs at least two classes."""
    if n_classes < 2:
        raise ValueError(
            f"The training data has {n_classes} class; a classifier needs at least 2 classes. "
            "Check y, or pass classes=[...] to partial_fit."
        )


def check_sample_weight(sample_weight, X) -> np.ndarray:
    """``sample_weight`` as float64 of shape ``(n_samples,)``: ``None`` is ones, a number is
    that weight for every row; NaN, inf, other shapes and negative or all-zero weights are
    refused."""
    n = X.shape[0]
    if sample_weight is None:
        return np.ones(n)
    if isinstance(sample_weight, Real):
        weight = np.full(n, float(sample_weight))
    else:
        weight = check_array(sample_weight, ensure_2d=False, dtype=np.float64,
                             input_name="sample_weight", ensure_min_samples=0)
        if weight.ndim != 1 or weight.shape[0] != n:
            raise ValueError(f"sample_weight.shape == {weight.shape}, expected {(n,)}!")
    check_sample_weight_values(weight)
    return weight


def check_sample_weight_values(sample_weight: np.ndarray) -> None:
    if np.any(sample_weight < 0):
        raise ValueError("sample_weight has negative values; weights must be >= 0.")
    if not np.any(sample_weight > 0):
        raise ValueError("sample_weight is zero for every sample; pass at least one non-zero "
                         "(positive) weight.")


def check_magnitude(X, dtype=np.float32, name: str = "X") -> None:
    """Refuse inputs whose squared distances overflow the compute ``dtype``.

    Kernels see ``‖x − x'‖²`` (or ``⟨x, x'⟩``): with ``d`` features that is finite when
    ``max|x| < sqrt(max_float / (4d))`` (about 9e18/√d in float32, 6e153/√d in float64).
    """
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.size == 0:
        return
    largest = max(float(np.max(values)), -float(np.min(values)))  # no |X| copy: two reductions
    limit = math.sqrt(float(np.finfo(dtype).max) / (4 * max(1, X.shape[1])))
    if largest > limit:
        raise ValueError(
            f"{name} has values up to {largest:.3g}: its squared distances overflow "
            f"{np.dtype(dtype).name}. Standardise the inputs (sklearn.preprocessing."
            f"StandardScaler) or rescale them below {limit:.3g}.")
