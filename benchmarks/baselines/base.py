"""What every baseline shares: epochs of mini-batches, validation, prediction.

A baseline implements ``_begin`` (state for the data, e.g. duals or cached features), ``_step``
(one update on a mini-batch of row indices) and ``_decision`` (the function on new rows).
:meth:`Baseline.steps` is the one loop: it yields after every update, so a benchmark can time
it, stop it at a budget and evaluate between steps; ``fit`` and ``partial_fit`` consume it.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from itertools import count
from typing import Iterator

import numpy as np
import torch
from sklearn.utils.validation import check_array

from ._kernel import DTYPES, as_tensor
from .losses import get_loss

__all__ = ["Baseline", "Progress"]


@dataclass(frozen=True)
class Progress:
    """Where a run is after one update."""

    step: int            # updates so far, over every call
    epochs: float        # passes over this call's rows so far (fractional within a pass)
    end_of_epoch: bool   # this update finished a pass


class Baseline(ABC):
    """Mini-batch epochs over ``(X, y)`` for the objective ``(1/n) Σ φ(f(x_i), y_i) + λ/2 ‖f‖²``.

    Parameters
    ----------
    loss : {"hinge", "squared"}
    alpha : float
        ``λ`` (the paper's ``ν``), > 0.
    batch_size : int
        Rows per update; a pass is ``ceil(n / batch_size)`` updates over a fresh seeded
        permutation (the last batch is smaller when ``batch_size`` does not divide ``n``).
    random_state : int
        Seeds the permutations (pass ``e`` uses ``default_rng([random_state, e])``).
    dtype : {"float64", "float32"}
        Precision of the kernel, feature and state arithmetic.
    """

    def __init__(self, *, loss: str, alpha: float, batch_size: int, random_state: int,
                 dtype: str) -> None:
        self.loss, self.alpha, self.batch_size = loss, alpha, batch_size
        self.random_state, self.dtype = random_state, dtype

    # -- the loop ----------------------------------------------------------------------
    def steps(self, X, y, *, epochs: int | None = None) -> Iterator[Progress]:
        """Updates over ``epochs`` passes of ``(X, y)`` (``None``: until the caller stops),
        yielding a :class:`Progress` after each. The first call sets the model up
        (``setup_seconds_`` and ``setup_cpu_seconds_`` record how long that took, on the wall
        clock and in this process's CPU time)."""
        Xt, yt = self._validated(X, y)
        if not hasattr(self, "t_"):
            start, start_cpu = time.perf_counter(), time.process_time()
            self._begin(Xt, yt)
            self.setup_seconds_ = time.perf_counter() - start
            self.setup_cpu_seconds_ = time.process_time() - start_cpu
            self.t_, self.epochs_ = 0, 0
        else:
            self._resume(Xt, yt)
        n = Xt.shape[0]
        for epoch in (count() if epochs is None else range(epochs)):
            order = np.random.default_rng([self.random_state, self.epochs_]).permutation(n)
            batches = np.array_split(order, range(self.batch_size, n, self.batch_size))
            for i, rows in enumerate(batches):
                self._step(Xt, yt, torch.as_tensor(rows))
                self.t_ += 1
                done = i + 1 == len(batches)
                self.epochs_ += done
                yield Progress(self.t_, epoch + (i + 1) / len(batches), done)

    def fit(self, X, y, *, epochs: int = 1):
        """Start afresh and make ``epochs`` passes (bad input leaves the model as it was)."""
        self._validated(X, y)
        for name in ("t_", "epochs_", "setup_seconds_", "setup_cpu_seconds_"):
            self.__dict__.pop(name, None)
        deque(self.steps(X, y, epochs=epochs), maxlen=0)
        return self

    def partial_fit(self, X, y):
        """One more pass over ``(X, y)`` (the first call sets the model up)."""
        deque(self.steps(X, y, epochs=1), maxlen=0)
        return self

    def decision_function(self, X) -> np.ndarray:
        """``f(X)``: ``(n,)``, or ``(n, C)`` for several outputs."""
        if not hasattr(self, "t_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit first.")
        out = self._decision(as_tensor(X, DTYPES[self.dtype])).numpy()
        return out[:, 0] if out.shape[1] == 1 else out

    def predict(self, X) -> np.ndarray:
        """Labels ±1 for the hinge loss (``f ≥ 0`` is +1), ``f(X)`` for the squared loss."""
        f = self.decision_function(X)
        return np.where(f >= 0, 1, -1) if self.loss == "hinge" else f

    # -- plumbing ----------------------------------------------------------------------
    def _validated(self, X, y) -> tuple[torch.Tensor, torch.Tensor]:
        self._loss = get_loss(self.loss)
        if not self.alpha > 0:
            raise ValueError(f"alpha (the regulariser λ) must be > 0; got {self.alpha!r}.")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}; got {self.dtype!r}.")
        if not (isinstance(self.batch_size, int) and self.batch_size >= 1):
            raise ValueError(f"batch_size must be a positive int; got {self.batch_size!r}.")
        Xt = as_tensor(X, DTYPES[self.dtype])
        y_array = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        if y_array.shape[0] != Xt.shape[0]:
            raise ValueError(f"X has {Xt.shape[0]} rows but y has {y_array.shape[0]}.")
        yt = torch.as_tensor(y_array, dtype=Xt.dtype)
        self._loss.check_targets(yt)
        return Xt, yt

    def _resume(self, X: torch.Tensor, y: torch.Tensor) -> None:
        """A later call on (possibly new) rows; methods tied to one data set refuse new ones."""

    @abstractmethod
    def _begin(self, X: torch.Tensor, y: torch.Tensor) -> None:
        """State for a first call on ``(X, y)``."""

    @abstractmethod
    def _step(self, X: torch.Tensor, y: torch.Tensor, rows: torch.Tensor) -> None:
        """One update on the rows ``rows`` of ``(X, y)``."""

    @abstractmethod
    def _decision(self, X: torch.Tensor) -> torch.Tensor:
        """``f(X)`` as float64, ``(n, C)``."""
