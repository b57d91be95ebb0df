"""The fit engine's full-size stages: one solve per feature size, growth while it pays, the
bandwidth's checks on more rows, and the final size's ``α`` path and hinge finish.

Every function takes the :class:`~kernelstream.planning.FitPlan` and reads its thresholds
from ``plan.limits`` alone; the training rows are reached through a data operator
(:mod:`.operator`: today a :class:`~.cached.FeatureCache` or :class:`~.nystroem.NystroemCache`).
What the engine asks of the estimator it fits (a feature map of a bandwidth, the classes that
outputs pick, McNemar's comparison) is an :class:`EngineModel`. The choice on a subsample that
precedes these stages is :mod:`.subsample_choice`.

The loss of a stage is a name ("squared", "squared_hinge") or a :mod:`kernelstream.losses`
object solved by :func:`~.newton.newton_loss`. Record: docs/decisions/subsample-route.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from ..planning.cost import Work, feature_work, solve_work
from .cached import (chunk_rows, RidgeSolve, SketchPreconditioner, cache_bytes, exact_gram,
                     ridge_dual_rows, ridge_pcg)
from .newton import newton_loss, newton_squared_hinge, smoothed_loss, solve_tol
from .sharded import feature_operator, gathered, nearby
from .stages import StageLog
from .streams import subset

__all__ = ["EngineModel", "EngineResult", "feature_work_of", "first_solve_iterations", "held_out_losses", "loss_name",
           "narrowed", "over_budget", "pays", "sketch_rows", "sketched_pcg", "solve_at",
           "solve_full_size", "solve_work_of"]


@dataclass(frozen=True)
class EngineModel:
    """What the engine asks of the estimator: ``make_map(d, σ, block_size, **kw)`` (its
    kernel and seed), ``classes(outputs)`` (the classes ``(m, C)`` outputs pick; ``None`` for a
    regressor, whose growth the loss alone decides) and ``clearly_better(candidate, kept,
    targets, weight, z)`` (whether predictions ``candidate`` make significantly fewer errors);
    ``log`` times the stages (:class:`~.stages.StageLog`); ``checkpoint`` and ``resume``: the
    growth's state between sizes, written and continued; ``spread(evaluate, items)``: every
    item's ``evaluate(item)``, in order (one after another; rows held by ranks deal the items
    over the ``ranks``: :meth:`~.sharded.ShardedRows.spread`)."""

    make_map: Callable
    classes: Callable
    clearly_better: Callable
    log: StageLog = field(default_factory=StageLog)
    #: ``checkpoint(state)`` between sizes (a :meth:`Growth.state_dict`); ``resume``: such a state
    checkpoint: Callable | None = None
    resume: dict | None = None
    spread: Callable = field(default=lambda evaluate, items: [evaluate(item) for item in items])
    ranks: int = 1


@dataclass
class EngineResult:
    """The kept ``θ``, its ``α`` and loss, the history ``[(blocks, held-out loss, iterations,
    σ[, more])]``, the iterations in all and the kept model's held-out loss (nan: none)."""

    theta: torch.Tensor
    alpha: float
    loss: object
    history: list
    iterations: int
    held_loss: float


def loss_name(loss) -> str:
    """The name of a stage's loss (a name, or a loss object's ``name``)."""
    return loss if isinstance(loss, str) else loss.name


def solve_full_size(plan, model: EngineModel, cache, held, y, w, alpha: float, loss,
                    sketch, growth: str = "squared", iterations: int | None = None) -> EngineResult:
    """The full-size stages: :func:`grow_and_solve`, then at the final size the ``α`` path and
    the hinge finish where the plan asks for them (held-out rows needed). A loss of Newton's
    method (:func:`~.newton.newton_loss`) grows the features by the solves of ``growth`` (the
    selection's loss), then runs from that solution at the size kept: one Newton iteration in
    all, not one a size (docs/decisions/newton-losses.md). ``iterations``: the first solve's
    predicted iterations (the narrowing's; ``None``: ``predicted_iterations``)."""
    newton = loss_name(loss) not in ("squared", "squared_hinge")
    theta, history, iterations, held_loss, held = grow_and_solve(
        plan, model, cache, held, y, w, alpha, growth if newton else loss, sketch, iterations)
    if newton:  # the features least squares kept, then the loss by Newton from its solution
        kept = (theta.shape[0] - 1) // cache.feature_map.block_size
        cache = cache.first_blocks(kept)
        with model.log.stage("newton", loss=loss_name(loss), features=cache.n_features) as record:
            solve = newton_loss(cache, y, w, alpha, loss, sketch, theta, plan.limits)
            theta, iterations = solve.theta, iterations + solve.iterations
            if held is not None:
                held = (held[0].first_blocks(kept), held[1], held[2])
                held_loss = float(held_out_losses(plan, held, theta, kept, loss)[0].mean())
            record.update(iterations=solve.iterations, held_out_loss=held_loss)
        history.append((kept, held_loss, solve.iterations, cache.feature_map.sigma,
                        {"loss_function": loss_name(loss)}))
    if held is not None and (plan.alpha_path or plan.hinge_finish):
        with model.log.stage("final_size", features=cache.n_features) as record:
            theta, alpha, loss, spent, held_loss = at_final_size(plan, model, cache, held, y, w,
                                                                 alpha, sketch, theta, history)
            record.update(iterations=spent, alpha=alpha, loss=loss_name(loss), held_out_loss=held_loss)
        iterations += spent
    return EngineResult(theta, alpha, loss, history, iterations, held_loss)


@dataclass
class Growth:
    """Where the growth stands between two sizes: the blocks to solve next, the last ``θ``,
    the kept size's ``(θ, held-out loss, each held-out row's loss)``, the history, the
    iterations so far, the classes the kept size picks on the held-out rows, the sizes
    the cache was grown through (a resumed cache grows through the same, so that its
    products sum the same parts), the work units spent (:mod:`kernelstream.planning.cost`,
    from the shapes and the iterations: the same on every machine) and the held-out loss of
    each kept size."""

    blocks: int
    theta: torch.Tensor | None = None
    best: tuple | None = None
    history: list = field(default_factory=list)
    iterations: int = 0
    classes: torch.Tensor | None = None
    sizes: list = field(default_factory=list)
    work: float = 0.0
    kept: list = field(default_factory=list)

    def state_dict(self, sigma) -> dict:
        """The growth as a checkpoint's state (tensors and plain values), ``sigma`` the map's."""
        return dict(blocks=self.blocks, theta=self.theta, best=list(self.best),
                    history=[list(h) for h in self.history], iterations=self.iterations,
                    classes=self.classes, sizes=list(self.sizes), sigma=sigma, work=self.work,
                    kept=list(self.kept))

    @classmethod
    def from_state(cls, state: dict, device) -> "Growth":
        """The inverse of :meth:`state_dict`, its tensors on ``device``."""
        def tensor(value):
            return None if value is None else torch.as_tensor(value, device=device)
        theta, value, rows = state["best"]
        return cls(int(state["blocks"]), tensor(state["theta"]),
                   (tensor(theta), float(value), tensor(rows)),
                   [(int(h[0]), float(h[1]), int(h[2]), h[3], *h[4:]) for h in state["history"]],
                   int(state["iterations"]), tensor(state["classes"]), [int(j) for j in state["sizes"]],
                   float(state.get("work", 0.0)), [float(v) for v in state.get("kept", [])])


def grow_and_solve(plan, model: EngineModel, cache, held, y, w, alpha, loss, sketch,
                   iterations: int | None = None) -> tuple:
    """The best ``θ`` over doubling feature sizes, its history ``[(blocks, held-out loss,
    iterations, σ[, more])]``, the iterations in all, its held-out loss and the held-out rows'
    operator (a refined bandwidth's, where its challenge paid). A size is kept only where its
    held-out loss is lower than the last's by more than ``growth_tol`` (relative) and by two
    standard errors of the rows' paired differences (:func:`next_size`). Between sizes the
    growth goes to ``model.checkpoint``; ``model.resume`` (such a state) continues it.
    ``iterations``: the first solve's predicted iterations (``None``: ``predicted_iterations``)."""
    growth, held = _growth_start(plan, model, cache, held)
    r = cache.feature_map.block_size
    while True:
        J = growth.blocks
        new = feature_work_of(cache, (J - cache.n_blocks) * r)
        with model.log.stage("features", predicted=new, features=J * r, rows=cache.n_rows):
            cache.grow(J)
            growth.sizes.append(J)
        growth.work += new.units(plan.limits)
        guess = (growth.history[-1][2] if growth.history else
                 first_solve_iterations(plan, cache, J * r, sketch, iterations))
        with model.log.stage("solve", predicted=solve_work_of(plan, cache, J * r, guess, sketch),
                             features=J * r, loss=loss_name(loss)) as record:
            start = None if growth.theta is None else cache.extended(growth.theta, J)
            solve = solve_at(plan, cache, y, w, alpha, loss, sketch, start)
            growth.theta, growth.iterations = solve.theta, growth.iterations + solve.iterations
            rows, outputs = (held_out_losses(plan, held, solve.theta, J, loss) if held is not None
                             else (None, None))
            value = float(rows.mean()) if rows is not None else math.nan
            record.update(iterations=solve.iterations, held_out_loss=value)
        growth.work += solve_work_of(plan, cache, J * r, solve.iterations, sketch).units(plan.limits)
        growth.history.append((J, value, solve.iterations, cache.feature_map.sigma))
        # up to the default start size, a doubling pays by its relative fall alone (cheaper
        # than the solve the default would start with, it needs less proof)
        proof = 0.0 if J * r <= plan.limits.solve_start_features else 2.0
        if growth.best is not None and not pays(growth.best[2], rows, plan.growth_tol, proof):
            model.log.note("growth_stop", features=growth.best[0].shape[0] - 1,
                           why=f"{J * r:,} features did not pay on the held-out rows")
            break
        held, grown = next_size(plan, model, cache, held, y, w, alpha, loss, sketch, growth,
                                rows, outputs)
        if grown is None:
            break
        growth.blocks = grown
        if model.checkpoint is not None:
            model.checkpoint(growth.state_dict(cache.feature_map.sigma))
    return growth.best[0], growth.history, growth.iterations, growth.best[1], held


def _growth_start(plan, model: EngineModel, cache, held) -> tuple:
    """A new growth from ``start_blocks``, or the one ``model.resume`` holds: its map's
    bandwidth (a refinement's) drawn, the cache grown through its sizes."""
    if model.resume is None:
        return Growth(plan.start_blocks), held
    growth = Growth.from_state(model.resume, cache.X.device)
    sigma, incumbent = model.resume["sigma"], cache.feature_map
    if not np.array_equal(np.asarray(sigma), np.asarray(incumbent.sigma)):  # the refined map
        cache.redraw(model.make_map(incumbent.n_features_in, sigma, incumbent.block_size,
                                    cache_bytes=incumbent.cache_bytes))
        held = (cache.for_rows(held[0].X), held[1], held[2])
    for J in growth.sizes:  # the parts of the uninterrupted fit, so that its sums are these
        cache.grow(J)
        if held is not None:
            held[0].grow(J)
    return growth, held


def next_size(plan, model: EngineModel, cache, held, y, w, alpha, loss, sketch, growth: Growth,
              rows, outputs) -> tuple:
    """After a size that paid (or the first): ``(held, the blocks of the next size)``, or
    ``(held, None)`` where the growth stops. The first size may be refined (:func:`refined`)
    and its doubling needs a look back that paid (:func:`half_size_pays`); a classifier stops
    after a kept size that changed the class of at most ``settled_class_changes`` held-out
    rows (its held-out error has stopped moving measurably, and a further doubling would cost
    twice as much again); the cache's budget bounds the last doubling."""
    J, r = growth.blocks, cache.feature_map.block_size
    theta, value = growth.theta, float(rows.mean()) if rows is not None else math.nan
    if growth.best is None and plan.refine and held is not None:
        challenge = feature_work_of(cache, J * r, new_memory=False)  # over the cache's memory
        guess = solve_work_of(plan, cache, J * r, growth.history[-1][2], sketch)
        incumbent = cache.feature_map  # the challenger's features, and σ's again where it loses
        with model.log.stage("refine", predicted=challenge + challenge + guess,
                             features=J * r) as record:
            held, theta, rows, outputs, its = refined(plan, model, cache, held, y, w, alpha, loss,
                                                      sketch, J, theta, rows, outputs,
                                                      growth.history)
            growth.theta, growth.iterations, value = theta, growth.iterations + its, float(rows.mean())
            record.update(iterations=its, sigma=cache.feature_map.sigma, held_out_loss=value)
        redraws = 2 if cache.feature_map is incumbent else 1
        growth.work += (redraws * challenge.units(plan.limits)
                        + solve_work_of(plan, cache, J * r, its, sketch).units(plan.limits))
    growth.best = (theta, value, rows)
    growth.kept.append(value)
    now = model.classes(outputs[held[2] > 0]) if outputs is not None else None
    settled = (now is not None and growth.classes is not None
               and int((now != growth.classes).sum()) <= plan.limits.settled_class_changes)
    growth.classes = now
    grown = min(2 * J, plan.max_blocks)
    while grown > J and not cache.fits(grown):  # the last step: as far as the cache holds
        grown -= 1
    if held is None:
        return held, None
    why = ("the last doubling changed too few held-out classes" if settled else
           f"the feature budget ({plan.max_blocks * r:,}) is reached" if J == plan.max_blocks else
           f"the cache's {cache.budget / 2**30:.2f} GiB hold no more" if grown == J else
           over_budget(plan, model, cache, sketch, growth, J, grown))
    if why is None and J == plan.start_blocks and plan.look_back:
        half = feature_work_of(cache, J * r // 2)
        guess = solve_work_of(plan, cache, J * r // 2, growth.history[-1][2], sketch)
        with model.log.stage("look_back", predicted=half + guess, features=J * r // 2) as record:
            paid = half_size_pays(plan, model, cache, held, y, w, alpha, loss, sketch, rows,
                                  growth.history)
            record.update(iterations=growth.history[-1][2], paid=paid)
        growth.work += (half + solve_work_of(plan, cache, J * r // 2, growth.history[-1][2],
                                             sketch)).units(plan.limits)
        why = None if paid else f"half the features did as well as {J * r:,}"
    if why is not None:
        model.log.note("growth_stop", features=J * r, why=why)
        return held, None
    return held, grown


def over_budget(plan, model: EngineModel, cache, sketch, growth: Growth, J: int,
                grown: int) -> str | None:
    """Why the doubling from ``J`` to ``grown`` blocks is not worth its cost, or ``None``: its
    predicted work (the new features, a solve at the last size's iterations or
    ``doubling_iterations``, the more: at 675,000 rows 8 at 1,024 features became 22 at
    2,048) past what is
    left of ``plan.growth_budget`` (``growth_overrun`` times it where the last doubling cut the
    held-out loss by ``growth_overrun_gain`` or more); its predicted seconds past
    ``plan.seconds_budget``; or
    its predicted relative gain (the last doubling's times the ratio of the last two, at
    most one) at most ``growth_tol``."""
    r = cache.feature_map.block_size  # more features leave more directions to iterate over:
    guess = max(growth.history[-1][2], plan.limits.doubling_iterations)  # at least the table's
    step = feature_work_of(cache, (grown - J) * r) + solve_work_of(plan, cache, grown * r, guess, sketch)
    total = growth.work + step.units(plan.limits)
    limits, kept = plan.limits, growth.kept
    steep = len(kept) >= 2 and kept[-2] > 0 and (kept[-2] - kept[-1]) / kept[-2] >= limits.growth_overrun_gain
    if total > plan.growth_budget * (limits.growth_overrun if steep else 1.0):
        return (f"{grown * r:,} features would bring the work to {total:.3g} "
                f"units, past the budget of {plan.growth_budget:.3g}"
                + (f" (x{limits.growth_overrun:g}: the last doubling's gain is at least "
                   f"growth_overrun_gain={limits.growth_overrun_gain:g})" if steep else ""))
    throughput = model.log.throughput
    if plan.seconds_budget is not None and throughput is not None:
        spent = model.log.total()
        if spent + step.seconds(throughput) > plan.seconds_budget:
            return (f"{grown * r:,} features would take the fit to {spent + step.seconds(throughput):.1f} "
                    f"CPU s, past effort={plan.seconds_budget:g} s")
    if len(growth.kept) >= 3:
        last, before, earlier = growth.kept[-1], growth.kept[-2], growth.kept[-3]
        gain, previous = (before - last) / before, (earlier - before) / earlier
        predicted = gain * min(1.0, gain / previous) if previous > 0 else 0.0
        if predicted <= plan.growth_tol:
            return f"the next doubling's predicted gain {predicted:.2g} is below growth_tol"
    return None


def item_bytes(cache) -> int:
    """Bytes of one stored feature of ``cache``."""
    return torch.finfo(cache.storage).bits // 8


def feature_work_of(cache, new_features: int, new_memory: bool = True) -> Work:
    """The work of ``new_features`` columns of ``cache``'s rows (:func:`~kernelstream.planning.cost.feature_work`):
    sparse rows project their nonzeros alone."""
    if getattr(cache, "regenerates", False):  # drawn in each pass: priced with the solves
        return Work()
    return feature_work(cache.n_rows, _inputs(cache), max(new_features, 0), item_bytes(cache), new_memory)


def _inputs(cache) -> float:
    """Inputs a row of ``cache`` projects: a sparse row's nonzeros, else its width."""
    X = getattr(cache.X, "local", cache.X)  # rows held by ranks: this rank's tell the density
    return X.matrix.nnz / max(X.shape[0], 1) if hasattr(X, "matrix") else X.shape[1]


def first_solve_iterations(plan, cache, n_features: int, sketch, narrowed: int | None) -> float:
    """The first full-size solve's predicted iterations: the narrowing's ``k`` on a sketch of
    ``s₀`` rows scaled by ``√(s₀/s)`` for the full size's sketch of ``s`` rows (a larger sketch
    preconditions better: ``√κ`` falls as its error ``∝ 1/√s``), at least the table's
    ``predicted_iterations`` (as a doubling's guess)."""
    least = plan.limits.predicted_iterations
    if narrowed is None:
        return least
    limits, floor = plan.limits, max(plan.selection_rows, plan.limits.sketch_least_rows)
    at_narrowing = sketch_rows(plan.narrow_rows, plan.narrow_blocks * plan.block_size, floor, limits)
    at_full = sketch_rows(len(sketch[1]), n_features, len(sketch[0]), limits)
    return max(narrowed * math.sqrt(at_narrowing / max(at_full, 1)), least)


def solve_work_of(plan, cache, n_features: int, iterations: int, sketch) -> Work:
    """The work of a solve on ``cache``'s rows at ``n_features`` (:func:`~kernelstream.planning.cost.solve_work`)."""
    chunks = -(-cache.n_rows // chunk_rows(n_features, 1, cache.X.device))
    sketch_size = sketch_rows(len(sketch[1]), n_features, len(sketch[0]), plan.limits)
    if getattr(cache, "regenerates", False):  # each pass draws every feature: its products 2nD
        drawn = feature_work(cache.n_rows, _inputs(cache), n_features, 0, new_memory=False)
        values = float(cache.n_rows) * n_features * iterations
        return (solve_work(cache.n_rows, n_features, iterations, 0, sketch_size, chunks)
                + Work(madds=drawn.madds * iterations + 2 * values,
                       transcendentals=drawn.transcendentals * iterations))
    return solve_work(cache.n_rows, n_features, iterations, item_bytes(cache), sketch_size, chunks)


def half_size_pays(plan, model: EngineModel, cache, held, y, w, alpha, loss, sketch, rows,
                   history) -> bool:
    """Whether the start size beat half its features (``look_back``): one solve on every
    training row on a map of half the block size (fresh draws, the same ``σ``, the seeded
    sketch rows), its held-out losses against the start size's ``rows`` (:func:`pays`,
    ``growth_tol``). True where the plan does not look back. The look back joins
    ``history``."""
    if not plan.look_back:
        return True
    kept = cache.feature_map
    half_map = model.make_map(kept.n_features_in, kept.sigma, max(1, kept.block_size // 2))
    half = feature_operator(half_map, cache.X, cache.budget, cache.storage,
                            regenerate=getattr(cache, "regenerates", False))
    half.grow(cache.n_blocks)
    solve = solve_at(plan, half, y, w, alpha, loss, sketch, None)
    held_half = (half.for_rows(held[0].X, once=True), held[1], held[2])
    before, _ = held_out_losses(plan, held_half, solve.theta, half.n_blocks, loss)
    history.append((cache.n_blocks, float(before.mean()), solve.iterations, kept.sigma,
                    {"n_components": half.n_features}))
    return pays(before, rows, plan.growth_tol)


def at_final_size(plan, model: EngineModel, cache, held, y, w, alpha, sketch, theta, history) -> tuple:
    """After least squares' solve at the final size: the path of ``α``
    (:func:`alpha_path`), then the squared hinge from its solution (:func:`hinge_finish`),
    as the plan says. Returns ``(θ, α, loss, iterations, the kept model's held-out loss)``."""
    spent, held_loss = 0, None
    if plan.alpha_path:
        theta, alpha, spent, held_loss = alpha_path(plan, cache, held, y, w, alpha, sketch, theta,
                                                    history)
    loss = "squared"
    if plan.hinge_finish:
        theta, loss, held_loss, more = hinge_finish(plan, model, cache, held, y, w, alpha, sketch,
                                                    theta, history)
        spent += more
    if held_loss is None:
        held_loss = float(held_out_losses(plan, held, theta, cache.n_blocks, loss)[0].mean())
    return theta, alpha, loss, spent, held_loss


def alpha_path(plan, cache, held, y, w, alpha, sketch, theta, history) -> tuple:
    """``α·f^k`` (``f = alpha_path_factor``, ``k ≤ alpha_path_steps``) challenge the
    carried ``α``, each solve warm from the last, while each pays on the held-out rows
    (:func:`pays`) and ``α`` stays above the columns' round-off (``ε/nystroem_max_roundoff``):
    the subsample's ``α`` carried as ``α·m/n`` assumes the penalty of the sum of losses
    stays what ``m`` rows chose, and where the classes separate the best penalty falls
    faster with the rows (MNIST ten classes, 16,384 centres: carried 6e-6, best 1.5e-6 on
    the held-out rows). Returns ``(θ, α, iterations, its held-out loss)``."""
    limits, J = plan.limits, cache.n_blocks
    best, _ = held_out_losses(plan, held, theta, J, "squared")
    floor = torch.finfo(cache.storage).eps / limits.nystroem_max_roundoff
    total = 0
    for _ in range(limits.alpha_path_steps):
        candidate = alpha * limits.alpha_path_factor
        if candidate < floor:
            break
        solve = sketched_pcg(plan, cache, y, w, candidate, sketch, theta)
        rows, _ = held_out_losses(plan, held, solve.theta, J, "squared")
        total += solve.iterations
        history.append((J, float(rows.mean()), solve.iterations, cache.feature_map.sigma,
                        {"alpha": candidate, "loss_function": "squared"}))
        if not pays(best, rows, plan.growth_tol):
            break
        theta, alpha, best = solve.theta, candidate, rows
    return theta, alpha, total, float(best.mean())


def hinge_finish(plan, model: EngineModel, cache, held, y, w, alpha, sketch, theta, history) -> tuple:
    """The squared hinge one-vs-rest by Newton from least squares' ``θ`` (its first
    step), at most ``hinge_finish_steps`` steps, while each lowers the held-out hinge loss
    (:func:`pays`); kept unless least squares makes significantly fewer held-out errors
    (McNemar, ``model.clearly_better``): least squares spends its fit on rows far from the
    margin. Returns ``(θ, loss, held-out loss, iterations)``."""
    J, limits = cache.n_blocks, plan.limits
    start_rows, start_outputs = held_out_losses(plan, held, theta, J, "squared_hinge")
    kept = {"rows": start_rows, "theta": None, "outputs": None}

    def stop(now: torch.Tensor) -> bool:
        rows, outputs = held_out_losses(plan, held, now, J, "squared_hinge")
        history.append((J, float(rows.mean()), 0, cache.feature_map.sigma,
                        {"alpha": alpha, "loss_function": "squared_hinge"}))
        if not pays(kept["rows"], rows, plan.growth_tol):
            return True
        kept.update(rows=rows, theta=now, outputs=outputs)
        return False

    solve = newton_squared_hinge(cache, y, w, alpha, sketch, theta, limits, stop,
                                 limits.hinge_finish_steps)
    _, y_held, w_held = held
    y_held = y_held.reshape(len(w_held), -1).to(start_outputs)
    if kept["theta"] is None or model.clearly_better(start_outputs, kept["outputs"], y_held,
                                                     w_held.double(), z=limits.subsample_loss_z):
        return theta, "squared", float(held_out_losses(plan, held, theta, J, "squared")[0].mean()), \
            solve.iterations
    return kept["theta"], "squared_hinge", float(kept["rows"].mean()), solve.iterations


def refined(plan, model: EngineModel, cache, held, y, w, alpha, loss, sketch, n_blocks, theta,
            rows, outputs, history) -> tuple:
    """``refine_factor·σ`` against ``σ`` on every training row at ``n_blocks`` blocks: its
    features written over the cache's memory, one solve from zero (``σ``'s ``θ`` starts the
    challenger worse: docs/decisions/feature-look-back.md), kept where it pays on the
    held-out rows (:func:`pays`), else the cache redrawn at ``σ``. Returns the kept ``(held,
    θ, held-out losses, outputs, iterations spent)``; the challenger joins ``history``.
    Record: docs/decisions/bandwidth-refinement.md."""
    limits, incumbent = plan.limits, cache.feature_map
    challenger = model.make_map(incumbent.n_features_in, incumbent.sigma * limits.refine_factor,
                                incumbent.block_size, cache_bytes=incumbent.cache_bytes)
    cache.redraw(challenger)
    held_now = (cache.for_rows(held[0].X), held[1], held[2])
    solve = solve_at(plan, cache, y, w, alpha, loss, sketch, None)
    now, out_now = held_out_losses(plan, held_now, solve.theta, n_blocks, loss)
    history.append((n_blocks, float(now.mean()), solve.iterations, challenger.sigma))
    if pays(rows, now, 0.0, limits.refine_z):  # the same size either way: its gain alone
        return held_now, solve.theta, now, out_now, solve.iterations
    cache.redraw(incumbent)
    return held, theta, rows, outputs, solve.iterations


def narrowed(plan, model: EngineModel, problem, sigma: float, carry, loss, order) -> tuple:
    """``σ/2``, ``σ/4``, … challenge the subsample's ``σ`` while each pays on the held-out
    rows (:func:`pays`), each by one solve on the first ``narrow_rows`` rows of ``order``
    at the growth's start features (``narrow_blocks``, also where ``n_components`` fixes a
    larger size: the check compares bandwidths, not sizes): the best bandwidth narrows as
    rows grow, and a subsample of ``m`` rows cannot see it (the paper's 2-D set: 0.25× the
    median on 1,024 rows). ``carry(rows)``: the ``α`` of a solve on that many rows. Ranks
    (or Dask's workers, as tasks) solve the next ``model.ranks`` bandwidths at once, each on
    the rows gathered (a solve of bounded rows whose every product would be a collective of
    milliseconds); the kept ``σ`` is the one-at-a-time descent's. Returns the kept ``σ`` and
    its solve's iterations (``None`` where none ran): the full-size solve's predicted
    iterations (docs/decisions/cost-model.md)."""
    k = plan.narrow_rows
    if not plan.narrow or len(order) <= k:  # fewer rows: the subsample's σ stands
        return sigma, None
    rows = problem.index(order[:k])
    whole = nearby if model.ranks == 1 else gathered
    X, y, w = whole(subset(problem.X, rows)), problem.y[rows].reshape(k, -1), problem.weight[rows]
    X_val, y_val, w_val = problem.validation
    X_val = X_val if model.ranks == 1 else gathered(X_val)
    cached = torch.arange(k, device=y.device)  # the rows' positions in each challenger's cache
    sketch = (cached[:max(plan.selection_rows, plan.limits.sketch_least_rows)], cached)

    make_map, d = model.make_map, problem.X.shape[1]  # what a task on a Dask worker carries

    def challenge(step: int) -> tuple:
        feature_map = make_map(d, sigma / 2**step, plan.block_size)
        cache = feature_operator(feature_map, X, plan.cache_bytes)
        if not cache.fits(plan.narrow_blocks):  # a budget below these rows' features: drawn
            cache = feature_operator(feature_map, X, plan.cache_bytes, regenerate=True)
        cache.grow(plan.narrow_blocks)
        solve = solve_at(plan, cache, y, w, carry(k), loss, sketch, None)
        held = (cache.for_rows(X_val, once=True), y_val.reshape(len(w_val), -1), w_val)
        return held_out_losses(plan, held, solve.theta, plan.narrow_blocks, loss)[0], solve.iterations

    steps, results, best = plan.limits.narrowings + 1, {}, None
    for step in range(steps):
        if step not in results:  # the next bandwidths the descent may need, one a rank
            batch = list(range(step, min(step + model.ranks, steps)))
            results.update(zip(batch, model.spread(challenge, batch)))
        losses, iterations = results[step]
        if best is not None and not pays(best[1], losses, plan.growth_tol):
            break
        best = (sigma / 2**step, losses, iterations)
    return best[0], best[2]


def sketched_pcg(plan, cache, y, w, alpha, sketch, start) -> RidgeSolve:
    """Least squares by conjugate gradients preconditioned by ``s`` sketch rows
    (:func:`sketch_rows`), ``s`` doubled, warm, while ``sketch_patience`` iterations do not
    converge and the sketch's float64 features take at most ``sketch_cache_share`` of the
    cache's budget: a small ``α`` leaves many directions above it that a small sketch misses
    (QM7 at ``α = 1e-9``, 22,928 rows: no convergence in 300 iterations from 1,024 or 2,048
    rows, ~175 from 4,096)."""
    limits, total = plan.limits, 0
    rows = sketch_rows(len(sketch[1]), cache.n_features, len(sketch[0]), limits)
    while True:
        precond = SketchPreconditioner(cache, sketch[1][:rows], alpha, float(w.double().mean()),
                                       limits.woodbury_max_roundoff)
        held = cache_bytes(rows, cache.n_features + 1, torch.float64)
        grows = rows < len(sketch[1]) and held <= limits.sketch_cache_share * plan.cache_bytes
        solve = ridge_pcg(cache, y, w, alpha, precond, start, tol=solve_tol(alpha, limits),
                          max_iter=limits.solve_max_iter,
                          patience=limits.sketch_patience if grows else None)
        total += solve.iterations
        if solve.converged or not grows:
            return RidgeSolve(solve.theta, total, solve.converged)
        start, rows = solve.theta, min(2 * rows, len(sketch[1]))


def solve_at(plan, cache, y, w, alpha, loss, sketch, start) -> RidgeSolve:
    """Least squares by preconditioned CG (exactly in the dual on few rows), the squared
    hinge by Newton on its active set (each Newton system the least squares of the active
    rows), any other loss by :func:`~.newton.newton_loss` from ``start`` or least squares'
    solution."""
    limits, name = plan.limits, loss_name(loss)
    if name == "squared" and cache.n_rows <= limits.dual_max_rows:  # few rows: exactly
        every = torch.arange(cache.n_rows, device=y.device)
        gram = exact_gram(cache.rows(every))
        # kept for a Newton iteration at this map and size (:class:`~.newton.CurvatureSketch`)
        cache.exact_gram = (cache.feature_map, cache.n_blocks, gram) if cache.reads_rows else None
        return RidgeSolve(ridge_dual_rows(cache, every, y, w, alpha, cache.n_rows, gram), 1, True)
    if name == "squared":
        return sketched_pcg(plan, cache, y, w, alpha, sketch, start)
    if name == "squared_hinge":
        return newton_squared_hinge(cache, y, w, alpha, sketch, start, limits)
    spent = 0
    if start is None:  # Newton from least squares' solution (a step from zero is blind)
        first = solve_at(plan, cache, y, w, alpha, "squared", sketch, None)
        start, spent = first.theta, first.iterations
    solve = newton_loss(cache, y, w, alpha, loss, sketch, start, limits)
    return RidgeSolve(solve.theta, spent + solve.iterations, solve.converged)


def sketch_rows(n_rows: int, n_features: int, least: int, limits) -> int:
    """Rows of the least-squares preconditioner's sketch: the subsample's ``least``, or more
    where the rows are many for their features, ``c·n/D`` (``c = sketch_ratio``: the sketch's
    ``sD²`` work then about ``c`` conjugate-gradient iterations' ``nD``), at most ``n``."""
    return min(n_rows, max(least, limits.sketch_ratio * n_rows // max(n_features, 1)))


def held_out_losses(plan, held, theta, n_blocks, loss) -> tuple[torch.Tensor, torch.Tensor]:
    """Each held-out row's ``w_i ℓ(f(x_i), y_i) / w̄`` at ``n_blocks`` blocks (mean: the
    weighted mean loss), ``ℓ`` least squares' ``½‖f − y‖²``, the squared hinge's
    ``½ Σ max(0, 1 − yf)²``, or another loss's (a piecewise-linear one's envelope at the last
    width of ``smoothing_path``, the loss its solve minimises); and the outputs ``f`` ``(m, C)``."""
    cache, y, w = held
    cache.grow(n_blocks)
    outputs, y = cache.matmul(theta), y.double().reshape(cache.n_rows, -1)
    w = w.double()
    name = loss_name(loss)
    if name in ("squared", "squared_hinge"):
        residual = (1 - y * outputs).clamp_min(0) if name == "squared_hinge" else outputs - y
        return w * 0.5 * residual.square().sum(dim=1) / w.mean(), outputs
    value = smoothed_loss(loss, plan.limits.smoothing_path[-1])(outputs, y, need=0)[0]
    return w * value.sum(dim=1) / w.mean(), outputs


def pays(before: torch.Tensor, after: torch.Tensor, tol: float, z: float = 2.0) -> bool:
    """Whether the held-out losses ``after`` beat ``before`` by more than ``tol`` (relative)
    and by more than ``z`` standard errors of the rows' paired differences."""
    gain = before - after
    mean = float(gain.mean())
    spread = float(gain.std()) / math.sqrt(max(len(gain) - 1, 1))
    return mean > tol * float(before.mean()) and mean > z * spread
