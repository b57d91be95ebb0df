"""DSGClassifier: doubly stochastic kernel classification (SVM, L2-SVM, logistic, softmax)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import ClassifierMixin
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if

from .._validation import Interval, Real, StrOptions
from ..calibration import fit_temperature, tempered_proba
from ..losses import get_loss
from ..planning import resolve_loss, resolve_precond_eps
from ..solvers.dask_rows import is_dask_collection
from ..solvers.sharded import gathered
from ._base import DSGBase, assign_parameters, predict_in_row_chunks
from ._checkpointing import refuse_checkpoints
from ._converging import CONVERGING_CONSTRAINTS, ConvergingMixin
from ._labels import fit_or_check_labels
from ._sources import is_source

__all__ = ["DSGClassifier"]

CLASSIFICATION_LOSSES = {"hinge", "squared_hinge", "logistic", "log_loss", "squared", "auto"}


def _has_proba(estimator) -> bool:
    if estimator._loss_name() in ("logistic", "softmax"):
        return True
    if getattr(estimator, "proba_temperature_", None) is None:
        raise AttributeError(f"predict_proba is not available for loss={estimator._loss_name()!r} "
                             "trained by the one-pass solver (no held-out rows calibrated it); use "
                             "loss='logistic', or fit with solver='preconditioned'.")
    return True


class DSGClassifier(ConvergingMixin, ClassifierMixin, DSGBase):
    """Kernel classification by doubly stochastic gradients (Dai et al., NIPS 2014).

    Binary problems learn one output with labels ``±1`` (``classes_[1]`` is +1). With more
    classes, ``loss="logistic"`` minimises the softmax cross-entropy over one output per class;
    the margin losses are one-vs-rest over the same shared feature blocks. ``fit`` is the
    converging fit of :class:`DSGRegressor` (docs/how_it_works.md); a least-squares ``fit`` on
    at most 2048 rows is the exact dual route (:mod:`kernelstream.solvers.dual`), its
    probability temperature fitted on leave-one-out predictions.

    Parameters
    ----------
    loss : {"auto", "squared", "logistic", "hinge", "squared_hinge"}, default="auto"
        ``½(1 − yu)²`` (regularised least-squares classification, the loss of
        ``RidgeClassifier``; one-vs-rest ``±1`` targets), ``log(1 + e^{−yu})`` (softmax for
        multiclass), ``max(0, 1 − yu)`` (SVM), ``max(0, 1 − yu)²`` (L2-SVM). "log_loss" =
        "logistic". "auto" is "squared" for every ``solver="cg"`` fit (conjugate gradients
        solve least squares only) and for three or more classes on the fit engine; for two
        classes it is "squared_hinge" by epochs (``solver="sgd"``) (least squares chose a far too narrow bandwidth on a
        sphere's boundary: docs/decisions/auto-binary-loss.md), and on the dual route both are solved
        exactly and the hinge is kept only for significantly fewer leave-one-out errors; else
        "logistic" (the softmax over three or more classes, ``solver="one_pass"``,
        ``partial_fit``); ``loss_`` says which.
        ``predict_proba`` is the logistic model's, or for the other losses
        ``softmax(τ·f)`` with ``τ`` fitted on the validation rows (temperature scaling; the
        leave-one-out predictions on the dual route).
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
    loss_ : str
        The loss trained ("auto" resolved; "logistic" also for the multiclass softmax).
    proba_temperature_ : float or None
        ``τ`` of ``predict_proba`` for a loss that is not the logistic one (None otherwise).
    fit_plan_, expansion_, n_components_, sigma_, seed_, t_, n_iter_, n_features_in_
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

    _state_attributes = (DSGBase._state_attributes + ConvergingMixin._fitted_attributes
                         + ("classes_", "loss_", "proba_temperature_"))

    _parameter_constraints = {
        **DSGBase._parameter_constraints,
        **CONVERGING_CONSTRAINTS,
        "loss": [StrOptions(CLASSIFICATION_LOSSES)],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "precond_eps": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    }

    def __init__(self, *, loss="auto", class_weight=None, solver="preconditioned", kernel="rbf",
                 sigma="auto", sigma_scale=0.5, kernel_params=None, alpha="auto", batch_size=2048,
                 block_size=1024, max_iter="auto", learning_rate="inverse", eta0=2.0, t0=1.0,
                 power_t=0.5, precondition=True, precond_eps="auto", average=False,
                 n_components=None, fit_intercept=True, shuffle=True, tol=1e-3,
                 early_stopping=True, validation_fraction=0.1, n_iter_no_change=2,
                 warm_start=False, cache_bytes="auto", effort="auto", basis="auto", checkpoint=None, checkpoint_every=1, random_state=None,
                 verbose="auto", device="auto", dtype="float32", n_jobs=None):
        assign_parameters(self, locals())

    def fit(self, X, y=None, sample_weight=None, *, classes=None, resume=None, limits=None):
        """Fit on ``(X, y)`` for ``max_iter`` passes; ``resume`` as in :meth:`DSGRegressor.fit`
        (a checkpoint of an interrupted fit on the same data with the same parameters).

        ``X`` may be a source of :mod:`kernelstream.data` (``y`` None): the fit streams it, with
        ``classes`` (every label) declared up front or found by its first pass; a shard of one
        under ``torch.distributed`` fits data-parallel (:mod:`kernelstream.distributed`).
        ``limits``: the planner's thresholds, as in :meth:`DSGRegressor.fit`.
        """
        if is_source(X):
            refuse_checkpoints(self, resume, "a fit on a source")
            return self._fit_source(X, y, sample_weight, classes, limits)
        if classes is not None:
            raise ValueError("classes= goes with a source; with arrays the labels of y are the "
                             "classes.")
        if is_dask_collection(X):
            return self._fit_dask(X, y, sample_weight, resume, limits)
        if self.solver == "one_pass":
            refuse_checkpoints(self, resume)
            return self._fit(X, y, sample_weight, limits)
        return self._fit_preconditioned(X, y, sample_weight, resume, limits)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learn from a chunk of a stream, in full batches of ``batch_size`` rows.

        ``classes`` (all labels) is required on the first call unless ``y`` holds every label;
        later calls must pass the same ``classes`` or none. Rows wait in a buffer until a batch
        is full (see :meth:`DSGRegressor.partial_fit`).
        """
        return self._partial_fit(X, y, sample_weight, classes=classes)

    def decision_function(self, X):
        """Margins: ``(n,)`` for binary problems (positive means ``classes_[1]``), else ``(n, K)``."""
        return self._margins(self._raw_decision(X))

    @staticmethod
    def _margins(out: np.ndarray) -> np.ndarray:
        """:meth:`decision_function` of the model's outputs ``(n, C)``."""
        return out[:, 0] if out.shape[1] == 1 else out

    def predict(self, X):
        return self._labels_of(self.decision_function(X))

    def _labels_of(self, scores: np.ndarray) -> np.ndarray:
        """:meth:`predict` of the margins ``scores``."""
        index = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[index]

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities: ``σ(τf)`` (binary) or ``softmax(τf)`` (multiclass), ``τ = 1`` for
        the logistic loss, else ``proba_temperature_``."""
        return self._proba_of(self.decision_function(X))

    def _proba_of(self, scores: np.ndarray) -> np.ndarray:
        """:meth:`predict_proba` of the margins ``scores``."""
        tau = getattr(self, "proba_temperature_", None)
        return tempered_proba(scores, 1.0 if tau is None else tau)

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
        """The loss trained (``loss_``; before any fit, ``loss`` with "auto" as for one pass),
        "softmax" for the logistic loss over three or more classes."""
        loss = getattr(self, "loss_", None) or resolve_loss(self.loss, "one_pass", self._n_classes(), False)
        if loss == "logistic" and len(getattr(self, "classes_", ())) > 2:
            return "softmax"
        return loss

    def _n_classes(self) -> int | None:
        return len(getattr(self, "classes_", ()))

    def _resolve_loss(self, loss: str) -> None:
        self.loss_ = loss

    def _clearly_better(self, candidate, kept, targets, weight, z: float = 2.0) -> bool:
        """Whether the leave-one-out predictions ``candidate`` make significantly fewer errors
        than ``kept`` (McNemar): on the rows only one of them gets wrong, ``b`` of them ``kept``'s
        and ``c`` ``candidate``'s (weights as row counts), ``b − c > z√(b + c)``. A difference of
        a few rows is noise (``make_moons``: the hinge 1 row of 1,500 ahead on leave-one-out and
        0.2 points behind on the test rows)."""
        wrong_candidate = self._wrong(candidate, targets)
        wrong_kept = self._wrong(kept, targets)
        counts = weight / weight.mean()
        b = float((counts * (wrong_kept & ~wrong_candidate)).sum())
        c = float((counts * (wrong_candidate & ~wrong_kept)).sum())
        return b - c > z * math.sqrt(b + c)

    @classmethod
    def _wrong(cls, predictions, targets) -> torch.Tensor:
        """Rows whose ``(m, C)`` outputs pick another class than the ±1 ``targets``."""
        return cls._classes(predictions) != cls._classes(targets)

    def _held_out_classes(self, outputs: torch.Tensor) -> torch.Tensor:
        return self._classes(outputs)

    @staticmethod
    def _classes(outputs: torch.Tensor) -> torch.Tensor:
        """The class each row of ``(m, C)`` outputs picks: the sign of one column, else the
        largest."""
        return outputs[:, 0] > 0 if outputs.shape[1] == 1 else outputs.argmax(dim=1)

    def _calibrate(self, problem) -> None:
        """``proba_temperature_`` from the validation rows (else up to ``calibration_rows``
        training rows) when the loss is not the logistic one."""
        self.proba_temperature_ = None
        if self._loss_name() in ("logistic", "softmax"):
            return
        held_out = _calibration_rows(problem, self.fit_plan_.limits.calibration_rows)
        if held_out is None:
            return
        X, targets, weight = held_out
        scores = predict_in_row_chunks(self.expansion_.predict, X, self._torch_dtype(), self.device_,
                                       self.expansion_.n_outputs, row_invariant=False)
        self._calibrate_held_out(scores, targets, weight)
        comm = getattr(problem, "comm", None)  # ranks hold different rows: rank 0's τ for all
        if comm is not None:
            self.proba_temperature_ = comm.broadcast_object(self.proba_temperature_)

    def _calibrate_held_out(self, scores, targets, weight) -> None:
        """``proba_temperature_`` fitted on held-out ``scores`` (``None`` for the logistic loss)."""
        self.proba_temperature_ = None
        if self._loss_name() in ("logistic", "softmax"):
            return
        scores = scores.cpu().numpy() if isinstance(scores, torch.Tensor) else scores
        labels = self._class_index(targets.cpu().numpy())
        self.proba_temperature_ = fit_temperature(scores, labels, weight.cpu().numpy())

    def _make_loss(self):
        return get_loss(self._loss_name())

    def _solver_config(self):
        return dataclasses.replace(super()._solver_config(), precond_eps=self._precond_eps())

    def _precond_eps(self) -> float:
        """``precond_eps``, with "auto" resolved by the loss (see the class docstring)."""
        return resolve_precond_eps(self.precond_eps, self._loss_name(), self._n_classes())

    def _n_outputs(self):
        return 1 if len(self.classes_) == 2 else len(self.classes_)

    def _stratify_labels(self, y):
        return y

    def _check_fit_targets(self, y, sample_weight) -> None:
        weighted = np.unique(y[sample_weight > 0])
        if len(weighted) < 2:
            raise ValueError("fit needs rows of at least 2 classes with positive sample_weight; "
                             f"only class {weighted.tolist()} has any.")


def _calibration_rows(problem, most: int) -> tuple | None:
    """``(X, targets, weight)`` to fit the temperature on: the validation rows (a stream's
    held-out batches joined), else up to ``most`` (``calibration_rows``) training rows. ``X`` is a tensor
    or a CSR matrix (rows kept sparse are densified a prediction chunk at a time); None when
    the rows are neither."""
    validation = problem.validation
    if isinstance(validation, tuple):
        X, targets, weight = validation
    elif validation is not None:
        batches = list(getattr(validation, "batches", ()))
        if not batches:
            return None
        X = _joined([batch[0] for batch in batches])
        targets, weight = (torch.cat([batch[i] for batch in batches]) for i in (1, 2))
    elif hasattr(problem, "readers"):
        X, targets, weight = _first_stream_rows(problem, most)
    else:
        rows = problem.index(torch.arange(min(problem.n_train, most), device=problem.y.device))
        X = problem.X.subset(rows) if hasattr(problem.X, "subset") else problem.X[rows]
        targets, weight = problem.y[rows], problem.weight[rows]
    X = _joined([gathered(X)])
    return None if X is None else (X, targets, weight)


def _first_stream_rows(problem, n_rows: int) -> tuple:
    """``(X, targets, weight)`` of the first ``n_rows`` or so rows of this process's first
    training stream (epoch 0's order), a chunk at a time."""
    parts = []
    for chunk in problem.readers[0].chunks(0):
        parts.append(problem.convert(chunk))
        if sum(part[1].shape[0] for part in parts) >= n_rows:
            break
    X = _joined([part[0] for part in parts])
    return X, *(torch.cat([part[i] for part in parts]) for i in (1, 2))


def _joined(parts: list):
    """Row blocks as one tensor, or as one CSR matrix when they are sparse rows; else None."""
    if all(isinstance(part, torch.Tensor) for part in parts):
        return torch.cat(parts)
    if all(hasattr(part, "matrix") or sp.issparse(part) for part in parts):
        return sp.vstack([getattr(part, "matrix", part) for part in parts], format="csr")
    return None
