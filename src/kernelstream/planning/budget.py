"""The arithmetic and predicates every route and sentence shares: the feature budgets and
layouts, the cache's dtype, the training rows of a split, which losses and solvers the engine
takes. Pure functions of shapes, parameters and :class:`~.limits.FitLimits`."""

from __future__ import annotations

import math

from ..features.registry import KERNELS, kernel_class
from ..solvers.conjugate import QUADRATIC_LOSSES
from ..solvers.newton import NEWTON_LOSSES
from .limits import FitLimits, LIMITS
from .plan import DataShape

__all__ = ["DUAL_LOSSES", "ENGINE_SOLVERS", "cache_dtype", "chooses", "default_features",
           "dual_features", "dual_layout", "effective_dimension", "engine_solves", "feature_layout",
           "is_auto", "looks_back", "max_feature_blocks", "nystroem_basis", "spectral_start_features"]


#: the losses the exact dual route solves
DUAL_LOSSES = (*QUADRATIC_LOSSES, "squared_hinge")


#: the solvers whose fits run on the engine (the subsample's choice, then full-size solves)
ENGINE_SOLVERS = ("preconditioned", "cg")


def default_features(n_rows: int, limits: FitLimits = LIMITS) -> int:
    """The default budget ``16·√n·ln n`` (Rudi & Rosasco's ``O(√n log n)``), clipped to
    ``[min_default_features, max_default_features]`` (record: docs/decisions/feature-budget.md)."""
    features = limits.features_per_root * math.sqrt(n_rows) * math.log(max(n_rows, 2))
    return int(max(limits.min_default_features, min(features, limits.max_default_features)))


def dual_features(n_rows: int, limits: FitLimits = LIMITS) -> int:
    """The dual route's features: :func:`default_features` raised to ``2²⁴/n``, at most
    16,384 (extra features cost ``O(n²)`` each there; record: docs/decisions/feature-budget.md)."""
    return max(default_features(n_rows, limits),
               min(limits.dual_feature_work // max(n_rows, 1), limits.max_dual_features))


def max_feature_blocks(n_rows: int, block_size: int, limits: FitLimits = LIMITS) -> int:
    """Blocks of ``block_size`` features covering :func:`default_features` (rounded up)."""
    return math.ceil(default_features(n_rows, limits) / block_size)


def looks_back(n_train: int, n_features: int, limits: FitLimits = LIMITS) -> bool:
    """Whether a doubling to ``n_features`` follows a look back at half the start size: where
    the ``n_train`` rows are at least ``look_back_rows_per_feature`` per feature."""
    return n_train >= limits.look_back_rows_per_feature * n_features


def effective_dimension(eigenvalues, subsample_penalty: float, subsample_rows: int,
                        n_rows: int, penalty: float) -> float:
    """The training rows' effective dimension ``Σ_j μ_j/(μ_j + nα)``, ``μ_j ≈ (n/m)λ_j`` the
    full Gram's eigenvalues from the ``m`` subsample rows' ``λ_j`` (``subsample_penalty``: the
    subsample's ``mα``, ``penalty``: the training rows' ``nα``): a lower bound, as the
    eigenvalues past the ``m``-th are unseen."""
    if penalty <= 0 or subsample_penalty <= 0:
        return float(len(eigenvalues))
    scaled = [float(v) * n_rows / subsample_rows for v in eigenvalues]
    return sum(v / (v + penalty) for v in scaled if v > 0)


def spectral_start_features(dimension: float, default: int, limits: FitLimits = LIMITS) -> int:
    """The growth's first size for an effective ``dimension``: the power of two of at least
    ``start_features_per_dimension·dimension`` features, between ``least_start_features`` and
    ``default`` (the plan's start)."""
    wanted = max(1.0, limits.start_features_per_dimension * dimension)
    features = max(limits.least_start_features, 2 ** math.ceil(math.log2(wanted)))
    return min(default, features)


def feature_layout(n_components: int | None, block_size: int) -> tuple[int, int | None]:
    """``(block_size, blocks)`` of an explicit budget: ``ceil(n_components / block_size)`` equal
    blocks (``n_components`` rounded up to a multiple of them); ``(block_size, None)`` without."""
    if n_components is None:
        return block_size, None
    n_blocks = math.ceil(n_components / block_size)
    return math.ceil(n_components / n_blocks), n_blocks


def dual_layout(n_rows: int, n_components: int | None, block_size: int,
                limits: FitLimits = LIMITS) -> tuple[int, int]:
    """``(block_size, blocks)`` of the dual route on ``n_rows`` rows: an explicit budget as it
    is, else :func:`dual_features` in whole blocks."""
    size, n_blocks = feature_layout(n_components, block_size)
    if n_blocks is not None:
        return size, n_blocks
    return size, math.ceil(dual_features(n_rows, limits) / size)


def subsample_split(shape: DataShape, params: dict) -> tuple[int, float | None]:
    """``(training rows, held-out fraction or None)`` of the subsample route: every row trains
    where nothing is judged on held-out rows (``σ``, ``α`` and ``n_components`` given)."""
    if params["n_components"] is not None and not chooses(params):
        return shape.n_train or shape.n_rows, None
    return validation_split(shape, params, chooses(params))


def cache_dtype(params: dict, limits: FitLimits = LIMITS) -> str:
    """The cached features' dtype: float16 for a kernel whose features are bounded
    (:attr:`~kernelstream.features.base.FeatureMap.bounded`) where the fit's dtype is float32
    and ``limits.half_cache``; else the fit's dtype."""
    dtype = params.get("dtype", "float32")
    bounded = params.get("kernel") in KERNELS and kernel_class(params["kernel"]).bounded
    return "float16" if limits.half_cache and dtype == "float32" and bounded else dtype


def cache_item_bytes(params: dict, limits: FitLimits) -> int:
    return {"float16": 2, "float32": 4, "float64": 8}[cache_dtype(params, limits)]


def is_auto(value) -> bool:
    """Whether a parameter is the string "auto" (``sigma`` may be an array of lengthscales)."""
    return isinstance(value, str) and value == "auto"


def chooses(params: dict) -> bool:
    """Whether the fit chooses ``σ`` or ``α`` (either is "auto"): it then needs held-out rows."""
    return is_auto(params["sigma"]) or params["alpha"] == "auto"


def engine_solves(loss: str) -> bool:
    """Whether the engine solves ``loss`` (its name at the planner: "logistic" is also the
    softmax): least squares, the squared hinge and every loss of Newton's method."""
    return loss in DUAL_LOSSES or loss in NEWTON_LOSSES


def nystroem_basis(params: dict, shape: DataShape | None = None) -> bool:
    """Whether the subsample route's basis is Nyström: ``basis="nystroem"``, or "auto" for a
    classifier of three or more classes with ``loss="auto"`` on dense rows (where the rows are
    at least ``nystroem_rows_per_centre`` times its centres and the cache holds their kernel
    columns: :func:`_subsample_plan`; record: docs/decisions/nystroem-basis.md)."""
    basis = params.get("basis", "random_features")
    return basis == "nystroem" or (basis == "auto" and shape is not None and multiclass_auto(shape, params)
                                   and not shape.sparse)


def multiclass_auto(shape: DataShape, params: dict) -> bool:
    return (shape.n_classes or 0) >= 3 and params.get("loss") == "auto"


def validation_split(shape: DataShape, params: dict, needs_race: bool) -> tuple[int, float | None]:
    """``(training rows, validation fraction or None)`` of the epochs' split."""
    if not (params["early_stopping"] or needs_race):
        return shape.n_train or shape.n_rows, None
    fraction = params["validation_fraction"]
    n_train = shape.n_train if shape.n_train is not None else (
        shape.n_rows - math.ceil(fraction * shape.n_rows))
    return n_train, fraction
