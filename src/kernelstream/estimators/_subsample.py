"""The subsample route of ``fit``: choose on a few rows exactly, then solve once at full size.

For in-memory rows beyond the exact dual route, with the default solver and the squared loss (a
regressor's, or the classifier's ``loss="auto"``):

1. **Selection.** ``σ`` and ``α`` (and, for two classes, least squares or the squared hinge)
   of least exact leave-one-out loss on a seeded subsample of the training rows, by the dual
   route's solvers (:mod:`kernelstream.solvers.dual`). ``α`` chosen on ``m`` rows is carried to
   ``n`` as ``α·m/n``: the penalty of the sum of the losses, ``nα``, stays what the subsample
   chose.
2. **One solve per feature size.** The training rows' features are cached
   (:class:`~kernelstream.solvers.cached.FeatureCache`) and the objective solved by conjugate
   gradients with a Nyström preconditioner from the subsample (:func:`~kernelstream.solvers.
   cached.ridge_pcg`); the squared hinge by Newton's method on its active set, each system
   the same way. The features double, each size warm-started from the last, while the loss on
   the held-out rows falls by more than ``growth_tol``; the best size is kept.
3. **The bandwidth on every row.** From ``refine_rows`` training rows, ``refine_factor·σ``
   challenges ``σ`` once at the first size on every training row (a subsample's ``σ`` errs
   wide; record: docs/decisions/bandwidth-refinement.md).

Record: docs/decisions/subsample-route.md.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from ..features.base import DEFAULT_CACHE_BYTES
from ..planning import LIMITS, FitPlan
from ..solvers.cached import (ColumnSketchPreconditioner, FeatureCache, RidgeSolve,
                              SketchPreconditioner, cache_bytes, exact_gram, restricted,
                              ridge_dual_rows, ridge_pcg)
from ..solvers.lengthscales import fit_lengthscales
from ..solvers.nystroem import NystroemBasis, NystroemCache
from ..solvers.epochs import FitResult
from ..solvers.selection import Problem
from ..solvers.streams import subset

__all__ = ["SubsampleMixin", "cv_results"]

#: the kernels whose feature maps take one lengthscale per feature
PER_FEATURE_KERNELS = ("rbf", "laplace", "matern")


class SubsampleMixin:
    """The subsample route of :class:`ConvergingMixin` (``fit_plan_.route == "subsample"``)."""

    def _fit_subsample(self, problem: Problem) -> None:
        plan: FitPlan = self.fit_plan_
        positions, sub = self._subsample_rows(problem, plan.selection_rows)
        if plan.selection != "none" and len(sub) < 2:
            raise ValueError(f"n_samples={problem.X.shape[0]} is too few to choose sigma and alpha "
                             f"by leave-one-out (rows of positive sample_weight: {len(sub)}); pass "
                             "more rows, or numbers for sigma and alpha.")
        sigma, alpha, loss, records, chosen = self._subsample_choice(problem, sub)
        self.cv_results_ = cv_results(records) if len(records) > 1 else None
        if loss != "squared":
            self.loss_ = loss
        n, m = problem.n_train, len(sub)
        carry = (lambda rows: alpha * m / rows) if self.alpha == "auto" else (lambda rows: alpha)
        sigma = self._narrowed(problem, sigma, carry, loss, positions)
        alpha = carry(n)  # nα stays the subsample's mα
        # a fit that caches n×D features holds the d×D parameters: predict draws them once
        pinned = max(DEFAULT_CACHE_BYTES, int(LIMITS.param_cache_share * plan.cache_bytes))
        feature_map = self._make_map(problem.X.shape[1], sigma, plan.block_size, cache_bytes=pinned)
        train = problem.index(torch.arange(n, device=problem.y.device))
        X_train = subset(problem.X, train)
        if plan.basis == "nystroem":
            cache, sketched = self._nystroem_cache(feature_map, X_train, positions, alpha, plan)
        else:
            cache, sketched = FeatureCache(feature_map, X_train, plan.cache_bytes,
                                           getattr(torch, plan.cache_dtype)), m
        y, w = problem.y[train].reshape(n, -1), problem.weight[train]
        held = None
        if problem.validation is not None:
            X_val, y_val, w_val = problem.validation
            held = (cache.for_rows(X_val), y_val.reshape(len(w_val), -1), w_val)
        sketch = (positions[:sketched], positions)  # the sketch's cache rows, then every row's
        theta, history, iterations, held_loss = self._grow_and_solve(cache, held, y, w, alpha, loss,
                                                                     sketch, plan)
        if held is not None and (plan.alpha_path or plan.hinge_finish):
            theta, alpha, loss, spent, held_loss = self._at_final_size(cache, held, y, w, alpha,
                                                                       sketch, theta, history)
            iterations += spent
            if plan.hinge_finish:
                self.loss_ = loss
        if held is not None:  # the kept model's held-out loss
            chosen = (held_loss, *chosen[1:])
        self._keep_solution(problem, cache.fitted(theta, pinned), history, held is not None,
                            chosen, alpha, iterations)

    def _keep_solution(self, problem: Problem, fitted: tuple, history, held: bool, chosen,
                       alpha: float, iterations: int) -> None:
        """The fitted model from the cache's ``(map, coefficients)`` (a refined bandwidth's,
        where its challenge paid), its history and calibration: from the held-out rows where
        there are some, else the subsample's leave-one-out. ``chosen[0]``: the kept model's
        held-out loss (its leave-one-out loss without held-out rows)."""
        feature_map, theta = fitted
        best_loss = chosen[0]
        precise = getattr(feature_map, "precise", False)  # a Nyström model at a tiny α: float64
        result = FitResult(theta=theta.to(torch.float64 if precise else self._torch_dtype()),
                           best_loss=torch.tensor([best_loss], dtype=torch.float64), best_epoch=[0],
                           loss_curve=[h[1] for h in history],
                           validation_curve=[[h[1]] for h in history],
                           n_epochs=iterations, n_steps=iterations)
        J = (theta.shape[0] - 1) // feature_map.block_size
        self._set_preconditioned(result, feature_map, [alpha], J, history)
        if not held and chosen[1] is not None:
            self._calibrate_held_out(*chosen[1:])
        else:
            self._calibrate(problem)

    def _nystroem_cache(self, kernel_map, X_train, positions, alpha: float, plan: FitPlan) -> tuple:
        """The kernel columns of the training rows on a Nyström basis whose centres are the
        first ``block_size·max_blocks`` rows of the seeded order ``positions``, and the rows of
        the preconditioner's sketch: ``nystroem_sketch_share`` of the centres, at least the
        subsample. Columns and factor in
        float64 where ``α`` is below float32's round-off (``nystroem_max_roundoff``)."""
        if torch.finfo(X_train.dtype).eps > LIMITS.nystroem_max_roundoff * alpha:
            X_train = X_train.double()
        M = plan.block_size * plan.max_blocks
        basis = NystroemBasis(kernel_map, X_train[positions[:M]], plan.block_size)
        cache = NystroemCache(basis, X_train, plan.cache_bytes, factor_dtype=X_train.dtype,
                              centre_rows=positions[:M])
        return cache, min(len(positions), max(plan.selection_rows,
                                              int(LIMITS.nystroem_sketch_share * M)))

    def _subsample_rows(self, problem: Problem, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every training row of positive weight in a seeded order (positions among the
        training rows), and the rows of ``X`` of the first ``m``: the subsample."""
        rows = problem.index(torch.arange(problem.n_train, device=problem.y.device))
        positions = torch.nonzero(problem.weight[rows] > 0).reshape(-1)
        order = torch.randperm(len(positions), generator=torch.Generator().manual_seed(self.seed_))
        positions = positions[order.to(positions.device)]
        return positions, rows[positions[:m]]

    def _narrowed(self, problem: Problem, sigma: float, carry, loss: str, order) -> float:
        """``σ/2``, ``σ/4``, … challenge the subsample's ``σ`` while each pays on the held-out
        rows (:func:`_pays`), each by one solve on the first ``narrow_rows`` rows of ``order``
        at the growth's start features (``narrow_blocks``, also where ``n_components`` fixes a
        larger size: the check compares bandwidths, not sizes): the best bandwidth narrows as
        rows grow, and a subsample of ``m`` rows cannot see it (the paper's 2-D set: 0.25× the
        median on 1,024 rows)."""
        plan = self.fit_plan_
        k = plan.narrow_rows
        if not plan.narrow or len(order) <= k:  # fewer rows: the subsample's σ stands
            return sigma
        rows = problem.index(order[:k])
        X, y, w = subset(problem.X, rows), problem.y[rows].reshape(k, -1), problem.weight[rows]
        X_val, y_val, w_val = problem.validation
        cached = torch.arange(k, device=y.device)  # the rows' positions in each challenger's cache
        sketch = (cached[:plan.selection_rows], cached)
        best = None
        for step in range(LIMITS.narrowings + 1):
            candidate = sigma / 2**step
            feature_map = self._make_map(problem.X.shape[1], candidate, plan.block_size)
            cache = FeatureCache(feature_map, X, plan.cache_bytes)
            cache.grow(plan.narrow_blocks)
            solve = self._solve_at(cache, y, w, carry(k), loss, sketch, None)
            held = (FeatureCache(feature_map, X_val), y_val.reshape(len(w_val), -1), w_val)
            losses, _ = _held_out_losses(held, solve.theta, plan.narrow_blocks, loss)
            if best is not None and not _pays(best[1], losses, plan.growth_tol):
                break
            best = (candidate, losses)
        return best[0]

    def _subsample_choice(self, problem: Problem, sub: torch.Tensor) -> tuple:
        """``(σ, α, loss, cv_results_ records, (its leave-one-out loss, predictions, targets,
        weights))`` of least leave-one-out loss on the rows ``sub``
        at the plan's selection features; for two classes with ``loss="auto"`` the squared hinge
        only where it makes significantly fewer leave-one-out errors (McNemar)."""
        plan = self.fit_plan_
        X_all = problem.X.matrix if hasattr(problem.X, "matrix") else problem.X.cpu().numpy()
        if plan.selection == "none":
            return (self._bandwidth_candidates(X_all)[0], plan.dual_alphas[0], plan.loss, [],
                    (math.nan, None, None, None))
        X_sub, y_sub, w_sub = subset(problem.X, sub), problem.y[sub], problem.weight[sub]
        X_sub = X_sub.matrix.toarray() if hasattr(X_sub, "matrix") else X_sub
        X_sub = torch.as_tensor(X_sub, dtype=self._torch_dtype(), device=problem.y.device)
        sigmas = self._bandwidth_candidates(X_all)  # the median of every row, as by epochs
        blocks = max(1, plan.selection_features // plan.block_size)
        solve = functools.partial(self._solve_dual, X_sub, y_sub, w_sub, block_size=plan.block_size,
                                  n_blocks=blocks, grams={})  # the losses share each σ's Gram
        first, *others = plan.losses_compared
        best, records = _descend(lambda sigma: solve([sigma], list(plan.dual_alphas), losses=(first,)),
                                 sigmas, first)
        per_feature = self._lengthscale_candidates(X_sub, y_sub, plan)
        if per_feature:  # kept only for a lower leave-one-out loss than one bandwidth's
            ard, extra = _descend(lambda sigma: solve([sigma], list(plan.dual_alphas),
                                                      losses=(first,)), per_feature, first)
            records += extra
            if ard[first][0] < best[first][0]:
                best = ard
        for name in others:  # the hinge at least squares' bandwidth or wider, decades of α
            kept = best[first][2].feature_map.sigma
            wider = [s for s in sigmas if np.mean(s) >= np.mean(kept) * (1 - 1e-9)]
            more, extra = _descend(lambda sigma: solve([sigma], list(plan.dual_alphas[::2]),
                                                       losses=(name,)), wider, name)
            best, records = {**best, **more}, records + extra
        chosen = first
        for name in others:
            if math.isfinite(best[name][0]) and self._clearly_better(
                    best[name][2].leave_one_out, best[chosen][2].leave_one_out,
                    y_sub.reshape(len(w_sub), -1).to(best[chosen][2].leave_one_out), w_sub.double(),
                    z=LIMITS.subsample_loss_z):
                chosen = name
        loo, alpha, solution = best[chosen]
        if not math.isfinite(loo):
            warnings.warn(f"The squared hinge's Newton iteration did not converge at alpha={alpha:g} "
                          "(near interpolation); the model is its last iterate. Pass a larger alpha.",
                          ConvergenceWarning, stacklevel=5)
        held = (solution.leave_one_out.to(self._torch_dtype()), y_sub[w_sub > 0], w_sub[w_sub > 0])
        return solution.feature_map.sigma, alpha, chosen, records, (loo, *held)

    def _lengthscale_candidates(self, X_sub: torch.Tensor, y_sub: torch.Tensor, plan) -> list:
        """``sigma="auto"`` of a regressor (``d ≥ 2``, a kernel with per-feature lengthscales):
        ``ℓ/2, ℓ, 2ℓ`` with ``ℓ`` the lengthscales of greatest GP marginal likelihood on the
        subsample's first ``lengthscale_rows`` rows (record: docs/decisions/ard-lengthscales.md);
        else none."""
        if (plan.sigma_scales is None or getattr(self, "classes_", None) is not None
                or X_sub.shape[1] < 2 or self.kernel not in PER_FEATURE_KERNELS):
            return []
        rows = min(len(X_sub), plan.lengthscale_rows)
        lengthscales, *_ = fit_lengthscales(X_sub[:rows].double().cpu().numpy(),
                                            y_sub[:rows].double().cpu().numpy(), kernel=self.kernel,
                                            rows=rows, seed=self.seed_ % 2**32,
                                            max_iter=plan.lengthscale_iterations,
                                            kernel_params=self.kernel_params)
        return [scale * lengthscales for scale in (0.5, 1.0, 2.0)]

    def _grow_and_solve(self, cache, held, y, w, alpha, loss, sketch, plan) -> tuple:
        """The best ``θ`` over doubling feature sizes, its history ``[(blocks, held-out loss,
        iterations, σ[, more])]``, the iterations in all and its held-out loss. A size is kept
        only where its held-out loss is lower than the last's by more than ``growth_tol``
        (relative) and by two standard errors of the rows' paired differences: features are
        spent while they pay; the first doubling also needs a look back that paid
        (:meth:`_half_size_pays`). A classifier stops after a kept size that changed the class
        of at most ``settled_class_changes`` held-out rows: its held-out error has stopped
        moving measurably, and a further doubling would cost twice as much again."""
        J, theta, best, history, total, classes = plan.start_blocks, None, None, [], 0, None
        while True:
            cache.grow(J)
            start = None if theta is None else cache.extended(theta, J)
            solve = self._solve_at(cache, y, w, alpha, loss, sketch, start)
            theta, total = solve.theta, total + solve.iterations
            rows, outputs = _held_out_losses(held, theta, J, loss) if held is not None else (None, None)
            value = float(rows.mean()) if rows is not None else math.nan
            history.append((J, value, solve.iterations, cache.feature_map.sigma))
            if best is not None and not _pays(best[2], rows, plan.growth_tol):
                break
            if best is None and plan.refine and held is not None:
                held, theta, rows, outputs, its = self._refined(cache, held, y, w, alpha, loss, sketch,
                                                                J, theta, rows, outputs, history)
                total, value = total + its, float(rows.mean())
            best = (theta, value, rows)
            now = self._held_out_classes(outputs[held[2] > 0]) if outputs is not None else None
            settled = (now is not None and classes is not None
                       and int((now != classes).sum()) <= LIMITS.settled_class_changes)
            classes = now
            grown = min(2 * J, plan.max_blocks)
            while grown > J and not cache.fits(grown):  # the last step: as far as the cache holds
                grown -= 1
            if held is None or grown == J or settled:
                break
            if J == plan.start_blocks and not self._half_size_pays(cache, held, y, w, alpha, loss,
                                                                   sketch, best[2], history):
                break
            J = grown
        return best[0], history, total, best[1]

    def _half_size_pays(self, cache, held, y, w, alpha, loss, sketch, rows, history) -> bool:
        """Whether the start size beat half its features (``look_back``): one solve on every
        training row on a map of half the block size (fresh draws, the same ``σ``, the seeded
        sketch rows), its held-out losses against the start size's ``rows`` (:func:`_pays`,
        ``growth_tol``). True where the plan does not look back. The look back joins
        ``history``."""
        if not self.fit_plan_.look_back:
            return True
        kept = cache.feature_map
        half_map = self._make_map(kept.n_features_in, kept.sigma, max(1, kept.block_size // 2))
        half = FeatureCache(half_map, cache.X, cache.budget, cache.storage)
        half.grow(cache.n_blocks)
        solve = self._solve_at(half, y, w, alpha, loss, sketch, None)
        held_half = (half.for_rows(held[0].X), held[1], held[2])
        before, _ = _held_out_losses(held_half, solve.theta, half.n_blocks, loss)
        history.append((cache.n_blocks, float(before.mean()), solve.iterations, kept.sigma,
                        {"n_components": half.n_features}))
        return _pays(before, rows, self.fit_plan_.growth_tol)

    def _at_final_size(self, cache, held, y, w, alpha, sketch, theta, history) -> tuple:
        """After least squares' solve at the final size: the path of ``α``
        (:meth:`_alpha_path`), then the squared hinge from its solution (:meth:`_hinge_finish`),
        as the plan says. Returns ``(θ, α, loss, iterations, the kept model's held-out loss)``."""
        plan, spent, held_loss = self.fit_plan_, 0, None
        if plan.alpha_path:
            theta, alpha, spent, held_loss = self._alpha_path(cache, held, y, w, alpha, sketch,
                                                              theta, history)
        loss = "squared"
        if plan.hinge_finish:
            theta, loss, held_loss, more = self._hinge_finish(cache, held, y, w, alpha, sketch,
                                                              theta, history)
            spent += more
        if held_loss is None:
            held_loss = float(_held_out_losses(held, theta, cache.n_blocks, loss)[0].mean())
        return theta, alpha, loss, spent, held_loss

    def _alpha_path(self, cache, held, y, w, alpha, sketch, theta, history) -> tuple:
        """``α·f^k`` (``f = alpha_path_factor``, ``k ≤ alpha_path_steps``) challenge the
        carried ``α``, each solve warm from the last, while each pays on the held-out rows
        (:func:`_pays`) and ``α`` stays above the columns' round-off (``ε/nystroem_max_roundoff``):
        the subsample's ``α`` carried as ``α·m/n`` assumes the penalty of the sum of losses
        stays what ``m`` rows chose, and where the classes separate the best penalty falls
        faster with the rows (MNIST ten classes, 16,384 centres: carried 6e-6, best 1.5e-6 on
        the held-out rows). Returns ``(θ, α, iterations, its held-out loss)``."""
        limits, J = LIMITS, cache.n_blocks
        best, _ = _held_out_losses(held, theta, J, "squared")
        floor = torch.finfo(cache.storage).eps / limits.nystroem_max_roundoff
        total = 0
        for _ in range(limits.alpha_path_steps):
            candidate = alpha * limits.alpha_path_factor
            if candidate < floor:
                break
            solve = self._sketched_pcg(cache, y, w, candidate, sketch, theta)
            rows, _ = _held_out_losses(held, solve.theta, J, "squared")
            total += solve.iterations
            history.append((J, float(rows.mean()), solve.iterations, cache.feature_map.sigma,
                            {"alpha": candidate, "loss_function": "squared"}))
            if not _pays(best, rows, self.fit_plan_.growth_tol):
                break
            theta, alpha, best = solve.theta, candidate, rows
        return theta, alpha, total, float(best.mean())

    def _hinge_finish(self, cache, held, y, w, alpha, sketch, theta, history) -> tuple:
        """The squared hinge one-vs-rest by Newton from least squares' ``θ`` (its first
        step), at most ``hinge_finish_steps`` steps, while each lowers the held-out hinge loss
        (:func:`_pays`); kept unless least squares makes significantly fewer held-out errors
        (McNemar, :meth:`_clearly_better`): least squares spends its fit on rows far from the
        margin. Returns ``(θ, loss, held-out loss, iterations)``."""
        J, limits = cache.n_blocks, LIMITS
        start_rows, start_outputs = _held_out_losses(held, theta, J, "squared_hinge")
        kept = {"rows": start_rows, "theta": None, "outputs": None}

        def stop(now: torch.Tensor) -> bool:
            rows, outputs = _held_out_losses(held, now, J, "squared_hinge")
            history.append((J, float(rows.mean()), 0, cache.feature_map.sigma,
                            {"alpha": alpha, "loss_function": "squared_hinge"}))
            if not _pays(kept["rows"], rows, self.fit_plan_.growth_tol):
                return True
            kept.update(rows=rows, theta=now, outputs=outputs)
            return False

        solve = _newton_hinge(cache, y, w, alpha, sketch, theta, limits, stop, limits.hinge_finish_steps)
        _, y_held, w_held = held
        y_held = y_held.reshape(len(w_held), -1).to(start_outputs)
        if kept["theta"] is None or self._clearly_better(start_outputs, kept["outputs"], y_held,
                                                         w_held.double(), z=LIMITS.subsample_loss_z):
            return theta, "squared", float(_held_out_losses(held, theta, J, "squared")[0].mean()), \
                solve.iterations
        return kept["theta"], "squared_hinge", float(kept["rows"].mean()), solve.iterations

    def _refined(self, cache, held, y, w, alpha, loss, sketch, n_blocks, theta, rows, outputs,
                 history) -> tuple:
        """``refine_factor·σ`` against ``σ`` on every training row at ``n_blocks`` blocks: its
        features written over the cache's memory, one solve from zero (``σ``'s ``θ`` starts the
        challenger worse: docs/decisions/feature-look-back.md), kept where it pays on the
        held-out rows (:func:`_pays`), else the cache redrawn at ``σ``. Returns the kept ``(held,
        θ, held-out losses, outputs, iterations spent)``; the challenger joins ``history``.
        Record: docs/decisions/bandwidth-refinement.md."""
        incumbent = cache.feature_map
        challenger = self._make_map(incumbent.n_features_in, incumbent.sigma * LIMITS.refine_factor,
                                    incumbent.block_size, cache_bytes=incumbent.cache_bytes)
        cache.redraw(challenger)
        held_now = (cache.for_rows(held[0].X), held[1], held[2])
        solve = self._solve_at(cache, y, w, alpha, loss, sketch, None)
        now, out_now = _held_out_losses(held_now, solve.theta, n_blocks, loss)
        history.append((n_blocks, float(now.mean()), solve.iterations, challenger.sigma))
        if _pays(rows, now, 0.0, LIMITS.refine_z):  # the same size either way: its gain alone
            return held_now, solve.theta, now, out_now, solve.iterations
        cache.redraw(incumbent)
        return held, theta, rows, outputs, solve.iterations

    def _held_out_classes(self, outputs: torch.Tensor) -> torch.Tensor | None:
        """The classes that held-out ``(m, C)`` outputs pick (a classifier's); ``None`` for a
        regressor, whose growth the loss alone decides."""
        return None

    def _sketched_pcg(self, cache, y, w, alpha, sketch, start) -> RidgeSolve:
        """Least squares by conjugate gradients preconditioned by ``s`` sketch rows
        (:func:`sketch_rows`), ``s`` doubled, warm, while ``sketch_patience`` iterations do not
        converge and the sketch's float64 features take at most ``sketch_cache_share`` of the
        cache's budget: a small ``α``
        leaves many directions above it that a small sketch misses (QM7 at ``α = 1e-9``, 22,928
        rows: no convergence in 300 iterations from 1,024 or 2,048 rows, ~175 from 4,096)."""
        limits, total = LIMITS, 0
        rows = sketch_rows(len(sketch[1]), cache.n_features, len(sketch[0]))
        while True:
            precond = SketchPreconditioner(cache, sketch[1][:rows], alpha, float(w.double().mean()),
                                           limits.woodbury_max_roundoff)
            held = cache_bytes(rows, cache.n_features + 1, torch.float64)
            grows = (rows < len(sketch[1])
                     and held <= limits.sketch_cache_share * self.fit_plan_.cache_bytes)
            solve = ridge_pcg(cache, y, w, alpha, precond, start, tol=solve_tol(alpha, limits),
                              max_iter=limits.solve_max_iter,
                              patience=limits.sketch_patience if grows else None)
            total += solve.iterations
            if solve.converged or not grows:
                return RidgeSolve(solve.theta, total, solve.converged)
            start, rows = solve.theta, min(2 * rows, len(sketch[1]))

    def _solve_at(self, cache, y, w, alpha, loss, sketch, start) -> RidgeSolve:
        """Least squares by preconditioned CG, or the squared hinge by Newton on its active set
        (each Newton system the least squares of the active rows)."""
        limits = LIMITS
        if loss == "squared" and cache.n_rows <= LIMITS.dual_max_rows:  # few rows: exactly
            every = torch.arange(cache.n_rows, device=y.device)
            return RidgeSolve(ridge_dual_rows(cache, every, y, w, alpha, cache.n_rows), 1, True)
        if loss == "squared":
            return self._sketched_pcg(cache, y, w, alpha, sketch, start)
        return _newton_hinge(cache, y, w, alpha, sketch, start, limits)


def solve_tol(alpha: float, limits=LIMITS) -> float:
    """The relative residual at which a solve stops: ``solve_tol·min(1, √(α/α₀))`` (a small
    ``α`` leaves the fitted values up to ``‖r‖/√α`` off; :class:`~kernelstream.planning.FitLimits`)."""
    return limits.solve_tol * min(1.0, math.sqrt(alpha / limits.solve_tol_alpha))


def sketch_rows(n_rows: int, n_features: int, least: int) -> int:
    """Rows of the least-squares preconditioner's sketch: the subsample's ``least``, or more
    where the rows are many for their features, ``c·n/D`` (``c = sketch_ratio``: the sketch's
    ``sD²`` work then about ``c`` conjugate-gradient iterations' ``nD``), at most ``n``."""
    return min(n_rows, max(least, LIMITS.sketch_ratio * n_rows // max(n_features, 1)))


def _newton_hinge(cache, y, w, alpha, sketch, start, limits, stop=None,
                  max_steps: int | None = None) -> RidgeSolve:
    """The squared hinge ``Σ_c Σ_i w_i max(0, 1 − y_ic f_c(x_i))²/2n + α/2‖W‖²`` by finite
    Newton (Keerthi & DeCoste 2005), every column of ``y`` (±1; one machine against the rest per
    class) at once: least squares on each column's rows inside the margin until they stop
    changing, or until a step moves ``θ`` by less than the solve's tolerance (relative): without
    a line search the full steps can swap a row on the margin in and out for ever (24 of 30
    steps on a 24,000-row ``make_classification``, each moving ``θ`` by about 1e-4). Each step
    by :func:`_newton_step`, to a tolerance that is loose while the steps are long:
    ``newton_forcing·min(1, last step)`` (an inexact Newton method, Dembo, Eisenstat & Steihaug
    1982), the solve's own at the end. ``stop(θ)``: true ends the iteration after a step (a
    caller's held-out check); ``max_steps``: at most this many (``newton_max_steps``)."""
    n, C = y.shape
    theta, total, active, tol = start, 0, None, solve_tol(alpha, limits)
    moved, loose = math.inf, False  # the last step's relative length; whether it was solved loosely
    gram = None
    if n <= limits.dual_max_rows:  # few rows: every Newton system from one Gram
        gram = exact_gram(cache.rows(torch.arange(n, device=y.device)))
    steps = limits.newton_max_steps if max_steps is None else max_steps
    for step in range(steps):
        if theta is not None:
            now = y.double() * cache.matmul(theta) < 1  # (n, C): inside each column's margin
            if active is not None and not loose and bool((now == active).all()):
                break
            active = now
        inside = active if active is not None else torch.ones((n, C), dtype=torch.bool, device=y.device)
        step_tol = tol if step == steps - 1 else max(tol, limits.newton_forcing * min(1.0, moved))
        previous = theta  # the cap's last step: the model is this solve, to the solve's own tolerance
        theta, iterations, iterative = _newton_step(cache, y, w, alpha, inside, theta, sketch[0],
                                                    gram, step_tol, limits)
        total, loose = total + iterations, iterative and step_tol > tol
        if stop is not None and stop(theta):
            break
        if previous is not None:
            moved = float((theta - previous).norm()) / max(float(theta.norm()), 1e-300)
            if moved <= tol and not loose:
                break  # the step is below the solve's own accuracy
    return RidgeSolve(theta, total, True)


def _newton_step(cache, y, w, alpha, inside, theta, positions, gram, tol, limits) -> tuple:
    """One Newton step's ``(θ, iterations, whether conjugate gradients ran)``: least squares
    of each column on its rows ``inside``. A column whose margin holds few rows is solved
    exactly in the dual (where ``α`` is small and conjugate gradients would crawl) where the
    cache reads its rows' features (a Nyström cache solves for them, ``M²`` a row: USPS's
    6,144 centres, 8.5 s a step); the others together by one conjugate-gradient run to
    ``tol`` (each pass over the cache serves every column, each column preconditioned from its
    own active sketch rows), over the rows inside some column's margin alone where they are at
    most ``newton_restrict_share`` of the rows (:func:`~kernelstream.solvers.cached.restricted`)."""
    n = y.shape[0]
    solved = torch.empty((cache.n_features + 1, y.shape[1]), dtype=torch.float64, device=y.device)
    few = (inside.sum(dim=0) <= limits.dual_max_rows) & cache.reads_rows
    for c in torch.nonzero(few).reshape(-1).tolist():
        index = torch.nonzero(inside[:, c]).reshape(-1)
        solved[:, c:c + 1] = ridge_dual_rows(cache, index, y[index, c:c + 1], w[index], alpha, n, gram)
    many = torch.nonzero(~few).reshape(-1).tolist()
    if not many:
        return solved, int(few.sum()), False
    weights = w.double()[:, None] * inside[:, many]
    precond = ColumnSketchPreconditioner(cache, positions, inside[positions][:, many], alpha,
                                         weights.mean(dim=0), limits.woodbury_max_roundoff)
    rows, targets = cache, y[:, many]
    union = torch.nonzero(inside[:, many].any(dim=1)).reshape(-1)
    if len(union) <= limits.newton_restrict_share * n:  # Σ_i over the union/n: weights × |union|/n
        rows, targets, weights = restricted(cache, union), targets[union], weights[union] * (len(union) / n)
    solve = ridge_pcg(rows, targets, weights, alpha, precond,
                      None if theta is None else theta[:, many], tol=tol, max_iter=limits.solve_max_iter)
    solved[:, many] = solve.theta
    return solved, int(few.sum()) + solve.iterations, True


def _descend(evaluate, sigmas: list[float], loss: str) -> tuple[dict, list]:
    """The least leave-one-out loss over ``sigmas`` (ascending) by descent from the middle
    one: its narrower neighbour first, then on in the direction that improves while it does
    (the loss is near unimodal in ``log σ``: three or four of five are evaluated).
    ``evaluate(σ)`` returns :meth:`_solve_dual`'s ``(best, records)``."""
    start = len(sigmas) // 2
    results = {start: evaluate(sigmas[start])}

    def value(i: int) -> float:
        if i not in results:
            results[i] = evaluate(sigmas[i])
        return results[i][0][loss][0]

    here = start
    for step in (-1, 1):
        while 0 <= here + step < len(sigmas) and value(here + step) < value(here):
            here += step
        if here != start:
            break
    records = [r for i in sorted(results) for r in results[i][1]]
    return results[here][0], records


def _held_out_losses(held, theta, n_blocks, loss: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Each held-out row's ``w_i ℓ(f(x_i), y_i) / w̄`` at ``n_blocks`` blocks (mean: the
    weighted mean loss), ``ℓ`` least squares' ``½‖f − y‖²`` or the squared hinge's
    ``½ Σ max(0, 1 − yf)²``; and the outputs ``f`` ``(m, C)``."""
    cache, y, w = held
    cache.grow(n_blocks)
    outputs, y = cache.matmul(theta), y.double().reshape(cache.n_rows, -1)
    residual = (1 - y * outputs).clamp_min(0) if loss == "squared_hinge" else outputs - y
    w = w.double()
    return w * 0.5 * residual.square().sum(dim=1) / w.mean(), outputs


def _pays(before: torch.Tensor, after: torch.Tensor, tol: float, z: float = 2.0) -> bool:
    """Whether the held-out losses ``after`` beat ``before`` by more than ``tol`` (relative)
    and by more than ``z`` standard errors of the rows' paired differences."""
    gain = before - after
    mean = float(gain.mean())
    spread = float(gain.std()) / math.sqrt(max(len(gain) - 1, 1))
    return mean > tol * float(before.mean()) and mean > z * spread


def _column(values: list) -> np.ndarray:
    """``values`` as an array: an object array where some are arrays (per-feature sigma)."""
    if any(np.ndim(v) for v in values):
        column = np.empty(len(values), dtype=object)
        column[:] = [np.asarray(v) if np.ndim(v) else v for v in values]
        return column
    return np.array(values)


def cv_results(records: list[dict]) -> dict:
    """Selection candidates as scikit-learn's ``cv_results_``: one entry per (rung, sigma,
    alpha[, loss])."""
    params = ("sigma", "alpha", "loss") if "loss" in records[0] else ("sigma", "alpha")
    keys = ("rung", *params, "n_rows", "n_components", "validation_loss", "epochs")
    out = {f"param_{k}" if k in params else k: _column([r[k] for r in records]) for k in keys}
    out["mean_test_score"] = -out.pop("validation_loss")
    out["params"] = [{k: r[k] for k in params} for r in records]
    return out
