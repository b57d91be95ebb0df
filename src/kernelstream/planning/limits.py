"""The planner's knobs: :class:`FitLimits`, every threshold of the automatic choices, one
line each, and :data:`LIMITS`, the table every estimator plans with (records: ``docs/decisions/``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..solvers.direct import DIRECT_MAX_FEATURES
from ..solvers.dual import DUAL_MAX_ROWS

__all__ = ["FitLimits", "LIMITS", "default_cache_bytes", "fit_limits"]


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
    #: a stream read by one process whose rows take at most this many bytes (as read: dense
    #: or CSR) is read into memory in one pass and fitted as arrays, by the engine: the model of
    #: the in-memory fit (a9a's two LIBSVM shards: 14.69% as in memory, where the epochs took
    #: 20 times the CPU; docs/decisions/cost-model.md)
    stream_rows_bytes: int = 2**30
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
    #: ``DSGGaussianProcessRegressor``'s exact posterior (one Cholesky factorisation, ``n³/3``,
    #: ``8n²`` bytes kept) up to this many rows, the dual iteration above (4,096 friedman1 rows:
    #: 1.2 s against 14 s, at a lower RMSE; docs/decisions/gp-exact-route.md)
    exact_gp_rows: int = 4096
    #: ... and the exact kernel's duals by conjugate gradients up to this many (each iteration
    #: ``n²d``; the dual iteration's ``O(n)`` overtakes it near 10^5 rows: the same record)
    cg_gp_rows: int = 65536
    #: above the dual route, in memory: ``σ``, ``α`` (and the binary loss) by the exact
    #: leave-one-out on a seeded subsample of this many training rows ...
    subsample_rows: int = 1024
    #: ... at this many features ...
    subsample_features: int = 2048
    #: ... then one solve at full size per feature size, from this many features, doubled while
    #: the held-out loss falls by more than ``growth_tol``
    solve_start_features: int = 1024
    #: ... or fewer where the subsample's spectrum asks for fewer: the power of two of at least
    #: ``start_features_per_dimension`` features per unit of the training rows' effective
    #: dimension (estimated from the subsample's eigenvalues), at least ``least_start_features``,
    #: in blocks of that size (make_moons at 7,500 rows: effective dimension 47, 256 features
    #: as accurate as 2,048 in a third of the time; docs/decisions/spectral-start.md)
    start_features_per_dimension: float = 2.0
    least_start_features: int = 256
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
    #: the preconditioner's sketch has at least this many rows, however few the selection's
    #: (6,750 rows: a sketch of 512 took 32 iterations at 1,024 features, of 1,024 15)
    sketch_least_rows: int = 1024
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
    #: the full-size stages (each size's features and solve, the refinement, the look back)
    #: spend at most this many work units a training row (multiply-adds, bytes and cosines
    #: weighted as below: :mod:`.cost`), so that a fit's time grows like its rows; a doubling is tried
    #: only where its predicted work fits what is left (record: docs/decisions/cost-model.md) ...
    growth_units_per_row: float = 5e5
    #: ... and this many more, whatever the rows: the sketch preconditioner's ``s²D + s³/3``
    #: of the first two sizes (1,024 sketch rows at 1,024 and 2,048 features: 3.9e9), which
    #: does not shrink with the rows
    growth_units_fixed: float = 5e9
    #: ... a work unit being a multiply-add, a byte of features stored or passed over this
    #: many (a float16 value read by a conjugate-gradient iteration is two multiply-adds) and a
    #: cosine this many (their cost on one CPU thread: docs/decisions/cost-model.md) ...
    work_byte_units: float = 2.0
    work_cosine_units: float = 10.0
    #: ... times the factor of the estimator's ``effort`` level; a doubling's predicted relative
    #: gain (the last doubling's, times the ratio of the last two, at most one) must also
    #: exceed ``growth_tol``
    effort_factors: tuple[tuple[str, float], ...] = (("fast", 0.25), ("auto", 1.0), ("thorough", 4.0))
    #: a doubling past the budget is still taken, up to ``growth_overrun`` times it, where the
    #: last doubling cut the held-out loss by at least this fraction: the features are still
    #: far from enough (measured: docs/decisions/cost-model.md)
    growth_overrun_gain: float = 0.15
    growth_overrun: float = 2.0
    #: the subsample has the most rows (``selection_least_rows`` to ``subsample_rows``, by 128)
    #: whose selection's predicted work is at most this share of the growth's budget: on
    #: 7,500 rows 1,024 subsample rows took 2.0 of 2.4 s (records: docs/decisions/cost-model.md)
    selection_share: float = 1.0
    #: ... at least this many (make_moons at 7,500 rows: 384 rows chose as 512 did, in 0.10
    #: s less; docs/decisions/spectral-start.md)
    selection_least_rows: int = 384
    #: a solve's conjugate-gradient iterations as the report predicts them before any solve
    #: has run (8 to 35 on the scaling benchmark's sets) ...
    predicted_iterations: int = 15
    #: ... and a doubling's solve as the budget predicts it: the last size's count or this,
    #: the more (at 675,000 rows 8 iterations at 1,024 features became 22 at 2,048)
    doubling_iterations: int = 30
    #: the cached features of the training rows take at most this many bytes (else: epochs):
    #: a third of the machine's memory, at most 8 GiB
    cache_bytes: int = field(default_factory=lambda: default_cache_bytes())
    #: ... and with ``cache_bytes="auto"`` a growth of random features caches at most this many
    #: (the memory of a default fit: 1M × 20 rows peak at 2.6 GB with 1,024 features, at 3.8
    #: GB with 2,048; docs/decisions/cost-model.md)
    growth_cache_bytes: int = 2 * 2**30
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
    #: ... each width but the last at most this many Newton steps: it only starts the next
    #: (docs/decisions/newton-losses.md: the a9a hinge's Newton 2.21 s -> 1.84 s, same error)
    smoothing_steps: int = 1
    #: halvings of a Newton step's exact line search on ``[0, 1]`` (``t`` to about 1e-6)
    line_search_bisections: int = 20
    #: ... each step's preconditioner factors the sketch rows of curvature at least this share
    #: of the largest (the others, outside a hinge's zone or far from a logistic boundary,
    #: add little to the Hessian)
    newton_sketch_share: float = 1e-3
    #: the features of a one-class or density-ratio fit by Newton's method without
    #: ``n_components`` (docs/decisions/novelty-engine.md)
    novelty_features: int = 1024
    #: ... and the one-class SVM's hinge, its outputs rescaled to a spread of 1 after a first
    #: solve along ``smoothing_path``, ends along these envelope widths (a row within the last
    #: width counts as half outside: at 0.1 the fraction outside was ν + 0.09)
    one_class_widths: tuple[float, ...] = (0.1,)
    #: ... and the density ratio's Newton steps are preconditioned by this many sketch rows a
    #: feature (its default ``α = 1e-6``: a sketch of ~1.5 rows a feature took 1,825 iterations
    #: on 200,000 rows)
    novelty_sketch_per_feature: int = 4
    #: ``DSGDensityRatio(alpha="auto")``: these ``α``, decreasing and warm, the one of least
    #: held-out ``E_q[e^f] − E_p[f]`` on a share ``density_ratio_held_out`` of each sample
    density_ratio_alphas: tuple[float, ...] = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
    density_ratio_held_out: float = 0.1


#: the limits every estimator plans with
LIMITS = FitLimits()


def fit_limits(limits: FitLimits | None = None) -> FitLimits:
    """The table a fit runs with: ``limits`` (a modified copy of :data:`LIMITS`,
    ``dataclasses.replace(LIMITS, ...)``), or :data:`LIMITS` for ``None``; the one place a fit
    reads the default table."""
    if limits is None:
        return LIMITS
    if not isinstance(limits, FitLimits):
        raise TypeError(f"limits must be a kernelstream.planning.FitLimits (a modified copy of "
                        f"LIMITS: dataclasses.replace(LIMITS, ...)), not {type(limits).__name__}.")
    return limits
