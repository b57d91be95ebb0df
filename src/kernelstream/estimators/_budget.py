"""The default feature budget: ``O(√n log n)`` random features for ``n`` rows.

Rudi & Rosasco (NeurIPS 2017): ``O(√n log n)`` random features keep kernel ridge regression's
optimal rate; Carratino, Rudi & Rosasco (NeurIPS 2018): one pass of mini-batch SGD with as many
reaches it. The constant 16 was measured: MNIST ten classes (n = 54,000 training rows after the
validation tenth) keeps improving on validation up to the cap; with 8 it stops at 20,480
features and 1.72% test error, with 16 at 32,768 and 1.58% (``benchmarks/results/mnist10_budget.md``).
Growth stops earlier wherever doubling no longer improves the validation loss (the 2-D
regression: 2,048 features at 2^20 rows). The cap bounds the preconditioner's ``D·k`` memory.
"""

from __future__ import annotations

import math

__all__ = ["default_features", "dual_features", "max_feature_blocks", "FEATURES_PER_ROOT", "MAX_DEFAULT_FEATURES",
           "MIN_DEFAULT_FEATURES"]

#: the budget is ``FEATURES_PER_ROOT · √n · ln n`` features
FEATURES_PER_ROOT = 16
#: never more than this many features by default
MAX_DEFAULT_FEATURES = 32768
#: never fewer: on small data sets extra features cost little, and random features need
#: several times more than a Nyström basis to approximate a kernel as well (digits, odd vs
#: even, 1,347 rows: 2.9% test error with 1024 features, 1.8% with 4096)
MIN_DEFAULT_FEATURES = 4096


def default_features(n_rows: int) -> int:
    """The default budget: ``16·√n·ln n`` features (Rudi & Rosasco's ``O(√n log n)``), between
    4096 and 32768."""
    features = FEATURES_PER_ROOT * math.sqrt(n_rows) * math.log(max(n_rows, 2))
    return int(max(MIN_DEFAULT_FEATURES, min(features, MAX_DEFAULT_FEATURES)))


#: the dual route's features (few rows): ``n·D`` up to this, its Gram's work ``n²D`` linear in ``n``
DUAL_FEATURE_WORK = 2**24
#: and at most this many
MAX_DUAL_FEATURES = 16384


def dual_features(n_rows: int) -> int:
    """The features of the dual route (``n ≤ 2048`` rows): :func:`default_features`, raised to
    ``2²⁴/n`` up to 16,384 — in the dual extra features cost ``O(n²)`` each, and random features
    need many more than ``√n`` to match the exact kernel on few rows (digits odd vs even, 1,347
    rows, five splits, leave-one-out choice of ``σ``, ``α``: 1.33% test error with 4096
    features, 1.20% with 16,384)."""
    return max(default_features(n_rows), min(DUAL_FEATURE_WORK // max(n_rows, 1), MAX_DUAL_FEATURES))


def max_feature_blocks(n_rows: int, block_size: int) -> int:
    """Blocks of ``block_size`` features covering :func:`default_features` (rounded up)."""
    return math.ceil(default_features(n_rows) / block_size)
