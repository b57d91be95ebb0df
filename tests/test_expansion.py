"""The expansion: lazy decay, lazy averaging and the feature budget against brute force."""

import numpy as np
import torch

from kernelstream.expansion import Expansion
from kernelstream.features import GaussianRFF
from kernelstream.losses import get_loss
from kernelstream.schedules import make_schedule
from kernelstream.solvers import DSGConfig, dsg_step
from kernelstream.solvers.doubly_sgd import block_direction


def _data(n=400, d=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    return X, torch.sin(X[:, :1]) + 0.1 * torch.randn(n, 1, generator=g, dtype=torch.float64)


def _run(max_blocks=None, average_start=None, alpha=0.05, steps=20, precondition=True):
    X, y = _data(n=20 * steps)
    ex = Expansion(GaussianRFF(3, 1.0, 16, seed=3), 1, dtype=torch.float64,
                   average_start=average_start, max_blocks=max_blocks)
    cfg = DSGConfig(schedule=make_schedule("constant", 0.5), alpha=alpha, precondition=precondition)
    Xq = torch.randn(50, 3, dtype=torch.float64)
    iterates = []
    for t in range(steps):
        rows = slice(20 * t, 20 * t + 20)
        dsg_step(ex, get_loss("squared"), X[rows], y[rows], torch.ones(20, dtype=torch.float64), cfg)
        iterates.append(ex.decision(Xq))
    return ex, Xq, iterates


def test_lazy_average_equals_brute_force_average():
    for max_blocks in (None, 5):
        ex, Xq, iterates = _run(max_blocks=max_blocks, average_start=3)
        brute = torch.stack(iterates[2:]).mean(0)
        torch.testing.assert_close(ex.predict(Xq), brute, rtol=1e-10, atol=1e-12)


def test_without_averaging_predict_is_the_last_iterate():
    ex, Xq, iterates = _run()
    torch.testing.assert_close(ex.predict(Xq), iterates[-1], rtol=1e-12, atol=1e-12)


def test_a_step_never_touches_old_blocks():
    ex, _, _ = _run(steps=5)
    before = ex.coef.clone()
    X, y = _data(seed=1)
    cfg = DSGConfig(schedule=make_schedule("constant", 0.5), alpha=0.05)
    dsg_step(ex, get_loss("squared"), X[:20], y[:20], torch.ones(20, dtype=torch.float64), cfg)
    assert torch.equal(ex.coef[:5], before)  # decay went into the scale
    assert ex.scale < 1.0 and ex.n_blocks == 6


def test_renormalisation_keeps_the_function():
    ex, Xq, _ = _run(average_start=1, alpha=0.05)
    f_current, f_avg = ex.decision(Xq), ex.predict(Xq)
    ex._renormalise()
    ex._prediction = None
    assert ex.scale == 1.0
    torch.testing.assert_close(ex.decision(Xq), f_current, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ex.predict(Xq), f_avg, rtol=1e-10, atol=1e-12)


def test_strong_decay_triggers_renormalisation():
    ex, Xq, iterates = _run(alpha=1.9, steps=40)  # (1 − 0.5·1.9)^40 ≈ 1e-52
    assert ex.scale >= 1e-8
    assert torch.isfinite(ex.coef).all()


def test_budget_reuses_blocks_cyclically():
    ex, _, _ = _run(max_blocks=4, steps=10)
    assert ex.n_blocks == 4 and ex.n_features == 64 and ex.step == 10


def test_preconditioned_direction_is_a_ridge_solve():
    g = torch.Generator().manual_seed(0)
    Psi = torch.randn(64, 8, generator=g, dtype=torch.float64)
    G = torch.randn(64, 2, generator=g, dtype=torch.float64)
    cfg = DSGConfig(schedule=make_schedule("constant", 1.0), precond_eps=0.5)
    M = Psi.T @ Psi / 64
    eps = 0.5 * torch.trace(M) / 8
    expected = np.linalg.solve((M + eps * torch.eye(8, dtype=torch.float64)).numpy(), (Psi.T @ G / 64).numpy())
    np.testing.assert_allclose(block_direction(Psi, G, cfg).numpy(), expected, rtol=1e-10)
    plain = DSGConfig(schedule=make_schedule("constant", 1.0), precondition=False)
    torch.testing.assert_close(block_direction(Psi, G, plain), Psi.T @ G / 64)
