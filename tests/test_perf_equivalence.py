"""Performance work must not change results: seeded fits predict what they did before it.

``tests/data/perf_reference.npz`` holds the outputs of seeded fits recorded on commit f8051b6,
before the hot-loop work of issue 4 (``tests/data/make_perf_reference.py`` wrote it). Every
configuration is refitted here and must agree to float tolerance: float32 models to ``1e-4``
relative to the output scale (the training loop feeds its own outputs back, so reordered float32
sums may drift a few ulps per step), float64 models to ``1e-9``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from make_perf_reference import CONFIGS, fitted_output  # noqa: E402

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
