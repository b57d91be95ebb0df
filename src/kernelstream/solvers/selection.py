"""Model selection on one stream of seeded blocks: feature growth and the bandwidth race.

Both drive :func:`kernelstream.solvers.preconditioned.run_epochs`:

- :func:`grow_features` trains on ``J`` blocks, then on ``2J`` (warm-started: the old
  coefficients scaled by ``√2`` keep ``f`` unchanged under ``φ = [ψ_1 … ψ_J]/√J``), and so on
  while the best validation loss falls by more than ``growth_tol`` (relative), up to
  ``max_blocks``. The features a problem needs come from its validation score, capped by the
  ``O(√n log n)`` of Rudi & Rosasco (2017).
- :func:`race_bandwidths` is successive halving over bandwidth candidates: every survivor trains
  on the same nested row subsample (4096 rows, then 4× more per rung) with every ``α``
  candidate as an extra output column; the best third by best validation loss goes on.
- The race runs on one block, where the error of approximating the kernel by few features
  favours wide kernels; so once the features stop growing, ``grow_features`` can let
  ``σ/2`` challenge the winner at the size kept (trained as long as a growth stage, on all the
  training rows), and ``σ/4`` challenge ``σ/2`` if it won, keeping the better by validation
  loss (decision record: docs/decisions/bandwidth-narrowing.md).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from .._state import feature_map_from_config
from ..features.base import FeatureMap
from ..losses import Loss
from .conjugate import CG_SKETCH_ROWS, conjugate_preconditioner, run_conjugate_gradients
from .direct import solve_normal_equations
from .epochs import EpochControl, EpochState, FitResult
from .preconditioned import run_epochs, sketch_preconditioner
from .streams import StreamValidation

__all__ = ["Problem", "GrowthState", "train", "grow_features", "race_bandwidths", "cross_validate",
           "candidate_records", "RACE_ROWS", "SKETCH_ROWS"]

#: rows of the first rung of the race (each later rung has 4× more)
RACE_ROWS = 4096
#: rows per batch of a conjugate-gradient pass (the batch only bounds the rows gathered at once)
CG_BATCH = 8192
#: the smallest batch the critical-batch rule may choose
MIN_BATCH = 512
#: epochs per feature size while the features may still grow (the size kept trains on)
STAGE_EPOCHS = 8
#: each rung keeps the best ``1/HALVING`` of the candidates (five bandwidths: 5 → 2 → 1)
HALVING = 3
#: sketch rows for the preconditioner when ``D + 1`` exceeds them (the ``s × s`` route)
SKETCH_ROWS = 2048
#: sketch rows per feature when the ``(D+1)²`` covariance is factored
SKETCH_PER_FEATURE = 16
#: a challenger's bandwidth is the incumbent's divided by this (the race's grid step)
NARROWING = 2.0
#: at most this many narrower challengers win in a row
MAX_NARROWINGS = 2


@dataclass
class Problem:
    """Rows ``train_rows`` of ``(X, y, weight)`` to train on (all when ``None``: no copy of the
    data is made), optional validation rows, the loss and the batching."""

    X: torch.Tensor
    y: torch.Tensor
    weight: torch.Tensor
    validation: tuple | None
    loss: Loss
    n_outputs: int
    batch_size: int
    seed: int
    train_rows: torch.Tensor | None = None
    #: "sgd": preconditioned stochastic steps; "cg": conjugate gradients (squared loss);
    #: "direct": the normal equations solved exactly in one pass (squared loss, few features)
    method: str = "sgd"

    @property
    def n_train(self) -> int:
        return self.X.shape[0] if self.train_rows is None else self.train_rows.shape[0]

    def index(self, positions: torch.Tensor) -> torch.Tensor:
        """Rows of ``X`` at ``positions`` among the training rows."""
        return positions if self.train_rows is None else self.train_rows[positions]

    def training_rows(self) -> torch.Tensor:
        """Every training row's index into ``X``: ``train_rows`` itself (not a copy)."""
        return (torch.arange(self.n_train, device=self.y.device) if self.train_rows is None
                else self.train_rows)

    def rows(self, n_rows: int) -> "Problem":
        """The first ``n_rows`` training rows (already shuffled by the caller)."""
        first = self.index(torch.arange(min(n_rows, self.n_train), device=self.X.device))
        return dataclasses.replace(self, train_rows=first)

    # -- what train() asks of a problem (in memory here; a stream in solvers.streams) ------
    #: no data parallelism: the batches are the whole global batch
    comm = None

    def sketch(self, n_rows: int) -> tuple:
        """``(X_s, w̄, w_s/w̄)``: ``n_rows`` training rows drawn from ``(seed, 2³¹)`` (a tensor,
        or :class:`~.streams.SparseRows` kept sparse), the mean training weight and the rows'
        relative weights (None when all weights are equal).

        With unequal sample weights the Hessian is ``Σ w_i φ̃φ̃ᵀ/n``: rows are then drawn with
        probability ``∝ w_i`` (with replacement), so that ``w̄ ×`` the sketch covariance
        estimates it; else without replacement.
        """
        weight = self.weight[self.index(torch.arange(self.n_train, device=self.weight.device))]
        weight = weight.double().cpu().numpy()
        rng, uniform = np.random.default_rng((self.seed, 2**31)), weight.min() == weight.max()
        chosen = (rng.choice(self.n_train, n_rows, replace=False) if uniform else
                  rng.choice(self.n_train, n_rows, replace=True, p=weight / weight.sum()))
        rows = self.index(torch.from_numpy(chosen).to(self.X.device))
        X = self.X.subset(rows) if hasattr(self.X, "subset") else self.X[rows]
        mean = float(weight.mean())
        return X, mean, None if uniform else torch.from_numpy(weight[chosen] / mean)

    def batches(self, batch_size: int) -> Callable:
        """``batches(epoch) -> (n_batches, iterator of (X, y, weight))`` in batches of about
        ``batch_size`` rows, reshuffled every epoch from ``(seed, epoch)``."""
        return _batches(dataclasses.replace(self, batch_size=batch_size))

    def agree(self, value):
        """``value`` as every rank holds it (one process: unchanged)."""
        return value


def _batches(problem: Problem) -> Callable:
    n = problem.n_train
    n_batches = max(1, round(n / problem.batch_size))

    def batches(epoch: int):
        order = torch.from_numpy(np.random.default_rng((problem.seed, epoch)).permutation(n))
        parts = torch.tensor_split(problem.index(order.to(problem.X.device)), n_batches)
        return n_batches, ((problem.X[p], problem.y[p], problem.weight[p]) for p in parts)

    return batches


def _sketch_rows(n: int, n_features: int) -> int:
    full = SKETCH_PER_FEATURE * (n_features + 1)
    return min(n, full if n_features + 1 <= SKETCH_ROWS else SKETCH_ROWS)


def train(problem: Problem, feature_map: FeatureMap, n_blocks: int, alphas, control: EpochControl,
          theta: torch.Tensor | None = None, callback=None, state: EpochState | None = None) -> FitResult:
    """Preconditioned SGD on the first ``n_blocks`` blocks from ``theta`` (zeros when ``None``),
    in batches of at most ``problem.batch_size`` rows and at most the preconditioner's critical
    batch (at least ``MIN_BATCH``); ``state`` as in :func:`run_epochs` (the preconditioner is
    recomputed from its seeded sketch rows, the same bits every time). A problem whose
    ``method`` is "cg" is solved by conjugate gradients instead (:func:`_train_conjugate`), one
    whose ``method`` is "direct" by its normal equations (:mod:`.direct`)."""
    D = n_blocks * feature_map.block_size
    method = getattr(problem, "method", "sgd")
    if method == "cg":
        return _train_conjugate(problem, feature_map, n_blocks, alphas, control, theta, callback, state)
    if method == "direct":  # theta is not needed: the solve is exact
        return problem.agree(solve_normal_equations(
            feature_map, n_blocks, alphas, problem.n_outputs, problem.loss,
            problem.batches(min(problem.n_train, CG_BATCH)), control, problem.validation, callback,
            state, problem.comm))
    X_sketch, weight_scale, row_weights = problem.sketch(_sketch_rows(problem.n_train, D))
    precond = problem.agree(sketch_preconditioner(feature_map, n_blocks, X_sketch, problem.loss, alphas,
                                                  weight_scale, row_weights))
    batch = min(problem.batch_size, max(MIN_BATCH, precond.critical_batch()))
    if theta is None:
        theta = X_sketch.new_zeros((D + 1, len(alphas) * problem.n_outputs))
    result = run_epochs(feature_map, n_blocks, theta, precond, problem.loss, problem.batches(batch),
                        control, problem.validation, callback, state=state, comm=problem.comm)
    return problem.agree(result)


def _train_conjugate(problem, feature_map, n_blocks, alphas, control, theta, callback, state) -> FitResult:
    """:func:`train` by conjugate gradients: the preconditioner of
    :func:`~.conjugate.conjugate_preconditioner` on up to ``CG_SKETCH_ROWS`` rows drawn as for
    the stochastic solver (``∝ w`` with unequal weights, whose rows then count once each),
    passes in batches of ``CG_BATCH`` rows."""
    D = n_blocks * feature_map.block_size
    X_sketch, weight_scale, _ = problem.sketch(min(problem.n_train, CG_SKETCH_ROWS))
    precond = problem.agree(conjugate_preconditioner(feature_map, n_blocks, X_sketch, alphas, weight_scale))
    if theta is None:
        theta = X_sketch.new_zeros((D + 1, len(alphas) * problem.n_outputs))
    result = run_conjugate_gradients(feature_map, n_blocks, theta, precond, problem.loss,
                                     problem.batches(min(problem.n_train, CG_BATCH)), control,
                                     problem.validation, callback, state=state, comm=problem.comm)
    return problem.agree(result)


def _widened(theta: torch.Tensor, n_blocks: int, new_blocks: int, block_size: int) -> torch.Tensor:
    """``theta`` on ``new_blocks`` blocks with the same function: old rows ×√(J'/J), new rows 0."""
    D, D_new = n_blocks * block_size, new_blocks * block_size
    wide = theta.new_zeros((D_new + 1, theta.shape[1]))
    wide[:D] = theta[:D] * math.sqrt(new_blocks / n_blocks)
    wide[D_new] = theta[D]
    return wide


@dataclass
class GrowthState:
    """The variables of :func:`grow_features` at an epoch boundary: the number of blocks in
    training, the best result so far and its blocks, the history, whether narrower bandwidths
    are challenging the size kept (``narrowing``; ``narrowed`` of them won), whether the size
    kept is in its final training (``continuing``) and the epochs of the model in training."""

    n_blocks: int
    best: FitResult | None = None
    best_blocks: int = 0
    history: list = field(default_factory=list)  # [(n_blocks, best loss, epochs, sigma)]
    continuing: bool = False
    epochs: EpochState = field(default_factory=EpochState)
    narrowing: bool = False
    narrowed: int = 0


def grow_features(problem: Problem, feature_map: FeatureMap, alphas, control: EpochControl,
                  start_blocks: int, max_blocks: int, growth_tol: float,
                  theta: torch.Tensor | None = None, callback=None,
                  state: GrowthState | None = None,
                  narrow: bool = False) -> tuple[FitResult, int, list, FeatureMap]:
    """Train on ``start_blocks``, doubling while the best monitored loss improves by more than
    ``growth_tol`` (relative; the last, smaller gain is kept but ends the growth). While the
    features may still grow, each size trains at most ``STAGE_EPOCHS`` epochs (enough to tell
    whether more features help); with ``narrow``, narrower bandwidths then challenge the size
    kept (:func:`narrowed`); the model kept trains on to ``control``'s stopping rule.
    Returns the best result, its number of blocks, the history ``[(n_blocks, best loss,
    epochs, sigma)]`` and the feature map of the best. ``state`` (updated in place; see
    :func:`run_epochs`) watches or resumes the run.
    """
    state = GrowthState(start_blocks) if state is None else state
    stage = (dataclasses.replace(control, max_iter=min(control.max_iter, STAGE_EPOCHS))
             if max_blocks > start_blocks else control)
    if not (state.continuing or state.narrowing):
        _grow(problem, feature_map, alphas, stage, max_blocks, growth_tol, theta, callback, state)
    if narrow and not state.continuing:
        _narrow(problem, feature_map, alphas, stage, growth_tol, callback, state)
    best, feature_map = state.best, narrowed(feature_map, state.narrowed)
    if best is None:
        raise FloatingPointError(f"The monitored loss is not finite ({state.history[-1][1]}); "
                                 "standardise X, and check y and sample_weight.")
    if state.continuing or (best.n_epochs >= stage.max_iter and stage.max_iter < control.max_iter):
        state.continuing = True
        best = _continued(problem, feature_map, state.best_blocks, alphas, control, best, callback,
                          state.epochs)
        state.history.append((state.best_blocks, float(best.best_loss.min()), best.n_epochs,
                              feature_map.sigma))
    return best, state.best_blocks, state.history, feature_map


def narrowed(feature_map: FeatureMap, times: int) -> FeatureMap:
    """``feature_map`` at the bandwidth ``σ / NARROWING^times`` (the same seed and blocks)."""
    if times == 0:
        return feature_map
    return feature_map_from_config({**feature_map.config(), "sigma": feature_map.sigma / NARROWING**times})


def _narrow(problem, feature_map, alphas, stage: EpochControl, growth_tol: float, callback,
            state: GrowthState) -> None:
    """``σ/2`` trains from zero at the size kept for as long as a growth stage and replaces the
    best when its loss is lower by a relative margin of ``1/√n_val`` (at least ``growth_tol``;
    ``n_val`` the effective number of validation rows: about the relative standard error of a
    mean of per-row losses, so that a few dozen held-out rows cannot swap the bandwidth on
    noise); then ``σ/4`` challenges it, up to ``MAX_NARROWINGS`` wins. Leaves the winner's
    ``narrowed`` count and best in ``state``."""
    state.narrowing = True
    margin = max(growth_tol, 1 / math.sqrt(max(_effective_validation_rows(problem), 1.0)))
    while state.narrowed < MAX_NARROWINGS:
        challenger = narrowed(feature_map, state.narrowed + 1)
        result = train(problem, challenger, state.best_blocks, alphas, stage, None, callback, state.epochs)
        loss = float(result.best_loss.min())
        state.history.append((state.best_blocks, loss, result.n_epochs, challenger.sigma))
        state.epochs = EpochState()
        if not loss < float(state.best.best_loss.min()) * (1 - margin):
            break
        state.best, state.narrowed = result, state.narrowed + 1
    state.narrowing = False


def _effective_validation_rows(problem) -> float:
    """Kish's effective number ``(Σw)²/Σw²`` of the rows that score the challengers."""
    validation = problem.validation
    if validation is None:
        return 0.0
    if isinstance(validation, tuple):  # in memory: one batch of held-out rows
        validation = StreamValidation([validation])
    return validation.effective_rows()


def _grow(problem, feature_map, alphas, stage: EpochControl, max_blocks: int, growth_tol: float,
          theta, callback, state: GrowthState) -> None:
    """The doubling loop of :func:`grow_features`, from ``state``; leaves the best size in it
    and a fresh :class:`EpochState` for whatever trains next."""
    while True:
        J = state.n_blocks
        start = (theta if state.best is None else
                 _widened(state.best.theta, state.best_blocks, J, feature_map.block_size))
        result = train(problem, feature_map, J, alphas, stage, start, callback, state.epochs)
        loss = float(result.best_loss.min())
        state.history.append((J, loss, result.n_epochs, feature_map.sigma))
        previous = math.inf if state.best is None else float(state.best.best_loss.min())
        if loss < previous:  # keep the better model even when the gain is too small to go on
            state.best, state.best_blocks = result, J
        state.epochs = EpochState()
        if not loss < previous * (1 - growth_tol) or J >= max_blocks:
            return
        state.n_blocks = min(2 * J, max_blocks)


def _continued(problem, feature_map, n_blocks, alphas, control, best: FitResult, callback,
               state: EpochState | None = None) -> FitResult:
    """``best`` trained on from its iterate for the epochs ``control`` has left."""
    rest = dataclasses.replace(control, max_iter=control.max_iter - best.n_epochs)
    more = train(problem, feature_map, n_blocks, alphas, rest, best.theta.clone(), callback, state)
    better = more.best_loss < best.best_loss
    columns = problem.n_outputs
    for a in torch.nonzero(better).flatten().tolist():
        best.theta[:, a * columns:(a + 1) * columns] = more.theta[:, a * columns:(a + 1) * columns]
        best.best_loss[a] = more.best_loss[a]
        best.best_epoch[a] = best.n_epochs + more.best_epoch[a]
    best.loss_curve += more.loss_curve
    best.validation_curve += more.validation_curve
    best.n_epochs += more.n_epochs
    best.n_steps += more.n_steps
    return best


def race_bandwidths(problem: Problem, make_map: Callable[[float], FeatureMap], sigmas, alphas,
                    control: EpochControl, n_blocks: int) -> tuple[float, list[dict]]:
    """Successive halving over ``sigmas``; returns the winner and one record per trained
    ``(rung, sigma, alpha)``."""
    alive, records, rung = list(sigmas), [], 0
    n = problem.n_train
    while True:
        rows = min(n, RACE_ROWS * 4**rung)
        subproblem = problem.rows(rows)
        scores = {}
        for sigma in alive:
            feature_map = make_map(sigma)
            result = train(subproblem, feature_map, n_blocks, alphas, control)
            scores[sigma] = float(result.best_loss.min())
            records += candidate_records(rung, sigma, alphas, rows, n_blocks * feature_map.block_size,
                                result.best_loss, result.n_epochs)
        alive = sorted(alive, key=scores.get)[: math.ceil(len(alive) / HALVING)]
        if len(alive) == 1 or rows == n:
            return alive[0], records
        rung += 1


def cross_validate(problem: Problem, make_map: Callable[[float], FeatureMap], sigmas, alphas,
                   control: EpochControl, n_blocks: int, n_folds: int = 5) -> tuple[float, float, list[dict]]:
    """``(sigma, alpha)`` of least mean validation loss over ``n_folds`` folds of the training
    rows (for small data, where one held-out tenth is a few dozen rows and too noisy to choose
    by); every candidate trains on every fold, the ``α`` as output columns."""
    folds = torch.tensor_split(torch.arange(problem.n_train, device=problem.X.device), n_folds)
    losses = torch.zeros((len(sigmas), len(alphas)), dtype=torch.float64)
    for k, fold in enumerate(folds):
        rest = torch.cat([f for j, f in enumerate(folds) if j != k])
        held = problem.index(fold)
        sub = dataclasses.replace(problem, train_rows=problem.index(rest),
                                  validation=(problem.X[held], problem.y[held], problem.weight[held]))
        for i, sigma in enumerate(sigmas):
            losses[i] += train(sub, make_map(sigma), n_blocks, alphas, control).best_loss * len(fold)
    losses /= problem.n_train
    i, a = divmod(int(torch.argmin(losses)), len(alphas))
    D = n_blocks * make_map(sigmas[0]).block_size
    records = [r for s_i, sigma in enumerate(sigmas)
               for r in candidate_records(0, sigma, alphas, problem.n_train, D, losses[s_i], control.max_iter)]
    return sigmas[i], float(alphas[a]), records


def candidate_records(rung: int, sigma: float, alphas, n_rows: int, n_components: int, losses,
                      epochs: int) -> list[dict]:
    """One ``cv_results_`` record per ``α`` of a trained ``sigma``."""
    return [dict(rung=rung, sigma=sigma, alpha=float(alpha), n_rows=n_rows, n_components=n_components,
                 validation_loss=float(losses[a]), epochs=epochs) for a, alpha in enumerate(alphas)]
