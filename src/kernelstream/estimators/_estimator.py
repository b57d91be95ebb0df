"""The base of every public estimator: threads, rollback on error, ``save`` and the state dict.

Written once for the eight estimators:

- **threads**: every public method that computes (:data:`THREADED_METHODS`) a subclass defines
  runs inside :func:`~kernelstream._threads.thread_limits` with the estimator's ``n_jobs`` —
  wrapped when the class is created, not decorated by hand;
- **rollback**: :meth:`KernelEstimator._unchanged_on_error` restores every attribute when a
  call raises; attributes changed in place (``_mutable_state``) are rolled back by their own
  ``transaction()`` when they have one (an expansion undoes its steps), else deep-copied first;
- **persistence**: :meth:`KernelEstimator.save` writes the state dict with :mod:`kernelstream.io`;
- **input**: :meth:`KernelEstimator._check_X` validates rows (and targets) the same way
  everywhere: scikit-learn's ``validate_data``, squared distances finite in the compute dtype,
  non-negative rows for histogram kernels.
"""

from __future__ import annotations

import functools
import inspect
from contextlib import ExitStack, contextmanager
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from .. import io
from .._state import EstimatorState
from .._threads import respects_n_jobs
from .._validation import check_magnitude
from ..features import KERNELS, kernel_class
from ..features.additive import check_non_negative
from ..planning.limits import FitLimits, fit_limits
from ._rollback import unchanged_on_error

__all__ = ["KernelEstimator", "THREADED_METHODS"]

#: public methods run inside the estimator's thread limits, and the entry points the river
#: adapters call with rows they made (:mod:`kernelstream.integrations.river`)
THREADED_METHODS = ("fit", "partial_fit", "predict", "decision_function", "transform",
                    "kernel_matrix", "sample_y", "score_samples",
                    "_outputs", "_learn_checked", "_predicted")


class KernelEstimator(EstimatorState, BaseEstimator):
    """Threads, rollback, ``save`` and state dicts for every public estimator."""

    #: attributes a call changes in place (see the module docstring)
    _mutable_state: ClassVar[tuple[str, ...]] = ()
    #: old parameter name -> new one: refused with a message naming the new one
    _renamed_parameters: ClassVar[dict[str, str]] = {}
    #: the planner's table of the last ``fit`` (``fit(limits=...)``; ``None``: the default)
    _fit_limits: FitLimits | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__ and cls._renamed_parameters:
            cls.__init__ = _refusing_renamed(cls.__init__, cls._renamed_parameters)
        for name in THREADED_METHODS:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method):
                setattr(cls, name, respects_n_jobs(method))

    def _use_limits(self, limits: FitLimits | None) -> FitLimits:
        """Check ``limits`` and keep them as the table of the fit in progress (call it inside
        :meth:`_unchanged_on_error`: a failed fit keeps the table it had)."""
        self._fit_limits = fit_limits(limits)
        return self._fit_limits

    def _limits(self) -> FitLimits:
        """The planner's table of this model: its last fit's, else the default."""
        return fit_limits(self._fit_limits)

    @contextmanager
    def _unchanged_on_error(self, mutable: tuple[str, ...] | None = None):
        """Restore every attribute if the body raises; ``mutable`` (default
        ``_mutable_state``) are rolled back by their ``transaction()`` or a deep copy."""
        names = [n for n in (self._mutable_state if mutable is None else mutable) if hasattr(self, n)]
        transactional = [n for n in names if hasattr(getattr(self, n), "transaction")]
        copied = [n for n in names if n not in transactional]
        with unchanged_on_error(self, copied), ExitStack() as stack:
            for name in transactional:
                stack.enter_context(getattr(self, name).transaction())
            yield

    def _check_X(self, X, y="no_validation", *, reset: bool, magnitude, dtype=(np.float64, np.float32),
                 dense: bool = False, **check_params):
        """``X`` (and ``y``) validated: ``validate_data`` (feature count and names, NaN/inf, CSR
        kept), squared distances finite in ``magnitude`` (the compute dtype), no negative entry
        for a histogram kernel; ``dense``: a CSR ``X`` densified."""
        no_y = isinstance(y, str) and y == "no_validation"  # scikit-learn's "no y" sentinel
        checked = validate_data(self, X, y, reset=reset, accept_sparse="csr", dtype=list(dtype),
                                **check_params)
        X = checked if no_y else checked[0]
        check_magnitude(X, magnitude)
        if self.kernel in KERNELS and kernel_class(self.kernel).non_negative:
            check_non_negative(X, self.kernel)  # AOGD's "linear" is no registered kernel
        X = X.toarray() if dense and sp.issparse(X) else X
        return X if no_y else (X, checked[1])

    def save(self, path) -> None:
        """Save the fitted model to one safetensors file: its configuration as JSON and its
        state dict's tensors (the class's *Model file* note says what they hold). Random-feature
        weights are never stored: they are regenerated from the seed. Load it with
        :func:`kernelstream.load`; the loaded model predicts exactly as this one."""
        io.save_model(self, path)


def _refusing_renamed(init, renamed: dict[str, str]):
    """``__init__`` that refuses the old names of renamed parameters (the signature stays
    ``init``'s, so scikit-learn's ``get_params`` sees the new names only)."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        for old in sorted(set(kwargs) & set(renamed)):
            raise TypeError(f"{type(self).__name__}: the parameter {old!r} is now called "
                            f"{renamed[old]!r}; pass {renamed[old]}={kwargs[old]!r}.")
        init(self, *args, **kwargs)

    return __init__
