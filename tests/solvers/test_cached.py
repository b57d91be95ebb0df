"""The cached-feature solvers of the subsample route: the cache is the features, conjugate
gradients reach the normal equations' optimum, the dual solve is the primal one, and a cache
over its budget says so."""

import math

import pytest
import torch

from kernelstream.features import make_feature_map
from kernelstream.solvers import cached
from kernelstream.solvers.cached import FeatureCache, SketchPreconditioner, ridge_dual_rows, ridge_pcg
from kernelstream.solvers.feature_rows import augmented

torch.manual_seed(0)


def _problem(n=600, d=3, r=64, sigma=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.sin(X.sum(dim=1, keepdim=True)) + 0.1 * torch.randn(n, 1, generator=g, dtype=torch.float64)
    w = torch.rand(n, generator=g, dtype=torch.float64) + 0.5
    return make_feature_map("rbf", d, sigma, r, seed), X, y, w


def augmented_features(fmap, X, n_blocks):
    """``Φ̃ = [Ψ/√J, c]`` of the rows ``X``, regenerated from the map: the cache's reference."""
    Psi = fmap.features(X, range(n_blocks)).reshape(X.shape[0], -1)
    return augmented(Psi * n_blocks**-0.5)


def _exact(Phi, y, w, alpha):
    """The minimiser of Σ w ½(φ̃ᵀθ − y)²/n + α/2‖W‖² by the normal equations, float64."""
    n = Phi.shape[0]
    H = Phi.T @ (w[:, None] * Phi) / n
    penalty = torch.full((Phi.shape[1],), alpha, dtype=Phi.dtype)
    penalty[-1] = 0.0
    return torch.linalg.solve(H + torch.diag(penalty), Phi.T @ (w[:, None] * y) / n)


def test_the_cache_grows_by_new_blocks_and_multiplies_as_the_features():
    fmap, X, y, w = _problem()
    cache = FeatureCache(fmap, X)
    cache.grow(2)
    cache.grow(5)  # blocks 2..4 only, appended
    assert [part.shape[1] for part in cache.parts] == [128, 192]
    Phi = augmented_features(fmap, X, 5)
    theta = torch.randn(Phi.shape[1], 2, dtype=torch.float64)
    torch.testing.assert_close(cache.matmul(theta), Phi @ theta)
    U = torch.randn(X.shape[0], 2, dtype=torch.float64)
    torch.testing.assert_close(cache.rmatmul(U), Phi.T @ U)
    start = cache.extended(theta[:129], 5)  # 2 blocks' coefficients: the same outputs at 5
    small = augmented_features(fmap, X, 2)
    torch.testing.assert_close(Phi @ start, small @ theta[:129])


def test_the_sketch_gram_grows_with_the_cache_by_its_new_blocks_only():
    """The Woodbury sketch's ``ΨΨᵀ`` is a sum over the cache's parts: after the cache grows,
    only the new part is added, and the sum is the Gram of every block; other rows start anew."""
    fmap, X, _, _ = _problem(n=200)
    cache = FeatureCache(fmap, X)
    rows = torch.arange(0, 200, 3)
    cache.grow(2)
    first = cache.gram(rows).clone()
    cache.grow(5)
    Psi = augmented_features(fmap, X[rows], 5)[:, :-1] * math.sqrt(5)
    torch.testing.assert_close(cache.gram(rows), Psi @ Psi.T)
    torch.testing.assert_close(first, Psi[:, :128] @ Psi[:, :128].T)
    other = torch.arange(10)
    Psi_other = augmented_features(fmap, X[other], 5)[:, :-1] * math.sqrt(5)
    torch.testing.assert_close(cache.gram(other), Psi_other @ Psi_other.T)


@pytest.mark.parametrize("sketch_rows", [64, 600])  # Woodbury on few rows; the covariance on many
def test_conjugate_gradients_reach_the_normal_equations(sketch_rows):
    fmap, X, y, w = _problem()
    cache = FeatureCache(fmap, X)
    cache.grow(4)
    alpha = 1e-4
    precond = SketchPreconditioner(cache, torch.arange(sketch_rows), alpha, float(w.mean()))
    solve = ridge_pcg(cache, y, w, alpha, precond, tol=1e-10, max_iter=500)
    exact = _exact(augmented_features(fmap, X, 4), y, w, alpha)
    assert solve.converged
    torch.testing.assert_close(solve.theta, exact, rtol=1e-6, atol=1e-7)


def test_the_sketch_of_every_row_preconditions_exactly():
    fmap, X, y, w = _problem(n=400)
    cache = FeatureCache(fmap, X)
    cache.grow(2)  # 129 features < 400 rows: the covariance is factored
    precond = SketchPreconditioner(cache, torch.arange(400), 1e-3, 1.0)
    solve = ridge_pcg(cache, y, torch.ones(400, dtype=torch.float64), 1e-3, precond, tol=1e-8)
    assert solve.iterations <= 3


def test_the_dual_solve_of_few_rows_is_the_primal_optimum():
    fmap, X, y, w = _problem(n=300)
    cache = FeatureCache(fmap, X)
    cache.grow(8)  # 512 features > 300 rows
    rows = torch.arange(0, 300, 2)
    alpha = 1e-3
    theta = ridge_dual_rows(cache, rows, y[rows], w[rows], alpha, n_rows=300)
    Phi = augmented_features(fmap, X[rows], 8)
    exact = _exact(Phi, y[rows], w[rows] * len(rows) / 300, alpha)  # Σ_A w(…)²/2n + α/2‖W‖²
    torch.testing.assert_close(theta, exact, rtol=1e-6, atol=1e-8)


def test_a_cache_over_its_budget_says_what_to_do():
    fmap, X, _, _ = _problem(n=100)
    cache = FeatureCache(fmap, X, budget=100 * 64 * 8 * 3)  # three float64 blocks
    cache.grow(3)
    assert not cache.fits(4)
    with pytest.raises(MemoryError, match=r"over the budget.*cache_bytes"):
        cache.grow(4)
    assert cache.n_blocks == 3 and math.isclose(cache.nbytes, 100 * 192 * 8)


def test_the_cached_route_is_the_model_of_the_regenerating_route():
    """issue 34: the subsample route's cached features and conjugate gradients give the model
    the conjugate-gradient epochs give by regenerating the features every pass, to the cached
    solve's tolerance (relative residual 1e-3: outputs within 0.01 where y is of order 1)."""
    import numpy as np

    from kernelstream import DSGRegressor

    g = np.random.default_rng(0)
    X = g.normal(size=(3000, 3))
    y = np.sin(X.sum(axis=1)) + 0.1 * g.normal(size=3000)
    given = dict(sigma=1.0, alpha=1e-3, n_components=256, block_size=128, early_stopping=False,
                 random_state=0, dtype="float64")
    cached = DSGRegressor(**given).fit(X, y)
    regenerated = DSGRegressor(**given, solver="cg", max_iter=60, tol=None, cache_bytes=0).fit(X, y)
    assert cached.fit_plan_.route == "subsample" and regenerated.fit_plan_.route == "epochs"
    np.testing.assert_allclose(cached.predict(X), regenerated.predict(X), rtol=0, atol=1e-2)
    never = DSGRegressor(**given, cache_bytes=0).fit(X, y)
    assert never.fit_plan_.route == "epochs"


def test_a_budget_too_small_for_the_features_asked_for_draws_them_every_pass():
    import numpy as np

    from kernelstream import DSGRegressor

    X = np.random.default_rng(0).normal(size=(3000, 3))
    model = DSGRegressor(n_components=4096, cache_bytes=10**6).fit(X, X[:, 0])
    assert model.fit_plan_.route == "subsample" and model.fit_plan_.regenerate
    assert model.n_components_ == 4096
    assert any("cache_bytes=1,000,000" in reason for reason in model.fit_plan_.reasons)


def test_the_woodbury_sketch_stays_exact_near_interpolation():
    """issue 34: ``α = 1e-10`` on float32 features, the sketch every row and the features more
    than the rows (Woodbury): the preconditioner is the inverse Hessian up to the free
    intercept, so conjugate gradients converge at once. In float32 the Woodbury difference,
    divided by ``α``, was round-off only and the residual did not fall."""
    fmap, X, y, _ = _problem(n=400)
    X = X.float()
    cache = FeatureCache(fmap, X)
    cache.grow(8)  # 513 features > 400 rows
    ones = torch.ones(400, dtype=torch.float64)
    precond = SketchPreconditioner(cache, torch.arange(400), 1e-10, 1.0)
    assert not precond.covariance
    solve = ridge_pcg(cache, y, ones, 1e-10, precond, tol=1e-4, max_iter=20)
    assert solve.converged and solve.iterations <= 6


def test_a_small_sketch_doubles_until_conjugate_gradients_converge(monkeypatch):
    """issue 34: near interpolation a sketch of the subsample's rows leaves many directions
    above ``α``; it doubles (warm) after ``sketch_patience`` iterations until CG converges,
    and the model is the normal equations' optimum of its features."""
    import dataclasses

    import numpy as np

    from kernelstream import DSGRegressor
    from kernelstream.planning import LIMITS

    limits = dataclasses.replace(LIMITS, sketch_patience=3)
    g = np.random.default_rng(0)
    X = g.normal(size=(2600, 4))
    y = np.sin(X.sum(axis=1))
    model = DSGRegressor(sigma=2.0, alpha=1e-9, n_components=2048, block_size=256,
                         random_state=0, dtype="float64").fit(X, y, limits=limits)
    assert model.fit_plan_.route == "subsample" and model.fit_plan_.validation_fraction is None
    iterations = model.feature_growth_[0]["epochs"]
    assert 3 < iterations < limits.solve_max_iter  # gave up at least once, converged
    Phi = augmented_features(model.expansion_.feature_map, torch.as_tensor(X), 8)
    ones = torch.ones(len(X), dtype=torch.float64)
    exact = Phi @ _exact(Phi, torch.as_tensor(y)[:, None], ones, 1e-9)
    # to the solve's tolerance: relative residual 1e-4 at α = 1e-9 (outputs of order 1)
    np.testing.assert_allclose(model.predict(X), exact[:, 0].numpy(), atol=5e-3)


def test_a_float16_cache_is_the_float32_features_within_their_round_off(monkeypatch):
    """Bounded features held in float16: half the bytes; every product reads them back to the
    features' dtype in row chunks (of 32 rows here), within float16's relative round-off 2⁻¹¹."""
    monkeypatch.setattr(cached, "PASS_ROWS", (32, 32))
    fmap, X, _, _ = _problem(n=3000)
    X = X.float()
    exact, half = FeatureCache(fmap, X), FeatureCache(fmap, X, storage=torch.float16)
    for cache in (exact, half):
        cache.grow(2)
        cache.grow(5)
    assert half.nbytes * 2 == exact.nbytes and all(p.dtype == torch.float16 for p in half.parts)
    assert half.fits(5) and not FeatureCache(fmap, X, exact.nbytes // 2 - 1, torch.float16).fits(5)
    g = torch.Generator().manual_seed(1)
    theta = torch.randn(5 * 64 + 1, 3, generator=g, dtype=torch.float64)
    U = torch.randn(3000, 3, generator=g, dtype=torch.float64)
    rows = torch.arange(0, 3000, 7)
    scale = 2.0**-11 * math.sqrt(2 / 64)  # a feature's largest round-off
    assert (half.matmul(theta) - exact.matmul(theta)).abs().max() < scale * theta.abs().sum(0).max()
    assert (half.rmatmul(U) - exact.rmatmul(U)).abs().max() < scale * U.abs().sum(0).max()
    w = torch.rand(3000, 1, generator=g, dtype=torch.float64)
    torch.testing.assert_close(half.normal_matmul(theta, w), half.rmatmul(w * half.matmul(theta)))
    assert (half.rows(rows) - exact.rows(rows)).abs().max() <= scale
    assert half.rows(rows).dtype == torch.float32
    assert (half.gram(rows) - exact.gram(rows)).abs().max() < 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_one_pass_gives_both_products_of_the_hessian(monkeypatch, dtype):
    """``normal_matmul(θ, w)`` is ``rmatmul(w ⊙ matmul(θ))`` over cache parts of several
    sizes, in chunks that do not divide the rows, per column weights."""
    monkeypatch.setattr(cached, "PASS_ROWS", (96, 96))
    fmap, X, _, _ = _problem(n=1000)
    cache = FeatureCache(fmap, X.to(dtype))
    cache.grow(1)
    cache.grow(3)
    g = torch.Generator().manual_seed(2)
    theta = torch.randn(3 * 64 + 1, 4, generator=g, dtype=torch.float64)
    w = torch.rand(1000, 4, generator=g, dtype=torch.float64)
    tol = {"rtol": 1e-5, "atol": 1e-4} if dtype == torch.float32 else {}
    torch.testing.assert_close(cache.normal_matmul(theta, w), cache.rmatmul(w * cache.matmul(theta)), **tol)
    Phi = augmented_features(fmap, X.to(dtype), 3).double()
    torch.testing.assert_close(cache.normal_matmul(theta, w), Phi.T @ (w * (Phi @ theta)), **tol)


def test_the_solve_on_a_float16_cache_predicts_as_the_float32_one():
    """The least-squares optimum on the float16 cache, read through exact features, predicts
    what the float32 cache's does to well within the noise."""
    fmap, X, y, w = _problem(n=2000)
    X = X.float()
    outputs = []
    for storage in (torch.float32, torch.float16):
        cache = FeatureCache(fmap, X, storage=storage)
        cache.grow(4)
        precond = SketchPreconditioner(cache, torch.arange(2000), 1e-4, float(w.mean()))
        solve = ridge_pcg(cache, y, w, 1e-4, precond, tol=1e-8, max_iter=300)
        assert solve.converged
        outputs.append(augmented_features(fmap, X, 4).double() @ solve.theta)
    assert (outputs[0] - outputs[1]).abs().max() < 1e-3


def test_a_redrawn_cache_is_the_other_maps_features_in_the_same_memory():
    """Another bandwidth's features written over the parts: the same storage, the features of a
    fresh cache of that map, and the sketch's Gram counted anew; a block size that differs is
    refused."""
    fmap, X, _, _ = _problem(n=300)
    cache = FeatureCache(fmap, X)
    cache.grow(2)
    cache.grow(3)
    rows = torch.arange(0, 300, 5)
    cache.gram(rows)
    pointers = [part.data_ptr() for part in cache.parts]
    other = make_feature_map("rbf", X.shape[1], 0.5, 64, 0)
    cache.redraw(other)
    fresh = FeatureCache(other, X)
    fresh.grow(3)
    assert [part.data_ptr() for part in cache.parts] == pointers and cache.feature_map is other
    torch.testing.assert_close(torch.cat(cache.parts, dim=1), torch.cat(fresh.parts, dim=1))
    torch.testing.assert_close(cache.gram(rows), fresh.gram(rows))
    with pytest.raises(ValueError, match="same block size"):
        cache.redraw(make_feature_map("rbf", X.shape[1], 0.5, 32, 0))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_column_sketch_preconditioner_is_each_columns_own(dtype):
    """Every column preconditioned from its own sketch rows and weight, through one shared
    ``Φ̃_sᵀ``: the same as a :class:`SketchPreconditioner` per column (a column with no row
    inside takes every sketch row)."""
    fmap, X, _, _ = _problem(n=300)
    cache = FeatureCache(fmap, X.to(dtype))
    cache.grow(3)
    index = torch.arange(0, 120, 2)
    g = torch.Generator().manual_seed(1)
    inside = torch.rand(len(index), 4, generator=g) < 0.6
    inside[:, 1] = inside[:, 0]
    inside[:, 3] = False
    scales = [0.7, 0.7, 1.3, 0.5]
    joint = cached.ColumnSketchPreconditioner(cache, index, inside, 1e-3, scales)
    r = torch.randn(cache.n_features + 1, 4, generator=g, dtype=torch.float64)
    for c in range(4):
        rows = index[inside[:, c]] if bool(inside[:, c].any()) else index
        own = SketchPreconditioner(cache, rows, 1e-3, scales[c])
        tol = 1e-9 if dtype == torch.float64 else 1e-4
        torch.testing.assert_close(joint(r)[:, c], own(r[:, c:c + 1])[:, 0], rtol=tol, atol=tol)
