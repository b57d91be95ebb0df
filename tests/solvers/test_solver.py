"""The solver against an oracle: fixed-budget DSG is SGD on the same random-feature model."""

import numpy as np
import pytest
import torch

from kernelstream.expansion import Expansion
from kernelstream.features import GaussianRFF
from kernelstream.losses import get_loss
from kernelstream.schedules import InverseDecay, make_schedule
from kernelstream.solvers import DSGConfig, run_dsg
from reference import sgd_on_fixed_features


def test_fixed_budget_dsg_equals_sgd_on_fixed_features():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=600)
    fm = GaussianRFF(3, 1.2, 16, seed=4)
    J, alpha = 4, 0.01
    batches = [rng.choice(600, 32, replace=False) for _ in range(25)]
    schedule = InverseDecay(0.5, 10.0)
    ex = Expansion(fm, 1, dtype=torch.float64, max_blocks=J)
    cfg = DSGConfig(schedule=schedule, alpha=alpha, precondition=False)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y).view(-1, 1)
    run_dsg(ex, get_loss("squared"),
            ((Xt[r], yt[r], torch.ones(len(r), dtype=torch.float64)) for r in batches), cfg)
    Phi = fm.features(Xt, range(J)).numpy()
    w, b = sgd_on_fixed_features(Phi, y, batches, [schedule(t + 1) for t in range(25)], alpha)
    Xq = torch.as_tensor(rng.normal(size=(40, 3)))
    expected = np.einsum("njr,jr->n", fm.features(Xq, range(J)).numpy(), w) + b
    np.testing.assert_allclose(ex.predict(Xq)[:, 0].numpy(), expected, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_dsg_squared_loss_approaches_kernel_ridge():
    """Many passes of DSG with the squared loss approach the closed-form kernel ridge fit."""
    from reference import exact_kernel_ridge

    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (512, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=512)
    fm = GaussianRFF(1, 0.5, 256, seed=2)
    lam = 1e-3
    Xt = torch.as_tensor(X)
    exact = exact_kernel_ridge(fm.kernel(Xt, Xt).numpy(), y,
                               fm.kernel(Xt[:100], Xt).numpy(), lam)
    ex = Expansion(fm, 1, dtype=torch.float64)
    cfg = DSGConfig(schedule=make_schedule("inverse", 2.0, 1.0), alpha=lam, precond_eps=1.0)
    yt = torch.as_tensor(y).view(-1, 1)
    order = np.random.default_rng(3).permutation(np.tile(np.arange(512), 16))
    batches = [(Xt[r], yt[r], torch.ones(256, dtype=torch.float64)) for r in order.reshape(-1, 256)]
    run_dsg(ex, get_loss("squared"), batches, cfg)
    ours = ex.predict(Xt[:100])[:, 0].numpy()
    assert np.linalg.norm(ours - exact) / np.linalg.norm(exact) < 0.05
