"""The fit engine's first stage: ``σ``, ``α`` and the loss of least exact leave-one-out loss on
a seeded subsample of the training rows, by the dual route's solvers.

For each bandwidth evaluated one ``m × m`` Gram matrix at the plan's selection features gives
every ``α``'s exact leave-one-out loss in closed form (:mod:`.dual`, :mod:`.dual_hinge`); the
bandwidth is found by descent from the middle candidate (:func:`descend`); a regressor's
per-feature lengthscales (:func:`lengthscale_candidates`) challenge the bandwidth; for two
classes with ``loss="auto"`` the squared hinge is kept only where it makes significantly fewer
leave-one-out errors (``model.clearly_better``, McNemar). Record: docs/decisions/subsample-route.md.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from .dual import dual_ridge, gram_rows
from .dual_hinge import dual_squared_hinge
from .lengthscales import fit_lengthscales
from .selection import candidate_records

__all__ = ["PER_FEATURE_KERNELS", "choose_on_subsample", "descend", "dual_candidates",
           "lengthscale_candidates"]

#: the kernels whose feature maps take one lengthscale per feature
PER_FEATURE_KERNELS = ("rbf", "laplace", "matern")


def choose_on_subsample(plan, model, X_sub, y_sub, w_sub, sigmas, per_feature) -> tuple:
    """``(σ, α, loss, cv_results_ records, (its leave-one-out loss, predictions, targets,
    weights), spectrum)`` of least leave-one-out loss on the rows ``X_sub`` (a dense tensor) at the
    plan's selection features, over the bandwidths ``sigmas`` (ascending) and then the
    per-feature candidates ``per_feature`` (kept only for a lower leave-one-out loss); the
    losses of ``plan.losses_compared``, the first kept unless another is clearly better.
    ``model``: an :class:`~.engine.EngineModel`. The leave-one-out loss is ``inf`` where the
    squared hinge did not converge at any ``α``. ``spectrum``: the eigenvalues of the first
    loss's kept Gram and its ``mα`` (``None`` where least squares did not solve it), from
    which the plan sizes the features (:func:`~kernelstream.planning.effective_dimension`)."""
    blocks = max(1, plan.selection_features // plan.block_size)
    solve = functools.partial(dual_candidates, model.make_map, X_sub, y_sub, w_sub,
                              block_size=plan.block_size, n_blocks=blocks,
                              grams={},  # the losses share each σ's Gram
                              exact=plan.basis == "exact")
    first, *others = plan.losses_compared
    fan = dict(spread=model.spread, width=model.ranks)  # ranks: the next bandwidths at once
    best, records = descend(lambda sigma: solve([sigma], list(plan.dual_alphas), losses=(first,)),
                            sigmas, first, **fan)
    if per_feature:  # kept only for a lower leave-one-out loss than one bandwidth's
        ard, extra = descend(lambda sigma: solve([sigma], list(plan.dual_alphas), losses=(first,)),
                             per_feature, first, **fan)
        records += extra
        if ard[first][0] < best[first][0]:
            best = ard
    for name in others:  # the hinge from least squares' bandwidth on wider, decades of α
        kept = best[first][2].feature_map.sigma
        wider = [s for s in sigmas if np.mean(s) >= np.mean(kept) * (1 - 1e-9)]
        more, extra = descend(lambda sigma: solve([sigma], list(plan.dual_alphas[::2]),
                                                  losses=(name,)), wider, name, start=0, **fan)
        best, records = {**best, **more}, records + extra
    chosen = first
    for name in others:
        if math.isfinite(best[name][0]) and model.clearly_better(
                best[name][2].leave_one_out, best[chosen][2].leave_one_out,
                y_sub.reshape(len(w_sub), -1).to(best[chosen][2].leave_one_out), w_sub.double(),
                z=plan.limits.subsample_loss_z):
            chosen = name
    loo, alpha, solution = best[chosen]
    held = (solution.leave_one_out.to(X_sub.dtype), y_sub[w_sub > 0], w_sub[w_sub > 0])
    _, first_alpha, first_solution = best[first]
    spectrum = (None if first_solution.eigenvalues is None else
                (first_solution.eigenvalues.tolist(), len(w_sub) * first_alpha))
    return solution.feature_map.sigma, alpha, chosen, records, (loo, *held), spectrum


def dual_candidates(make_map, X_t, y_t, w_t, sigmas, alphas, block_size, n_blocks, losses,
                    grams: dict | None = None, exact: bool = False) -> tuple[dict, list]:
    """``({loss: (least leave-one-out loss, its α, its solution)}, cv_results_ records)``
    over every ``σ`` (one ``n × n`` Gram matrix at a time, shared by the losses; ``grams``:
    a dict that keeps them by ``σ`` for the caller's later calls on the same rows);
    ``make_map(d, σ, block_size)`` the estimator's feature map; ``exact``: the exact kernel's
    matrix in place of the features' Gram (:mod:`.exact_kernel`)."""
    best, records = {}, []
    for sigma in sigmas:
        key = tuple(np.atleast_1d(np.asarray(sigma, dtype=float)))
        rows = None if grams is None else grams.get(key)
        if rows is None:
            kernel_map = make_map(X_t.shape[1], sigma, block_size)
            rows = gram_rows(kernel_map, n_blocks, X_t, y_t, w_t, exact=exact)
            if grams is not None:
                grams[key] = rows
        for name in losses:
            solver = dual_squared_hinge(rows, alphas) if name == "squared_hinge" else dual_ridge(rows)
            loo = solver.leave_one_out_losses(alphas)
            records += [dict(r, loss=name) for r in candidate_records(
                0, sigma, alphas, X_t.shape[0], n_blocks * block_size, loo, 1)]
            a = int(torch.argmin(loo))  # inf: the squared hinge did not converge at any α
            if bool(torch.isnan(loo[a])):
                raise FloatingPointError("The leave-one-out loss is not finite; standardise X, "
                                         "and check y and sample_weight.")
            if name not in best or float(loo[a]) < best[name][0]:
                best[name] = (float(loo[a]), alphas[a], solver.solution(alphas[a]))
            del solver
        del rows  # one bandwidth's n × n matrices at a time, unless the caller keeps them
    return best, records


def lengthscale_candidates(X_sub: torch.Tensor, y_sub: torch.Tensor, plan, kernel: str,
                           kernel_params, seed: int) -> list:
    """``ℓ/2, ℓ, 2ℓ`` with ``ℓ`` the lengthscales of greatest GP marginal likelihood on the
    subsample's first ``lengthscale_rows`` rows (record: docs/decisions/ard-lengthscales.md),
    where ``sigma="auto"``, ``d ≥ 2`` and the kernel takes per-feature lengthscales; else none.
    For a regressor's targets (a classifier chooses one bandwidth)."""
    if plan.sigma_scales is None or X_sub.shape[1] < 2 or kernel not in PER_FEATURE_KERNELS:
        return []
    rows = min(len(X_sub), plan.lengthscale_rows)
    lengthscales, *_ = fit_lengthscales(X_sub[:rows].double().cpu().numpy(),
                                        y_sub[:rows].double().cpu().numpy(), kernel=kernel,
                                        rows=rows, seed=seed % 2**32,
                                        max_iter=plan.lengthscale_iterations,
                                        kernel_params=kernel_params)
    return [scale * lengthscales for scale in (0.5, 1.0, 2.0)]


def descend(evaluate, sigmas: list, loss: str, start: int | None = None, spread=None,
            width: int = 1) -> tuple[dict, list]:
    """The least leave-one-out loss over ``sigmas`` (ascending) by descent from the middle
    one (or ``start``): its narrower neighbour first, then on in the direction that improves
    while it does (the loss is near unimodal in ``log σ``: three or four of five are
    evaluated). ``evaluate(σ)`` returns :func:`dual_candidates`'s ``(best, records)``.
    ``spread(evaluate, items)`` evaluates several at once (``width``: how many; ranks fetch
    the next ones the descent may need together); the result and the records are the
    one-at-a-time descent's, whatever ``width``."""
    start = len(sigmas) // 2 if start is None else start
    spread = spread or (lambda run, items: [run(item) for item in items])
    results, asked = {}, {start}

    def fetch(indices) -> None:
        wanted = [i for i in dict.fromkeys(indices) if 0 <= i < len(sigmas) and i not in results]
        for i, result in zip(wanted, spread(lambda i: evaluate(sigmas[i]), wanted)):
            results[i] = result

    def value(i: int, step: int) -> float:
        asked.add(i)
        if i not in results:
            fetch([i + k * step for k in range(width)])
        return results[i][0][loss][0]

    fetch([start, start - 1 if start > 0 else start + 1][:max(1, width)])
    here = start
    for step in (-1, 1):
        while 0 <= here + step < len(sigmas) and value(here + step, step) < value(here, step):
            here += step
        if here != start:
            break
    records = [r for i in sorted(asked) for r in results[i][1]]
    return results[here][0], records
