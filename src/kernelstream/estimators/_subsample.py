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

import dataclasses
import math
import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from ..features.base import DEFAULT_CACHE_BYTES
from ..planning import FitPlan, effective_dimension, with_spectral_start
from ..solvers.cached import chunk_rows
from ..solvers.engine import EngineModel, loss_name, narrowed, solve_full_size
from ..solvers.throughput import measured_throughput
from ..planning.cost import exact_kernel_work, predicted_narrowing, predicted_selection
from ..solvers.stages import StageLog
from ..solvers.subsample_choice import choose_on_subsample, lengthscale_candidates
from ..solvers.nystroem import NystroemBasis, NystroemCache
from ..solvers.epochs import FitResult
from ..solvers.dual import gram_rows
from ..solvers.exact_kernel import exact_kernel_model, exact_kernel_solution
from ..solvers.selection import Problem
from ..solvers.regenerated import RegeneratedFeatures
from ..solvers.sharded import ShardedRows, feature_operator, gathered
from ..solvers.streams import subset

__all__ = ["SubsampleMixin", "cv_results"]

class SubsampleMixin:
    """The subsample route of :class:`ConvergingMixin` (``fit_plan_.route == "subsample"``)."""

    def _fit_subsample(self, problem: Problem, progress=None, run=None) -> None:
        """The engine's fit: the subsample's choice and the narrowing (:meth:`_engine_choice`),
        then the full-size stages (:func:`~kernelstream.solvers.engine.solve_full_size`), each
        stage timed into ``fit_plan_.stages`` and shown to ``progress`` (its ``stage(record)``)
        as it ends; ``run`` (a :class:`~._checkpointing.FitCheckpoint`) writes the choice and
        the growth between sizes, or resumes them."""
        plan: FitPlan = self.fit_plan_
        log = StageLog(getattr(progress, "stage", None), measured_throughput(problem.y.device))
        saved = {} if run is None else (run.saved.get("engine") or {})
        model = self._engine_model(log, checkpoint=None if run is None or run.path is None
                                   else run.engine_growth, resume=saved.get("growth"))
        if isinstance(problem.X, ShardedRows):  # candidates dealt over ranks or Dask workers
            model = dataclasses.replace(model, spread=problem.X.spread, ranks=problem.X.width)
        problem = _one_against_the_rest(problem)
        positions, sub = self._subsample_rows(problem, plan.selection_rows)
        if plan.selection != "none" and len(sub) < 2:
            raise ValueError(f"n_samples={problem.X.shape[0]} is too few to choose sigma and alpha "
                             f"by leave-one-out (rows of positive sample_weight: {len(sub)}); pass "
                             "more rows, or numbers for sigma and alpha.")
        choice = saved.get("chosen") or self._engine_choice(problem, positions, sub, model)
        if isinstance(problem.X, ShardedRows):  # rank 0's choice on every rank
            choice = problem.X.comm.broadcast_object(choice)
        if run is not None:
            run.engine_chosen(choice)
        self.cv_results_, sigma, alpha, loss = (choice["cv_results"], choice["sigma"],
                                                float(choice["alpha"]), choice["loss"])
        if loss != "squared" and plan.loss in plan.losses_compared:
            self.loss_ = loss
        # a loss the subsample's leave-one-out does not solve is solved at full size by Newton
        trained = loss if plan.loss in plan.losses_compared else problem.loss
        # a fit that caches n×D features holds the d×D parameters: predict draws them once
        pinned = max(DEFAULT_CACHE_BYTES, int(plan.limits.param_cache_share * plan.cache_bytes))
        if plan.basis == "exact":
            return self._fit_exact(problem, model, choice, loss_name(trained), pinned)
        n = problem.n_train
        plan = self.fit_plan_ = self._spectral_start(plan, model, choice.get("dimension"), n)
        feature_map = self._make_map(problem.X.shape[1], sigma, plan.block_size, cache_bytes=pinned)
        train = problem.training_rows()
        cache, sketched = self._training_operator(feature_map, problem.X, train, positions,
                                                  len(sub), alpha)
        y, w = problem.y[train].reshape(n, -1), problem.weight[train]
        held = None
        if problem.validation is not None:
            X_val, y_val, w_val = problem.validation
            held = (cache.for_rows(X_val), y_val.reshape(len(w_val), -1), w_val)
        sketch = (positions[:sketched], positions)  # the sketch's cache rows, then every row's
        result = solve_full_size(plan, model, cache, held, y, w, alpha, trained, sketch, growth=loss,
                                 iterations=choice.get("iterations"))
        if plan.hinge_finish and held is not None:
            self.loss_ = loss_name(result.loss)
        chosen = (result.held_loss if held is not None else choice["loo"], *choice["held"])
        self._keep_solution(problem, cache.fitted(result.theta, pinned), result.history,
                            held is not None, chosen, result.alpha, result.iterations)
        self.fit_plan_ = dataclasses.replace(plan, stages=tuple(log.records),
                                             passes=getattr(cache, "passes", None))

    @staticmethod
    def _spectral_start(plan: FitPlan, model: EngineModel, dimension: float | None,
                        n: int) -> FitPlan:
        """``plan`` with its growth's first size from the training rows' effective
        ``dimension`` (:func:`~kernelstream.planning.with_spectral_start`), noted in the log
        where it changes."""
        resized = with_spectral_start(plan, dimension, n)
        if resized.block_size != plan.block_size:
            model.log.note("spectral_start", features=resized.block_size,
                           effective_dimension=round(dimension, 1))
        return resized

    def _fit_exact(self, problem: Problem, model: EngineModel, choice: dict, loss: str,
                   cache_bytes: int) -> None:
        """The dual route's model on the exact kernel (``fit_plan_.basis == "exact"``): every
        training row of positive weight a centre, solved exactly at the chosen ``σ``, ``α``
        and ``loss`` (:mod:`~kernelstream.solvers.exact_kernel`), calibrated by the
        subsample's leave-one-out."""
        plan, n = self.fit_plan_, problem.n_train
        train = problem.training_rows()
        X = gathered(subset(problem.X, train))
        sigma, alpha = choice["sigma"], float(choice["alpha"])
        kernel_map = self._make_map(X.shape[1], sigma, plan.block_size)
        with model.log.stage("exact_kernel", predicted=exact_kernel_work(n, X.shape[1], loss),
                             rows=n, loss=loss) as record:
            rows = gram_rows(kernel_map, 1, X, problem.y[train].reshape(n, -1), problem.weight[train],
                             exact=True)
            solution = exact_kernel_solution(rows, alpha, loss)
            record.update(centres=rows.X.shape[0])
        fitted = exact_kernel_model(solution, plan.block_size, cache_bytes)
        J = fitted[0].max_blocks
        self._keep_solution(problem, fitted, [(J, math.nan, 1, sigma)], False,
                            (choice["loo"], *choice["held"]), alpha, 1)
        self.fit_plan_ = dataclasses.replace(plan, stages=tuple(model.log.records))

    def _training_operator(self, feature_map, X, train, positions, subsample_rows: int,
                           alpha: float) -> tuple:
        """The engine's data operator on the training rows ``train`` of ``X`` (the plan's
        basis: its features cached, drawn every pass from an index of ``X``'s rows, or held by
        ranks; a Nyström basis's columns) and the rows of its sketch."""
        plan = self.fit_plan_
        if plan.basis == "nystroem":  # its centres and columns: every row on every rank
            return self._nystroem_cache(feature_map, gathered(subset(X, train)), positions, alpha, plan)
        if plan.regenerate and not isinstance(X, ShardedRows):  # no copy of the rows
            cache = RegeneratedFeatures(feature_map, X, plan.cache_bytes, rows=train)
        else:
            cache = feature_operator(feature_map, subset(X, train), plan.cache_bytes,
                                     getattr(torch, plan.cache_dtype), plan.regenerate)
        return cache, min(len(positions), max(subsample_rows, plan.limits.sketch_least_rows))

    def _engine_choice(self, problem: Problem, positions, sub, model: EngineModel) -> dict:
        """What the engine's fit chose before its full-size stages, as a checkpoint keeps it:
        ``σ`` (narrowed), ``α`` carried to the training rows, the loss of least leave-one-out
        loss, ``cv_results_``, and that loss with the subsample's leave-one-out predictions,
        targets and weights (``held``: the calibration where no rows are held out), and the
        narrowing's iterations (the first full-size solve's predicted iterations)."""
        plan, log = self.fit_plan_, model.log
        with log.stage("selection", predicted=predicted_selection(plan, problem.X.shape[1], len(sub)),
                       rows=len(sub)) as record:
            sigma, alpha, loss, records, chosen, spectrum = self._subsample_choice(problem, sub, model)
            record.update(sigma=sigma, alpha=alpha, loss=loss, candidates=len(records))
        n, m = problem.n_train, len(sub)
        carry = (lambda rows: alpha * m / rows) if self.alpha == "auto" else (lambda rows: alpha)
        # the training rows' nα: the subsample's mα carried, or n times a given α
        dimension = None if spectrum is None else effective_dimension(
            spectrum[0], spectrum[1], m, n, spectrum[1] * (1 if self.alpha == "auto" else n / m))
        iterations = None
        if plan.narrow and len(positions) > plan.narrow_rows:
            features = plan.narrow_blocks * plan.block_size
            chunks = -(-plan.narrow_rows // chunk_rows(features, 1, problem.y.device))
            held_rows = len(problem.validation[2]) if problem.validation is not None else 0
            predicted = predicted_narrowing(plan, problem.X.shape[1], chunks, held_rows)
            with log.stage("narrowing", predicted=predicted, rows=plan.narrow_rows) as record:
                sigma, iterations = narrowed(plan, model, problem, sigma, carry, loss, positions)
                record.update(sigma=sigma, iterations=iterations)
        return dict(sigma=sigma, alpha=carry(n),  # nα stays the subsample's mα
                    loss=loss, iterations=iterations, cv_results=cv_results(records) if len(records) > 1 else None,
                    loo=chosen[0], held=list(chosen[1:]), dimension=dimension)

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
        if torch.finfo(X_train.dtype).eps > plan.limits.nystroem_max_roundoff * alpha:
            X_train = X_train.double()
        M = plan.block_size * plan.max_blocks
        basis = NystroemBasis(kernel_map, X_train[positions[:M]], plan.block_size)
        cache = NystroemCache(basis, X_train, plan.cache_bytes, factor_dtype=X_train.dtype,
                              centre_rows=positions[:M])
        least = max(plan.selection_rows, plan.limits.sketch_least_rows)
        return cache, min(len(positions), max(least, int(plan.limits.nystroem_sketch_share * M)))

    def _subsample_rows(self, problem: Problem, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every training row of positive weight in a seeded order (positions among the
        training rows), and the rows of ``X`` of the first ``m``: the subsample."""
        rows = problem.training_rows()
        positions = torch.nonzero(problem.weight[rows] > 0).reshape(-1)
        order = torch.randperm(len(positions), generator=torch.Generator().manual_seed(self.seed_))
        positions = positions[order.to(positions.device)]
        return positions, rows[positions[:m]]

    def _subsample_choice(self, problem: Problem, sub: torch.Tensor, model: EngineModel) -> tuple:
        """``(σ, α, loss, cv_results_ records, (its leave-one-out loss, predictions, targets,
        weights))`` of least leave-one-out loss on the rows ``sub``
        (:func:`~kernelstream.solvers.subsample_choice.choose_on_subsample`); the bandwidths
        from the median of every row, as by epochs, and a regressor's per-feature lengthscales."""
        plan = self.fit_plan_
        X_all = (problem.X.on_host() if isinstance(problem.X, ShardedRows) else problem.X.matrix
                 if hasattr(problem.X, "matrix") else problem.X.cpu().numpy())
        if plan.selection == "none":
            return (self._bandwidth_candidates(X_all)[0], plan.dual_alphas[0], plan.losses_compared[0], [],
                    (math.nan, None, None, None), None)
        X_sub, y_sub, w_sub = gathered(subset(problem.X, sub)), problem.y[sub], problem.weight[sub]
        X_sub = X_sub.matrix.toarray() if hasattr(X_sub, "matrix") else X_sub
        X_sub = torch.as_tensor(X_sub, dtype=self._torch_dtype(), device=problem.y.device)
        per_feature = ([] if getattr(self, "classes_", None) is not None else
                       lengthscale_candidates(X_sub, y_sub, plan, self.kernel, self.kernel_params,
                                              self.seed_))
        choice = choose_on_subsample(plan, model, X_sub, y_sub, w_sub,
                                     self._bandwidth_candidates(X_all), per_feature)
        if not math.isfinite(choice[4][0]):
            warnings.warn(f"The squared hinge's Newton iteration did not converge at alpha={choice[1]:g} "
                          "(near interpolation); the model is its last iterate. Pass a larger alpha.",
                          ConvergenceWarning, stacklevel=5)
        return choice

    def _held_out_classes(self, outputs: torch.Tensor) -> torch.Tensor | None:
        """The classes that held-out ``(m, C)`` outputs pick (a classifier's); ``None`` for a
        regressor, whose growth the loss alone decides."""
        return None

    def _engine_model(self, log: StageLog, **checkpoints) -> EngineModel:
        """What the engine asks of this estimator (:class:`~kernelstream.solvers.engine.EngineModel`);
        ``checkpoints``: its ``checkpoint`` and ``resume``."""
        return EngineModel(self._make_map, self._held_out_classes, self._clearly_better, log,
                           **checkpoints)


def _one_against_the_rest(problem: Problem) -> Problem:
    """The softmax's class indices as ``±1`` columns, one class against the rest: the
    subsample chooses by least squares on them, and Newton reads the class from them."""
    if problem.loss.name != "softmax":
        return problem
    def signs(index: torch.Tensor) -> torch.Tensor:
        columns = torch.arange(problem.n_outputs, device=index.device)
        return torch.where(index.reshape(-1, 1) == columns, 1.0, -1.0).to(problem.weight.dtype)
    validation = problem.validation
    if validation is not None:
        validation = (validation[0], signs(validation[1]), validation[2])
    return dataclasses.replace(problem, y=signs(problem.y), validation=validation)


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
