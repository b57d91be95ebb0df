"""DSGClassifier: doubly stochastic kernel classification (SVM, L2-SVM, logistic, softmax)."""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if

from .._validation import Interval, Real, StrOptions
from ..losses import get_loss
from ._base import DSGBase, assign_parameters
from ._converging import CONVERGING_CONSTRAINTS, ConvergingMixin
from ._labels import fit_or_check_labels
from ._streaming import is_source

__all__ = ["DSGClassifier"]

CLASSIFICATION_LOSSES = {"hinge", "squared_hinge", "logistic", "log_loss"}

#: ``precond_eps="auto"``: ε relative to the mean eigenvalue of ``ΨᵀΨ/b``, from measurements
#: (benchmarks/results/mnist10.md). Softmax over many classes gains from light damping (MNIST,
#: 10 classes, 16384 rows: rbf 5.66% error at ε = 3, 4.34% at 0.3, 4.45% at 0.1; arccos 8.57%
#: at 3, 4.40% at 0.1), binary problems from heavier damping (a9a: 14.86% at 3, 15.39% at 0.3,
#: 16.20% at 0.1).
PRECOND_EPS_BINARY = 3.0
PRECOND_EPS_SOFTMAX = 0.1


def _has_proba(estimator) -> bool:
    if estimator.loss not in ("logistic", "log_loss"):
        raise AttributeError(f"predict_proba is not available for loss={estimator.loss!r}; "
                             "use loss='logistic'.")
    return True


class DSGClassifier(ConvergingMixin, ClassifierMixin, DSGBase):
    """Kernel classification by doubly stochastic gradients (Dai et al., NIPS 2014).

    Binary problems learn one output with labels ``±1`` (``classes_[1]`` is +1). With more
    classes, ``loss="logistic"`` minimises the softmax cross-entropy over one output per class;
    the margin losses are one-vs-rest over the same shared feature blocks.

    Parameters
    ----------
    loss : {"logistic", "hinge", "squared_hinge"}, default="logistic"
        ``log(1 + e^{−yu})`` (softmax for multiclass; gives ``predict_proba``),
        ``max(0, 1 − yu)`` (SVM), ``max(0, 1 − yu)²`` (L2-SVM). "log_loss" = "logistic".
    class_weight : dict, "balanced" or None, default=None
        Weights multiplying each class's samples, as in scikit-learn.
    precond_eps : float or "auto", default="auto"
        ``ε`` of the block preconditioner ``(ΨᵀΨ/b + εI)⁻¹``, relative to the mean eigenvalue of
        ``ΨᵀΨ/b``. "auto" is 0.1 for the multiclass softmax (three or more classes with
        ``loss="logistic"``) and 3.0 otherwise (binary problems, one-vs-rest margin losses).
    **params
        All other parameters as in :class:`DSGRegressor` (kernel, sigma, batch_size, ...).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    expansion_, n_components_, sigma_, seed_, t_, n_iter_, n_features_in_
        As in :class:`DSGRegressor`.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from kernelstream import DSGClassifier
    >>> X, y = make_moons(2000, noise=0.1, random_state=0)
    >>> clf = DSGClassifier(random_state=0).fit(X, y)
    >>> round(clf.score(X, y), 2)
    1.0
    """

    _state_attributes = DSGBase._state_attributes + ConvergingMixin._fitted_attributes + ("classes_",)

    _parameter_constraints = {
        **DSGBase._parameter_constraints,
        **CONVERGING_CONSTRAINTS,
        "loss": [StrOptions(CLASSIFICATION_LOSSES)],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "precond_eps": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    }

    def __init__(self, *, loss="logistic", class_weight=None, solver="preconditioned", kernel="rbf",
                 sigma="auto", sigma_scale=0.5, kernel_params=None, alpha="auto", batch_size=2048,
                 block_size=1024, max_iter="auto", learning_rate="inverse", eta0=2.0, t0=1.0,
                 power_t=0.5, precondition=True, precond_eps="auto", average=False,
                 n_components=None, fit_intercept=True, shuffle=True, tol=1e-3,
                 early_stopping=True, validation_fraction=0.1, n_iter_no_change=2,
                 warm_start=False, random_state=None, verbose=0, device="auto",
                 dtype="float32", n_jobs=None):
        assign_parameters(self, locals())

    def fit(self, X, y=None, sample_weight=None, *, classes=None):
        """Fit on ``(X, y)`` for ``max_iter`` passes.

        ``X`` may be a source of :mod:`kernelstream.data` (``y`` None): the fit streams it, with
        ``classes`` (every label) declared up front or found by its first pass; a shard of one
        under ``torch.distributed`` fits data-parallel (:mod:`kernelstream.distributed`).
        """
        if is_source(X):
            return self._fit_source(X, y, sample_weight, classes)
        if classes is not None:
            raise ValueError("classes= goes with a source; with arrays the labels of y are the "
                             "classes.")
        if self.solver == "one_pass":
            return self._fit(X, y, sample_weight)
        return self._fit_preconditioned(X, y, sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learn from a chunk of a stream, in full batches of ``batch_size`` rows.

        ``classes`` (all labels) is required on the first call unless ``y`` holds every label;
        later calls must pass the same ``classes`` or none. Rows wait in a buffer until a batch
        is full (see :meth:`DSGRegressor.partial_fit`).
        """
        return self._partial_fit(X, y, sample_weight, classes=classes)

    def decision_function(self, X):
        """Margins: ``(n,)`` for binary problems (positive means ``classes_[1]``), else ``(n, K)``."""
        out = self._raw_decision(X)
        return out[:, 0] if out.shape[1] == 1 else out

    def predict(self, X):
        scores = self.decision_function(X)
        index = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[index]

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities: ``σ(f)`` (binary) or ``softmax(f)`` (multiclass)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1 - p, p])
        return softmax(scores, axis=1)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        return np.log(np.clip(self.predict_proba(X), 1e-300, None))

    # -- hooks ---------------------------------------------------------------------------
    def _check_targets(self, y, *, first, classes=None):
        return fit_or_check_labels(self, y, first=first, classes=classes, loss=self.loss)

    def _encode_targets(self, y):
        index = np.searchsorted(self.classes_, y)
        if len(self.classes_) == 2:
            return np.where(index == 1, 1.0, -1.0).reshape(-1, 1)
        if self._loss_name() == "softmax":
            return index.astype(np.int64)
        return np.where(index[:, None] == np.arange(len(self.classes_)), 1.0, -1.0)

    def _class_weights(self, targets) -> np.ndarray:
        if self.class_weight is None:
            return np.ones(targets.shape[0])
        index = self._class_index(targets)
        present = np.unique(index)
        weights = np.ones(len(self.classes_))
        if self.class_weight == "balanced":
            weights[present] = compute_class_weight("balanced", classes=present, y=index)
        else:
            for label, w in self.class_weight.items():
                position = np.searchsorted(self.classes_, label)
                if position >= len(self.classes_) or self.classes_[position] != label:
                    raise ValueError(f"class_weight has label {label!r}, which is not a class; "
                                     f"classes_={self.classes_.tolist()}.")
                weights[position] = w
        return weights[index]

    def _class_index(self, targets) -> np.ndarray:
        if targets.ndim == 1:
            return targets
        if targets.shape[1] == 1:
            return (targets[:, 0] > 0).astype(int)
        return targets.argmax(axis=1)

    def _loss_name(self) -> str:
        multiclass = len(self.classes_) > 2
        if self.loss in ("logistic", "log_loss"):
            return "softmax" if multiclass else "logistic"
        return self.loss

    def _make_loss(self):
        return get_loss(self._loss_name())

    def _solver_config(self):
        return dataclasses.replace(super()._solver_config(), precond_eps=self._precond_eps())

    def _precond_eps(self) -> float:
        """``precond_eps``, with "auto" resolved by the loss (see the class docstring)."""
        if self.precond_eps != "auto":
            return float(self.precond_eps)
        return PRECOND_EPS_SOFTMAX if self._loss_name() == "softmax" else PRECOND_EPS_BINARY

    def _n_outputs(self):
        return 1 if len(self.classes_) == 2 else len(self.classes_)

    def _stratify_labels(self, y):
        return y

    def _check_fit_targets(self, y, sample_weight) -> None:
        weighted = np.unique(y[sample_weight > 0])
        if len(weighted) < 2:
            raise ValueError("fit needs rows of at least 2 classes with positive sample_weight; "
                             f"only class {weighted.tolist()} has any.")
