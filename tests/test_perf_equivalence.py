"""Performance work must not change results: seeded fits predict what they did before it.

``tests/data/perf_reference.npz`` holds the outputs of seeded fits recorded on commit f8051b6,
before the hot-loop work of issue 4 (``tests/data/make_perf_reference.py`` wrote it). Every
configuration is refitted here and must agree to float tolerance: float32 models to ``1e-4``
relative to the output scale (the training loop feeds its own outputs back, so reordered float32
sums may drift a few ulps per step), float64 models to ``1e-9``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data"


def _reference_module():
    """tests/data/make_perf_reference.py, loaded from its file (tests/data is not a package)."""
    spec = importlib.util.spec_from_file_location("make_perf_reference", DATA / "make_perf_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_REFERENCE_MODULE = _reference_module()
CONFIGS, fitted_output = _REFERENCE_MODULE.CONFIGS, _REFERENCE_MODULE.fitted_output

REFERENCE = np.load(DATA / "perf_reference.npz")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_seeded_fit_predicts_as_before(name):
    expected = REFERENCE[name]
    got = fitted_output(name)
    assert got.shape == expected.shape
    float64 = CONFIGS[name][1].get("dtype") == "float64"
    tol = 1e-9 if float64 else 1e-4
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol * scale)


def test_reference_was_recorded_before_the_speed_work():
    assert str(REFERENCE["commit"]).startswith("f8051b6")


def test_push_through_direction_equals_the_direct_solve():
    """``b < r`` uses ``Ψᵀ(ΨΨᵀ/b + εI)⁻¹G/b``; it must equal ``(ΨᵀΨ/b + εI)⁻¹ΨᵀG/b``."""
    import torch

    from kernelstream.schedules import make_schedule
    from kernelstream.solvers import DSGConfig
    from kernelstream.solvers.doubly_sgd import block_direction

    g = torch.Generator().manual_seed(0)
    Psi = torch.randn(24, 40, generator=g, dtype=torch.float64)
    G = torch.randn(24, 3, generator=g, dtype=torch.float64)
    cfg = DSGConfig(schedule=make_schedule("constant", 1.0), precond_eps=0.3)
    M = Psi.T @ Psi / 24
    M += 0.3 * torch.trace(M) / 40 * torch.eye(40, dtype=torch.float64)
    expected = torch.linalg.solve(M, Psi.T @ G / 24)
    torch.testing.assert_close(block_direction(Psi, G, cfg), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("block_size", [64, 63])
@pytest.mark.parametrize("cache_bytes", [0, 5 * 4 * 33 * 64, 2**24])
def test_fused_contraction_equals_features_times_coefficients(block_size, cache_bytes):
    """The fused Fourier path (pinned prefix + regenerated blocks) against ``Φ(X) c``."""
    import torch

    from kernelstream.features import FeatureMap, make_feature_map

    fm = make_feature_map("rbf", 32, 2.0, block_size, seed=5, cache_bytes=cache_bytes)
    g = torch.Generator().manual_seed(1)
    X = torch.randn(300, 32, generator=g, dtype=torch.float64)
    coef = torch.randn(11, block_size, 2, generator=g, dtype=torch.float64)
    expected = torch.einsum("njr,jrc->nc", fm.features(X, range(11)), coef)
    torch.testing.assert_close(fm.contract(X, coef), expected, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(FeatureMap.contract(fm, X, coef), expected, rtol=1e-10, atol=1e-10)
    assert fm._cached_bytes <= fm.cache_bytes
    out = torch.empty(300, block_size, dtype=torch.float64)
    torch.testing.assert_close(fm.block_features(X, 7, out), fm.features(X, [7])[:, 0])
