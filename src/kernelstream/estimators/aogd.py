"""AOGDClassifier: online kernelized AUC maximisation with moving averages (AlQuabeh et al.)."""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d

from .._device import resolve_device, to_numpy, to_tensor
from .._validation import Integral, Interval, Real, StrOptions
from ..glossary import constraints
from ..distributed import Communicator
from ..features import build_feature_map
from ..schedules import SCHEDULES, make_schedule
from ..solvers.pairwise import (PAIRWISE_LOSSES, PairwiseState, aogd_chunk, bernoulli_coins,
                                pairwise_stream)
from .._state import feature_map_from_config
from ..rng import draw_seed
from ._base import assign_parameters
from ._labels import fit_or_check_labels
from ._progress import StreamProgress, progress_bar
from ._estimator import KernelEstimator
from ._first_pass import first_pass
from ._sources import check_arrays_absent, is_source, whole_source

__all__ = ["AOGDClassifier"]

class AOGDClassifier(ClassifierMixin, KernelEstimator):
    """Online AUC maximisation on random Fourier features (AOGD, Algorithm 1).

    Each new example ``z_t = ψ(x_t)`` is paired with the running mean ``z̄`` of the opposite
    class, then with one random past example ``ẑ`` of that class (replaced by the newest with
    probability ``p``), in two gradient steps on the pairwise loss of ``u = wᵀ(z⁺ − z⁻)``:

        w' = w − η_t (∇ℓ(w; z_t, z̄) + λw),   w = w' − γ_t (∇ℓ(w'; z_t, ẑ) + λw')

    The fitted state is ``w`` plus two class sums and two random examples: ``O(D)`` numbers,
    whatever the length of the stream. Chunks are processed exactly (see
    :mod:`kernelstream.solvers.pairwise`): the result does not depend on ``batch_size``.

    Parameters
    ----------
    loss : {"squared", "hinge", "logistic"}, default="squared"
        ``(1 − u)²`` (the paper's AUC surrogate), ``max(0, 1 − u)`` or ``log(1 + e^{−u})``.
    kernel : str, default="rbf"
        A registered kernel of :mod:`kernelstream.features`, or ``"linear"`` (``ψ(x) = x``).
    n_components : int, default=1024
        Number of random features ``D`` (ignored for ``"linear"``).
    sigma : float or "median", default="median"
        Bandwidth; ``"median"`` is ``sigma_scale ×`` the median pairwise distance.
    sigma_scale : float, default=1.0
    kernel_params : dict, default=None
    eta0 : float, default=0.5
        Step size ``η`` of the mean step (the paper's grid is ``2^[−8:−1]``), relative to the
        kernel's scale: the steps taken are ``η_t / E k(x, x)`` (``step_scale_``; ``E‖ψ(x)‖²``
        in expectation). Shift-invariant kernels have ``k(x, x) = 1``, so nothing changes there;
        for ``kernel="linear"`` (``k(x, x) = ‖x‖²``, the mean over the rows that start the model,
        at most 1024) it keeps the default stable on raw inputs (a9a: AUC 0.90 instead of 0.63
        with an unscaled 0.5).
    gamma0 : float or None, default=None
        Step size ``γ`` of the random-example step; ``None`` uses ``eta0`` (``γ = η``: the
        paper fixes ``γ`` only up to a constant, ``γ = O(Γ M η)``, and both steps of Algorithm 1
        then get the same weight. For the squared loss the mean pair's loss lacks the term
        ``wᵀΣw`` of the opposite class's covariance, which only the random pair carries; see
        ``benchmarks/results/aogd.md`` for ``γ = η/4`` against ``γ = η``).
    learning_rate : {"invscaling", "constant", "inverse"}, default="invscaling"
        Schedule shared by both steps: ``η0/t^power_t``, ``η0`` or ``η0/(1 + t/t0)``.
    t0 : float, default=1.0
    power_t : float, default=0.5
    alpha : float, default=1e-6
        L2 regularisation ``λ`` (the paper's grid is ``10^[−8:−1]``).
    p : float, default=0.5
        Probability that a new example replaces its class's random example.
    average : bool or int, default=False
        ``True``: ``coef_`` is the average of the per-example iterates, ``w̄_T = (1/T) Σ_t w_t``
        (Polyak–Ruppert; for convex losses the hypothesis that online-to-batch conversions of a
        regret bound speak of, e.g. Kar et al. 2013 for pairwise losses). An int ``a`` averages
        from the ``a``-th example on, like scikit-learn's ``SGDClassifier(average=a)``. ``False``
        returns the last iterate ``w_T``, as Algorithm 1 does. One more ``D``-vector of state.
    batch_size : int, default=64
        Examples processed per exact chunk (a speed knob only).
    max_iter : int, default=1
        Passes over the data in ``fit`` (one pass is the online algorithm).
    shuffle : bool, default=True
        Shuffle the rows before each pass of ``fit``.
    random_state : int, RandomState or None
        Seeds the random features, the coins and the shuffling.
    verbose : int or "auto", default="auto"
        Progress bar (``fit``: the examples; ``partial_fit``: one bar across the stream): "auto"
        shows one on a terminal for work that lasts more than a few seconds, 0 never, 1 always.
    device : {"auto", "cpu", "cuda"}, default="auto"
    n_jobs : int or None, default=None
        Threads: ``None`` is one, ``-1`` every thread the environment allows (see
        :class:`DSGRegressor`).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (scores rank it first).
    coef_ : ndarray of shape ``(n_components_,)``
        The model scored by ``decision_function``: the averaged iterate if ``average``, else ``w``.
    iterate_ : ndarray of shape ``(n_components_,)``
        The last iterate ``w_T`` (where the next example's steps start).
    n_averaged_ : int
        Iterates in the average (0 without ``average``).
    step_scale_ : float
        ``1 / E k(x, x)`` over the first rows seen (exactly 1 for shift-invariant kernels).
    threshold_ : float
        ``½ wᵀ(z̄⁺ + z̄⁻)``: ``decision_function`` subtracts it, so ``predict`` labels a point
        positive when its score is nearer the positive class's mean score.
    state_ : PairwiseState
        Class sums, counts and random examples (``O(D)``).
    feature_map_ : FeatureMap or None
    n_components_, sigma_, seed_, t_, n_iter_, n_features_in_, device_

    Notes
    -----
    AlQuabeh, de Vazelhes and Gu, *Limited Memory Online Gradient Descent for Kernelized Pairwise
    Learning with Dynamic Averaging*, AAAI 2024 (Algorithm 1). ``score`` is the ROC AUC.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from kernelstream import AOGDClassifier
    >>> X, y = make_moons(2000, noise=0.2, random_state=0)
    >>> clf = AOGDClassifier(random_state=0).fit(X[:1500], y[:1500])
    >>> clf.score(X[1500:], y[1500:]) > 0.95  # ROC AUC
    True
    """

    _mutable_state = ("state_",)  # rolled back by a deep copy
    _state_attributes = ("n_features_in_", "feature_names_in_", "classes_", "seed_", "sigma_",
                         "n_components_", "feature_map_", "state_", "coef_", "iterate_",
                         "n_averaged_", "step_scale_", "threshold_", "t_", "n_iter_")

    _parameter_constraints = {
        **constraints("kernel", "sigma_scale", "kernel_params", "average", "random_state",
                      "verbose", "device", "n_jobs"),
        "loss": [StrOptions(set(PAIRWISE_LOSSES))],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "sigma": [Interval(Real, 0, None, closed="neither"), StrOptions({"median"})],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "gamma0": [Interval(Real, 0, None, closed="left"), None],
        "learning_rate": [StrOptions(set(SCHEDULES))],
        "t0": [Interval(Real, 0, None, closed="neither")],
        "power_t": [Interval(Real, 0, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "p": [Interval(Real, 0, 1, closed="both")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
    }

    def __init__(self, *, loss="squared", kernel="rbf", n_components=1024, sigma="median",
                 sigma_scale=1.0, kernel_params=None, eta0=0.5, gamma0=None,
                 learning_rate="invscaling", t0=1.0, power_t=0.5, alpha=1e-6, p=0.5,
                 average=False, batch_size=64, max_iter=1, shuffle=True, random_state=None,
                 verbose="auto", device="auto", n_jobs=None):
        assign_parameters(self, locals())

    # -- public API ----------------------------------------------------------------------
    def fit(self, X, y=None, *, limits=None):
        """``max_iter`` passes of Algorithm 1 over ``(X, y)`` from a fresh model; ``X`` may be
        a source of :mod:`kernelstream.data` (its labels inside; each pass reads its chunks,
        the bandwidth from a sample of ``limits.sample_rows``; ``limits``: the planner's table,
        :class:`~kernelstream.planning.FitLimits`, ``None`` the default)."""
        if is_source(X):
            check_arrays_absent(y)
            return self._fit_source(X, limits)
        with self._unchanged_on_error():
            self._validate_params()
            self._use_limits(limits)
            X = self._validate_X(X, reset=True)
            y = self._encode(y, first=True)
            check_consistent_length(X, y)
            random = check_random_state(self.random_state)
            self._start(X, random)
            bar = progress_bar(self.verbose, total=self.max_iter * X.shape[0],
                               desc=type(self).__name__, unit="example")
            for _ in range(self.max_iter):
                order = random.permutation(X.shape[0]) if self.shuffle else np.arange(X.shape[0])
                self._run(X[order], y[order], bar)
            if bar is not None:
                bar.close()
            self.n_iter_ = self.max_iter
        return self

    def _fit_source(self, data, limits=None):
        """AOGD's ``fit`` on a stream: a first pass (labels, a sample for the bandwidth), then
        ``max_iter`` passes, each reading the source's chunks (``chunks(epoch)``) in order."""
        source = whole_source(data, type(self).__name__)
        with self._unchanged_on_error():
            self._validate_params()
            limits = self._use_limits(limits)
            stats = first_pass([source], Communicator(), None, 0, 1, (limits.sample_rows, 0), "classes")
            sample = stats.samples[0].sample()
            if sample is None or not stats.has_labels:
                raise ValueError(f"{source!r} has no labelled rows; open it with label=.")
            self.n_features_in_ = source.n_features
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            self._encode(sample.y, first=True, classes=stats.classes)
            self._start(self._validate_X(sample.X, reset=False),
                             check_random_state(self.random_state))
            for epoch in range(self.max_iter):
                for chunk in source.chunks(epoch):
                    X = self._validate_X(chunk.X, reset=False)
                    self._run(X, self._encode(chunk.y, first=False))
            self.n_iter_ = self.max_iter
        return self

    def partial_fit(self, X, y, classes=None):
        """One pass over a chunk of the stream, in the given order.

        ``classes`` (both labels) is needed on the first call unless ``y`` holds both.
        """
        with self._unchanged_on_error():
            first = not hasattr(self, "coef_")
            if first:
                self._validate_params()
            X = self._validate_X(X, reset=first)
            y = self._encode(y, first=first, classes=classes)
            check_consistent_length(X, y)
            if first:
                self._start(X, check_random_state(self.random_state))
                self.n_iter_ = 0
            if not hasattr(self, "_stream_progress"):
                self._stream_progress = StreamProgress(type(self).__name__)
            self._run(X, y)
            self._stream_progress.update(self.verbose, X.shape[0], examples=self.t_)
            self.n_iter_ += 1
        return self

    def decision_function(self, X):
        """Scores to rank by, ``wᵀψ(x) − threshold_`` (positive favours ``classes_[1]``)."""
        check_is_fitted(self, "coef_")
        X = self._validate_X(X, reset=False)
        w = torch.as_tensor(self.coef_, device=self.device_)
        out = np.empty(X.shape[0])
        step = 4096
        for i in range(0, X.shape[0], step):
            out[i : i + step] = to_numpy(self._features(X[i : i + step]) @ w)
        return out - self.threshold_

    def predict(self, X):
        check_is_fitted(self, "coef_")
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def score(self, X, y, sample_weight=None):
        """ROC AUC of ``decision_function`` with ``classes_[1]`` as the positive class."""
        check_is_fitted(self, "coef_")
        y = column_or_1d(y)
        unknown = np.setdiff1d(np.unique(y), self.classes_)
        if unknown.size:
            raise ValueError(f"y contains labels {unknown.tolist()} that are not in classes_ "
                             f"{self.classes_.tolist()}; score with the labels the model was fit on.")
        if np.unique(y).size < 2:
            raise ValueError("ROC AUC needs examples of both classes in y; got only "
                             f"{np.unique(y).tolist()}.")
        return roc_auc_score(y == self.classes_[1], self.decision_function(X),
                             sample_weight=sample_weight)

    # -- steps ---------------------------------------------------------------------------
    def _start(self, X, random) -> None:
        """Seed, device, feature map and an empty state."""
        seed = draw_seed(random)
        fm = None  # the linear kernel: no map (an unknown kernel fails here, before any state)
        if self.kernel != "linear":
            fm = build_feature_map(self.kernel, X, sigma=self.sigma, sigma_scale=self.sigma_scale,
                                   block_size=math.gcd(self.n_components, 1024), seed=seed,
                                   kernel_params=self.kernel_params)
        self.seed_, self.device_ = seed, resolve_device(self.device)
        self.feature_map_, self.sigma_ = fm, None if fm is None else fm.sigma
        n_components = X.shape[1] if fm is None else self.n_components
        self.n_components_ = n_components
        self.state_ = PairwiseState.empty(n_components, device=self.device_)
        self.coef_, self.iterate_ = np.zeros(n_components), np.zeros(n_components)
        self.n_averaged_ = 0
        self.step_scale_ = 1.0 / self._mean_kernel_diagonal(X[:1024])
        self.threshold_ = 0.0
        self.t_ = 0

    def _mean_kernel_diagonal(self, X) -> float:
        """``E k(x, x) = E‖ψ(x)‖²`` (in expectation over the features): exactly 1 for
        shift-invariant kernels, ``mean ‖x‖²`` for the linear kernel, else the exact kernel's
        diagonal averaged over the rows (1 if it vanishes)."""
        fm = self.feature_map_
        if fm is not None and fm.unit_diagonal:
            return 1.0
        rows = to_tensor(X, torch.float64, self.device_)
        diagonal = rows.square().sum(1) if fm is None else fm.kernel(rows[:256], rows[:256]).diagonal()
        mean = float(diagonal.mean())
        return mean if mean > 0 and math.isfinite(mean) else 1.0

    def _schedules(self):
        shape = make_schedule(self.learning_rate, 1.0, self.t0, self.power_t)
        gamma0 = self.eta0 if self.gamma0 is None else self.gamma0  # γ = η by default
        return shape, self.eta0 * self.step_scale_, gamma0 * self.step_scale_

    def _run(self, X, y, bar=None) -> None:
        """Algorithm 1 over the rows of ``X`` in order, ``batch_size`` rows at a time
        (:func:`~kernelstream.solvers.pairwise.pairwise_stream`)."""
        device, b = self.device_, self.batch_size
        w = torch.as_tensor(self.iterate_, device=device).unsqueeze(0)  # (1, D)
        lam = torch.full((1, 1), float(self.alpha), dtype=torch.float64, device=device)
        shape, eta0, gamma0 = self._schedules()
        start = 0 if self.average is False else int(self.average)  # True: from the 1st example
        total = torch.as_tensor(self.coef_ * self.n_averaged_, device=device).unsqueeze(0)
        chunks = ((self._features(X[i : i + b]), torch.as_tensor(y[i : i + b] == 1, device=device))
                  for i in range(0, X.shape[0], b))
        w, n_averaged = pairwise_stream(w, chunks, self._update, shape, eta0, gamma0, lam,
                                        t=self.state_.t, average_start=start, iterate_sum=total,
                                        n_averaged=self.n_averaged_,
                                        on_chunk=None if bar is None else bar.update)
        self._finish(w, total / n_averaged if n_averaged else w, n_averaged)

    def _update(self, w, Z, positive, eta, gamma, lam, weights, total) -> torch.Tensor:
        """One chunk of Algorithm 1 from ``state_`` (which it advances); subclasses that pair
        examples differently override this."""
        coins = bernoulli_coins(self.seed_, self.state_.t, Z.shape[0], self.p, self.device_)
        return aogd_chunk(w, self.state_, Z, positive, coins, eta, gamma, lam, self.loss,
                          example_weights=weights, iterate_sum=total)

    def _finish(self, w: torch.Tensor, model: torch.Tensor, n_averaged: int) -> None:
        """Store the last iterate ``w`` and the scored ``model`` (``w`` or the average)."""
        if not (torch.isfinite(w).all() and torch.isfinite(model).all()):
            raise FloatingPointError("AOGD diverged (non-finite weights); lower eta0/gamma0.")
        self.iterate_, self.coef_ = to_numpy(w[0]), to_numpy(model[0]).copy()  # never one buffer
        self.n_averaged_ = n_averaged
        means = self.state_.means()
        self.threshold_ = float(0.5 * (means[0] + means[1]) @ model[0])
        self.t_ = self.state_.t

    def _features(self, X) -> torch.Tensor:
        """``ψ(X)`` as float64 on the device: random features (float32 GEMM) or ``X`` itself."""
        if self.feature_map_ is None:
            return to_tensor(X, torch.float64, self.device_)
        n_blocks = self.n_components_ // self.feature_map_.block_size
        rows = to_tensor(X, torch.float32, self.device_)
        return self.feature_map_.transform(rows, n_blocks).double()

    # -- validation ----------------------------------------------------------------------
    def _validate_X(self, X, *, reset: bool):
        return self._check_X(X, reset=reset,
                             magnitude=np.float32 if self.kernel != "linear" else np.float64)

    def _encode(self, y, *, first: bool, classes=None) -> np.ndarray:
        """Labels as ``±1`` (``classes_[1]`` is +1); fits ``classes_`` on the first call."""
        y = fit_or_check_labels(self, y, first=first, classes=classes, loss=self.loss,
                                max_classes=2, reason="AOGD is bipartite ranking")
        return np.where(y == self.classes_[1], 1, -1)

    def _state_builders(self, device) -> dict:
        return {"feature_map_": feature_map_from_config,
                "state_": lambda state: PairwiseState.empty(self.n_components_, device=device)
                .load_state_dict(state, device)}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags
