"""Thread policy: how many threads a call may use, decided in one place.

Every public method that computes runs inside :func:`thread_limits` with the estimator's
``n_jobs``. The threads the *user* allows are read, never raised: ``torch.get_num_threads()``
already reflects ``OMP_NUM_THREADS``, ``torch.set_num_threads`` and
``threadpoolctl.threadpool_limits``; the BLAS pool (scipy's OpenBLAS, used by the block
preconditioner) is capped at the same count and never above the user's own BLAS limit.

``n_jobs=None`` means one thread, as in scikit-learn. On a shared or loaded machine a thread
pool synchronises at every GEMM and factorisation, and a busy core stalls all of them (a user
report on a loaded 2-core machine: a9a 51 s with the default threads against 4.5 s with one;
``benchmarks/results/threads.md`` has our measurement), so one thread is the default that is never slower than one
thread. ``n_jobs=-1`` uses every thread the user allows.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

import torch

__all__ = ["resolve_n_jobs", "thread_limits", "respects_n_jobs"]

_blas_controller = None  # threadpoolctl controller of the BLAS libraries, built on first use


def resolve_n_jobs(n_jobs: int | None) -> int:
    """Threads for a call: ``None`` → 1, ``k > 0`` → ``min(k, allowed)``, ``−1`` → ``allowed``,
    ``−k`` → ``allowed + 1 − k`` (scikit-learn's convention), never below 1.

    ``allowed`` is ``torch.get_num_threads()``: the user's environment and threadpoolctl limits.
    """
    allowed = max(1, torch.get_num_threads())
    if n_jobs is None:
        return 1
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None (one thread), a positive count "
                         "or -1 (every thread the environment allows).")
    return max(1, min(n_jobs, allowed) if n_jobs > 0 else allowed + 1 + n_jobs)


def _blas():
    global _blas_controller
    if _blas_controller is None:
        import scipy.linalg  # noqa: F401  (loads the BLAS the preconditioner calls)
        from threadpoolctl import ThreadpoolController

        _blas_controller = ThreadpoolController().select(user_api="blas")
    return _blas_controller


@contextmanager
def thread_limits(n_jobs: int | None) -> Iterator[int]:
    """Run the body with ``resolve_n_jobs(n_jobs)`` torch threads and at most as many BLAS
    threads; both are restored afterwards. Yields the thread count."""
    n = resolve_n_jobs(n_jobs)
    previous = torch.get_num_threads()
    blas = _blas()
    user_blas = min((lib.get_num_threads() for lib in blas.lib_controllers), default=n)
    if n != previous:
        torch.set_num_threads(n)
    try:
        with blas.limit(limits=min(n, user_blas)):
            yield n
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)


#: the estimators (by id) whose method runs inside their limits in this thread
_inside = threading.local()


def respects_n_jobs(method: Callable) -> Callable:
    """Decorator: run an estimator method inside ``thread_limits(self.n_jobs)``; a method the
    same estimator calls from inside another (``predict`` → ``decision_function``) runs in
    the limits already set."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        active = _inside.__dict__.setdefault("ids", set())
        if id(self) in active:
            return method(self, *args, **kwargs)
        active.add(id(self))
        try:
            with thread_limits(getattr(self, "n_jobs", None)):
                return method(self, *args, **kwargs)
        finally:
            active.discard(id(self))

    return wrapper
