"""The paper's synthetic data, generated in code (Dai et al. 2014, Section 7.1)."""

from __future__ import annotations

import numpy as np

__all__ = ["synthetic_regression", "synthetic_function"]


def synthetic_function(X: np.ndarray) -> np.ndarray:
    """``f(x) = cos(0.5 π ‖x‖) · exp(−0.1 π ‖x‖)``."""
    radius = np.linalg.norm(X, axis=1)
    return np.cos(0.5 * np.pi * radius) * np.exp(-0.1 * np.pi * radius)


def synthetic_regression(n_samples: int, *, noise: float = 0.1, random_state=None,
                         dtype=np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x ~ U[−5, 5]²``, ``y = f(x) + noise · N(0, 1)``.

    Returns
    -------
    X : (n, 2), y : (n,) noisy targets, f : (n,) noise-free values.
    """
    rng = np.random.default_rng(random_state)
    X = rng.uniform(-5.0, 5.0, size=(n_samples, 2))
    f = synthetic_function(X)
    y = f + noise * rng.standard_normal(n_samples)
    return X.astype(dtype), y.astype(dtype), f.astype(dtype)
