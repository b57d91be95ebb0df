"""Parameter constraints and shared error templates (the one file importing sklearn internals)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions  # noqa: F401  (private API)

__all__ = ["Interval", "StrOptions", "Integral", "Real", "check_labels_for_loss",
           "check_sample_weight_values"]


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
