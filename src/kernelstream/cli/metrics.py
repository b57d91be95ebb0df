"""The numbers ``kernelstream evaluate`` reports, computed with scikit-learn's metrics.

Classifiers: error and accuracy; ROC AUC from the decision function (binary) or the class
probabilities (multiclass, one-vs-rest); log loss where the model has probabilities. Regressors:
RMSE, MAE and R²; the GP models also the coverage of their central predictive intervals
``mean ± z·std`` (``z = Φ⁻¹((1 + level)/2)``, std of ``y``: noise included) and the mean std.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm
from sklearn import metrics

from .models import has_proba, has_std

__all__ = ["classification_metrics", "regression_metrics", "predictive_std"]


def classification_metrics(model, X, y) -> dict:
    """``error``, ``accuracy``, ``auc`` (when defined) and ``log_loss`` (with probabilities)."""
    predicted = model.predict(X)
    accuracy = float(metrics.accuracy_score(y, predicted))
    result = {"rows": int(len(y)), "error": 1.0 - accuracy, "accuracy": accuracy}
    present = np.unique(y)
    proba = model.predict_proba(X) if has_proba(model) else None
    if len(model.classes_) == 2 and len(present) == 2:
        scores = model.decision_function(X)
        result["auc"] = float(metrics.roc_auc_score(y == model.classes_[1], scores))
    elif proba is not None and len(present) == len(model.classes_):
        result["auc"] = float(metrics.roc_auc_score(y, proba, multi_class="ovr",
                                                    labels=model.classes_))
    if proba is not None:
        result["log_loss"] = float(metrics.log_loss(y, proba, labels=model.classes_))
    return result


def regression_metrics(model, X, y, level: float = 0.95) -> dict:
    """``rmse``, ``mae``, ``r2``; for the GP models ``coverage`` at ``level`` and ``mean_std``."""
    if has_std(model):
        mean, std = predictive_std(model, X)
    else:
        mean, std = model.predict(X), None
    result = {"rows": int(len(y)),
              "rmse": float(np.sqrt(metrics.mean_squared_error(y, mean))),
              "mae": float(metrics.mean_absolute_error(y, mean)),
              "r2": float(metrics.r2_score(y, mean)) if len(y) > 1 else float("nan")}
    if std is not None:
        z = norm.ppf((1 + level) / 2)                  # two-sided: mean ± z·std holds `level`
        result["coverage"] = float(np.mean(np.abs(y - mean) <= z * std))
        result["level"] = level
        result["mean_std"] = float(np.mean(std))
    return result


def predictive_std(model, X) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of ``y`` (noise included) of a GP model."""
    return model.predict(X, return_std=True, include_noise=True)
