"""Parameter constraints and shared error templates (the one file importing sklearn internals)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions  # noqa: F401  (private API)

__all__ = ["Interval", "StrOptions", "Integral", "Real", "check_labels_for_loss",
           "check_sample_weight_values", "check_magnitude"]


def check_labels_for_loss(n_classes: int, loss: str) -> None:
    """A classifier needs at least two classes."""
    if n_classes < 2:
        raise ValueError(
            f"The training data has {n_classes} class; a classifier needs at least 2 classes. "
            "Check y, or pass classes=[...] to partial_fit."
        )


def check_sample_weight_values(sample_weight: np.ndarray) -> None:
    if np.any(sample_weight < 0):
        raise ValueError("sample_weight has negative values; weights must be >= 0.")
    if not np.any(sample_weight > 0):
        raise ValueError("sample_weight is zero for every sample; at least one must be positive.")


def check_magnitude(X, dtype=np.float32, name: str = "X") -> None:
    """Refuse inputs whose squared distances overflow the compute ``dtype``.

    Kernels see ``‖x − x'‖²`` (or ``⟨x, x'⟩``): with ``d`` features that is finite when
    ``max|x| < sqrt(max_float / (4d))`` (about 9e18/√d in float32, 6e153/√d in float64).
    """
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.size == 0:
        return
    largest = float(np.max(np.abs(values)))
    limit = math.sqrt(float(np.finfo(dtype).max) / (4 * max(1, X.shape[1])))
    if largest > limit:
        raise ValueError(
            f"{name} has values up to {largest:.3g}: its squared distances overflow "
            f"{np.dtype(dtype).name}. Standardise the inputs (sklearn.preprocessing."
            f"StandardScaler) or rescale them below {limit:.3g}.")
