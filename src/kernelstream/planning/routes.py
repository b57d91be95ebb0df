"""Route choice: :func:`plan_fit` turns the data's shape and the estimator's parameters into
a :class:`~.plan.FitPlan` (the engine's dual or subsample route, epochs, a warm start or one
pass), with the limits the fit runs with."""

from __future__ import annotations

import dataclasses
import math

from ..solvers.conjugate import QUADRATIC_LOSSES
from ..solvers.exact_kernel import EXACT_KERNELS
from .budget import (ENGINE_SOLVERS, cache_dtype, cache_item_bytes, chooses, dual_features,
                     engine_solves, feature_layout, is_auto, looks_back, max_feature_blocks,
                     multiclass_auto, nystroem_basis, spectral_start_features, subsample_split,
                     validation_split)
from .cost import growth_budget, selection_rows
from .limits import FitLimits, LIMITS
from .plan import DataShape, FitPlan
from .reasons import epochs_reasons, subsample_reasons, why_epochs

__all__ = ["plan_fit", "resolve_loss", "resolve_precond_eps", "with_spectral_start"]


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
    "cg"), a cache (``cache_bytes=0`` never caches: epochs), few rows in memory (sparse ones
    only when their dense copy is small)."""
    return (not shape.stream and params["solver"] in ENGINE_SOLVERS and limits.cache_bytes > 0
            and shape.n_rows <= limits.dual_max_rows
            and (not shape.sparse or shape.n_rows * shape.n_features <= limits.dual_dense_floats))


def _cache_holds_a_block(shape: DataShape, params: dict, limits: FitLimits) -> bool:
    """Whether the cache's budget holds one block (or the given budget) of the training rows."""
    n_train = subsample_split(shape, params)[0]
    size, blocks = feature_layout(params["n_components"], params["block_size"])
    return cache_item_bytes(params, limits) * (n_train + 1) * size * (blocks or 1) <= limits.cache_bytes


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


def _candidates(params: dict, limits: FitLimits) -> tuple[tuple | None, tuple, tuple]:
    """``(σ scales or None, α candidates by epochs, α candidates in the dual)``."""
    scales = limits.sigma_scales if is_auto(params["sigma"]) else None
    given = (float(params["alpha"]),) if params["alpha"] != "auto" else None
    return scales, given or limits.alphas, given or limits.dual_alphas


def plan_fit(estimator: str, shape: DataShape, params: dict, *, warm: bool = False,
             limits: FitLimits = LIMITS, throughput=None) -> FitPlan:
    """The plan of a ``fit`` of ``estimator`` (its class name) with ``params`` (its
    ``get_params()``) on data of ``shape``; ``warm``: a warm start of a fitted model;
    ``throughput``: the machine's (:class:`~kernelstream.solvers.throughput.Throughput`), which
    prices the selection against a budget in seconds (``effort`` a number).

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
                               few_rows=True, throughput=throughput)
    if subsample and engine_solves(loss):
        if _cache_holds_a_block(shape, params, limits):
            return _subsample_plan(estimator, shape, params, _engine_limits(params, limits), loss,
                                   throughput=throughput)
        if limits.cache_bytes > 0:  # no block fits: the engine draws the features every pass
            drawn = "squared" if shape.n_classes is not None and params.get("loss") == "auto" else loss
            return _subsample_plan(estimator, shape, params, _engine_limits(params, limits), drawn,
                                   throughput=throughput, regenerate=True)  # least squares alone
    _check_basis(shape, params, limits, loss)
    return dataclasses.replace(_epochs_plan(estimator, shape, params, limits, loss), limits=limits)


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
           else why_epochs(shape, params, limits, loss))
    raise ValueError(f"basis='nystroem' needs the subsample route (in-memory dense arrays of more "
                     f"than {limits.dual_max_rows:,} rows, the engine's solver); this "
                     f"fit cannot take it: {why}. Pass basis='random_features'.")


def _compared_losses(shape: DataShape, params: dict, loss: str,
                     regenerate: bool = False) -> tuple[str, ...]:
    """The losses the subsample's leave-one-out compares: least squares and the squared hinge
    for two classes with ``loss="auto"`` (not with ``solver="cg"``, nor where the features are
    drawn every pass: each Newton step would read every row), the loss itself where the dual
    solves it, else least squares (the loss is then solved by Newton at full size)."""
    if shape.n_classes is not None and params.get("loss") == "auto" and regenerate:
        return ("squared",)
    if shape.n_classes == 2 and params.get("loss") == "auto" and params["solver"] != "cg":
        return ("squared", "squared_hinge")
    if loss in QUADRATIC_LOSSES or (loss == "squared_hinge" and shape.n_classes == 2):
        return (loss,)
    return ("squared",)


def _subsample_plan(estimator, shape, params, limits, loss, few_rows: bool = False,
                    throughput=None, regenerate: bool = False) -> FitPlan:
    scales, _, dual_alphas = _candidates(params, limits)
    nystroem = not regenerate and nystroem_basis(params, None if few_rows else shape)
    if nystroem and (few_rows or shape.sparse):
        _check_basis(shape, params, limits, loss)  # a Nystrom basis on few or sparse rows: refused
    losses = _compared_losses(shape, params, loss, regenerate)
    n_train, fraction = (shape.n_rows, None) if few_rows else subsample_split(shape, params)
    size, blocks = feature_layout(params["n_components"], params["block_size"])
    if nystroem and params.get("basis") == "auto":
        nystroem = _nystroem_fits(limits, n_train, size, blocks)
    exact = few_rows and blocks is None and _exact_basis(params, loss, losses, regenerate)
    item = 8 if nystroem else cache_item_bytes(params, limits)  # kernel columns: float64 at most
    growing = not nystroem and not few_rows and blocks is None
    memory = (min(limits.cache_bytes, limits.growth_cache_bytes)
              if growing and is_auto(params.get("cache_bytes", "auto")) else limits.cache_bytes)
    cached = max_feature_blocks(n_train, size, limits) if regenerate else memory // (item * (n_train + 1) * size)
    if blocks is not None:
        start = most = blocks
    elif few_rows:  # every row trains, one exact solve at the few-row budget
        start = most = max(1, min(dual_features(n_train, limits), limits.few_rows_features) // size)
    elif nystroem:  # one solve at the budget (a growth from 4,096 centres paid on MNIST)
        start = most = max(1, min(limits.nystroem_centres // size, n_train // size, cached))
    else:
        most = max(1, min(max_feature_blocks(n_train, size, limits), cached))
        start = min(most, max(1, limits.solve_start_features // size)) if fraction else most
    m = min(limits.few_rows_subsample if few_rows else limits.subsample_rows, n_train)
    chooses_any = scales is not None or len(dual_alphas) > 1 or len(losses) > 1
    plan = FitPlan(**_common(estimator, shape, params, limits, losses[0] if loss in losses else loss),
                   limits=limits, route="dual" if few_rows else "subsample",
                   losses_compared=losses, selection="leave_one_out" if chooses_any else "none",
                   fallback_selection=None, selection_rows=m, sigma_scales=scales, alphas=dual_alphas,
                   dual_alphas=dual_alphas, block_size=size, start_blocks=start, max_blocks=most,
                   race_blocks=0, judge="direct", solver="dual" if few_rows else "pcg",
                   validation_fraction=fraction,
                   narrow=not few_rows and is_auto(params["sigma"]) and fraction is not None,
                   selection_features=min(limits.subsample_features, size * most), cache_bytes=memory,
                   cache_dtype=params.get("dtype", "float32") if nystroem else cache_dtype(params, limits),
                   narrow_rows=limits.narrow_rows,
                   refine=(not few_rows and not regenerate and is_auto(params["sigma"])
                           and fraction is not None and n_train >= limits.refine_rows), regenerate=regenerate,
                   narrow_blocks=min(start, max(1, limits.solve_start_features // size)),
                   look_back=(not few_rows and not nystroem and not regenerate and fraction is not None
                              and most > start and looks_back(n_train, 2 * start * size, limits)),
                   basis="nystroem" if nystroem else "exact" if exact else "random_features",
                   alpha_path=nystroem and is_auto(params["alpha"]) and fraction is not None,
                   hinge_finish=nystroem and multiclass_auto(shape, params) and fraction is not None,
                   lengthscale_rows=limits.lengthscale_rows, lengthscale_iterations=limits.lengthscale_iterations)
    if not few_rows and start < most and fraction is not None:  # a growth: its budget
        plan = _with_budget(plan, params, limits, n_train, throughput)
    return dataclasses.replace(plan, reasons=subsample_reasons(plan, params, limits, n_train))


def with_spectral_start(plan: FitPlan, dimension: float | None, n_train: int) -> FitPlan:
    """``plan`` whose growth of random features starts at :func:`spectral_start_features` of
    the ``n_train`` training rows' effective ``dimension``, in blocks of that size up to the
    same most features, where that is fewer than the plan's start (``None``: ``plan``)."""
    start = plan.start_blocks * plan.block_size
    if (dimension is None or plan.basis != "random_features" or plan.max_blocks is None
            or plan.start_blocks >= plan.max_blocks):
        return plan
    size = spectral_start_features(dimension, start, plan.limits)
    if size >= start or plan.block_size % size:
        return plan
    most = plan.max_blocks * (plan.block_size // size)
    return dataclasses.replace(plan, block_size=size, start_blocks=1, max_blocks=most,
                               look_back=plan.look_back and looks_back(n_train, 2 * size, plan.limits))


def _exact_basis(params: dict, loss: str, losses: tuple, regenerate: bool) -> bool:
    """``basis="auto"`` on the dual route: the exact kernel's model on every row
    (:mod:`~kernelstream.solvers.exact_kernel`) for a kernel of closed form and a loss the
    dual solves: least squares, the squared hinge of any number of classes (record:
    docs/decisions/exact-kernel-route.md)."""
    return (params.get("basis", "random_features") == "auto" and not regenerate
            and params.get("kernel") in EXACT_KERNELS and (loss in losses or loss == "squared_hinge"))


def _nystroem_fits(limits: FitLimits, n_train: int, size: int, blocks: int | None) -> bool:
    """``basis="auto"``: the full Nyström basis where the rows are enough and the cache holds
    its kernel columns in float64."""
    centres = blocks or max(1, min(limits.nystroem_centres, n_train) // size)
    return (limits.cache_bytes // (8 * (n_train + 1) * size) >= centres
            and n_train >= limits.nystroem_rows_per_centre * centres * size)


def _with_budget(plan: FitPlan, params: dict, limits: FitLimits, n_train: int,
                 throughput=None) -> FitPlan:
    """A growth's plan with its budget (:func:`effort_budget`) and the subsample's rows the
    budget affords (:func:`~.cost.selection_rows`: the choice costs at most as much; a budget
    in seconds prices it at ``throughput``)."""
    units, seconds = effort_budget(params.get("effort", "auto"), n_train, limits)
    plan = dataclasses.replace(plan, growth_budget=units, seconds_budget=seconds)
    if math.isfinite(units):
        budget, price = limits.selection_share * units, None
    elif seconds is not None and throughput is not None:
        budget, price = limits.selection_share * seconds, throughput_price(throughput)
    else:
        return plan
    if plan.selection == "none":
        return plan
    m = plan.selection_rows
    rows = selection_rows(plan, plan.shape.n_features, min(limits.selection_least_rows, m), m,
                          budget, price=price)
    return dataclasses.replace(plan, selection_rows=rows)


def throughput_price(throughput):
    """A :class:`~.cost.Work`'s predicted seconds at ``throughput``."""
    return lambda work: work.seconds(throughput)


def effort_budget(effort, n_train: int, limits: FitLimits) -> tuple[float, float | None]:
    """``(work units, CPU seconds or None)`` the growth may spend at ``effort``: a level's
    factor of ``growth_units_per_row`` a training row, or (a number) that many seconds and no
    bound in work."""
    if isinstance(effort, str):
        factors = dict(limits.effort_factors)
        if effort not in factors:
            raise ValueError(f"effort must be one of {sorted(factors)} or a number of seconds, "
                             f"got {effort!r}.")
        return growth_budget(n_train, factors[effort] * limits.growth_units_per_row,
                             factors[effort] * limits.growth_units_fixed), None
    return math.inf, float(effort)


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
    n_train, fraction = validation_split(shape, params, chooses(params))
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
    return dataclasses.replace(plan, reasons=epochs_reasons(plan, params, limits, n_train))


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
