"""Feature maps are fixed at construction: the bandwidth (and every defining attribute) cannot be
assigned afterwards, a map built at σ equals the former "build at 1.0, then assign σ" path, the
kernel of σ for the marginal likelihood is pure, and no code in ``src/`` assigns a bandwidth.

The former path is emulated here by writing the private ``_sigma`` of a map built at 1.0 (what
the removed setter did) before anything was drawn, then comparing with a map built at σ."""

import ast
import math
import pathlib

import numpy as np
import pytest
import torch

from kernelstream.features import (KERNELS, build_feature_map, make_feature_map, median_distance,
                                   resolve_bandwidth)
from kernelstream.solvers.gp_evidence import fit_gp_hyperparameters

from support import SRC  # noqa: E402
SIGMA = 1.7
NON_NEGATIVE = {name for name, (cls, _) in KERNELS.items() if cls.non_negative}


def _rows(name, n=12, d=4, seed=0):
    g = np.random.default_rng(seed)
    X = g.dirichlet(np.ones(d), size=n) if name in NON_NEGATIVE else g.normal(size=(n, d))
    return torch.as_tensor(X, dtype=torch.float64)


def _old_path(name, sigma, d=4, block_size=16, seed=5):
    """The map as the estimators made it before: built at σ = 1.0, then σ assigned."""
    fm = make_feature_map(name, d, 1.0, block_size, seed)
    object.__setattr__(fm, "_sigma", float(sigma))  # the removed setter, bypassing the freeze
    return fm


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_assigning_the_bandwidth_raises(name):
    fm = make_feature_map(name, 4, SIGMA, 16, 0)
    for attribute, value in [("sigma", 2.0), ("seed", 1), ("block_size", 32),
                             ("n_features_in", 5), ("cache_bytes", 0), ("_sigma", 2.0)]:
        with pytest.raises(AttributeError, match="Build a new map"):
            setattr(fm, attribute, value)
    with pytest.raises(AttributeError, match="fixed at construction"):
        del fm.seed
    assert fm.seed == 0 and fm.block_size == 16


def test_family_parameters_are_fixed_too():
    for name, attribute, value in [("matern", "nu", 2.5), ("polynomial", "degree", 3),
                                   ("rbf", "sampling", "sobol"), ("arccos", "order", 0),
                                   ("chi2", "gamma", 0.5), ("intersection", "order", 3)]:
        with pytest.raises(AttributeError, match=f"Cannot set '{attribute}'"):
            setattr(make_feature_map(name, 4, 1.0, 16, 0), attribute, value)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_built_at_sigma_equals_the_old_assign_after_path(name):
    X, Y = _rows(name), _rows(name, n=7, seed=1)
    new, old = make_feature_map(name, 4, SIGMA, 16, 5), _old_path(name, SIGMA)
    assert new.sigma == old.sigma
    torch.testing.assert_close(new.kernel(X, Y), old.kernel(X, Y), rtol=0, atol=0)
    torch.testing.assert_close(new.features(X, range(3)), old.features(X, range(3)), rtol=0, atol=0)
    coef = torch.randn((3, 16, 2), dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(new.contract(X, coef), old.contract(X, coef), rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_at_is_the_kernel_of_a_map_built_there(name):
    X, Y = _rows(name), _rows(name, n=7, seed=1)
    fm = make_feature_map(name, 4, 1.0, 16, 5)
    torch.testing.assert_close(fm.kernel_at(X, Y, SIGMA), make_feature_map(name, 4, SIGMA, 16, 5).kernel(X, Y),
                               rtol=0, atol=0)
    assert fm.sigma == 1.0  # unchanged


def test_kernel_at_differentiates_in_sigma_and_changes_nothing():
    X = _rows("rbf")
    fm = make_feature_map("rbf", 4, 1.0, 16, 5)
    fm.features(X, range(2))  # something in the cache
    sigma = torch.tensor(SIGMA, dtype=torch.float64, requires_grad=True)
    fm.kernel_at(X, X, sigma).sum().backward()
    D2 = torch.cdist(X, X).square()
    expected = (torch.exp(-D2 / (2 * SIGMA**2)) * D2 / SIGMA**3).sum()  # ∂/∂σ exp(−ρ²/(2σ²))
    torch.testing.assert_close(sigma.grad, expected)
    assert fm.sigma == 1.0 and fm.n_cached_blocks() == 2


def test_evidence_fit_takes_a_pure_kernel_of_sigma():
    g = np.random.default_rng(0)
    X = torch.as_tensor(g.uniform(-3, 3, size=(60, 1)))
    z = torch.sin(2 * X[:, 0]) + 0.05 * torch.as_tensor(g.normal(size=60))
    fm = make_feature_map("rbf", 1, 1.0, 16, 0)
    hp = fit_gp_hyperparameters(fm.kernel_at, X, z, sigma0=1.0)
    assert math.isfinite(hp.nll) and 0.2 < hp.sigma < 1.5 and fm.sigma == 1.0


# -- build_feature_map: lookup and bandwidth before the map ------------------------------
def test_build_feature_map_resolves_the_median_in_the_family_distance():
    X = np.random.default_rng(0).normal(size=(300, 3))
    seed = 2**40 + 7
    for name, metric in [("rbf", "euclidean"), ("laplace", "cityblock")]:
        fm = build_feature_map(name, X, sigma="median", sigma_scale=0.5, block_size=8, seed=seed)
        assert fm.sigma == 0.5 * median_distance(X, metric=metric, seed=seed % 2**32)
        assert fm.seed == seed and fm.block_size == 8 and fm.n_features_in == 3
        assert resolve_bandwidth(name, X, "median", 0.5, seed) == fm.sigma


def test_build_feature_map_keeps_a_number_exactly():
    X = np.ones((4, 2))
    fm = build_feature_map("matern", X, sigma=0.3, sigma_scale=10.0, block_size=8, seed=0,
                           kernel_params={"nu": 2.5})
    assert fm.sigma == 0.3 and fm.nu == 2.5


def test_build_feature_map_names_the_registered_kernels():
    with pytest.raises(ValueError, match=r"Unknown kernel 'nope'; choose one of \[.*'rbf'.*\] "
                                         r"or add yours with kernelstream.features.register_kernel"):
        build_feature_map("nope", np.ones((3, 2)), sigma=1.0, block_size=8, seed=0)
    with pytest.raises(ValueError, match="'median'"):
        build_feature_map("rbf", np.ones((3, 2)), sigma="mean", block_size=8, seed=0)


# -- no code assigns a bandwidth after construction ---------------------------------------
def _assigned_attributes(tree):
    """``(attribute, line)`` of every ``x.attr = …``, ``x.attr += …`` and ``setattr(x, "attr", …)``."""
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr"
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
            yield node.args[1].value, node.lineno
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Attribute):
                    yield sub.attr, sub.lineno


def test_no_code_in_src_assigns_a_bandwidth():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for attr, line in _assigned_attributes(ast.parse(path.read_text(), str(path))):
            own = path.name == "base.py" and path.parent.name == "features"  # FeatureMap.__init__
            if attr == "sigma" or (attr == "_sigma" and not own):
                offenders.append(f"{path.relative_to(SRC)}:{line}: .{attr} assigned")
    assert not offenders, "feature maps are built at their bandwidth; build a new map:\n" + "\n".join(offenders)


def test_a_map_shared_by_threads_draws_the_features_of_one_thread():
    """Threads growing one map's parameter slab at once (Dask workers in one process share the
    map) get the features a single thread gets: a slab grown is written before it is read."""
    import threading

    import torch

    from kernelstream.features import GaussianRFF

    X = torch.randn(64, 5)
    expected = GaussianRFF(5, 1.5, block_size=64, seed=3).features(X, range(24))
    for _ in range(30):
        shared, results = GaussianRFF(5, 1.5, block_size=64, seed=3), {}

        def draw(k: int) -> None:
            results[k] = [shared.features(X, range(j)) for j in range(1 + k % 3, 25, 3)][-1]

        threads = [threading.Thread(target=draw, args=(k,)) for k in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for k, features in results.items():
            torch.testing.assert_close(features, expected[:, :features.shape[1]], rtol=0, atol=0)
