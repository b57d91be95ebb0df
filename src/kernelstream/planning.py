"""The fit planner: what a ``fit`` of :class:`DSGRegressor` or :class:`DSGClassifier` will do.

One pure function, :func:`plan_fit`, turns the data's shape and the estimator's parameters into
an immutable :class:`FitPlan`: the route (exact dual, epochs, one pass), how ``σ`` and ``α`` are
chosen and on how many rows, the candidates, the feature budget, the solver, the loss "auto"
resolves to and the stopping rule. Every threshold it compares against is a field of
:class:`FitLimits`, documented once; the measurements behind them are decision records under
``docs/decisions/``. The fitted estimator keeps the plan as ``fit_plan_``; ``print`` it to read
in words what was done and why. Nothing here touches data or tensors.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field

from .features.registry import KERNELS, kernel_class
from .solvers.conjugate import QUADRATIC_LOSSES
from .solvers.direct import DIRECT_MAX_FEATURES
from .solvers.dual import DUAL_MAX_ROWS
from .solvers.lengthscales import MIN_ROWS_PER_LENGTHSCALE, PER_FEATURE_LOO_RATIO
from .solvers.newton import NEWTON_LOSSES

__all__ = ["is_auto", "FitLimits", "FitPlan", "GaussianProcessPlan", "DataShape", "LIMITS", "plan_fit",
           "plan_gaussian_process", "default_features",
           "dual_features", "max_feature_blocks", "feature_layout", "dual_layout", "resolve_loss",
           "resolve_precond_eps", "chooses", "cache_dtype", "nystroem_basis", "looks_back",
           "DUAL_LOSSES"]

#: the losses the exact dual route solves
DUAL_LOSSES = (*QUADRATIC_LOSSES, "squared_hinge")
#: the solvers whose fits run on the engine (the subsample's choice, then full-size solves)
ENGINE_SOLVERS = ("preconditioned", "cg")


def default_cache_bytes(most: int = 8 * 2**30) -> int:
    """A third of the physical memory (``os.sysconf``; 12 GiB where it cannot be read), at most
    ``most``."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        memory = 12 * 2**30
    return int(min(most, memory // 3))


@dataclass(frozen=True)
class FitLimits:
    """Every threshold of the automatic choices, one line each (records: ``docs/decisions/``).

    Pass a modified copy to :func:`plan_fit` (``dataclasses.replace(LIMITS, ...)``) to see how a
    plan would change; the estimators use :data:`LIMITS`.
    """

    #: the exact dual route takes at most this many rows (its cost is ``O(n²D + n³)``)
    dual_max_rows: int = DUAL_MAX_ROWS
    #: sparse rows take the dual route when their dense copy holds at most this many values
    dual_dense_floats: int = 2**25
    #: up to this many rows in memory, ``σ`` and ``α`` are chosen by 5-fold cross-validation
    #: (or the dual subsample), above it by a race on the held-out rows
    cv_max_rows: int = 4096
    #: epochs of each candidate in the race and in cross-validation
    race_max_iter: int = 20
    #: feature blocks of each candidate in the race and in cross-validation
    race_blocks: int = 1
    #: candidates are judged by their exact optimum (the normal equations) up to this many features
    direct_max_features: int = DIRECT_MAX_FEATURES
    #: epochs of the converging solver with ``max_iter="auto"``
    max_iter: int = 100
    #: feature growth doubles while the best validation loss falls by more than this (relative)
    growth_tol: float = 1e-3
    #: ... and, for a classifier, while the last doubling changed more held-out rows' classes
    #: than this: one changed row moves the held-out error count by one, McNemar's statistic
    #: at most √1 = ``subsample_loss_z`` (record: docs/decisions/subsample-route.md)
    settled_class_changes: int = 1
    #: ``sigma="auto"``: candidates, multiples of the median pairwise distance
    sigma_scales: tuple[float, ...] = (0.125, 0.25, 0.5, 1.0, 2.0)
    #: ``alpha="auto"`` by epochs: candidates trained side by side
    alphas: tuple[float, ...] = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)
    #: ``alpha="auto"`` on the dual route (every ``α`` costs ``O(n²)`` there): half decades
    dual_alphas: tuple[float, ...] = tuple(10.0 ** (-k / 2) for k in range(2, 17))
    #: ``alpha="auto"`` of the one-pass solver (no validation to choose by)
    one_pass_alpha: float = 1e-6
    #: the default feature budget is ``features_per_root · √n · ln n`` ...
    features_per_root: float = 16
    #: ... but at least this many features
    min_default_features: int = 4096
    #: ... and at most this many (it bounds the preconditioner's ``D·k`` memory)
    max_default_features: int = 32768
    #: the dual route's features: ``n·D`` up to this (its Gram's work ``n²D`` linear in ``n``) ...
    dual_feature_work: int = 2**24
    #: ... and at most this many
    max_dual_features: int = 16384
    #: ``basis="nystroem"`` without ``n_components``: at most this many centres (the factor of
    #: ``K_CC`` costs ``M³/3``; docs/decisions/nystroem-basis.md); the kernel columns are held in
    #: float64 where float32's round-off exceeds ``nystroem_max_roundoff·α`` (the products
    #: ``K_XCβ`` cancel: conjugate gradients diverged at ``α = 4.6e-8`` in float32, MNIST at
    #: ``3e-7`` converged), so the budget counts 8 bytes a column entry
    nystroem_centres: int = 16384
    nystroem_max_roundoff: float = 1.0
    #: ... and the least-squares preconditioner's sketch is this share of the centres (at least
    #: the subsample): it must see the directions of the centres it preconditions (MNIST, 16,384
    #: centres: 4,096 rows, docs/decisions/research-mnist10-nystroem.md)
    nystroem_sketch_share: float = 0.25
    #: ``basis="auto"`` takes the Nyström basis where the training rows are at least this many
    #: times its centres: with fewer, the factor of ``K_CC`` costs as much as random features'
    #: whole fit (MNIST's first 20,000 rows: 2.13% in 122.6 s against 2.45% in 32.0 s; USPS
    #: 4.78% in 12.9 s against 4.78% in 5.0 s)
    nystroem_rows_per_centre: int = 2
    #: a Nyström fit's ``α`` path at the final size: ``α·factor^k``, ``k ≤ steps``, while each
    #: pays on the held-out rows (the subsample's ``α`` carried as ``α·m/n`` was 20 times the
    #: best on MNIST's centres; docs/decisions/nystroem-basis.md)
    alpha_path_factor: float = 0.25
    alpha_path_steps: int = 3
    #: Newton steps of the squared hinge after least squares (three or more classes, Nyström)
    hinge_finish_steps: int = 4
    #: ``max_iter="auto"`` of the one-pass solver: enough passes for at least this many steps
    min_steps: int = 32
    #: ``loss="auto"`` for two classes by epochs (and compared in the dual on few rows)
    auto_binary_loss: str = "squared_hinge"
    #: ``precond_eps="auto"``: the softmax over three or more classes ...
    precond_eps_softmax: float = 0.1
    #: ... and every other classification loss
    precond_eps_binary: float = 3.0
    #: rows of the training set that calibrate probabilities when no rows are held out
    calibration_rows: int = 20000
    #: a stream's first pass keeps a seeded sample of this many training rows in memory (the
    #: selection's rows, the preconditioner's sketches) ...
    sample_rows: int = 16384
    #: ... and at least this many held-out rows, which score the selection
    validation_sample_rows: int = 4096
    #: ... and as many held-out rows more as this much memory holds (they score each epoch)
    validation_bytes: int = 32 * 2**20
    #: GoGP fits its bandwidth and noise by the exact marginal likelihood (``O(m³)``) on at
    #: most this many first rows
    gogp_evidence_rows: int = 500
    #: above the dual route, in memory: ``σ``, ``α`` (and the binary loss) by the exact
    #: leave-one-out on a seeded subsample of this many training rows ...
    subsample_rows: int = 1024
    #: ... at this many features ...
    subsample_features: int = 2048
    #: ... then one solve at full size per feature size, from this many features, doubled while
    #: the held-out loss falls by more than ``growth_tol``
    solve_start_features: int = 1024
    #: on the dual route's few rows: ``σ`` (and the binary loss) on a subsample of this many ...
    few_rows_subsample: int = 512
    #: ... then every row solved exactly at most this many features
    few_rows_features: int = 4096
    #: the subsample keeps the squared hinge for ``b − c > z√(b + c)`` fewer leave-one-out errors
    #: (McNemar) at this ``z``: one standard error, as a spurious hinge costs little and a
    #: missed one much (records: docs/decisions/subsample-route.md)
    subsample_loss_z: float = 1.0
    #: ``σ/2``, ``σ/4`` (at most ``narrowings`` halvings) challenge the subsample's ``σ`` by one
    #: solve each on this many training rows, judged on the held-out rows
    narrow_rows: int = 16384
    narrowings: int = 3
    #: from this many training rows (four times ``narrow_rows``), ``refine_factor·σ`` also
    #: challenges ``σ`` by one solve on every training row at the growth's start size: the best
    #: bandwidth narrows with the rows, and a few rows cannot see it (the 2-D set: the widest
    #: tried up to 65,536 rows, 0.45 on 943,718; docs/decisions/bandwidth-refinement.md)
    refine_rows: int = 65536
    refine_factor: float = 2**-0.25
    #: ... kept for a lower held-out loss by this many standard errors: both bandwidths cost the
    #: same from there on, and the subsample's choice errs wide
    refine_z: float = 1.0
    #: where the training rows are at least ``look_back_rows_per_feature`` per feature of the
    #: first doubled size, the first doubling follows only a look back that paid: a solve at half
    #: the start features (fresh draws, the same ``σ`` and ``α``) beaten by the start size by more
    #: than ``growth_tol`` on the held-out rows. With many rows per feature the held-out gains are
    #: the features' approximation alone; where they saturate they fall tenfold a doubling (the
    #: 2-D set at 943,718 rows: 512 -> 1,024 gained 2.8e-4 of the loss, 1,024 -> 2,048 2.4e-5,
    #: and that doubling cost 13 of 34 s; docs/decisions/feature-look-back.md)
    look_back_rows_per_feature: int = 256
    #: least squares' preconditioner sketches ``sketch_ratio·n/D`` rows (at least the subsample),
    #: doubled while ``sketch_patience`` conjugate-gradient iterations do not converge
    sketch_ratio: int = 8
    sketch_patience: int = 25
    #: ... while its float64 features take at most this share of ``cache_bytes``
    sketch_cache_share: float = 0.5
    #: the Woodbury preconditioner runs in float64 where the features' round-off ``ε/α``
    #: exceeds this (float32: ``α < 1.2e-5``; QM7 at ``α = 1e-9`` diverged in float32, MNIST and
    #: a9a at ``3e-5`` took the same iterations in float32 at half the cost;
    #: docs/decisions/cached-route.md)
    woodbury_max_roundoff: float = 0.01
    #: the fitted map of a cached fit pins its ``d × D`` parameters within this share of
    #: ``cache_bytes`` (QM7's predict redrew them every 64 rows: 160 s, pinned 15 s)
    param_cache_share: float = 0.125
    #: a regressor's ``sigma="auto"`` also tries per-feature lengthscales of greatest GP
    #: marginal likelihood on this many subsample rows, by at most this many L-BFGS iterations
    lengthscale_rows: int = 500
    lengthscale_iterations: int = 30
    #: the cached features of the training rows take at most this many bytes (else: epochs):
    #: a third of the machine's memory, at most 8 GiB
    cache_bytes: int = field(default_factory=lambda: default_cache_bytes())
    #: ... in float16 where the kernel's features are bounded (cosines, sines) and the fit's
    #: dtype float32: half the memory to fill and to read per pass, the same errors
    #: (record: docs/decisions/half-precision-cache.md)
    half_cache: bool = True
    #: each solve's conjugate gradients stop at this relative residual, times ``√(α/α₀)`` for
    #: ``α`` below ``α₀ = solve_tol_alpha``: the fitted values' error is at most ``‖r‖/√α``
    #: (``‖θ − θ*‖_H ≤ ‖r‖_{H⁻¹}``), so near interpolation needs a smaller residual (QM7 at
    #: ``α = 1e-9``: 3.45 kcal/mol at 3e-3, 3.36 at 1e-4; docs/decisions/cached-route.md) ...
    solve_tol: float = 1e-3
    solve_tol_alpha: float = 1e-7
    #: ... or after this many iterations
    solve_max_iter: int = 200
    #: Newton steps of the squared hinge (each a least-squares solve on its active rows)
    newton_max_steps: int = 30
    #: ... each solved to ``newton_forcing·min(1, last step's relative length)`` while that is
    #: looser than the solve's tolerance (inexact Newton)
    newton_forcing: float = 0.1
    #: a Newton step's conjugate gradients run over the rows inside some column's margin alone
    #: where they are at most this share of the rows (copying them costs about one pass over
    #: the cache; each iteration then reads only them)
    newton_restrict_share: float = 0.75
    #: a piecewise-linear loss (hinge, absolute, quantile, ε-insensitive) is solved by Newton
    #: on its Moreau envelope of each of these widths in turn, warm (the last one is the loss
    #: the model minimises; targets standardised, margins of 1)
    smoothing_path: tuple[float, ...] = (1.0, 0.1)
    #: ... each step's preconditioner factors the sketch rows of curvature at least this share
    #: of the largest (the others, outside a hinge's zone or far from a logistic boundary,
    #: add little to the Hessian)
    newton_sketch_share: float = 1e-3


#: the limits every estimator plans with
LIMITS = FitLimits()


@dataclass(frozen=True)
class DataShape:
    """What the planner knows of the data: rows, columns, sparsity, classes, where they live.

    ``n_train`` is the training rows after the validation split (``None``: the planner applies
    the split rule of in-memory arrays); ``selection_rows`` the rows in memory that choose
    ``σ`` and ``α`` (all rows for arrays; the first pass's sample for a stream).
    """

    n_rows: int
    n_features: int
    sparse: bool = False
    n_classes: int | None = None
    stream: bool = False
    n_train: int | None = None
    selection_rows: int | None = None


@dataclass(frozen=True)
class FitPlan:
    """What a fit does and why: the output of :func:`plan_fit`, kept as ``fit_plan_``."""

    estimator: str
    shape: DataShape
    #: "dual" (few rows: chosen by leave-one-out on a subsample, every row solved exactly in the
    #: dual), "subsample" (chosen on a subsample, solved once per feature size on cached
    #: features), "epochs" (the converging solver), "warm_start" (grows the fitted model),
    #: "one_pass" (the paper's Algorithm 1)
    route: str
    #: the loss trained ("auto" resolved; "logistic" is the softmax over three or more classes)
    loss: str
    #: the dual route's losses, the first kept unless another makes clearly fewer errors
    losses_compared: tuple[str, ...]
    #: how ``σ`` and ``α`` are chosen: "leave_one_out", "dual_subsample", "cross_validation",
    #: "race", "validation" (``α`` side by side only) or "none"
    selection: str
    #: the method used when the dual subsample finds no converged candidate
    fallback_selection: str | None
    #: rows that choose ``σ`` and ``α``
    selection_rows: int
    #: ``σ`` candidates as multiples of the median distance (``None``: ``sigma`` as given)
    sigma_scales: tuple[float, ...] | None
    #: ``α`` candidates (one: the value given)
    alphas: tuple[float, ...]
    #: ``α`` candidates of the dual route and the dual subsample
    dual_alphas: tuple[float, ...]
    #: features per block, blocks to start from, most blocks (growth doubles up to it)
    block_size: int
    start_blocks: int
    max_blocks: int | None
    #: blocks of each selection candidate, judged "direct" (exact optimum) or by "epochs"
    race_blocks: int
    judge: str
    #: the inner solver: "dual", "pcg" (cached features), "sgd" (preconditioned), "cg", "one_pass"
    solver: str
    precond_eps: float | None
    #: stopping: most epochs, validation early stopping, its tolerance and patience
    max_iter: int
    early_stopping: bool
    tol: float | None
    n_iter_no_change: int
    #: a held-out fraction of the rows (``None``: every row trains)
    validation_fraction: float | None
    #: ``σ/2`` (then ``σ/4``) challenge the winner at the final feature size
    narrow: bool
    growth_tol: float
    reasons: tuple[str, ...] = field(default=())
    #: the subsample route: features of the selection, the cache's byte budget, and the rows
    #: and blocks of the narrowing check
    selection_features: int = 0
    cache_bytes: int | None = None
    #: the cached features' dtype ("float16", "float32" or "float64")
    cache_dtype: str = "float32"
    narrow_rows: int = 0
    narrow_blocks: int = 0
    #: ``refine_factor·σ`` challenges ``σ`` on every training row at the start size
    refine: bool = False
    #: the first doubling only where half the start features lose to the start size
    look_back: bool = False
    #: the subsample route's basis (``basis``): "random_features" (the kernel's feature map) or
    #: "nystroem" (``block_size·max_blocks`` training rows as centres)
    basis: str = "random_features"
    #: ``α·alpha_path_factor^k`` challenge the carried ``α`` at the final size while each pays
    #: on the held-out rows (a Nyström basis with ``alpha="auto"``)
    alpha_path: bool = False
    #: the squared hinge's Newton from the least-squares solution, kept unless least squares
    #: makes clearly fewer held-out errors (``loss="auto"``, three or more classes, Nyström)
    hinge_finish: bool = False
    #: the rows and L-BFGS iterations of a regressor's per-feature lengthscales (0: none)
    lengthscale_rows: int = 0
    lengthscale_iterations: int = 0
    #: the thresholds the fit runs with (``solve_tol`` and ``newton_max_steps`` as ``tol`` and
    #: ``max_iter`` set them): no executor reads a global table
    limits: FitLimits = field(default=LIMITS, repr=False, compare=False)
    #: after an engine fit, what each stage did and cost (:class:`~kernelstream.solvers.stages.StageLog`)
    stages: tuple[dict, ...] = field(default=(), repr=False, compare=False)

    @property
    def n_components(self) -> int:
        """Most features the fit may use (``block_size · max_blocks``; None: no bound)."""
        return None if self.max_blocks is None else self.block_size * self.max_blocks

    def __str__(self) -> str:
        s = self.shape
        kind = "sparse " if s.sparse else ""
        where = "a stream" if s.stream else f"{kind}arrays"
        head = f"{self.estimator}.fit on {where} of {s.n_rows:,} rows x {s.n_features:,} features"
        if s.n_classes is not None:
            head += f", {s.n_classes} classes"
        loss = (" or ".join(map(repr, self.losses_compared)) if len(self.losses_compared) > 1
                else repr(self.loss))
        if self.loss == "logistic" and (s.n_classes or 0) > 2:
            loss += f" (the softmax over {s.n_classes} classes)"
        if self.hinge_finish:
            loss += ", then 'squared_hinge' one-vs-rest where it pays"
        lines = [head + ":", f"  route: {self.route} (solver {self.solver!r}), loss {loss}"]
        lines += [f"  - {reason}" for reason in self.reasons]
        if self.stages:
            total = sum(r["seconds"] for r in self.stages)
            lines.append(f"  stages ({total:.2f} CPU s in all):")
            lines += [f"  - {_stage_line(record)}" for record in self.stages]
        return "\n".join(lines)


def _stage_line(record: dict) -> str:
    """One stage of a fit in words: its name, CPU seconds and facts."""
    facts = []
    for key, value in record.items():
        if key in ("stage", "seconds"):
            continue
        if isinstance(value, float):
            value = f"{value:.4g}"
        elif hasattr(value, "__len__") and not isinstance(value, str):
            value = f"{len(value)} lengthscales"
        facts.append(f"{key.replace('_', ' ')} {value}")
    return f"{record['stage']}: {record['seconds']:.2f} s" + (f" ({', '.join(facts)})" if facts else "")


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


def resolve_loss(loss: str, solver: str, n_classes: int | None, few_rows: bool,
                 limits: FitLimits = LIMITS) -> str:
    """``loss`` with "auto" resolved (record: docs/decisions/auto-binary-loss.md).

    Regressors (``n_classes`` None) keep their loss. For classifiers, "auto" is the squared
    hinge for two classes by the converging solver, least squares for conjugate gradients and
    for three or more classes on few rows (the exact dual route), else the logistic loss
    (softmax); "log_loss" is spelled "logistic".
    """
    if n_classes is None or loss != "auto":
        return "logistic" if loss == "log_loss" else loss
    if solver in ("preconditioned", "sgd") and n_classes == 2:
        return limits.auto_binary_loss
    if solver == "cg" or (solver == "preconditioned" and few_rows):
        return "squared"
    return "logistic"


def _dual_possible(shape: DataShape, params: dict, limits: FitLimits) -> bool:
    """The dual route's conditions but the loss's: the engine's solver ("preconditioned" or
    "cg"), a cache (``cache_bytes=0`` never caches: epochs), few rows in memory (sparse ones only when their dense copy is small)."""
    return (not shape.stream and params["solver"] in ENGINE_SOLVERS and limits.cache_bytes > 0
            and shape.n_rows <= limits.dual_max_rows
            and (not shape.sparse or shape.n_rows * shape.n_features <= limits.dual_dense_floats))


def _subsample_split(shape: DataShape, params: dict) -> tuple[int, float | None]:
    """``(training rows, held-out fraction or None)`` of the subsample route: every row trains
    where nothing is judged on held-out rows (``σ``, ``α`` and ``n_components`` given)."""
    if params["n_components"] is not None and not chooses(params):
        return shape.n_train or shape.n_rows, None
    return _split(shape, params, chooses(params))


def _check_cache_budget(shape: DataShape, params: dict, limits: FitLimits) -> None:
    """A budget the user set (``cache_bytes`` a positive number) that cannot hold the features
    asked for is an error; "auto" and 0 go by epochs."""
    budget = params.get("cache_bytes", "auto")
    if is_auto(budget) or int(budget) == 0:
        return
    n_train = _subsample_split(shape, params)[0]
    size, blocks = feature_layout(params["n_components"], params["block_size"])
    need = _cache_item_bytes(params, limits) * (n_train + 1) * size * (blocks or 1)
    raise ValueError(f"cache_bytes={int(budget):,} cannot hold the cached features of "
                     f"{n_train:,} training rows x {size * (blocks or 1):,} features "
                     f"({need:,} bytes); raise cache_bytes, pass fewer n_components, or set "
                     "cache_bytes='auto' (the epochs route where they do not fit) or 0 (never cache).")


def _cache_holds_a_block(shape: DataShape, params: dict, limits: FitLimits) -> bool:
    """Whether the cache's budget holds one block (or the given budget) of the training rows."""
    n_train = _subsample_split(shape, params)[0]
    size, blocks = feature_layout(params["n_components"], params["block_size"])
    return _cache_item_bytes(params, limits) * (n_train + 1) * size * (blocks or 1) <= limits.cache_bytes


def cache_dtype(params: dict, limits: FitLimits = LIMITS) -> str:
    """The cached features' dtype: float16 for a kernel whose features are bounded
    (:attr:`~kernelstream.features.base.FeatureMap.bounded`) where the fit's dtype is float32
    and ``limits.half_cache``; else the fit's dtype."""
    dtype = params.get("dtype", "float32")
    bounded = params.get("kernel") in KERNELS and kernel_class(params["kernel"]).bounded
    return "float16" if limits.half_cache and dtype == "float32" and bounded else dtype


def _cache_item_bytes(params: dict, limits: FitLimits) -> int:
    return {"float16": 2, "float32": 4, "float64": 8}[cache_dtype(params, limits)]


def _subsample_possible(shape: DataShape, params: dict, limits: FitLimits) -> bool:
    """The subsample route's conditions but the loss's and the cache's: arrays beyond the dual
    route with the engine's solver ("preconditioned" or "cg") and a subsample whose dense copy
    is small."""
    return (not shape.stream and params["solver"] in ENGINE_SOLVERS
            and shape.n_rows > limits.dual_max_rows
            and limits.subsample_rows * shape.n_features <= limits.dual_dense_floats)


def resolve_precond_eps(eps, loss: str, n_classes: int | None,
                        limits: FitLimits = LIMITS) -> float | None:
    """``precond_eps`` with "auto" resolved by the loss (record: docs/decisions/precond-eps.md):
    light damping for the softmax over three or more classes, heavier for the rest."""
    if eps != "auto":
        return None if eps is None else float(eps)
    softmax = loss in ("logistic", "softmax") and (n_classes or 0) > 2
    return limits.precond_eps_softmax if softmax else limits.precond_eps_binary


def _common(estimator: str, shape: DataShape, params: dict, limits: FitLimits, loss: str) -> dict:
    """The fields every route shares: the stopping rule and the preconditioner's ``ε``."""
    auto = params["max_iter"] == "auto"
    return dict(estimator=estimator, shape=shape, loss=loss, early_stopping=params["early_stopping"],
                tol=params["tol"], n_iter_no_change=params["n_iter_no_change"],
                max_iter=limits.max_iter if auto else int(params["max_iter"]),
                precond_eps=resolve_precond_eps(params.get("precond_eps"), loss,
                                                shape.n_classes, limits),
                growth_tol=limits.growth_tol)


def is_auto(value) -> bool:
    """Whether a parameter is the string "auto" (``sigma`` may be an array of lengthscales)."""
    return isinstance(value, str) and value == "auto"


def chooses(params: dict) -> bool:
    """Whether the fit chooses ``σ`` or ``α`` (either is "auto"): it then needs held-out rows."""
    return is_auto(params["sigma"]) or params["alpha"] == "auto"


def _candidates(params: dict, limits: FitLimits) -> tuple[tuple | None, tuple, tuple]:
    """``(σ scales or None, α candidates by epochs, α candidates in the dual)``."""
    scales = limits.sigma_scales if is_auto(params["sigma"]) else None
    given = (float(params["alpha"]),) if params["alpha"] != "auto" else None
    return scales, given or limits.alphas, given or limits.dual_alphas


def plan_fit(estimator: str, shape: DataShape, params: dict, *, warm: bool = False,
             limits: FitLimits = LIMITS) -> FitPlan:
    """The plan of a ``fit`` of ``estimator`` (its class name) with ``params`` (its
    ``get_params()``) on data of ``shape``; ``warm``: a warm start of a fitted model.

    Pure: the same inputs give the same plan, with no data read. See :class:`FitPlan`.
    """
    if params.get("solver", "one_pass") == "one_pass":
        _check_basis(shape, params, limits, params.get("loss", "squared"), why="solver='one_pass'")
        return dataclasses.replace(_one_pass_plan(estimator, shape, params, limits), limits=limits)
    budget = params.get("cache_bytes", "auto")
    if not is_auto(budget):
        limits = dataclasses.replace(limits, cache_bytes=int(budget))
    few_rows = _dual_possible(shape, params, limits)
    subsample = not few_rows and not warm and _subsample_possible(shape, params, limits)
    loss = resolve_loss(params.get("loss", "squared"), params["solver"], shape.n_classes,
                        few_rows or subsample, limits)
    if warm:
        _check_basis(shape, params, limits, loss, warm)
        return dataclasses.replace(_warm_plan(estimator, shape, params, limits, loss), limits=limits)
    if few_rows and engine_solves(loss):
        return _subsample_plan(estimator, shape, params, _engine_limits(params, limits), loss,
                               few_rows=True)
    if subsample and engine_solves(loss):
        if _cache_holds_a_block(shape, params, limits):
            return _subsample_plan(estimator, shape, params, _engine_limits(params, limits), loss)
        _check_cache_budget(shape, params, limits)
    _check_basis(shape, params, limits, loss)
    return dataclasses.replace(_epochs_plan(estimator, shape, params, limits, loss), limits=limits)


def engine_solves(loss: str) -> bool:
    """Whether the engine solves ``loss`` (its name at the planner: "logistic" is also the
    softmax): least squares, the squared hinge and every loss of Newton's method."""
    return loss in DUAL_LOSSES or loss in NEWTON_LOSSES


def _engine_limits(params: dict, limits: FitLimits) -> FitLimits:
    """The limits an engine fit runs with: ``tol`` its solves' tolerance (``None``: the
    table's), ``max_iter`` its Newton steps a solve (``"auto"``: the table's)."""
    changes = {}
    if params.get("tol") is not None:
        changes["solve_tol"] = float(params["tol"])
    if params.get("max_iter", "auto") != "auto":
        changes["newton_max_steps"] = int(params["max_iter"])
    return dataclasses.replace(limits, **changes) if changes else limits


def _check_basis(shape: DataShape, params: dict, limits: FitLimits, loss: str,
                 warm: bool = False, why: str | None = None) -> None:
    """``basis="nystroem"`` where the fit does not take the subsample route: ``ValueError``."""
    if params.get("basis", "random_features") != "nystroem":
        return
    why = why or ("a warm start (the fitted model's basis continues)" if warm else
           "sparse rows (its centres are dense training rows)" if shape.sparse else
           f"{shape.n_rows:,} rows <= dual_max_rows={limits.dual_max_rows:,} (few rows are solved "
           "exactly in the dual)" if shape.n_rows <= limits.dual_max_rows and not shape.stream
           else _why_epochs(shape, params, limits, loss))
    raise ValueError(f"basis='nystroem' needs the subsample route (in-memory dense arrays of more "
                     f"than {limits.dual_max_rows:,} rows, the engine's solver); this "
                     f"fit cannot take it: {why}. Pass basis='random_features'.")


def nystroem_basis(params: dict, shape: DataShape | None = None) -> bool:
    """Whether the subsample route's basis is Nyström: ``basis="nystroem"``, or "auto" for a
    classifier of three or more classes with ``loss="auto"`` on dense rows (where the rows are
    at least ``nystroem_rows_per_centre`` times its centres and the cache holds their kernel
    columns: :func:`_subsample_plan`; record: docs/decisions/nystroem-basis.md)."""
    basis = params.get("basis", "random_features")
    return basis == "nystroem" or (basis == "auto" and shape is not None and _multiclass_auto(shape, params)
                                   and not shape.sparse)


def _multiclass_auto(shape: DataShape, params: dict) -> bool:
    return (shape.n_classes or 0) >= 3 and params.get("loss") == "auto"


def _compared_losses(shape: DataShape, params: dict, loss: str) -> tuple[str, ...]:
    """The losses the subsample's leave-one-out compares: least squares and the squared hinge
    for two classes with ``loss="auto"`` (not with ``solver="cg"``), the loss itself where the
    dual solves it, else least squares (the loss is then solved by Newton at full size)."""
    if shape.n_classes == 2 and params.get("loss") == "auto" and params["solver"] != "cg":
        return ("squared", "squared_hinge")
    if loss in QUADRATIC_LOSSES or (loss == "squared_hinge" and shape.n_classes == 2):
        return (loss,)
    return ("squared",)


def _subsample_plan(estimator, shape, params, limits, loss, few_rows: bool = False) -> FitPlan:
    scales, _, dual_alphas = _candidates(params, limits)
    nystroem = nystroem_basis(params, None if few_rows else shape)
    if nystroem and (few_rows or shape.sparse):
        _check_basis(shape, params, limits, loss)
    losses = _compared_losses(shape, params, loss)
    n_train, fraction = (shape.n_rows, None) if few_rows else _subsample_split(shape, params)
    size, blocks = feature_layout(params["n_components"], params["block_size"])
    if nystroem and params.get("basis") == "auto":  # the full basis, on rows enough, or none
        centres = blocks or max(1, min(limits.nystroem_centres, n_train) // size)
        nystroem = (limits.cache_bytes // (8 * (n_train + 1) * size) >= centres
                    and n_train >= limits.nystroem_rows_per_centre * centres * size)
    item = 8 if nystroem else _cache_item_bytes(params, limits)  # kernel columns: float64 at most
    cached = limits.cache_bytes // (item * (n_train + 1) * size)  # blocks it holds
    if blocks is not None:
        start = most = blocks
    elif few_rows:  # every row trains, one exact solve at the few-row budget
        start = most = max(1, min(dual_features(n_train, limits), limits.few_rows_features) // size)
    elif nystroem:  # one solve at the budget (a growth from 4,096 centres paid each doubling
        # on MNIST, and cost each size's factor and columns anew)
        start = most = max(1, min(limits.nystroem_centres // size, n_train // size, cached))
    else:
        most = max(1, min(max_feature_blocks(n_train, size, limits), cached))
        start = min(most, max(1, limits.solve_start_features // size)) if fraction else most
    m = min(limits.few_rows_subsample if few_rows else limits.subsample_rows, n_train)
    chooses_any = scales is not None or len(dual_alphas) > 1 or len(losses) > 1
    plan = FitPlan(**_common(estimator, shape, params, limits, losses[0] if loss in losses else loss),
                   limits=limits, route="dual" if few_rows else "subsample",
                   losses_compared=losses, selection="leave_one_out" if chooses_any else "none",
                   fallback_selection=None,
                   selection_rows=m, sigma_scales=scales, alphas=dual_alphas,
                   dual_alphas=dual_alphas, block_size=size, start_blocks=start, max_blocks=most,
                   race_blocks=0, judge="direct", solver="dual" if few_rows else "pcg",
                   validation_fraction=fraction,
                   narrow=not few_rows and is_auto(params["sigma"]) and fraction is not None,
                   selection_features=min(limits.subsample_features, size * most),
                   cache_bytes=limits.cache_bytes,
                   cache_dtype=params.get("dtype", "float32") if nystroem else cache_dtype(params, limits),
                   narrow_rows=limits.narrow_rows,
                   refine=(not few_rows and is_auto(params["sigma"]) and fraction is not None
                           and n_train >= limits.refine_rows),
                   narrow_blocks=min(start, max(1, limits.solve_start_features // size)),
                   look_back=(not few_rows and not nystroem and fraction is not None
                              and most > start and looks_back(n_train, 2 * start * size, limits)),
                   basis="nystroem" if nystroem else "random_features",
                   alpha_path=nystroem and is_auto(params["alpha"]) and fraction is not None,
                   hinge_finish=nystroem and _multiclass_auto(shape, params) and fraction is not None,
                   lengthscale_rows=limits.lengthscale_rows,
                   lengthscale_iterations=limits.lengthscale_iterations)
    return dataclasses.replace(plan, reasons=_subsample_reasons(plan, params, limits, n_train))


def _subsample_reasons(plan: FitPlan, params: dict, limits: FitLimits, n_train: int) -> tuple[str, ...]:
    s = plan.shape
    chooses_any = plan.selection != "none"
    few = plan.route == "dual"
    solver = f"solver={params['solver']!r}"
    reasons = [f"{s.n_rows:,} rows <= dual_max_rows={limits.dual_max_rows:,} with {solver}: "
               "every row trains, chosen on a subsample, solved exactly in the dual"
               if few else
               f"{s.n_rows:,} rows > dual_max_rows={limits.dual_max_rows:,} in memory with "
               f"{solver}: chosen on a subsample, solved once per feature size",
               _losses_reason(plan.losses_compared).replace("leave-one-out", "subsample leave-one-out")
               if plan.loss in plan.losses_compared else _newton_reason(plan, limits)]
    reasons.append(f"{_grid(plan.sigma_scales, plan.dual_alphas)} by the exact leave-one-out on "
                   f"{plan.selection_rows:,} seeded training rows at {plan.selection_features:,} "
                   "features" + ("; alpha carried to the training rows as alpha*m/n"
                                 if params["alpha"] == "auto" else "")
                   if chooses_any else "sigma and alpha as given")
    if plan.validation_fraction is not None:
        reasons.append(f"{n_train:,} rows train, a fraction {plan.validation_fraction:g} is held "
                       "out to judge the feature sizes")
    elif not few:
        reasons.append(f"every one of the {n_train:,} rows trains: sigma, alpha and n_components "
                       "given leave nothing to judge on held-out rows")
    if plan.narrow:
        reasons.append(f"sigma/2, sigma/4, ... (at most {limits.narrowings}) challenge the "
                       f"subsample's sigma while they pay on the held-out rows, each one solve on "
                       f"{plan.narrow_rows:,} rows (where the training rows are more) at "
                       f"{plan.narrow_blocks * plan.block_size:,} features")
    reasons += _full_size_checks(plan, limits, n_train)
    if few:
        reasons.append(f"{plan.n_components:,} features ({plan.max_blocks} blocks of "
                       f"{plan.block_size}): " + ("n_components as given" if params["n_components"]
                                                  is not None else "the dual budget max(16·sqrt(n)"
                                                  f"·ln n, 2^24/n) <= {limits.few_rows_features:,}"))
        return tuple(reasons)
    if plan.basis == "nystroem":
        return tuple(reasons + [_nystroem_reason(plan, params, limits)])
    reasons.append(f"features cached in {plan.cache_dtype} (at most {limits.cache_bytes / 2**30:.3g} GiB), from "
                   f"{plan.start_blocks} to at most {plan.max_blocks} blocks of {plan.block_size}, "
                   f"doubled while the held-out loss falls by more than {limits.growth_tol:g}"
                   + (f" and the last doubling changed more than {limits.settled_class_changes} "
                      "held-out row's class" if s.n_classes is not None else "")
                   + "; each size one solve by conjugate gradients with a Nystrom preconditioner"
                   + (" (the squared hinge: Newton on its active rows)"
                      if "squared_hinge" in plan.losses_compared else ""))
    return tuple(reasons)


def _newton_reason(plan: FitPlan, limits: FitLimits) -> str:
    """How a loss that the subsample's leave-one-out does not solve is chosen for and solved."""
    smoothed = plan.loss in ("hinge", "absolute", "quantile", "epsilon_insensitive")
    return (f"loss {plan.loss!r}: sigma and alpha by least squares' leave-one-out, then each "
            f"solve by damped Newton steps (at most newton_max_steps={limits.newton_max_steps} "
            "a solve, each a preconditioned conjugate-gradient solve to "
            f"solve_tol={limits.solve_tol:g} at the end)"
            + (f" on the loss's envelopes of widths {', '.join(f'{m:g}' for m in limits.smoothing_path)}"
               if smoothed else ""))


def _full_size_checks(plan: FitPlan, limits: FitLimits, n_train: int) -> list[str]:
    """The subsample route's checks on every training row (refinement, look back), in words."""
    checks, start = [], plan.start_blocks * plan.block_size
    if plan.refine:
        checks.append(f"{n_train:,} training rows >= refine_rows={limits.refine_rows:,}: "
                      f"{limits.refine_factor:.3g} x sigma challenges sigma by one solve on every "
                      f"training row at {start:,} features")
    if plan.look_back:
        checks.append(f"{n_train:,} training rows >= {limits.look_back_rows_per_feature} per "
                      f"feature of {2 * start:,}: the first doubling only where {start // 2:,} "
                      "features (one solve on every training row) lose to the start size by more "
                      "than growth_tol")
    return checks


def _nystroem_reason(plan: FitPlan, params: dict, limits: FitLimits) -> str:
    """The basis and solve of ``basis="nystroem"``, in words."""
    return (f"basis='nystroem': {plan.n_components:,} training rows in a seeded order are the "
            + ("centres (n_components as given)" if params["n_components"] is not None else
               f"centres (at most nystroem_centres={limits.nystroem_centres:,} and the rows)")
            + f"; their kernel columns cached in {plan.cache_dtype} (float64 where alpha < "
            f"{limits.nystroem_max_roundoff:g} x float32's round-off), one solve by conjugate "
            "gradients with a Nystrom preconditioner"
            + (" (the squared hinge: Newton on its active rows)"
               if "squared_hinge" in plan.losses_compared else "")
            + (f"; alpha x {limits.alpha_path_factor:g}^k (at most {limits.alpha_path_steps}, "
               "while float32 round-off allows) challenges the carried alpha, each warm, while "
               "it pays on the held-out rows" if plan.alpha_path else "")
            + ("; loss='auto' on three or more classes: the squared hinge one-vs-rest by Newton "
               f"from least squares' solution (at most {limits.hinge_finish_steps} steps, while "
               "each pays on the held-out rows), kept unless least squares makes significantly "
               "fewer held-out errors (McNemar)" if plan.hinge_finish else ""))


def _losses_reason(losses: tuple[str, ...]) -> str:
    if len(losses) == 1:
        return f"loss {losses[0]!r}"
    return (f"loss='auto' on two classes: {' and '.join(map(repr, losses))} both solved, "
            f"{losses[1]!r} kept only for significantly fewer leave-one-out errors (McNemar)")


def _grid(scales, alphas) -> str:
    sigma = ("sigma in {" + ", ".join(f"{s:g}" for s in scales) + "} x median distance"
             if scales else "the sigma given")
    alpha = (f"{len(alphas)} alphas from {max(alphas):g} to {min(alphas):g}" if len(alphas) > 1
             else f"alpha={alphas[0]:g}")
    return f"{sigma} and {alpha}"


def _split(shape: DataShape, params: dict, needs_race: bool) -> tuple[int, float | None]:
    """``(training rows, validation fraction or None)`` of the epochs' split."""
    if not (params["early_stopping"] or needs_race):
        return shape.n_train or shape.n_rows, None
    fraction = params["validation_fraction"]
    n_train = shape.n_train if shape.n_train is not None else (
        shape.n_rows - math.ceil(fraction * shape.n_rows))
    return n_train, fraction


def _selection(shape, params, limits, loss, scales, alphas, n_selection) -> tuple[str, str | None]:
    """``(selection method, fallback of the dual subsample)`` of the epochs route."""
    several = (scales is not None) or len(alphas) > 1
    if several and n_selection <= limits.cv_max_rows:
        main = "cross_validation"
    elif scales is not None:
        main = "race"
    else:
        main = "validation" if len(alphas) > 1 else "none"
    subsample = (several and shape.n_classes == 2 and loss == "squared_hinge"
                 and n_selection <= limits.cv_max_rows
                 and limits.dual_max_rows * shape.n_features <= limits.dual_dense_floats)
    return ("dual_subsample", main) if subsample else (main, None)


def _epochs_plan(estimator, shape, params, limits, loss) -> FitPlan:
    scales, alphas, dual_alphas = _candidates(params, limits)
    n_train, fraction = _split(shape, params, chooses(params))
    n_selection = shape.selection_rows if shape.selection_rows is not None else shape.n_rows
    selection, fallback = _selection(shape, params, limits, loss, scales, alphas, n_selection)
    size, blocks = feature_layout(params["n_components"], params["block_size"])
    start, most = (blocks, blocks) if blocks is not None else (
        1, max_feature_blocks(n_train, size, limits))
    race_blocks = min(start, limits.race_blocks)
    direct = loss in QUADRATIC_LOSSES and race_blocks * size + 1 <= limits.direct_max_features
    solver = "cg" if params["solver"] == "cg" else "sgd"
    plan = FitPlan(**_common(estimator, shape, params, limits, loss), route="epochs",
                   losses_compared=(loss,), selection=selection, fallback_selection=fallback,
                   selection_rows=n_selection, sigma_scales=scales, alphas=alphas,
                   dual_alphas=dual_alphas, block_size=size, start_blocks=start, max_blocks=most,
                   race_blocks=race_blocks, judge="direct" if direct else "epochs", solver=solver,
                   validation_fraction=fraction, narrow=is_auto(params["sigma"]))
    return dataclasses.replace(plan, reasons=_epochs_reasons(plan, params, limits, n_train))


def _why_epochs(s: DataShape, params: dict, limits: FitLimits, loss: str) -> str:
    """Why a fit goes by epochs rather than the dual or the subsample route, in words."""
    if s.stream:
        return "a stream"
    if params["solver"] not in ENGINE_SOLVERS:
        return f"solver={params['solver']!r}: the paper's doubly stochastic epochs"
    if not engine_solves(loss):
        return f"loss {loss!r} has no solver on the engine"
    if s.n_rows <= limits.dual_max_rows:
        return f"sparse rows whose dense copy exceeds {limits.dual_dense_floats:,} values"
    if limits.subsample_rows * s.n_features > limits.dual_dense_floats:
        return f"{s.n_features:,} columns: the subsample's dense copy exceeds {limits.dual_dense_floats:,} values"
    return f"one block of features of every training row exceeds cache_bytes={limits.cache_bytes:,}"


def _epochs_reasons(plan: FitPlan, params: dict, limits: FitLimits, n_train: int) -> tuple[str, ...]:
    s = plan.shape
    why_not_dual = _why_epochs(s, params, limits, plan.loss)
    reasons = [f"epochs of the {'conjugate-gradient' if plan.solver == 'cg' else 'preconditioned SGD'} "
               f"solver ({why_not_dual})"]
    if plan.validation_fraction is not None:
        reasons.append(f"{n_train:,} rows train, a fraction {plan.validation_fraction:g} is held "
                       "out to validate")
    reasons.append(_selection_reason(plan, limits))
    budget = ("n_components as given" if params["n_components"] is not None else
              f"budget 16·sqrt(n)·ln n for n={n_train:,}, in "
              f"[{limits.min_default_features:,}, {limits.max_default_features:,}]")
    reasons.append(f"features: from {plan.start_blocks} to at most {plan.max_blocks} blocks of "
                   f"{plan.block_size} ({budget}), doubled while the validation loss falls by more "
                   f"than {limits.growth_tol:g}")
    if plan.narrow:
        reasons.append("sigma/2 (then sigma/4) challenge the winner at the final size")
    reasons.append(f"at most {plan.max_iter} epochs" + (
        f", stopped after {plan.n_iter_no_change} without improvement by {plan.tol}"
        if plan.early_stopping else ""))
    return tuple(reasons)


def _selection_reason(plan: FitPlan, limits: FitLimits) -> str:
    grid = _grid(plan.sigma_scales, plan.alphas)
    n = plan.selection_rows
    text = {
        "cross_validation": f"{grid} by 5-fold cross-validation on {n:,} rows "
                            f"(<= cv_max_rows={limits.cv_max_rows:,}), "
                            f"{plan.race_blocks} block each, judged {plan.judge}",
        "race": f"{grid} raced by successive halving on the held-out rows ({n:,} rows > "
                f"cv_max_rows={limits.cv_max_rows:,}), {plan.race_blocks} block each",
        "validation": f"the sigma given; {grid} trained side by side, the best on validation kept",
        "none": "sigma and alpha as given",
    }
    if plan.selection == "dual_subsample":
        return (f"{_grid(plan.sigma_scales, plan.dual_alphas)} by the exact leave-one-out of the "
                f"squared hinge on a seeded subsample of at most {limits.dual_max_rows:,} rows "
                f"(two classes, {n:,} rows <= cv_max_rows); if no candidate converges: "
                + text[plan.fallback_selection])
    return text[plan.selection]


def _warm_plan(estimator, shape, params, limits, loss) -> FitPlan:
    plan = _epochs_plan(estimator, shape, params, limits, loss)
    return dataclasses.replace(
        plan, route="warm_start", selection="none", fallback_selection=None, narrow=False,
        reasons=("warm_start: the fitted model's sigma, alpha and features continue; "
                 "features grow from the fitted size",) + plan.reasons[-1:])


def _one_pass_plan(estimator, shape, params, limits) -> FitPlan:
    solver = params.get("solver", "one_pass")
    loss = resolve_loss(params.get("loss", "squared"), "one_pass", shape.n_classes, False, limits)
    size, blocks = feature_layout(params.get("n_components"), params["block_size"])
    most = blocks  # without n_components, a block per step, no bound
    alpha = params.get("alpha", limits.one_pass_alpha)
    alpha = limits.one_pass_alpha if alpha == "auto" else float(alpha)
    steps = max(1, round(shape.n_rows / params["batch_size"]))
    epochs = (max(1, math.ceil(limits.min_steps / steps)) if params.get("max_iter", "auto") == "auto"
              else int(params["max_iter"]))
    reasons = (f"solver={solver!r}: the paper's Algorithm 1, one new block of {size} features "
               f"per step of {params['batch_size']} rows",
               (f"sigma = {params.get('sigma_scale', 1.0):g} x the median distance"
                if isinstance(params.get("sigma"), str) else "sigma as given")
               + f", alpha={alpha:g}", f"{epochs} epoch(s) of {steps} steps")
    return FitPlan(estimator=estimator, shape=shape, loss=loss, route="one_pass",
                   losses_compared=(loss,), selection="none", fallback_selection=None,
                   selection_rows=0, sigma_scales=None, alphas=(alpha,), dual_alphas=(alpha,),
                   block_size=size, start_blocks=1, max_blocks=most, race_blocks=0, judge="none",
                   solver="one_pass", precond_eps=None, max_iter=epochs, early_stopping=False,
                   tol=None, n_iter_no_change=0, validation_fraction=None, narrow=False,
                   growth_tol=limits.growth_tol, reasons=reasons)


@dataclass(frozen=True)
class GaussianProcessPlan:
    """What :class:`DSGGaussianProcessRegressor` and :class:`GoGPRegressor` choose for the user:
    the output of :func:`plan_gaussian_process`, kept as ``fit_plan_``."""

    estimator: str
    shape: DataShape
    #: the hyper-parameters fitted by the marginal likelihood (ML-II), "sigma" and "noise"
    chosen: tuple[str, ...]
    #: rows of that fit (0: nothing is fitted)
    evidence_rows: int
    #: the GP's variance route ("targets", "landmarks", "operator"); GoGP's variant
    route: str
    reasons: tuple[str, ...] = ()

    def __str__(self) -> str:
        s = self.shape
        lines = [f"{self.estimator}.fit on {s.n_rows:,} rows x {s.n_features:,} features:",
                 f"  route: {self.route}"]
        return "\n".join(lines + [f"  - {reason}" for reason in self.reasons])


def plan_gaussian_process(estimator: str, shape: DataShape, params: dict, *,
                          test_points: bool = False, limits: FitLimits = LIMITS) -> GaussianProcessPlan:
    """The plan of a GP (``estimator="DSGGaussianProcessRegressor"``) or GoGP fit: which
    hyper-parameters the marginal likelihood fits and on how many rows, and the route;
    ``test_points``: the GP was given ``X_variance``. Pure, as :func:`plan_fit`."""
    chosen = tuple(name for name in ("sigma", "noise") if is_auto(params[name]))
    gogp = estimator == "GoGPRegressor"
    most = limits.gogp_evidence_rows if gogp else params["evidence_size"]
    rows = min(shape.n_rows, most) if chosen and (gogp or shape.n_rows >= 3) else 0
    if gogp:
        route = params["variant"]
    else:
        route = params["variance_method"]
        route = ("targets" if test_points else "landmarks") if route == "auto" else route
    per_feature = ("sigma" in chosen and shape.n_features >= 2
                   and params.get("kernel", "rbf") in ("rbf", "laplace", "matern"))
    where = (f"{rows:,} {'first' if gogp else 'seeded'} rows (at most "
             f"{'gogp_evidence_rows' if gogp else 'evidence_size'}={most:,})")
    if not chosen:
        reasons = ["sigma and noise as given"]
    elif per_feature and rows >= MIN_ROWS_PER_LENGTHSCALE * shape.n_features:
        reasons = [f"{' and '.join(chosen)} by the marginal likelihood on {where}, sigma both as one "
                   "bandwidth and as one lengthscale per feature" + ("" if gogp else
                                                                     " (amplitude at most var(y))")
                   + "; the per-feature lengthscales kept only if their leave-one-out error there "
                   f"is at most {PER_FEATURE_LOO_RATIO:g} x the bandwidth's (kernel_choice_ says which)"]
    else:
        reasons = [f"{' and '.join(chosen)} (and the amplitude) by the marginal likelihood on {where}"
                   + (f"; one bandwidth: fewer than {MIN_ROWS_PER_LENGTHSCALE} evidence rows per "
                      "feature" if per_feature else "")]
    if gogp:
        reasons.append("join_threshold " + ("sqrt(noise): a point joins when its distance to "
                                            "the inducing set's span exceeds the noise's"
                                            if params["join_threshold"] == "auto" else "as given"))
    else:
        reasons.append(f"variance by the {route!r} route" + (
            " (variance_method='auto': X_variance was given)" if params["variance_method"] == "auto"
            and test_points else " (variance_method='auto': no X_variance)"
            if params["variance_method"] == "auto" else ""))
    return GaussianProcessPlan(estimator, shape, chosen, rows, route, tuple(reasons))
