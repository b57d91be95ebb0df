"""Features drawn in every pass: the same products as the cache of the same map, and a fit
whose cache holds no block on the engine, near the cached fit."""

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.datasets import make_friedman1

from kernelstream import DSGRegressor
from kernelstream.features import make_feature_map
from kernelstream.planning import LIMITS
from kernelstream.solvers.cached import FeatureCache, restricted
from kernelstream.solvers.regenerated import RegeneratedFeatures


def _pair(n=3000, d=4, r=64, blocks=4):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    fmap = make_feature_map("rbf", d, 1.3, r, 3)
    cached, drawn = FeatureCache(fmap, X), RegeneratedFeatures(fmap, X)
    cached.grow(blocks // 2)
    cached.grow(blocks)  # two parts: the drawn features are one
    drawn.grow(blocks)
    return cached, drawn, g


def test_every_product_is_the_caches():
    cached, drawn, g = _pair()
    n, D = cached.n_rows, cached.n_features
    theta = torch.randn(D + 1, 2, generator=g, dtype=torch.float64)
    U = torch.randn(n, 2, generator=g, dtype=torch.float64)
    w = torch.rand(n, 1, generator=g, dtype=torch.float64)
    index = torch.tensor([5, 0, 2999, 1234])
    pairs = {"matmul": lambda c: c.matmul(theta), "rmatmul": lambda c: c.rmatmul(U),
             "normal_matmul": lambda c: c.normal_matmul(theta, w), "psi": lambda c: c.psi(index),
             "gram": lambda c: c.gram(index, precise=True),
             "first_blocks": lambda c: c.first_blocks(2).matmul(theta[:2 * 64 + 1]),
             "restricted": lambda c: restricted(c, index).rmatmul(U[index])}
    for name, product in pairs.items():  # float64 rows: the sums' order alone differs
        torch.testing.assert_close(product(drawn), product(cached), rtol=1e-10, atol=1e-10,
                                   msg=name)
    assert drawn.nbytes == 0 and drawn.fits(10**6)


def test_a_redrawn_map_is_the_cache_of_that_map():
    cached, drawn, g = _pair()
    other = make_feature_map("rbf", 4, 0.7, 64, 3)
    cached.redraw(other)
    drawn.redraw(other)
    theta = torch.randn(cached.n_features + 1, 1, generator=g, dtype=torch.float64)
    torch.testing.assert_close(drawn.matmul(theta), cached.matmul(theta), rtol=1e-10, atol=1e-10)


@pytest.mark.slow
def test_a_fit_whose_cache_holds_no_block_draws_its_features_near_the_cached_fit():
    """Friedman 1 at 12,000 rows with cache_bytes of 1 MiB (one block of its rows needs 5.5):
    the engine's route with the features drawn in every pass, not epochs, at the cached fit's
    RMSE (within 5 percent: no refinement of the bandwidth on every row)."""
    X, y = make_friedman1(12000, noise=1.0, random_state=0)
    X_test, y_test = make_friedman1(3000, noise=0.0, random_state=1)
    small = dataclasses.replace(LIMITS, cache_bytes=2**20)
    drawn = DSGRegressor(random_state=0).fit(X, y, limits=small)
    cached = DSGRegressor(random_state=0).fit(X, y)
    assert drawn.fit_plan_.route == "subsample" and drawn.fit_plan_.regenerate
    assert "solve" in [stage["stage"] for stage in drawn.fit_plan_.stages]
    rmse = [float(np.sqrt(np.mean((m.predict(X_test) - y_test) ** 2))) for m in (drawn, cached)]
    assert rmse[0] <= 1.05 * rmse[1], rmse


def test_held_out_features_are_cached_within_the_budget_and_drawn_past_it():
    """The held-out rows' operator (``for_rows``): the cache's products while its blocks fit
    the budget; past it the parts are let go and the features drawn, the same products."""
    cached, _, g = _pair(n=500, blocks=4)
    X = cached.X
    budget = 500 * 2 * 64 * 8  # two blocks of 500 float64 rows
    held = FeatureCache(cached.feature_map, X, budget).for_rows(X)
    theta = torch.randn(4 * 64 + 1, 2, generator=g, dtype=torch.float64)
    held.grow(2)
    assert not held.drawing and held.nbytes == budget
    torch.testing.assert_close(held.matmul(theta[:2 * 64 + 1]),
                               cached.first_blocks(2).matmul(theta[:2 * 64 + 1]))
    held.grow(4)
    assert held.drawing and held.nbytes == 0
    torch.testing.assert_close(held.matmul(theta), cached.matmul(theta), rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(held.first_blocks(2).matmul(theta[:2 * 64 + 1]),
                               cached.first_blocks(2).matmul(theta[:2 * 64 + 1]), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", [FeatureCache, RegeneratedFeatures])
def test_rows_read_once_are_drawn_not_cached(kind):
    """``for_rows(X, once=True)`` (a challenger's held-out loss, the look-back's): no part
    held whatever the budget, the cached operator's product."""
    cached, _, g = _pair(n=500, blocks=4)
    held = kind(cached.feature_map, cached.X, budget=None).for_rows(cached.X, once=True)
    held.grow(4)
    theta = torch.randn(4 * 64 + 1, 2, generator=g, dtype=torch.float64)
    assert held.drawing and held.nbytes == 0
    torch.testing.assert_close(held.matmul(theta), cached.matmul(theta), rtol=1e-10, atol=1e-10)
