"""The Nyström basis for the cached solvers: its features are the Nyström approximation of the
kernel, growth leaves the earlier features as they were, the products are the whitened
features', and conjugate gradients reach the Nyström ridge's closed form."""

import pytest
import torch

from kernelstream.features import make_feature_map
from kernelstream.solvers.cached import SketchPreconditioner, ridge_pcg
from kernelstream.solvers.feature_rows import augmented
from kernelstream.solvers.nystroem import NystroemBasis, NystroemCache


def _problem(n=400, d=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.sin(X.sum(dim=1, keepdim=True)) + 0.1 * torch.randn(n, 1, generator=g, dtype=torch.float64)
    return make_feature_map("rbf", d, 1.0, 8, seed), X, y


def test_the_features_are_the_nystroem_approximation_of_the_kernel():
    fmap, X, _ = _problem()
    basis = NystroemBasis(fmap, X[:96], block_size=32, jitter=1e-9)
    cache = NystroemCache(basis, X)
    cache.grow(3)
    Phi = cache.rows(torch.arange(X.shape[0]))
    C = X[:96]
    K_XC, K_CC = fmap.kernel(X, C), fmap.kernel(C, C)
    nystroem = K_XC @ torch.linalg.solve(K_CC + 1e-9 * torch.eye(96, dtype=K_CC.dtype), K_XC.T)
    torch.testing.assert_close(Phi @ Phi.T, nystroem, atol=1e-6, rtol=0)
    # on the centres themselves the approximation is the kernel
    torch.testing.assert_close((Phi @ Phi.T)[:96, :96], K_CC, atol=1e-6, rtol=0)


def test_growth_leaves_the_earlier_features_and_outputs_as_they_were():
    fmap, X, _ = _problem()
    grown = NystroemBasis(fmap, X[:128], block_size=32)
    grown.grow(1)
    grown.grow(4)  # three blocks appended by block Cholesky
    at_once = NystroemBasis(fmap, X[:128], block_size=32)
    at_once.grow(4)
    torch.testing.assert_close(grown.factor, at_once.factor)
    small, large = NystroemCache(grown, X), NystroemCache(grown, X)
    small.grow(1)
    large.grow(4)
    theta = torch.randn(33, 2, dtype=torch.float64)
    torch.testing.assert_close(large.matmul(large.extended(theta, 4)), small.matmul(theta))


def test_products_are_those_of_the_whitened_features_and_coefficients_of_the_centres():
    fmap, X, _ = _problem()
    cache = NystroemCache(NystroemBasis(fmap, X[:64], block_size=16), X)
    cache.grow(4)
    Phi = augmented(cache.rows(torch.arange(X.shape[0])))
    theta = torch.randn(65, 3, dtype=torch.float64)
    torch.testing.assert_close(cache.matmul(theta), Phi @ theta)
    U = torch.randn(X.shape[0], 3, dtype=torch.float64)
    torch.testing.assert_close(cache.rmatmul(U), Phi.T @ U)
    beta = cache.basis.coefficients(theta[:-1])  # φ(x)ᵀW = k_C(x)ᵀβ
    torch.testing.assert_close(fmap.kernel(X, X[:64]) @ beta, Phi[:, :-1] @ theta[:-1])
    index = torch.arange(0, 40, 3)
    torch.testing.assert_close(cache.gram(index), cache.psi(index) @ cache.psi(index).T)


def test_conjugate_gradients_reach_the_nystroem_ridge_closed_form():
    fmap, X, y = _problem()
    n, alpha = X.shape[0], 1e-4
    cache = NystroemCache(NystroemBasis(fmap, X[:96], block_size=32), X)
    cache.grow(3)
    w = torch.ones(n, dtype=torch.float64)
    precond = SketchPreconditioner(cache, torch.arange(64), alpha)
    solve = ridge_pcg(cache, y, w, alpha, precond, tol=1e-10, max_iter=500)
    assert solve.converged
    Phi = augmented(cache.rows(torch.arange(n)))
    penalty = torch.full((Phi.shape[1],), alpha, dtype=torch.float64)
    penalty[-1] = 0.0
    exact = torch.linalg.solve(Phi.T @ Phi / n + torch.diag(penalty), Phi.T @ y / n)
    torch.testing.assert_close(solve.theta, exact, atol=1e-6, rtol=1e-6)


def test_a_basis_past_its_candidates_or_budget_says_what_to_do():
    fmap, X, _ = _problem(n=100)
    basis = NystroemBasis(fmap, X[:64], block_size=32)
    with pytest.raises(ValueError, match="candidate rows"):
        basis.grow(3)
    cache = NystroemCache(basis, X, budget=100 * 40 * 8)
    assert cache.fits(1) and not cache.fits(2)
    with pytest.raises(MemoryError, match="fewer n_components"):
        cache.grow(2)
    assert basis.n_blocks == 0 and cache.n_blocks == 0  # nothing changed
    with pytest.raises(ValueError, match="block_size"):
        NystroemBasis(fmap, X, block_size=0)


def test_a_redrawn_cache_is_the_cache_of_the_other_bandwidth():
    """The σ challenge of the subsample route: the same centres under another kernel map, in
    the cache's own memory, equal to a cache built at that bandwidth; and back again."""
    fmap, X, _ = _problem()
    cache = NystroemCache(NystroemBasis(fmap, X[:64], block_size=32), X)
    cache.grow(1)
    cache.grow(2)
    before = cache.matmul(torch.ones(65, 1, dtype=torch.float64))
    parts = [part.data_ptr() for part in cache.parts]
    wider = make_feature_map("rbf", X.shape[1], 2.0, 8, 0)
    cache.redraw(wider)
    fresh = NystroemCache(NystroemBasis(wider, X[:64], block_size=32), X)
    fresh.grow(2)
    theta = torch.randn(65, 2, dtype=torch.float64)
    torch.testing.assert_close(cache.matmul(theta), fresh.matmul(theta))
    assert [part.data_ptr() for part in cache.parts] == parts  # written in place
    cache.redraw(fmap)
    torch.testing.assert_close(cache.matmul(torch.ones(65, 1, dtype=torch.float64)), before)


def test_a_float32_factor_keeps_the_products_within_float32_round_off():
    """On float32 rows, products through a float32 factor are as far from the float64
    reference as those through a float64 factor: the rows' round-off, not the factor's."""
    fmap, X, _ = _problem()
    reference = NystroemCache(NystroemBasis(fmap, X[:64], block_size=32), X)
    rows32 = NystroemCache(NystroemBasis(fmap, X.float()[:64], block_size=32), X.float())
    narrow = NystroemCache(NystroemBasis(fmap, X.float()[:64], block_size=32), X.float(),
                           factor_dtype=torch.float32)
    for cache in (reference, rows32, narrow):
        cache.grow(2)
    g = torch.Generator().manual_seed(0)
    for product, shape in (("matmul", (65, 2)), ("rmatmul", (X.shape[0], 2))):
        for _ in range(20):
            v = torch.randn(*shape, generator=g, dtype=torch.float64)
            exact = getattr(reference, product)(v)
            scale = float(exact.abs().max())
            error = float((getattr(narrow, product)(v) - exact).abs().max()) / scale
            floor = float((getattr(rows32, product)(v) - exact).abs().max()) / scale
            assert error < 2 * floor + 1e-5, (product, error, floor)


def test_the_sketch_rows_are_whitened_once_and_their_subsets_read_from_them():
    fmap, X, _ = _problem()
    cache = NystroemCache(NystroemBasis(fmap, X[:64], block_size=32), X)
    cache.grow(2)
    sketch = torch.arange(100, 180)
    full = cache.gram(sketch)
    kept = cache._sketch_gram[0]
    active = sketch[::3]  # a Newton step's active sketch rows: read from the kept ones
    fresh = NystroemCache(cache.basis, X)
    fresh.grow(2)
    torch.testing.assert_close(cache.gram(active), fresh.gram(active))
    torch.testing.assert_close(cache.psi(active), fresh.psi(active))
    assert cache._sketch_gram[0] is kept and full.shape == (80, 80)
    other = torch.arange(0, 10)  # rows outside the sketch: whitened anew, the sketch replaced
    torch.testing.assert_close(cache.gram(other), fresh.gram(other))


def test_the_fitted_model_is_the_kernel_columns_at_the_centres_times_beta():
    """``fitted(θ)`` turns a solution on the whitened basis into the kernel's columns at the
    centres and ``√J·L⁻ᵀθ``: the expansion's ``Σ_j ψ_j(x)ᵀθ_j/√J + c·θ_b`` predicts what the
    cache's product does, on its own rows and on others, and ``k_C(x)ᵀβ`` is written out."""
    from kernelstream.expansion import Expansion
    from kernelstream.solvers.feature_rows import INTERCEPT_FEATURE

    fmap, X, _ = _problem()
    basis = NystroemBasis(fmap, X[:64], block_size=32)
    cache = NystroemCache(basis, X[:300])
    cache.grow(2)
    theta = torch.randn(65, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    feature_map, coef = cache.fitted(theta)
    expansion = Expansion(feature_map, 2, dtype=torch.float64)
    expansion.load_prediction_state((coef[:-1] / 2**0.5).reshape(2, 32, 2),
                                    INTERCEPT_FEATURE * coef[-1], 0)
    torch.testing.assert_close(expansion.predict(X[:300]), cache.matmul(theta))
    others = cache.for_rows(X[300:])
    others.grow(2)
    torch.testing.assert_close(expansion.predict(X[300:]), others.matmul(theta))
    beta = torch.linalg.solve_triangular(basis.factor.T, theta[:-1], upper=True)
    torch.testing.assert_close(expansion.predict(X[300:]),
                               fmap.kernel(X[300:], X[:64]) @ beta + INTERCEPT_FEATURE * theta[-1])


def test_the_one_pass_normal_product_is_the_two_products():
    fmap, X, _ = _problem(n=700)
    basis = NystroemBasis(fmap, X[:96], block_size=32)
    cache = NystroemCache(basis, X)
    cache.grow(1)
    cache.grow(3)  # two column parts
    g = torch.Generator().manual_seed(3)
    theta = torch.randn(97, 4, generator=g, dtype=torch.float64)
    for w in (torch.rand(700, 4, generator=g, dtype=torch.float64),
              torch.rand(700, 1, generator=g, dtype=torch.float64)):
        torch.testing.assert_close(cache.normal_matmul(theta, w), cache.rmatmul(w * cache.matmul(theta)))


def test_the_first_centres_sketch_features_are_rows_of_the_factor_and_exact_solves_never_use_them():
    """Sketch rows that are the first centres, in order: their whitened features are the rows of
    ``L`` (``ψ(c_i) = Lᵀe_i − εL⁻¹e_i``) and their Gram ``J·(K_CC + εI)``, both read, not
    solved; ``rows`` (the exact dual solves') still whitens them."""
    fmap, X, _ = _problem()
    order = torch.randperm(len(X), generator=torch.Generator().manual_seed(1))
    basis = NystroemBasis(fmap, X[order[:96]], block_size=32, jitter=1e-8)
    cache = NystroemCache(basis, X, centre_rows=order[:96])
    cache.grow(3)
    sketch = order[:64]
    solved = NystroemCache(basis, X)  # the same features, whitened by solves
    solved.grow(3)
    exact_psi = solved.psi(sketch)
    torch.testing.assert_close(cache.psi(sketch), exact_psi, atol=1e-3, rtol=0)  # ‖εL⁻¹e_i‖ ≤ √ε
    torch.testing.assert_close(cache.gram(sketch), exact_psi @ exact_psi.T, atol=1e-3, rtol=0)
    torch.testing.assert_close(cache.gram(sketch), solved.gram(sketch), atol=1e-3, rtol=0)
    torch.testing.assert_close(cache.rows(sketch), solved.rows(sketch))  # exact: whitened anew
    assert not cache._are_centres(order[1:65])  # not the first centres in order: solved
