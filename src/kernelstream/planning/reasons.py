"""The plan's sentences: why each route and choice was taken, in words (``FitPlan.reasons``)."""

from __future__ import annotations

from .budget import ENGINE_SOLVERS, engine_solves
from .limits import FitLimits
from .plan import DataShape, FitPlan

__all__ = []


def _drawn_reason(plan: FitPlan, limits: FitLimits, n_train: int) -> list[str]:
    """Why the features are drawn in every pass (none where they are cached)."""
    return ([f"the features of {n_train:,} training rows do not fit cache_bytes="
             f"{limits.cache_bytes:,} one block at a time: drawn again in every pass, the "
             "bandwidth not challenged on every row"
             + (", least squares alone (Newton's steps on another loss would each read every "
                "row)" if plan.shape.n_classes is not None and plan.loss == "squared" else "")]
            if plan.regenerate else [])


def subsample_reasons(plan: FitPlan, params: dict, limits: FitLimits, n_train: int) -> tuple[str, ...]:
    s = plan.shape
    chooses_any = plan.selection != "none"
    few = plan.route == "dual"
    solver = f"solver={params['solver']!r}"
    reasons = [f"{s.n_rows:,} rows <= dual_max_rows={limits.dual_max_rows:,} with {solver}: "
               "every row trains, chosen on a subsample, solved exactly in the dual"
               if few else
               f"{s.n_rows:,} rows > dual_max_rows={limits.dual_max_rows:,} in memory with "
               f"{solver}: chosen on a subsample, solved once per feature size",
               *_drawn_reason(plan, limits, n_train),
               _losses_reason(plan.losses_compared).replace("leave-one-out", "subsample leave-one-out")
               if plan.loss in plan.losses_compared else _newton_reason(plan, limits)]
    kernel = ("the exact kernel's matrix" if plan.basis == "exact" else
              f"{plan.selection_features:,} features")
    reasons.append(f"{_grid(plan.sigma_scales, plan.dual_alphas)} by the exact leave-one-out on "
                   f"{plan.selection_rows:,} seeded training rows at {kernel}" + ("; alpha carried to the training rows as alpha*m/n"
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
        return tuple(reasons + [_few_rows_model(plan, params, limits)])
    if plan.basis == "nystroem":
        return tuple(reasons + [_nystroem_reason(plan, params, limits)])
    share = ("" if plan.cache_bytes == limits.cache_bytes else
             f" of cache_bytes' {limits.cache_bytes / 2**30:.3g}: growth_cache_bytes")
    held = ("features drawn in every pass" if plan.regenerate else
            f"features cached in {plan.cache_dtype} (at most {plan.cache_bytes / 2**30:.3g} GiB{share})")
    reasons.append(_growth_reason(plan, limits, held))
    return tuple(reasons + _budget_reasons(plan, params, n_train))


def _growth_reason(plan: FitPlan, limits: FitLimits, held: str) -> str:
    """The growth of the features, in words: where they are held, its sizes and its stops."""
    spectral = (f" (from fewer, in smaller blocks, where the subsample's effective dimension asks "
                f"for fewer: {limits.start_features_per_dimension:g} features a dimension, at "
                f"least {limits.least_start_features:,})"
                if plan.basis == "random_features" and plan.start_blocks < plan.max_blocks else "")
    return (f"{held}, from {plan.start_blocks} to at most {plan.max_blocks} blocks of "
            f"{plan.block_size}{spectral}, doubled while the held-out loss falls by more than "
            f"{limits.growth_tol:g}"
            + (f" and the last doubling changed more than {limits.settled_class_changes} "
               "held-out row's class" if plan.shape.n_classes is not None else "")
            + "; each size one solve by conjugate gradients with a Nystrom preconditioner"
            + (" (the squared hinge: Newton on its active rows)"
               if "squared_hinge" in plan.losses_compared else ""))


def _budget_reasons(plan: FitPlan, params: dict, n_train: int) -> list[str]:
    """The growth's budget in words: seconds (``effort`` a number) or work units."""
    if plan.seconds_budget is not None:
        return [f"effort={plan.seconds_budget:g} CPU seconds: a doubling only where the seconds "
                "predicted by this machine's throughput fit what is left; the subsample's rows "
                "are the most whose selection's predicted seconds fit it"]
    if plan.growth_budget == float("inf"):
        return []
    return [f"effort={params.get('effort', 'auto')!r}: the full-size stages spend at most "
            f"{plan.growth_budget:.3g} work units (multiply-adds, bytes moved, 10 a cosine; "
            f"{plan.growth_budget / n_train:.3g} a training row), a doubling only where its "
            "predicted work fits what is left; the subsample's rows are the most whose "
            "selection's predicted work fits it"]


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


def _few_rows_model(plan: FitPlan, params: dict, limits: FitLimits) -> str:
    """The dual route's model, in words: the exact kernel's or its random features'."""
    if plan.basis == "exact":
        return ("the exact kernel's model: every training row of positive weight a centre, "
                "k(x, x_i) in float64 and one Cholesky factor (the squared hinge: Newton on "
                "its active rows; n_components or basis='random_features' for "
                f"{plan.n_components:,} random features)")
    return (f"{plan.n_components:,} features ({plan.max_blocks} blocks of "
            f"{plan.block_size}): " + ("n_components as given" if params["n_components"]
                                       is not None else "the dual budget max(16·sqrt(n)"
                                       f"·ln n, 2^24/n) <= {limits.few_rows_features:,}"))


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


def why_epochs(s: DataShape, params: dict, limits: FitLimits, loss: str) -> str:
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


def epochs_reasons(plan: FitPlan, params: dict, limits: FitLimits, n_train: int) -> tuple[str, ...]:
    s = plan.shape
    why_not_dual = why_epochs(s, params, limits, plan.loss)
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
