"""Novelty detection and density-ratio estimation on the doubly stochastic solver.

``DSGOneClass``: ``min_{f,τ} E[max(0, τ − f(x))] + ν/2‖f‖² − ντ`` (Dai et al. 2014, §4; the
one-class SVM of Schölkopf et al. scaled by ν). ``DSGDensityRatio``:
``min_f E_q[exp f(x)] − E_p[f(x)] + ν/2‖f‖²`` whose minimiser is ``f = log(p/q)`` (KL
importance estimation, Nguyen et al. 2008 / Sugiyama et al. 2008).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import OutlierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._validation import Interval, Real, StrOptions
from ..losses import get_loss
from ..solvers import DSGConfig
from ..solvers.cached import FeatureCache
from ..solvers.feature_rows import INTERCEPT_FEATURE
from ..solvers.cached import restricted
from ..solvers.novelty import (density_ratio_newton, density_ratio_path, one_class_newton,
                               seeded_order)
from .._state import random_state_from_state
from ._base import DSGBase, assign_parameters
from ._sources import arrays_of, check_arrays_absent, is_source

__all__ = ["DSGOneClass", "DSGDensityRatio"]

#: the engine's ``solver`` choices (``"sgd"``: the paper's doubly stochastic steps)
SOLVERS = ("auto", "newton", "sgd")


class _NewtonFit:
    """The fit of a convex objective on cached random features by the engine's Newton
    iteration (:mod:`kernelstream.solvers.novelty`): the map of the one-pass fit (its seed and
    bandwidth), ``n_components`` features or the table's ``novelty_features``, as many as the
    cache's ``growth_cache_bytes`` hold."""

    def _newton_route(self, source: bool) -> bool:
        """Whether ``fit`` takes the engine: ``solver="newton"``, or ``"auto"`` on arrays in
        memory (a stream of a source takes the doubly stochastic steps)."""
        return self.solver == "newton" or (self.solver == "auto" and not source)

    def _fit_newton(self, X, solve) -> None:
        """Draw the map from ``X``, cache its features and load ``solve(cache, order,
        limits, max_steps)``'s ``θ`` as the model (``limits``: the table of :meth:`_use_limits`)."""
        limits = self._limits()
        expansion = self._start(X, None, check_random_state(self.random_state))
        feature_map = expansion.feature_map
        r = feature_map.block_size
        blocks = expansion.max_blocks or -(-limits.novelty_features // r)
        rows = torch.as_tensor(_dense(X), dtype=self._torch_dtype(), device=self.device_)
        cache = FeatureCache(feature_map, rows, limits.growth_cache_bytes)
        while blocks > 1 and not cache.fits(blocks):
            blocks -= 1
        cache.grow(blocks)
        max_steps = None if self.max_iter == "auto" else int(self.max_iter)
        solved = solve(cache, seeded_order(rows.shape[0], self.seed_, rows.device), limits, max_steps)
        theta, D = solved.theta, blocks * r
        coef = (theta[:D] / math.sqrt(blocks)).reshape(blocks, r, 1)
        expansion.load_prediction_state(coef, INTERCEPT_FEATURE * theta[D].double(), solved.iterations)
        self._set_fitted(expansion, solved.iterations)


class DSGOneClass(_NewtonFit, OutlierMixin, DSGBase):
    """One-class novelty detection: the one-class SVM on random features.

    ``fit`` on arrays minimises ``(1/n) Σ max(0, τ − f(x_i)) + (ν/2)‖f‖² − ντ`` by the fit
    engine's Newton iteration on cached features (``solver="newton"``). With ``solver="sgd"``,
    on a source and in ``partial_fit``, the offset ``τ`` is learned with ``f`` by doubly
    stochastic steps: the batch's violators (``f(x) < τ``) add a block fitted to them, and
    ``τ ← τ − γ(P̂(f < τ) − ν)``. ``nu`` bounds the fraction of training points flagged as
    outliers, as in scikit-learn's ``OneClassSVM``.

    Parameters
    ----------
    nu : float in (0, 1], default=0.5
        Regularisation and target outlier fraction ν.
    solver : {"auto", "newton", "sgd"}, default="auto"
        ``"auto"``: Newton's method on arrays in memory, the doubly stochastic steps on a
        source. ``max_iter`` bounds Newton's steps a smoothing width (``"auto"``: the table's).
    n_components : int or None, default=None
        The features of a Newton fit (``None``: the table's ``novelty_features``, 1,024) or
        the budget of the doubly stochastic steps.
    eta0, t0 : float or None, default=None
        Step ``γ_t = η0/(1 + t/t0)``. ``None`` uses the theory's ``θ/(t + t0)`` with
        ``θ = 1.5/ν`` (θν ∈ (1, 2), Dai et al. Thm. 4) and ``t0 = θ``: the loss is piecewise
        linear, so ν is the only curvature and ``1/ν`` is the Newton scale.
    precondition : bool, default=False
        Plain steps by default: the block preconditioner amplifies the data term but not the
        ν-shrinkage, which moves the fixed point away from the one-class SVM solution.
    **params
        kernel, sigma, sigma_scale, batch_size, block_size, ... as in :class:`DSGRegressor`.

    Attributes
    ----------
    offset_ : float
        ``τ``; ``decision_function = score_samples − offset_``.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelstream import DSGOneClass
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> det = DSGOneClass(nu=0.1, random_state=0).fit(X)
    >>> bool(det.predict([[0.0, 0.0]])[0] == 1 and det.predict([[6.0, 6.0]])[0] == -1)
    True
    """

    _parameter_constraints = {
        **{k: v for k, v in DSGBase._parameter_constraints.items() if k != "alpha"},
        "nu": [Interval(Real, 0, 1, closed="right")],
        "eta0": [Interval(Real, 0, None, closed="neither"), None],
        "t0": [Interval(Real, 0, None, closed="neither"), None],
        "solver": [StrOptions(set(SOLVERS))],
    }

    def __init__(self, *, nu=0.5, solver="auto", kernel="rbf", sigma="median", sigma_scale=0.5,
                 kernel_params=None, batch_size=1024, block_size=256, max_iter="auto",
                 learning_rate="inverse", eta0=None, t0=None, power_t=0.5, precondition=False,
                 precond_eps=3.0, average=False, n_components=None, shuffle=True,
                 random_state=None, verbose="auto", device="auto", dtype="float32", n_jobs=None):
        assign_parameters(self, locals())

    min_steps = 64

    fit_intercept = True  # the offset τ is the (negated) intercept

    def fit(self, X, y=None, sample_weight=None, *, limits=None):
        """Fit on the rows of ``X`` (all assumed normal), an array or a source of
        :mod:`kernelstream.data` (streamed: :mod:`~kernelstream.estimators._streaming`);
        ``limits``: the planner's table (:class:`~kernelstream.planning.FitLimits`, ``None``
        the default), as in :meth:`DSGRegressor.fit`."""
        source = is_source(X)
        if not self._newton_route(source):
            if source:  # the doubly stochastic steps, one pass over the stream
                check_arrays_absent(None, sample_weight)
                return self._fit_one_pass_stream(X, None, limits)
            return self._fit(X, None, sample_weight, limits)
        if source:
            X, _, sample_weight = arrays_of(X)
        with self._unchanged_on_error():
            self._use_limits(limits)
            X, _, weight = self._validated(X, None, sample_weight, first=True)
            self._fit_newton(X, lambda cache, order, limits, steps: one_class_newton(
                cache, self.nu, order, limits, steps, weight=torch.as_tensor(weight)))
            self._pending = None
        return self

    def partial_fit(self, X, y=None, sample_weight=None):
        """One pass over a chunk of normal rows."""
        return self._partial_fit(X, None, sample_weight)

    def decision_function(self, X):
        """``f(x) − τ``: negative for outliers."""
        return self._raw_decision(X)[:, 0]

    def score_samples(self, X):
        """``f(x)``, the raw normality score (higher is more normal)."""
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for inliers, −1 for outliers."""
        return np.where(self.decision_function(X) >= 0, 1, -1)

    @property
    def offset_(self) -> float:
        check_is_fitted(self, "expansion_")
        return -float(self.expansion_.prediction_parameters()[1][0])

    # -- hooks ---------------------------------------------------------------------------
    def _make_loss(self):
        return get_loss("one_class")

    def _schedule(self):
        from ..schedules import make_schedule

        theta = 1.5 / self.nu  # θν = 1.5
        t0 = theta if self.t0 is None else self.t0
        eta0 = theta / t0 if self.eta0 is None else self.eta0
        return make_schedule(self.learning_rate, eta0, t0, self.power_t)

    def _solver_config(self) -> DSGConfig:
        return DSGConfig(schedule=self._schedule(), alpha=self.nu, precondition=self.precondition,
                         precond_eps=self.precond_eps, intercept_offset=self.nu)

    def _n_outputs(self):
        return 1


class DSGDensityRatio(_NewtonFit, DSGBase):
    """KL density-ratio estimation ``f ≈ log p(x)/q(x)`` from two independent samples.

    ``fit`` minimises ``E_q[e^f] − E_p[f] + (ν/2)‖f‖²`` by the fit engine's Newton iteration on
    cached features (``solver="newton"``). With ``solver="sgd"`` and in :meth:`partial_fit`,
    each step takes ``batch_size/2`` rows of each sample and a new feature block; the gradient
    is ``E_q[e^f ψ] − E_p[ψ]``. The two samples may differ in size and may be streamed with
    :meth:`partial_fit`.

    Parameters
    ----------
    alpha : float or "auto", default="auto"
        RKHS regularisation ν. ``"auto"``: on the Newton route the ``α`` of least held-out
        ``E_q[e^f] − E_p[f]`` among the table's ``density_ratio_alphas`` (a tenth of each
        sample held out, then every row refitted at it); on the doubly stochastic steps 1e-6.
    solver : {"auto", "newton", "sgd"}, default="auto"
        ``"auto"``: Newton's method (the samples are read whole). ``max_iter`` bounds its steps
        (``"auto"``: the table's ``newton_max_steps``).
    n_components : int or None, default=None
        The features of a Newton fit (``None``: the table's ``novelty_features``, 1,024) or
        the budget of the doubly stochastic steps.
    **params
        kernel, sigma (median of the pooled samples), batch_size, ... as in :class:`DSGRegressor`.

    Attributes
    ----------
    alpha_ : float
        The ``α`` the last ``fit`` solved at.
    kl_divergence_ : float
        ``KL(p‖q) ≈ mean_{x ∈ X_p} f(x)`` over the numerator sample of the last ``fit``
        (at most 20,000 rows) or ``partial_fit`` chunk.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelstream import DSGDensityRatio
    >>> rng = np.random.default_rng(0)
    >>> p, q = rng.normal(0, 1, (5000, 1)), rng.normal(0, 2, (5000, 1))
    >>> est = DSGDensityRatio(random_state=0).fit(p, q)
    >>> true = np.log(2) - 0.375 * 0.0**2          # log p/q at x = 0
    >>> bool(abs(est.log_ratio([[0.0]])[0] - true) < 0.15)
    True
    """

    _state_attributes = DSGBase._state_attributes + ("kl_divergence_", "alpha_", "_rng_state")

    def _state_builders(self, device) -> dict:
        return {**super()._state_builders(device), "_rng_state": random_state_from_state}

    _parameter_constraints = {**DSGBase._parameter_constraints,
                              "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
                              "solver": [StrOptions(set(SOLVERS))]}

    def __init__(self, *, kernel="rbf", sigma="median", sigma_scale=0.5, kernel_params=None,
                 alpha="auto", solver="auto", batch_size=2048, block_size=1024, max_iter="auto",
                 learning_rate="inverse", eta0=2.0, t0=1.0, power_t=0.5, precondition=True,
                 precond_eps=3.0, average=False, n_components=None, shuffle=True,
                 random_state=None, verbose="auto", device="auto", dtype="float32", n_jobs=None):
        assign_parameters(self, locals())

    fit_intercept = True  # the normalising constant

    def fit(self, X_p, X_q, *, limits=None):
        """Fit ``log p/q`` from a numerator sample ``X_p`` and a denominator sample ``X_q``
        (arrays, or sources of :mod:`kernelstream.data` read whole); ``limits``: the planner's
        table (:class:`~kernelstream.planning.FitLimits`, ``None`` the default)."""
        X_p, X_q = arrays_of(X_p)[0], arrays_of(X_q)[0]
        with self._unchanged_on_error():
            self._use_limits(limits)
            X_p, X_q = self._validate_pair(X_p, X_q, first=True)
            if self._newton_route(False):
                numerator = torch.arange(X_p.shape[0] + X_q.shape[0]) < X_p.shape[0]
                self._fit_newton(_stacked(X_p, X_q), lambda cache, order, limits, steps:
                                 self._ratio_newton(cache, numerator.to(order.device), order,
                                                    limits, steps))
                self._rng_state = check_random_state(self.random_state)
                self.kl_divergence_ = self.kl_divergence(X_p[:20000])
                return self
            rng = check_random_state(self.random_state)
            expansion = self._start(_stacked(X_p[:1000], X_q[:1000]), None, rng)
            steps = self._pair_steps(X_p, X_q)
            n_epochs = max(1, math.ceil(self._limits().min_steps / steps)) if self.max_iter == "auto" else self.max_iter
            self._run_pair(expansion, X_p, X_q, steps * n_epochs, rng)
            self._set_fitted(expansion, n_epochs)
            self._rng_state, self.alpha_ = rng, self._one_pass_alpha()
            self.kl_divergence_ = self.kl_divergence(X_p[:20000])
        return self

    def partial_fit(self, X_p, X_q):
        """One pass over a chunk of each sample."""
        first = not hasattr(self, "expansion_")
        with self._unchanged_on_error():
            X_p, X_q = self._validate_pair(X_p, X_q, first=first)
            if first:
                self._rng_state = check_random_state(self.random_state)
                self.expansion_ = self._start(_stacked(X_p[:1000], X_q[:1000]), None,
                                              self._rng_state)
            else:  # a loaded model continues with a fresh shuffling stream
                self._rng_state = getattr(self, "_rng_state", None) or check_random_state(self.random_state)
            self._run_pair(self.expansion_, X_p, X_q, self._pair_steps(X_p, X_q), self._rng_state)
            self._set_fitted(self.expansion_, getattr(self, "n_iter_", 0) + 1)
            self.alpha_ = self._one_pass_alpha()
            self.kl_divergence_ = self.kl_divergence(X_p[:20000])
        return self

    def _ratio_newton(self, cache, numerator: torch.Tensor, order: torch.Tensor, limits, steps):
        """The Newton fit at ``alpha``, or (``"auto"``) at the ``α`` of ``density_ratio_alphas``
        of least held-out loss on a seeded share ``density_ratio_held_out`` of each sample,
        then on every row from its solution (``alpha_``: the ``α`` kept)."""
        alpha, start = self.alpha, None
        if alpha == "auto":
            alpha = limits.one_pass_alpha
            held = torch.zeros_like(numerator)
            for side in (numerator, ~numerator):
                rows = order[side[order]]  # the side's rows in the seeded order
                k = int(limits.density_ratio_held_out * len(rows))
                if 1 <= k < len(rows):
                    held[rows[:k]] = True
            if bool(held[numerator].any()) and bool(held[~numerator].any()):
                train, kept = torch.nonzero(~held).reshape(-1), torch.nonzero(held).reshape(-1)
                solve, alpha, _ = density_ratio_path(
                    restricted(cache, train), numerator[train], limits.density_ratio_alphas, limits,
                    (restricted(cache, kept), numerator[kept]), self.seed_, steps)
                start = solve.theta
        self.alpha_ = float(alpha)
        return density_ratio_newton(cache, numerator, alpha, order, limits, steps, start)

    def _one_pass_alpha(self) -> float:
        return self._limits().one_pass_alpha if self.alpha == "auto" else float(self.alpha)

    def _pair_steps(self, X_p, X_q) -> int:
        """Steps of one pass: the larger sample in half-batches."""
        return max(1, round(max(X_p.shape[0], X_q.shape[0]) / max(1, self.batch_size // 2)))

    def log_ratio(self, X):
        """``f(x) ≈ log p(x)/q(x)``."""
        return self._raw_decision(X)[:, 0]

    def ratio(self, X):
        """``exp f(x) ≈ p(x)/q(x)``."""
        return np.exp(self.log_ratio(X))

    def kl_divergence(self, X_p):
        """``KL(p‖q) ≈ mean f`` over numerator samples ``X_p``."""
        return float(np.mean(self.log_ratio(X_p)))

    # -- internals -----------------------------------------------------------------------
    def _validate_pair(self, X_p, X_q, *, first):
        if first:
            self._validate_params()
            self._check_params()
        X_p = self._validate_X(X_p, reset=first)
        X_q = self._validate_X(X_q, reset=False)
        return X_p, X_q

    def _run_pair(self, expansion, X_p, X_q, n_steps, rng):
        """Each step takes ``b_p = b/2`` rows of p (target 1) and ``b_q`` rows of q (target 0),
        weighted ``b/b_p`` and ``b/b_q``, so that the batch mean of the weighted gradients is
        ``mean_p g + mean_q g``, the stochastic gradient of ``E_q[e^f] − E_p[f]``."""
        half = max(1, self.batch_size // 2)
        order_p, order_q = _cycled(X_p.shape[0], rng, self.shuffle), _cycled(X_q.shape[0], rng, self.shuffle)
        b_p, b_q = min(half, X_p.shape[0]), min(half, X_q.shape[0])
        targets = np.concatenate([np.ones((b_p, 1)), np.zeros((b_q, 1))])
        weights = np.concatenate([np.full(b_p, (b_p + b_q) / b_p), np.full(b_q, (b_p + b_q) / b_q)])

        def batches():
            for _ in range(n_steps):
                rows_p = np.fromiter((next(order_p) for _ in range(b_p)), dtype=np.int64)
                rows_q = np.fromiter((next(order_q) for _ in range(b_q)), dtype=np.int64)
                yield np.vstack([_dense(X_p[rows_p]), _dense(X_q[rows_q])]), targets, weights

        for _ in self._run_batches(expansion, batches()):
            pass

    def _make_loss(self):
        return get_loss("kl_ratio")

    def _n_outputs(self):
        return 1


def _cycled(n: int, rng, shuffle: bool):
    """Endless row indices: successive (shuffled) passes over ``range(n)``."""
    while True:
        yield from (rng.permutation(n) if shuffle else range(n))


def _dense(X):
    return X.toarray() if hasattr(X, "toarray") else X


def _stacked(A, B):
    """The rows of ``A`` then those of ``B`` (CSR when either is sparse)."""
    return sp.vstack([A, B], format="csr") if sp.issparse(A) or sp.issparse(B) else np.vstack([A, B])
