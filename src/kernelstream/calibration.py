"""Class probabilities for losses that are not a log-likelihood: temperature scaling.

A least-squares or margin classifier ranks classes well but its outputs are not probabilities.
One temperature ``τ > 0`` turns them into ``softmax(τ·f)`` (``σ(τ·f)`` for one binary margin),
with ``τ`` minimising the log loss on held-out rows (Platt 1999; Guo et al., ICML 2017). The
map is monotone, so ``argmax`` of the probabilities is the prediction.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, softmax

__all__ = ["fit_temperature", "tempered_proba"]

#: ``τ`` is searched in ``[1/BOUND, BOUND]`` (log scale)
BOUND = 1e3


def _logits(scores: np.ndarray) -> np.ndarray:
    """``(n, K)`` logits: a binary margin ``f`` (class 1 against class 0) becomes ``[0, f]``."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 1 or scores.shape[1] == 1:
        margin = scores.reshape(-1)
        return np.column_stack([np.zeros_like(margin), margin])
    return scores


def fit_temperature(scores: np.ndarray, labels: np.ndarray, weight: np.ndarray | None = None) -> float:
    """``τ`` minimising the weighted mean cross-entropy of ``softmax(τ·f_i)`` against the label
    ``y_i`` smoothed as Platt (1999) does (convex in ``τ``).

    Parameters
    ----------
    scores : ndarray of shape (n,) or (n, K)
        Decision values: a binary margin, or one column per class.
    labels : ndarray of shape (n,)
        Class indices (``0``/``1`` for a binary margin).
    weight : ndarray of shape (n,), optional
        Row weights.

    Examples
    --------
    >>> f = np.array([2.0, -2.0, 1.0, -1.0])  # two right by 2, two wrong by 1
    >>> round(fit_temperature(f, np.array([1, 0, 0, 1])), 2)
    0.27
    """
    logits = _logits(scores)
    labels = np.asarray(labels, dtype=np.int64)
    weight = np.ones(len(labels)) if weight is None else np.asarray(weight, dtype=np.float64)
    K = logits.shape[1]
    # Platt's smoothed targets: 1 − ε on the label, ε/(K−1) on each other class, ε = 1/(Σw + 2),
    # with weights as counts, so that rows all on the right side give a finite τ (not the bound)
    epsilon = 1.0 / (weight.sum() + 2)
    true = logits[np.arange(len(labels)), labels]
    picked = (1 - epsilon) * true + epsilon * (logits.sum(axis=1) - true) / (K - 1)

    top = logits.max(axis=1)
    below = logits - top[:, None]  # ≤ 0: log Σ_k exp(τ f_k) = τ·top + log Σ_k exp(τ(f_k − top)), τ > 0
    total = weight.sum()

    def log_loss(log_tau: float) -> float:
        tau = math.exp(log_tau)
        lse = tau * top + np.log(np.exp(tau * below).sum(axis=1))
        return float(weight @ (lse - tau * picked) / total)

    found = minimize_scalar(log_loss, bounds=(-math.log(BOUND), math.log(BOUND)), method="bounded")
    return math.exp(found.x)


def tempered_proba(scores: np.ndarray, temperature: float) -> np.ndarray:
    """``(n, K)`` probabilities ``softmax(τ·f)``, or ``[1 − σ(τf), σ(τf)]`` for a binary margin."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 1 or scores.shape[1] == 1:
        p = expit(temperature * scores.reshape(-1))
        return np.column_stack([1 - p, p])
    return softmax(temperature * scores, axis=1)
