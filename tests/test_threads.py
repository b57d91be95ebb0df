"""Thread policy: one thread by default, the user's limits respected, settings restored."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_info, threadpool_limits

from kernelstream import DSGClassifier
from kernelstream._threads import resolve_n_jobs, thread_limits
from kernelstream.estimators import _base
from kernelstream.solvers import dual, preconditioned, subsample_choice

FAST = dict(batch_size=64, block_size=64, random_state=0)


@pytest.fixture
def two_threads():
    """The environment allows two threads (conftest pins one per xdist worker), torch's and
    the BLAS libraries' (whatever limit an earlier test in this worker left on them)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    with threadpool_limits(limits=2):
        yield
    torch.set_num_threads(previous)


def _blas_threads() -> int:
    return min(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")


def test_n_jobs_follows_scikit_learn(two_threads):
    assert [resolve_n_jobs(n) for n in (None, 1, 2, 8, -1, -2, -9)] == [1, 1, 2, 2, 2, 1, 1]
    with pytest.raises(ValueError, match="n_jobs == 0"):
        resolve_n_jobs(0)


def test_threadpool_limits_of_the_user_are_never_raised(two_threads):
    with threadpool_limits(limits=1):
        with thread_limits(-1) as n:
            assert n == 1 and torch.get_num_threads() == 1 and _blas_threads() == 1
        assert torch.get_num_threads() == 1  # the user's limit is still in force
    assert torch.get_num_threads() == 2


def _record_threads(monkeypatch) -> list:
    seen = []
    real_step = _base.dsg_step

    def step(*args, **kwargs):
        seen.append((torch.get_num_threads(), _blas_threads()))
        return real_step(*args, **kwargs)

    real_gradient = preconditioned.batch_gradient

    def gradient(*args, **kwargs):
        seen.append((torch.get_num_threads(), _blas_threads()))
        return real_gradient(*args, **kwargs)

    real_gram = dual.feature_gram

    def gram(*args, **kwargs):
        seen.append((torch.get_num_threads(), _blas_threads()))
        return real_gram(*args, **kwargs)

    real_kernel = subsample_choice.gram_rows

    def kernel(*args, **kwargs):
        seen.append((torch.get_num_threads(), _blas_threads()))
        return real_kernel(*args, **kwargs)

    monkeypatch.setattr(_base, "dsg_step", step)  # the one-pass solver
    monkeypatch.setattr(dual, "feature_gram", gram)  # the dual route on random features
    monkeypatch.setattr(subsample_choice, "gram_rows", kernel)  # the selection, either matrix
    monkeypatch.setattr(preconditioned, "batch_gradient", gradient)  # the default solver
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("n_jobs, expected", [(None, 1), (-1, 2), (1, 1)])
def test_fit_runs_with_n_jobs_threads_and_restores_the_setting(two_threads, monkeypatch,
                                                                n_jobs, expected):
    seen = _record_threads(monkeypatch)
    X, y = make_classification(300, 4, random_state=0)
    DSGClassifier(n_jobs=n_jobs, **FAST).fit(X, y)
    assert seen and set(seen) == {(expected, expected)}
    assert torch.get_num_threads() == 2


@pytest.mark.slow
def test_threadpool_limits_bound_n_jobs_during_fit(two_threads, monkeypatch):
    seen = _record_threads(monkeypatch)
    X, y = make_classification(300, 4, random_state=0)
    with threadpool_limits(limits=1):
        DSGClassifier(n_jobs=-1, **FAST).fit(X, y)
    assert set(seen) == {(1, 1)}


def test_omp_num_threads_is_respected():
    code = ("import torch; from kernelstream._threads import thread_limits\n"
            "with thread_limits(-1) as n: print(n, torch.get_num_threads())")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split() == ["1", "1"]


def test_a_method_called_from_another_of_the_same_estimator_sets_no_limits_again(monkeypatch):
    """``predict`` → ``decision_function``: the limits are set once per outer call."""
    import numpy as np

    import kernelstream._threads as threads
    from kernelstream import DSGClassifier

    X = np.random.default_rng(0).normal(size=(200, 3))
    clf = DSGClassifier(solver="one_pass", batch_size=50, block_size=16, random_state=0)
    clf.fit(X, (X[:, 0] > 0).astype(int))
    entered = []
    original = threads.thread_limits

    def counting(n_jobs):
        entered.append(n_jobs)
        return original(n_jobs)

    monkeypatch.setattr(threads, "thread_limits", counting)
    clf.predict(X)
    assert len(entered) == 1
