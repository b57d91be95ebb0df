"""The base of every public estimator: threads, rollback on error, ``save`` and the state dict.

Written once for the eight estimators:

- **threads**: every public method that computes (:data:`THREADED_METHODS`) a subclass defines
  runs inside :func:`~kernelstream._threads.thread_limits` with the estimator's ``n_jobs`` —
  wrapped when the class is created, not decorated by hand;
- **rollback**: :meth:`KernelEstimator._unchanged_on_error` restores every attribute when a
  call raises; attributes changed in place (``_mutable_state``) are rolled back by their own
  ``transaction()`` when they have one (an expansion undoes its steps), else deep-copied first;
- **persistence**: :meth:`KernelEstimator.save` writes the state dict with :mod:`kernelstream.io`.
"""

from __future__ import annotations

import functools
import inspect
from contextlib import ExitStack, contextmanager
from typing import ClassVar

from sklearn.base import BaseEstimator

from .. import io
from .._state import EstimatorState
from .._threads import respects_n_jobs
from ._rollback import unchanged_on_error

__all__ = ["KernelEstimator", "THREADED_METHODS"]

#: public methods run inside the estimator's thread limits
THREADED_METHODS = ("fit", "partial_fit", "predict", "decision_function", "transform",
                    "kernel_matrix", "sample_y", "score_samples")


class KernelEstimator(EstimatorState, BaseEstimator):
    """Threads, rollback, ``save`` and state dicts for every public estimator."""

    #: attributes a call changes in place (see the module docstring)
    _mutable_state: ClassVar[tuple[str, ...]] = ()
    #: old parameter name -> new one: refused with a message naming the new one
    _renamed_parameters: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__ and cls._renamed_parameters:
            cls.__init__ = _refusing_renamed(cls.__init__, cls._renamed_parameters)
        for name in THREADED_METHODS:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method):
                setattr(cls, name, respects_n_jobs(method))

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
