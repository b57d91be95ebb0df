"""What the planner knows and decides: :class:`DataShape` (the data's shape) and
:class:`FitPlan` (a fit's route, choices and limits, and after an engine fit its stages)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .limits import FitLimits, LIMITS

__all__ = ["DataShape", "FitPlan"]


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
    #: features drawn again in every pass (the cache's budget holds not one block of the
    #: training rows: :class:`~kernelstream.solvers.regenerated.RegeneratedFeatures`)
    regenerate: bool = False
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
    #: work units (:mod:`.cost`) the full-size stages may spend (``inf``: no bound), and the
    #: budget in CPU seconds where ``effort`` gives one (machine-dependent; ``None``: none)
    growth_budget: float = float("inf")
    seconds_budget: float | None = None
    #: the thresholds the fit runs with (``solve_tol`` and ``newton_max_steps`` as ``tol`` and
    #: ``max_iter`` set them): no executor reads a global table
    limits: FitLimits = field(default=LIMITS, repr=False, compare=False)
    #: after an engine fit, what each stage did and cost (:class:`~kernelstream.solvers.stages.StageLog`)
    stages: tuple[dict, ...] = field(default=(), repr=False, compare=False)
    #: after an engine fit, its products that read every training row (``None``: not counted)
    passes: int | None = field(default=None, compare=False)

    def state_dict(self) -> dict:
        """The plan as plain values (a model file keeps it: the report of the fit)."""
        state = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        state.update(shape=dataclasses.asdict(self.shape), limits=dataclasses.asdict(self.limits),
                     stages=[dict(record) for record in self.stages])
        return state

    @classmethod
    def from_state(cls, state: dict) -> "FitPlan":
        """The inverse of :meth:`state_dict` (lists read back as the tuples they were)."""
        state = {k: _tuples(v) for k, v in state.items()}
        limits = {k: _tuples(v) for k, v in dict(state.pop("limits")).items()}
        return cls(**{**state, "shape": DataShape(**dict(state.pop("shape"))),
                      "limits": FitLimits(**limits),
                      "stages": tuple(dict(record) for record in state.pop("stages"))})

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
            passes = "" if self.passes is None else f", {self.passes} passes over the training rows"
            lines.append(f"  stages ({total:.2f} CPU s in all{passes}):")
            lines += [f"  - {_stage_line(record)}" for record in self.stages]
        return "\n".join(lines)


def _tuples(value):
    """Lists as tuples, nested (a plan's fields are tuples; JSON reads back lists)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


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
