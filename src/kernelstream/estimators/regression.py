"""DSGRegressor: doubly stochastic kernel regression (ridge, Huber, SVR, absolute, quantile)."""

from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_array

from .._validation import Interval, Real, StrOptions
from ..losses import get_loss
from ..solvers.dask_rows import is_dask_collection
from ._base import DSGBase, assign_parameters
from ._checkpointing import refuse_checkpoints
from ._converging import CONVERGING_CONSTRAINTS, ConvergingMixin
from ._sources import is_source

__all__ = ["DSGRegressor"]

REGRESSION_LOSSES = {"squared", "huber", "epsilon_insensitive", "absolute", "quantile"}


class DSGRegressor(ConvergingMixin, RegressorMixin, DSGBase):
    """Kernel regression by doubly stochastic gradients (Dai et al., NIPS 2014).

    Minimises ``E[ℓ(f(x), y)] + α/2 ‖f‖²_H`` over the RKHS of ``kernel`` with
    ``f(x) = Σ_j ψ_j(x)ᵀ a_j + b``, the blocks ``ψ_j`` of random features regenerated from
    ``(random_state, j)``. Targets are standardised internally (``epsilon`` is in the units of
    ``y``). ``fit`` on arrays runs the fit engine (docs/architecture.md, "The fit engine"):
    ``sigma`` and ``alpha`` of least exact leave-one-out loss on a seeded subsample, then
    one solve a feature size on cached features by preconditioned conjugate gradients,
    doubling while the held-out loss pays (on at most 2048 rows: every row solved exactly in
    the dual); a loss other than least squares by Newton's method on the same solves
    (:mod:`kernelstream.solvers.newton`). ``fit_plan_`` says what was chosen and what each
    stage cost. ``solver="sgd"`` runs the paper's doubly stochastic epochs instead
    (preconditioned, early stopped; streams take them too), ``solver="one_pass"`` the paper's
    Algorithm 1; ``partial_fit`` always is. Scale the features yourself (``StandardScaler``
    in a pipeline), as for ``SVR``.

    Parameters
    ----------
    loss : {"squared", "huber", "epsilon_insensitive", "absolute", "quantile"}, default="squared"
        ``½(u−y)²``; Huber with threshold ``epsilon``; ``max(0, |u−y| − epsilon)``; ``|u−y|``;
        pinball loss at ``quantile``.
    epsilon : float, default=0.1
        Huber threshold / insensitive-zone half width, in units of ``y``.
    quantile : float, default=0.5
        Quantile τ of the pinball loss.
    solver : {"preconditioned", "cg", "sgd", "one_pass"}, default="preconditioned"
        The fit engine described above (every loss: least squares by preconditioned conjugate
        gradients, the others by Newton steps each such a solve); "cg", the same engine with
        least squares only; "sgd", epochs of the paper's doubly stochastic steps (preconditioned
        SGD, :mod:`kernelstream.solvers.preconditioned`, the route of streams); or one pass of
        the paper's algorithm (a new block per step, the schedule, preconditioning and averaging
        parameters below).
    kernel : str, default="rbf"
        A registered kernel: "rbf", "laplace", "matern" (``kernel_params={"nu": 1.5}``), ...
    sigma : float, "median" or "auto", default="auto"
        Bandwidth: a number is used exactly; "median" is ``sigma_scale`` × the median pairwise
        distance of a seeded subsample; "auto" races 0.125, 0.25, 0.5, 1 and 2 × that median on
        the validation rows with one block of features, then lets ``σ/2`` (and ``σ/4``)
        challenge the winner at the feature size kept ("median" for ``solver="one_pass"``).
    sigma_scale : float, default=0.5
        Multiplier of the median heuristic for ``sigma="median"``; the paper uses 0.1 on its 2-D
        synthetic set.
    kernel_params : dict, default=None
        Extra parameters of the kernel family.
    alpha : float or "auto", default="auto"
        RKHS regularisation ``ν`` (the paper's notation); "auto" trains 1e-3, 1e-4, 1e-5, 1e-6
        and 1e-7 side by side and keeps the best on validation (the dual route: 1e-1 to 1e-8 in
        half decades by leave-one-out; 1e-6 for ``solver="one_pass"``).
    batch_size : int, default=2048
        Mini-batch size ``b`` (the preconditioned solver takes at most its critical batch, see
        :mod:`kernelstream.solvers.preconditioned`).
    block_size : int, default=1024
        Random features ``r`` added per step.
    max_iter : int or "auto", default="auto"
        On the engine, most Newton steps of each solve (``newton_max_steps``; least squares is
        one solve); for ``solver="sgd"`` most epochs ("auto": 100, early stopping ends sooner);
        for the one-pass solver, passes ("auto": one pass or enough passes for 32 steps on
        small data).
    learning_rate : {"inverse", "constant", "invscaling"}, default="inverse"
        ``η0/(1 + t/t0)`` (= ``θ/(t + t0)`` with ``θ = η0 t0``), ``η0``, or ``η0/t^power_t``.
    eta0, t0, power_t : float, defaults 2.0, 1.0, 0.5
        Schedule parameters. The default ``γ_t = 2/(1 + t)`` starts at 1. With
        ``precondition=True`` the step is multiplied by the loss's ``step_scale`` (1 / its
        curvature bound: 4 for logistic, 0.5 for squared hinge), so one ``eta0`` serves every
        loss. Plain steps (``precondition=False``) need a much larger ``eta0``: they move ``f``
        by a kernel smoother of the gradient, which is small for narrow kernels.
    precondition : bool, default=True
        Solve ``(ΨᵀΨ/b + εI) a = ΨᵀG/b`` for each new block (the authors' code).
    precond_eps : float, default=3.0
        ``ε`` relative to the mean eigenvalue of ``ΨᵀΨ/b``.
    average : bool or int, default=False
        Average the iterates (from step ``average`` when an int).
    n_components : int, default=None
        Number of random features, as a budget. ``None``: the preconditioned ``fit`` doubles the
        features while the validation loss improves, up to ``16·√n·ln n``; a ``partial_fit``
        stream's budget follows the rows seen the same way; the one-pass ``fit`` adds a block per
        step without bound. Past a budget, one-pass steps revisit blocks cyclically. Budgets
        that are not a multiple of ``block_size`` use ``ceil(n_components / block_size)`` equal
        blocks (a budget below ``block_size`` is one smaller block).
    fit_intercept : bool, default=True
    shuffle : bool, default=True
    tol : float or None, default=1e-3
        On the engine, the relative residual at which each solve stops (``solve_tol``;
        ``None``: the planner's). For ``solver="sgd"``: stop after ``n_iter_no_change`` epochs
        in which the monitored loss (validation, or training without early stopping) did not
        fall by ``tol`` (relative); ``None`` runs ``max_iter`` epochs.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the rows and keep the epoch with the best validation
        loss. The race of ``sigma``/``alpha`` "auto" uses the held-out rows in any case.
    validation_fraction : float, default=0.1
    n_iter_no_change : int, default=2
    warm_start : bool, default=False
        ``fit`` continues from the fitted model (same features, ``sigma_`` and ``alpha_``).
    cache_bytes : int or "auto", default="auto"
        The most bytes the cached features of the training rows may take on the subsample
        route (each solve then costs two matrix products an iteration): "auto" a third of the
        memory, at most 8 GiB (a growth of random features without ``n_components``: at most
        2 GiB, ``growth_cache_bytes``), and the epochs route where one block does not fit; a number that
        budget, with a clear error where the features asked for do not fit; 0 never caches.
        Bounded features (the shift-invariant kernels' cosines and sines) are held in float16,
        2 bytes each, where ``dtype="float32"``; others in ``dtype``.
    effort : {"fast", "auto", "thorough"} or float, default="auto"
        How much work the engine's feature growth may spend, trading time for accuracy: a level
        bounds the work units of every full-size stage at ``0.25×``, ``1×`` or ``4×``
        ``growth_units_per_row`` a training row (multiply-adds, bytes moved, ten a cosine,
        counted from the shapes and the iterations: the same model on any machine, and a fit's
        time linear in its rows); a number is a budget in CPU seconds instead, a doubling tried
        only where the seconds predicted by this machine's measured throughput fit
        (machine-dependent: the same seed may give another model elsewhere). ``fit_plan_``
        reports each stage's predicted and measured seconds and why the features stopped.
        Record: docs/decisions/cost-model.md.
    basis : {"auto", "random_features", "nystroem"}, default="auto"
        The subsample route's basis. "random_features": the kernel's random features, grown
        while they pay on the held-out rows. "nystroem": ``f(x) = k_C(x)ᵀβ + b`` over centres
        ``C``, training rows in a seeded order (``n_components`` of them, else at most 16,384),
        solved on their kernel columns ``K_XC`` (cached, within ``cache_bytes``) with the
        Nyström preconditioner, ``alpha="auto"`` then challenged by ``α/4``, ``α/16``, … at that
        size while each pays on the held-out rows; the model stores its centres and cannot be
        warm-started or continued by ``partial_fit``. Needs dense arrays beyond the dual
        route's 2,048 rows, the default solver and ``max_iter`` (else ``ValueError``). "auto":
        "nystroem" for a classifier of three or more classes with ``loss="auto"`` on dense rows,
        at least twice as many as its centres, whose kernel columns the cache holds (MNIST:
        60,000 rows) (which then finishes with the squared hinge one-vs-rest, kept unless least squares
        makes clearly fewer held-out errors); on the dual route's few rows (at most 2,048) with
        no ``n_components``, an "rbf", "laplace" or "matern" kernel and least squares or the
        squared hinge, the exact kernel's model ``f(x) = Σ_i k(x, x_i)β_i + b`` on every
        training row (``fit_plan_.basis == "exact"``; ``partial_fit`` continues it in the
        kernel's random features, a warm start solves again); else "random_features". Records:
        docs/decisions/nystroem-basis.md, docs/decisions/exact-kernel-route.md.
    checkpoint : str or path-like, default=None
        File the preconditioned ``fit`` checkpoints to: after choosing ``sigma`` and ``alpha``,
        then every ``checkpoint_every``; each write replaces the file atomically (a reader sees
        the old or the new checkpoint). ``fit(X, y, resume=PATH)`` continues from it. After
        ``e`` epochs its size is about ``e/2 + 3`` copies of the coefficients, independent of
        the number of rows.
    checkpoint_every : int or str, default=1
        Epochs between checkpoints, or a time such as ``"30s"``, ``"10min"``, ``"2h"`` (a
        checkpoint at the first epoch end that long after the last one).
    random_state : int, RandomState or None
        Seeds the feature blocks and the shuffling.
    verbose : int or "auto", default="auto"
        Progress bar: "auto" shows one on a terminal for work that lasts more than a few seconds,
        0 never, 1 always. The epochs are logged to the ``"kernelstream"`` logger either way.
    device : {"auto", "cpu", "cuda"}, default="auto"
    dtype : {"float32", "float64"}, default="float32"
    n_jobs : int or None, default=None
        Threads for the computation: ``None`` is one thread (never slower than one thread on a
        shared or loaded machine), ``-1`` every thread the environment allows
        (``torch.get_num_threads()``, lowered by ``OMP_NUM_THREADS`` and
        ``threadpoolctl.threadpool_limits``), ``k`` at most ``k`` of those.

    Attributes
    ----------
    fit_plan_ : FitPlan
        What the fit did and why: the route, how ``sigma`` and ``alpha`` were chosen and on how
        many rows, the feature budget, the solver, the loss, the stopping rule
        (:func:`kernelstream.planning.plan_fit`); ``print`` it.
    expansion_ : Expansion
        The fitted coefficients and feature map.
    n_components_ : int
        Number of live random features.
    sigma_ : float
        Bandwidth used (with ``sigma="auto"``: the race's winner, or a narrower challenger
        that beat it once the features stopped growing).
    alpha_ : float
        Regularisation kept (preconditioned solver).
    loss_curve_, validation_scores_ : list of float
        Training loss and minus the validation loss per epoch of the size kept.
    best_validation_score_ : float
    cv_results_ : dict or None
        The bandwidth race, scikit-learn style (``param_sigma``, ``param_alpha``, ``n_rows``,
        ``rung``, ``mean_test_score`` = minus the validation loss, ``params``).
    feature_growth_ : list of dict
        Each feature size tried, then each narrower bandwidth that challenged the size kept
        (``sigma="auto"``: ``σ/2``, and ``σ/4`` if ``σ/2`` won), with its ``n_components``,
        ``sigma``, best validation loss and epochs. ``n_components_`` and ``sigma_`` say which
        was kept (a narrower bandwidth replaces the incumbent only when its loss is lower by a
        margin); when the kept model trained on, the last entry is that continuation.
    seed_ : int
        Seed of the feature blocks.
    t_ : int
        Steps taken.
    n_iter_ : int
        Passes (or partial_fit calls) made.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from kernelstream import DSGRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (2000, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(2000)
    >>> model = DSGRegressor(random_state=0).fit(X, y)
    >>> round(model.score(X, y), 2)
    0.98
    """

    _parameter_constraints = {
        **DSGBase._parameter_constraints,
        **CONVERGING_CONSTRAINTS,
        "loss": [StrOptions(REGRESSION_LOSSES)],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "quantile": [Interval(Real, 0, 1, closed="neither")],
    }

    _state_attributes = DSGBase._state_attributes + ConvergingMixin._fitted_attributes + ("n_outputs_", "_y_1d", "y_offset_", "y_scale_")

    def __init__(self, *, loss="squared", epsilon=0.1, quantile=0.5, solver="preconditioned", kernel="rbf",
                 sigma="auto", sigma_scale=0.5, kernel_params=None, alpha="auto", batch_size=2048,
                 block_size=1024, max_iter="auto", learning_rate="inverse", eta0=2.0, t0=1.0,
                 power_t=0.5, precondition=True, precond_eps=3.0, average=False,
                 n_components=None, fit_intercept=True, shuffle=True, tol=1e-3,
                 early_stopping=True, validation_fraction=0.1, n_iter_no_change=2,
                 warm_start=False, cache_bytes="auto", effort="auto", basis="auto", checkpoint=None, checkpoint_every=1, random_state=None,
                 verbose="auto", device="auto", dtype="float32", n_jobs=None):
        assign_parameters(self, locals())

    def fit(self, X, y=None, sample_weight=None, *, resume=None, limits=None):
        """Fit on ``(X, y)`` for ``max_iter`` passes; ``y`` is ``(n,)`` or ``(n, n_outputs)``.

        Parameters
        ----------
        X : array-like, sparse matrix of shape (n_samples, n_features), or a source
            A source of :mod:`kernelstream.data` (its labels and weights inside, ``y`` None) is
            streamed (docs/user_guide/streaming.md); a shard of one under
            ``torch.distributed`` fits data-parallel (:mod:`kernelstream.distributed`). In one
            process, a source whose rows take at most ``stream_rows_bytes`` (1 GiB) is read
            into memory in one pass and fitted as arrays: the in-memory model.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        sample_weight : array-like of shape (n_samples,), default=None
        resume : str or path-like, default=None
            A checkpoint written by an interrupted ``fit`` (``checkpoint=PATH``) on the same
            data with the same parameters: the fit goes on from its last epoch boundary and ends
            with the model of the uninterrupted fit, bit for bit on the same device and thread
            count. Other data or parameters, or a damaged file, raise
            :class:`~kernelstream.io.CheckpointError`. Arrays only.
        limits : FitLimits, default=None
            The planner's thresholds (:class:`~kernelstream.planning.FitLimits`; ``None``: the
            table :data:`~kernelstream.planning.LIMITS`), for instance
            ``dataclasses.replace(LIMITS, narrowings=1)``: the plan carries them
            (``fit_plan_.limits``) and the fit runs with them; a source reads
            ``stream_rows_bytes`` from them (a stream within it is fitted as arrays).
        """
        if is_source(X):
            refuse_checkpoints(self, resume, "a fit on a source")
            return self._fit_source(X, y, sample_weight, limits=limits)
        if is_dask_collection(X):
            return self._fit_dask(X, y, sample_weight, resume, limits)
        if self.solver == "one_pass":
            refuse_checkpoints(self, resume)
            return self._fit(X, y, sample_weight, limits)
        return self._fit_preconditioned(X, y, sample_weight, resume, limits)

    def partial_fit(self, X, y, sample_weight=None):
        """Learn from a chunk of a stream, in full batches of ``batch_size`` rows.

        Rows wait in a buffer until a batch is full, so the model depends on the rows seen, not
        on how the stream is chunked; the first ``batch_size`` rows fix the bandwidth and the
        target scaling. Before the first full batch the model cannot predict yet.
        """
        return self._partial_fit(X, y, sample_weight)

    def predict(self, X):
        """``f(X)``, shape ``(n,)`` (or ``(n, n_outputs)`` for 2-D targets)."""
        return self._targets_of(self._raw_decision(X))

    def _targets_of(self, out: np.ndarray) -> np.ndarray:
        """:meth:`predict` of the model's outputs ``(n, C)``: in the targets' units and shape."""
        out = out * self.y_scale_ + self.y_offset_
        return out[:, 0] if self._y_1d else out

    # -- hooks ---------------------------------------------------------------------------
    def _check_targets(self, y, *, first, classes=None):
        if y is None:
            raise ValueError("requires y to be passed, but the target y is None.")
        y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        Y = y.reshape(-1, 1) if y.ndim == 1 else y
        if first:
            self._y_1d = y.ndim == 1
            self.n_outputs_ = Y.shape[1]
        elif Y.shape[1] != self.n_outputs_:
            raise ValueError(f"y has {Y.shape[1]} outputs, but this model was fitted with "
                             f"{self.n_outputs_}; pass targets with {self.n_outputs_} columns.")
        return Y

    def _fit_target_scaling(self, y) -> None:
        """``y_offset_`` and ``y_scale_``: mean and standard deviation of ``y`` per output."""
        self.y_offset_ = y.mean(axis=0)
        std = y.std(axis=0)
        self.y_scale_ = np.where(std > 0, std, 1.0)

    def _encode_targets(self, y):
        return (y - self.y_offset_) / self.y_scale_

    def _make_loss(self):
        scale = float(np.mean(self.y_scale_))
        return get_loss(self.loss, delta=self.epsilon / scale, epsilon=self.epsilon / scale,
                        quantile=self.quantile)

    def _n_outputs(self):
        return self.n_outputs_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags
