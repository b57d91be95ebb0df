"""``fit`` with the default solver: validation split, bandwidth race, feature growth, early stopping.

The estimator validates and converts; :mod:`kernelstream.solvers.selection` and
:mod:`kernelstream.solvers.preconditioned` do the work on tensors. The fitted model is an
ordinary :class:`~kernelstream.expansion.Expansion` (``c_j = W_j/√J``), so prediction, saving and
``partial_fit`` afterwards are those of the one-pass solver.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils import check_random_state

from .._device import resolve_device, to_tensor
from .._validation import Integral, Interval, Real, StrOptions
from ..expansion import Expansion
from ..features import make_feature_map, resolve_bandwidth
from ..glossary import sigma_constraint
from ..ops.sparse import CSRRows, keeps_sparse
from ..planning import DataShape, FitLimits, FitPlan, dual_layout, fit_limits, is_auto, plan_fit
from ..rng import draw_seed
from ..solvers.conjugate import QUADRATIC_LOSSES
from ..solvers.subsample_choice import dual_candidates
from ..solvers.preconditioned import INTERCEPT_FEATURE, EpochControl
from ..solvers.selection import (Problem, cross_validate, grow_features,
                                 race_bandwidths)
from ..planning import ENGINE_SOLVERS
from ..solvers.dask_rows import dask_rows
from ..solvers.sharded import ShardedRows
from ..solvers.streams import rows_of, subset
from ..solvers.throughput import measured_throughput
from ._checkpointing import FitCheckpoint
from ._holdout import held_out_split
from ._progress import EpochProgress, closing
from ._subsample import SubsampleMixin, cv_results

__all__ = ["ConvergingMixin"]

CONVERGING_CONSTRAINTS = {
    "solver": [StrOptions({"preconditioned", "cg", "sgd", "one_pass"})],
    "sigma": sigma_constraint("median", "auto"),
    "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    "tol": [Interval(Real, 0, None, closed="left"), None],
    "early_stopping": ["boolean"],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    "warm_start": ["boolean"],
    "cache_bytes": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
    "effort": [StrOptions({"fast", "auto", "thorough"}), Interval(Real, 0, None, closed="neither")],
    "basis": [StrOptions({"auto", "random_features", "nystroem"})],
    "checkpoint": [str, os.PathLike, None],
    "checkpoint_every": [Interval(Integral, 1, None, closed="left"), str],
}


class ConvergingMixin(SubsampleMixin):
    """The preconditioned ``fit`` of :class:`DSGRegressor` and :class:`DSGClassifier`."""

    #: fitted attributes saved with the model (``cv_results_`` and ``feature_growth_`` are not;
    #: ``fit_plan_`` is, with its stages: the report of the fit)
    _fitted_attributes = ("alpha_", "loss_curve_", "validation_scores_", "best_validation_score_",
                          "fit_plan_")

    def _state_builders(self, device) -> dict:
        return {**super()._state_builders(device), "fit_plan_": FitPlan.from_state}

    def _one_pass_alpha(self) -> float:
        return self._limits().one_pass_alpha if self.alpha == "auto" else float(self.alpha)

    def _note_plan(self, X) -> None:
        self._plan(X, False, self._limits())

    def _plan(self, X, warm: bool, limits: FitLimits | None = None, device=None,
              **shape) -> FitPlan:
        """The :class:`~kernelstream.planning.FitPlan` of a fit on ``X`` with ``limits``
        (``None``: :data:`~kernelstream.planning.LIMITS`; ``shape`` overrides what ``X``
        tells: a stream's counts), kept as ``fit_plan_``; a budget in seconds (``effort`` a
        number) is priced at ``device``'s measured throughput."""
        classes = getattr(self, "classes_", None)
        shape = DataShape(**{"n_rows": X.shape[0], "n_features": X.shape[1],
                             "sparse": sp.issparse(X) or getattr(X, "sparse", False),
                             "n_classes": None if classes is None else len(classes), **shape})
        params = self.get_params()
        seconds = not isinstance(params.get("effort", "auto"), str)
        throughput = measured_throughput(device or resolve_device(self.device)) if seconds else None
        self.fit_plan_ = plan_fit(type(self).__name__, shape, params, warm=warm,
                                  throughput=throughput, limits=fit_limits(limits))
        return self.fit_plan_

    def _one_pass_sigma(self):
        return "median" if is_auto(self.sigma) else self.sigma

    def _fit_dask(self, X, y, sample_weight, resume=None, limits=None):
        """``fit`` on a Dask array or DataFrame: the engine on its row blocks, each held by an
        actor on its worker (:mod:`kernelstream.solvers.dask_rows`); ``y`` and
        ``sample_weight`` (``n`` numbers) are computed on the client."""
        if self.solver not in ENGINE_SOLVERS:
            raise ValueError(f"solver={self.solver!r} on a Dask collection: the engine's solvers "
                             f"{ENGINE_SOLVERS} fit it whole; stream its blocks through "
                             "partial_fit with dask_ml.wrappers.Incremental instead.")
        computed = [None if v is None else np.asarray(v.compute() if hasattr(v, "compute") else v)
                    for v in (y, sample_weight)]
        return self._fit_preconditioned(dask_rows(X), *computed, resume, limits)

    def _fit_preconditioned(self, X, y, sample_weight, resume=None, limits=None):
        with self._unchanged_on_error(), closing(self._progress()) as progress:
            limits = self._use_limits(limits)
            warm = (self.warm_start and hasattr(self, "expansion_") and hasattr(self, "alpha_")
                    and not self._solved_exactly())  # the exact kernel's model: solved again
            if warm:
                self._make_continuable("a warm start")
            X, y, sample_weight = self._validated(X, y, sample_weight, first=not warm)
            self._check_fit_targets(y, sample_weight)
            run = FitCheckpoint(self, resume)  # reads the checkpoint, checks the parameters
            rng = run.random_state(check_random_state(self.random_state))
            seed = draw_seed(rng)  # drawn on warm starts too: the same validation rows
            device = self.device_ if warm else resolve_device(self.device)
            plan = self._plan(X, warm, limits, device)  # once the device is known
            if not warm:
                self.seed_, self.device_ = seed, device
                self._resolve_loss(plan.loss)
                self._fit_target_scaling(y)
            self._check_solver_loss()
            train_rows, val_rows = self._split(y, X.shape[0], rng)  # before n-vectors: its peak
            targets = self._targets(y, X.shape[0])
            weight = sample_weight * self._class_weights(targets)
            run.check_data(X, targets, weight, self._theta() if warm else None, self.device_)
            if plan.route != "subsample" and isinstance(X, ShardedRows):
                X = X.whole()  # few rows (or no cache): every rank fits all of them
            if plan.route == "dual" and sp.issparse(X):
                X = X.toarray()  # few rows: the same fit as the dense rows
            problem = self._problem(X, targets, weight, train_rows, val_rows)
            if plan.route in ("dual", "subsample"):
                del targets, weight, sample_weight  # the problem's tensors stand for them
                self._fit_subsample(problem, progress, run if run.active else None)
                self._pending = None
                return self
            callback = run.callback(progress)
            if warm:
                feature_map, alphas, J = self.expansion_.feature_map, [self.alpha_], self.expansion_.n_blocks
                result, J, history, feature_map = grow_features(
                    problem, feature_map, alphas, self._control(), J, J, plan.growth_tol,
                    self._theta(), callback, run.growth(J, self.device_))
            else:
                rows = train_rows if val_rows is None else np.concatenate([train_rows, val_rows])
                everything = dataclasses.replace(problem, train_rows=torch.as_tensor(rows, device=problem.X.device))
                feature_map, alphas, (J, max_blocks) = run.selection(
                    self, lambda: self._select(problem, X, everything))
                result, J, history, feature_map = grow_features(
                    problem, feature_map, alphas, self._control(), J, max_blocks, plan.growth_tol,
                    callback=callback, state=run.growth(J, self.device_), narrow=plan.narrow)
            self._set_preconditioned(result, feature_map, alphas, J, history)
            self._calibrate(problem)
            self._pending = None
        return self

    def _clearly_better(self, candidate, kept, targets, weight, z: float = 2.0) -> bool:
        """Whether the leave-one-out predictions ``candidate`` beat ``kept`` (another loss of
        ``_dual_losses``; the classifier compares errors)."""
        return False

    def _make_map(self, n_features: int, sigma: float, block_size: int, **kw):
        """The feature map of bandwidth ``sigma`` (the estimator's kernel, seed and parameters;
        ``kw``: the map's own arguments, as ``cache_bytes``)."""
        return make_feature_map(self.kernel, n_features, sigma, block_size, self.seed_,
                                kernel_params=self.kernel_params, **kw)

    def _bandwidth_candidates(self, X) -> list[float]:
        """``sigma="auto"``: the plan's scales × the median distance; else the one bandwidth asked."""
        scales = self.fit_plan_.sigma_scales
        if scales is not None:
            median = resolve_bandwidth(self.kernel, X, "median", 1.0, self.seed_)
            return [scale * median for scale in scales]
        return [resolve_bandwidth(self.kernel, X, self.sigma, self.sigma_scale, self.seed_)]

    def _calibrate_held_out(self, scores, targets, weight) -> None:
        """Fit what turns outputs into probabilities from held-out ``scores`` (the classifier)."""

    # -- pieces ------------------------------------------------------------------------------
    def _split(self, y, n: int, rng) -> tuple[np.ndarray, np.ndarray | None]:
        """Row indices to train and to validate on (``None`` when neither early stopping nor
        the race needs validation rows: then every row trains)."""
        if self.fit_plan_.validation_fraction is None:
            return rng.permutation(n), None
        n_val = math.ceil(self.validation_fraction * n)
        if n - n_val < 1:
            raise ValueError(f"n_samples={n} is too few to hold out validation_fraction="
                             f"{self.validation_fraction} for early stopping and the choice of sigma "
                             "and alpha; pass more rows, or set early_stopping=False with numbers "
                             "for sigma and alpha.")
        return held_out_split(n, n_val, rng.randint(2**31), self._stratify_labels(y))

    def _check_solver_loss(self) -> None:
        """``solver="cg"`` solves the squared loss's normal equations: refuse other losses."""
        loss = getattr(self, "loss_", None) or self.loss  # the classifier's "auto" resolved
        if self.solver == "cg" and loss not in QUADRATIC_LOSSES:
            raise ValueError(f"solver='cg' (conjugate gradients) needs the squared loss; "
                             f"loss={loss!r} needs solver='preconditioned'.")

    def _stratify_labels(self, y):
        return None

    def _check_fit_targets(self, y, sample_weight) -> None:
        """Refuse targets the solver cannot learn from (the classifier: one weighted class)."""

    def _problem(self, X, targets, weight, train_rows, val_rows) -> Problem:
        """The solver's view: the data as tensors once (``targets`` encoded), the training rows
        by index."""
        dtype, device = self._torch_dtype(), self.device_
        # CSR stays sparse: projected by its non-zeros when wide and sparse, else densified per batch
        X_t = _solver_rows(X, dtype, device)
        y_t = self._target_tensor(targets, device)
        w_t = torch.as_tensor(weight, dtype=dtype, device=device)
        validation = None
        if val_rows is not None:
            val = torch.as_tensor(val_rows, device=device)
            validation = (subset(X_t, val), y_t[val], w_t[val])
            if not float(validation[2].sum()) > 0:
                raise ValueError(f"The {len(val_rows)} validation rows (validation_fraction="
                                 f"{self.validation_fraction}) all have sample_weight 0, so they "
                                 "cannot score the model; give them weight, or set "
                                 "early_stopping=False with numbers for sigma and alpha.")
        return Problem(X_t, y_t, w_t, validation, self._make_loss(), self._n_outputs(),
                       min(self.batch_size, len(train_rows)), self.seed_ % 2**32,
                       torch.as_tensor(train_rows, device=device), method=self._inner_method())

    def _inner_method(self) -> str:
        """The :class:`~kernelstream.solvers.selection.Problem` method of ``solver``."""
        return "cg" if self.solver == "cg" else "sgd"

    def _control(self, max_iter=None) -> EpochControl:
        plan = self.fit_plan_
        return EpochControl(max_iter=min(plan.max_iter, max_iter or plan.max_iter), tol=plan.tol,
                            n_iter_no_change=plan.n_iter_no_change)

    def _select(self, problem: Problem, X, all_rows: Problem):
        """Feature map, ``α`` candidates and ``(blocks to start from, most blocks)``, as the
        plan's ``selection`` says: the dual subsample's leave-one-out, 5-fold cross-validation
        over ``all_rows``, the race on the held-out rows, or none."""
        plan = self.fit_plan_
        make_map = functools.partial(self._make_map, X.shape[1], block_size=plan.block_size)
        alphas, sigmas = list(plan.alphas), self._bandwidth_candidates(X)
        blocks = (plan.start_blocks, plan.max_blocks)
        self.cv_results_ = None
        choice = (self._dual_subsample_selection(all_rows, sigmas)
                  if plan.selection == "dual_subsample" else None)
        if choice is not None:
            sigma, alpha, records = choice
            self.cv_results_ = cv_results(records)
            return make_map(sigma), [alpha], blocks
        method = plan.fallback_selection or plan.selection
        control = self._control(plan.limits.race_max_iter)
        if plan.judge == "direct":  # judge each candidate by its exact optimum
            problem, all_rows = (dataclasses.replace(p, method="direct") for p in (problem, all_rows))
        if method == "cross_validation":
            sigma, alpha, records = cross_validate(all_rows, make_map, sigmas, alphas, control,
                                                   plan.race_blocks)
            alphas = [alpha]
            self.cv_results_ = cv_results(records)
        elif method == "race":
            sigma, records = race_bandwidths(problem, make_map, sigmas, alphas, control,
                                             plan.race_blocks)
            self.cv_results_ = cv_results(records)
        else:
            sigma = sigmas[0]
        return make_map(sigma), alphas, blocks

    def _dual_subsample_selection(self, all_rows: Problem, sigmas) -> tuple[float, float, list] | None:
        """``(σ, α, cv_results_ records)`` of least leave-one-out loss of the exact optimum on a
        seeded subsample of ``dual_max_rows`` rows at the dual route's features; ``None`` where
        no candidate converged (record: docs/decisions/dual-subsample-selection.md)."""
        rows = all_rows.index(torch.arange(all_rows.n_train, device=all_rows.y.device))
        rows = rows[all_rows.weight[rows] > 0]  # rows of weight 0 would only leave the fit
        n = min(self.fit_plan_.limits.dual_max_rows, len(rows))
        order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(self.seed_))
        pick = rows[order[:n].to(rows.device)]
        X_sub, y_sub, w_sub = all_rows.X[pick], all_rows.y[pick], all_rows.weight[pick]
        block_size, n_blocks = dual_layout(n, self.n_components, self.block_size)
        loss = all_rows.loss.name
        best, records = dual_candidates(self._make_map, X_sub, y_sub, w_sub, sigmas,
                                        list(self.fit_plan_.dual_alphas),
                                        block_size, n_blocks, (loss,))
        loo, alpha, solution = best[loss]
        return (solution.feature_map.sigma, alpha, records) if math.isfinite(loo) else None

    def _theta(self) -> torch.Tensor:
        """The fitted expansion as ``θ = [W; b/c]`` (``W_j = √J c_j``), one column block."""
        e = self.expansion_
        coef, intercept = e.prediction_parameters()
        W = coef.reshape(-1, e.n_outputs) * math.sqrt(e.n_blocks)
        return torch.cat([W, intercept.reshape(1, -1).to(W.dtype) / INTERCEPT_FEATURE]).to(self._torch_dtype())

    def _calibrate(self, problem: Problem) -> None:
        """Fit what turns outputs into probabilities (the classifier's temperature)."""

    def _progress(self) -> EpochProgress:
        """The epochs as they end (monitored loss): a bar as ``verbose`` says, and log records."""
        return EpochProgress(type(self).__name__, self.verbose)

    def _set_preconditioned(self, result, feature_map, alphas, J, history) -> None:
        C = self._n_outputs()
        best = int(torch.argmin(result.best_loss))
        theta = result.theta[:, best * C:(best + 1) * C]
        D = J * feature_map.block_size
        dtype = result.theta.dtype if getattr(feature_map, "precise", False) else self._torch_dtype()
        expansion = Expansion(feature_map, C, dtype=dtype, device=self.device_)
        coef = (theta[:D] / math.sqrt(J)).reshape(J, feature_map.block_size, C)
        expansion.load_prediction_state(coef, INTERCEPT_FEATURE * theta[D].double(), result.n_steps)
        self.alpha_ = float(alphas[best])
        self.loss_curve_ = list(result.loss_curve)
        self.validation_scores_ = ([-v[best] for v in result.validation_curve]
                                   if self.early_stopping else None)
        self.best_validation_score_ = -float(result.best_loss[best]) if self.early_stopping else None
        self.feature_growth_ = [{"n_components": j * feature_map.block_size, "loss": loss, "epochs": e,
                                 "sigma": sigma, **(extra[0] if extra else {})}
                                for j, loss, e, sigma, *extra in history]
        self._set_fitted(expansion, result.n_epochs)


def _solver_rows(X, dtype: torch.dtype, device):
    """``X`` as the solvers read it: CSR kept sparse when wide and sparse (:func:`keeps_sparse`),
    else a tensor; rows held by ranks converted on each rank as rank 0's decide."""
    if isinstance(X, ShardedRows):
        sparse = X.comm.broadcast_object(keeps_sparse(X.local))
        return X.mapped(lambda local: CSRRows(local, dtype, device) if sparse
                        else rows_of(local, dtype, device, to_tensor))
    return CSRRows(X, dtype, device) if keeps_sparse(X) else rows_of(X, dtype, device, to_tensor)
