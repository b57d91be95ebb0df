"""GoGPRegressor: online GP regression with a geometric inducing set (Le et al., KAIS 2019).

The estimator validates input, fixes the hyper-parameters, chooses the device and feeds points
one at a time to the pure solvers :class:`~kernelstream.solvers.gogp.GoGPKernelState` and
:class:`~kernelstream.solvers.gogp_rf.GoGPFeatureState`.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._device import resolve_device, to_tensor
from .._threads import resolve_n_jobs
from .._validation import Integral, Interval, Real, StrOptions, check_magnitude
from ..glossary import constraints, sigma_constraint
from ..planning import DataShape, plan_gaussian_process
from ..features import KERNELS, FeatureMap, build_feature_map, kernel_class, resolve_bandwidth
from ..solvers.gogp import GoGPKernelState
from ..solvers.gogp_rf import GoGPFeatureState
from ..solvers.gp_evidence import fit_gp_hyperparameters
from ..solvers.lengthscales import choose_lengthscales, fit_lengthscales
from .._state import feature_map_from_config
from ..rng import draw_seed
from ._base import assign_parameters
from ._progress import StreamProgress, progress_bar
from ._estimator import KernelEstimator
from ._sources import arrays_of

__all__ = ["GoGPRegressor"]

class GoGPRegressor(RegressorMixin, KernelEstimator):
    """Online Gaussian-process regression with an inducing set chosen by distance to its span.

    A point joins the inducing set ``U`` when its posterior standard deviation given ``U``
    (the distance of its feature to the span of ``U``'s, noise left out) exceeds ``join_threshold``;
    ``(K_UU + s²I)⁻¹`` is kept by Schur-complement updates, ``O(|U|²)`` per point. The mean is
    ``μ(x) = d(x)ᵀγ`` with ``d(x) = (K_UU + s²I)⁻¹k_U(x)`` (Prop. 1 of the paper) and
    effective labels ``γ`` fitted to every point seen by recursive least squares
    (``solver="rls"``), or the paper's projected SGD (``solver="sgd"``). The standard deviation
    of ``f`` is ``sqrt(k(x,x) − k_Uᵀ(K_UU + s²P)⁻¹k_U)`` for "rls", ``P`` the covariance of the
    effective labels' least-squares fit over ``s²`` (``P = I`` when every point is a member: Prop.
    1's, the exact GP; it shrinks as points are projected on ``U``), Prop. 1's for "sgd";
    ``predict(return_std=True)`` adds the noise to it (the std of a new target;
    ``include_noise=False`` for ``f`` alone).
    ``join_threshold → 0`` gives the exact GP.
    See :mod:`kernelstream.solvers.gogp` for the update rules.

    Parameters
    ----------
    kernel : str, default="rbf"
        A registered kernel ("rbf", "laplace", "matern", ...); the random-feature variant needs
        one with random features (every registered family has them).
    sigma : float, array of shape (n_features,), "auto" or "median", default="auto"
        Bandwidth. "auto": maximise the exact GP marginal likelihood on the first
        ``min(n, 500)`` rows of ``fit`` (of the first ``partial_fit`` call), starting from the
        median distance; with two or more features and the rbf, laplace or matern family also
        one lengthscale per feature (ARD, ``k₁((x − x')/ℓ)``, from ``ℓ_k = √d·std_k``), kept
        when the exact GP's leave-one-out error on those rows is at most 0.8 × the one
        bandwidth's and they are at least 20 per feature (``kernel_choice_``;
        docs/decisions/ard-lengthscales.md); "median": median
        heuristic; a number or an array: exactly that bandwidth or those per-feature
        lengthscales (rbf, laplace, matern).
    noise : float or "auto", default="auto"
        Noise variance ``s²``, in units of ``y²``. A number means the prior ``y ~ GP(mean(y), k)``
        with unit amplitude, as ``GaussianProcessRegressor(kernel=RBF(sigma), alpha=noise)``.
        "auto": noise and signal amplitude by marginal likelihood on the same rows as ``sigma``
        (targets are then scaled by the amplitude, so ``join_threshold`` is relative to the prior
        standard deviation). Those rows are not limited to the warm-start portion: a noise
        fitted on its few rows (40 of 400) is too small, and the intervals too narrow.
    join_threshold : float or "auto", default="auto"
        Join threshold on the posterior standard deviation (in units of the prior's); 0 keeps
        every point. "auto": the noise standard deviation in the same units, ``sqrt(s²/a)``
        — a point joins when ``U`` predicts it worse than the noise level (the paper's
        augmented distance, noise included, above ``√2·s``).
    variant : {"kernel", "random_features"}, default="kernel"
        Inducing set, or a weight vector over ``n_components`` random features.
    n_components : int, default=512
        Random features of the "random_features" variant (posterior kept in O(D²) per point).
    solver : {"rls", "sgd"}, default="rls"
        Mean learner: recursive least squares on the projections (default), or the paper's
        SGD step ``2α_t/(λt)`` with ``λ = 2s²/N`` and ball projection.
    max_inducing : int or None, default=1024
        Budget on ``|U|``. Past it, the most redundant member (largest ``[(K_UU+s²I)⁻¹]_uu``,
        i.e. nearest to the span of the others) is removed and its share re-projected.
    n_neighbors : int or None, default=None
        ``solver="sgd"`` only: project onto the ``n_neighbors`` nearest members of U instead of
        all of it.
    average : bool, default=False
        ``solver="sgd"`` only: predict with the average of the iterates.
    warmup_fraction : float, default=0.1
        Fraction of ``fit``'s data used for the warm-start phase (``warmup_epochs`` epochs of
        random draws without replacement, each draw weighted ``1/warmup_epochs``); the rest is
        one online pass. 0 disables it. The "auto" hyper-parameters come from the first
        ``min(n, 500)`` rows whatever the fraction, so the progressive RMSE of those rows is
        not free of them (three numbers).
    warmup_epochs : int, default=3
        Epochs of random draws in the warm-start phase.
    kernel_params : dict, default=None
    random_state : int, RandomState or None
        Seeds the warm-start draws and the random features.
    verbose : int or "auto", default="auto"
        Progress bar (``fit``: the points; ``partial_fit``: one bar across the stream): "auto"
        shows one on a terminal for work that lasts more than a few seconds, 0 never, 1 always.
    device : {"auto", "cpu", "cuda"}, default="auto"
        "auto" is the CPU here: updates are sequential rank-one operations, latency bound, and
        the CPU is faster for them; ask for "cuda" explicitly.
    n_jobs : int or None, default=None
        Threads: ``None`` is one, ``-1`` every thread the environment allows (see
        :class:`DSGRegressor`).

    Attributes
    ----------
    fit_plan_ : GaussianProcessPlan
        What the fit chose and why: the hyper-parameters fitted by the marginal likelihood, on
        how many rows, and the route (:func:`kernelstream.planning.plan_gaussian_process`);
        ``print`` it.
    progressive_rmse_ : float
        RMSE of the predictions made before learning each online point (``nan`` if none).
    n_inducing_ : int
        ``|U|`` (0 for the random-feature variant).
    sigma_ : float or ndarray of shape (n_features,)
        The bandwidth the kernel was built with: one number, or the per-feature lengthscales.
    lengthscales_ : ndarray of shape (n_features,)
        The lengthscale of each feature: ``sigma_`` itself when it is per feature, else
        ``sigma_`` repeated (the isotropic kernel). A large one marks a feature the fit found
        irrelevant.
    kernel_choice_ : {"per_feature", "isotropic"}
        ``"per_feature"`` when ``sigma_`` is a vector (fitted and kept by the guard, or given),
        else ``"isotropic"``.
    kernel_choice_loo_ : ndarray of shape (2,)
        The guard's leave-one-out mean squared errors on the evidence rows, per-feature and
        isotropic (:func:`kernelstream.solvers.lengthscales.choose_lengthscales`; ``nan``
        where no guard ran).
    noise_, amplitude_ : float
        Noise variance and signal variance (``y`` units).
    join_threshold_ : float
        Join threshold used (units of the prior standard deviation).
    y_offset_, y_scale_ : float
        Prior mean and the scale of the internal targets ``(y − y_offset_)/y_scale_``.
    state_ : GoGPKernelState or GoGPFeatureState
    t_ : int
        Points learnt (draws included).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from kernelstream import GoGPRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (400, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(400)
    >>> model = GoGPRegressor(random_state=0).fit(X, y)
    >>> mean, std = model.predict(X[:2], return_std=True)  # std of y: the noise is included
    >>> model.n_inducing_ < 40, round(model.progressive_rmse_, 2), np.round(std, 1)
    (True, 0.1, array([0.1, 0.1]))
    """

    _mutable_state = ("state_",)  # rolled back by a deep copy
    _renamed_parameters = {"theta": "join_threshold"}
    _state_attributes = ("n_features_in_", "feature_names_in_", "seed_", "sigma_", "lengthscales_",
                         "kernel_choice_", "kernel_choice_loo_", "noise_",
                         "amplitude_", "join_threshold_", "y_offset_", "y_scale_", "_noise_z",
                         "feature_map_", "state_", "_sq_sum", "_n_online", "n_inducing_", "t_",
                         "progressive_rmse_")

    _parameter_constraints: dict = {
        **constraints("kernel", "join_threshold", "kernel_params", "random_state", "verbose",
                      "device", "n_jobs"),
        "sigma": sigma_constraint("auto", "median"),
        "noise": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "variant": [StrOptions({"kernel", "random_features"})],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions({"rls", "sgd"})],
        "max_inducing": [Interval(Integral, 1, None, closed="left"), None],
        "n_neighbors": [Interval(Integral, 1, None, closed="left"), None],
        "average": ["boolean"],
        "warmup_fraction": [Interval(Real, 0, 1, closed="both")],
        "warmup_epochs": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, kernel="rbf", sigma="auto", noise="auto", join_threshold="auto", variant="kernel",
                 n_components=512, solver="rls", max_inducing=1024, n_neighbors=None,
                 average=False, warmup_fraction=0.1, warmup_epochs=3, kernel_params=None,
                 random_state=None, verbose="auto", device="auto", n_jobs=None):
        assign_parameters(self, locals())

    # -- public API -----------------------------------------------------------------------
    def fit(self, X, y=None, *, limits=None):
        """Warm start on the first ``warmup_fraction`` fraction, then one online pass over the rest.

        ``X`` may be a source of :mod:`kernelstream.data`, read whole in file order (the warm
        start takes its first rows); ``limits``: the planner's table
        (:class:`~kernelstream.planning.FitLimits`, ``None`` the default), kept in ``fit_plan_``.
        """
        X, y, weight = arrays_of(X, y)
        if weight is not None:
            raise ValueError("GoGPRegressor takes no sample weights; open the source without "
                             "weight=.")
        with self._unchanged_on_error():
            self._validate_params()
            self._check_params()
            limits = self._use_limits(limits)
            X, y = self._validate(X, y, reset=True)
            for name in [n for n in vars(self) if n.endswith("_") and not n.startswith("__")]:
                if name not in ("n_features_in_", "feature_names_in_"):
                    delattr(self, name)
            n = X.shape[0]
            self.fit_plan_ = plan_gaussian_process(
                type(self).__name__, DataShape(n_rows=n, n_features=X.shape[1]), self.get_params(),
                limits=limits)
            n_warm = min(n, max(1, round(self.warmup_fraction * n))) if self.warmup_fraction > 0 else 0
            rng = check_random_state(self.random_state)
            self._initialise(X, y, n_total=n, rng=rng)
            Xt = to_tensor(X, torch.float64, self.device_)
            z = (y - self.y_offset_) / self.y_scale_
            draws = [rng.permutation(n_warm) for _ in range(self.warmup_epochs)] if n_warm else []
            bar = progress_bar(self.verbose, total=n_warm * self.warmup_epochs + n - n_warm,
                               desc=type(self).__name__, unit="point")
            if draws:
                order = torch.as_tensor(np.concatenate(draws), device=Xt.device)
                self._learn_many(Xt[order], z[order.cpu().numpy()], 1.0 / self.warmup_epochs,
                                 record=False, bar=bar)
            self._learn_many(Xt[n_warm:], z[n_warm:], 1.0, record=True, bar=bar)
            if bar is not None:
                bar.close()
            self._finish()
        return self

    def partial_fit(self, X, y):
        """Predict-then-learn each row in order; the first call fixes the hyper-parameters.

        A failed call leaves the model unchanged: a one-row call checks its numbers before it
        commits them (no copy); a call of several rows copies the solver state once.
        """
        n_rows = X.shape[0] if hasattr(X, "shape") else len(X)
        with self._unchanged_on_error(None if n_rows > 1 else ()):
            first = not hasattr(self, "state_")
            if first:
                self._validate_params()
                self._check_params()
            X, y = self._validate(X, y, reset=first)
            if first:
                self._initialise(X, y, n_total=0,
                                 rng=check_random_state(self.random_state))
            self._learn_checked(X, y)
        return self

    def _learn_checked(self, X: np.ndarray, y: np.ndarray) -> None:
        """:meth:`partial_fit`'s learning of rows already validated (float64, finite, the
        fitted width; the river adapter's rows, one at a time) after the first call."""
        Xt = to_tensor(X, torch.float64, self.device_)
        z = (y - self.y_offset_) / self.y_scale_
        if not hasattr(self, "_stream_progress"):
            self._stream_progress = StreamProgress(type(self).__name__)
        self._learn_rows(Xt, z)
        self._stream_progress.update(self.verbose, X.shape[0], inducing=self._size(),
                                     rmse=f"{self._progressive_rmse():.4g}")
        self._finish()

    def predict(self, X, return_std=False, include_noise=True):
        """Posterior mean; with ``return_std`` also the standard deviation of a new target
        ``y = f(x) + ε``, ``sqrt(σ²(x) + noise_)`` — so that ``mean ± 1.96·std`` covers ``y``
        with probability 0.95 — or, with ``include_noise=False``, of ``f(x)`` alone (``σ(x)``,
        see the class docstring). The default is :class:`DSGGaussianProcessRegressor`'s and scikit-learn's
        ``GaussianProcessRegressor`` with a ``WhiteKernel``."""
        check_is_fitted(self, "state_")
        mean, var = self._predicted(self._validate_rows(X), return_std)
        if not np.isfinite(mean).all():
            raise FloatingPointError("GoGP predicted non-finite values: the inputs are far outside "
                                     "the scale the model was fitted on. Standardise X.")
        if not return_std:
            return mean
        var = var.cpu().numpy() * self.y_scale_**2 + (self.noise_ if include_noise else 0.0)
        return mean, np.sqrt(var)

    # -- internals ------------------------------------------------------------------------
    def _predicted(self, X: np.ndarray, return_var: bool = False) -> tuple:
        """The mean in the targets' units and ``f``'s latent variance (``None`` without
        ``return_var``) of rows already validated (the river adapter's, one at a time)."""
        Xt = to_tensor(X, torch.float64, self.device_)
        if self.variant == "kernel":
            mean, var = self.state_.predict(Xt, return_var=return_var)
        else:
            mean, var = self.state_.predict(self._features(Xt))
        return mean.cpu().numpy() * self.y_scale_ + self.y_offset_, var

    def _check_params(self) -> None:
        resolve_device(self.device)
        resolve_n_jobs(self.n_jobs)

    def _initialise(self, X, y, n_total, rng) -> None:
        """Hyper-parameters from the first ``gogp_evidence_rows`` rows
        (:class:`~kernelstream.planning.FitLimits`), the feature map and the state."""
        self.device_ = self._resolve_device()
        self.seed_ = draw_seed(rng)
        rows = slice(0, min(X.shape[0], self._limits().gogp_evidence_rows))
        self._set_hyperparameters(X[rows], y[rows])
        self.feature_map_ = self._feature_map(X, self.sigma_)
        z_max = float(np.max(np.abs((y[rows] - self.y_offset_) / self.y_scale_))) or 1.0
        if self.variant == "kernel":
            self.state_ = GoGPKernelState(
                self.feature_map_.kernel, self._noise_z, self.join_threshold_, solver=self.solver,
                max_inducing=self.max_inducing, n_neighbors=self.n_neighbors,
                average=self.average, z_max=z_max, n_total=n_total,
                n_features_in=X.shape[1], device=self.device_)
        else:
            self.state_ = GoGPFeatureState(
                self.n_components, self._noise_z, solver=self.solver, average=self.average,
                z_max=z_max, n_total=n_total, device=self.device_)
        self._sq_sum, self._n_online = 0.0, 0

    def _set_hyperparameters(self, X, y) -> None:
        """ML-II on ``(X, y)`` for what is "auto" (:meth:`_fit_evidence`); fixed values are kept
        (see class docstring)."""
        offset = float(np.mean(y))
        spread = float(np.std(y)) if len(y) > 1 and np.std(y) > 0 else 1.0
        given = not isinstance(self.sigma, str)
        sigma0 = resolve_bandwidth(self.kernel, X, self.sigma if given else "median", 1.0, self.seed_)
        fit_sigma, fit_noise = not given and self.sigma == "auto", self.noise == "auto"
        scale = spread if fit_noise else 1.0                      # z = (y − mean)/scale
        noise0 = 0.1 if fit_noise else float(self.noise)
        sigma, amplitude, noise = sigma0, 1.0, noise0
        self.kernel_choice_loo_ = np.full(2, np.nan)
        if (fit_sigma or fit_noise) and len(y) >= 3:
            sigma, amplitude, noise = self._fit_evidence(np.asarray(X, dtype=np.float64),
                                                         (y - offset) / scale, sigma0, noise0,
                                                         fit_sigma, fit_noise)
        self.sigma_ = sigma if np.ndim(sigma) else float(sigma)
        self.lengthscales_ = np.broadcast_to(self.sigma_, (X.shape[1],)).astype(np.float64)
        self.kernel_choice_ = "per_feature" if np.ndim(sigma) else "isotropic"
        self.y_offset_ = offset
        self.y_scale_ = scale * math.sqrt(amplitude)              # internal prior: unit amplitude
        self._noise_z = noise / amplitude                         # s² in internal units
        self.noise_ = self._noise_z * self.y_scale_**2            # s² in units of y²
        self.amplitude_ = self.y_scale_**2
        self.join_threshold_ = math.sqrt(self._noise_z) if self.join_threshold == "auto" else float(self.join_threshold)

    def _fit_evidence(self, X: np.ndarray, z: np.ndarray, sigma0, noise0: float, fit_sigma: bool,
                      fit_noise: bool) -> tuple:
        """``(σ or ℓ, a, s²)`` by the marginal likelihood of ``z`` (units of ``scale``): one
        bandwidth from ``sigma0`` (:func:`~kernelstream.solvers.gp_evidence.fit_gp_hyperparameters`);
        with ``fit_sigma``, two or more features and a family that has them, also one lengthscale
        per feature (:func:`~kernelstream.solvers.lengthscales.fit_lengthscales`, its default
        amplitude box: GoGP needs no cap, docs/decisions/ard-lengthscales.md), kept when
        :func:`~kernelstream.solvers.lengthscales.choose_lengthscales` says they clearly pay."""
        Xt, zt = torch.from_numpy(X), torch.as_tensor(z, dtype=torch.float64)
        kernel_at = self._feature_map(X, sigma0).kernel_at  # k_σ(X, Y) of σ, pure
        hp = fit_gp_hyperparameters(kernel_at, Xt, zt, sigma0=sigma0,
                                    fit_sigma=fit_sigma, noise0=noise0, fit_noise=fit_noise)
        fit = (hp.sigma, hp.amplitude, hp.noise)
        if not (fit_sigma and X.shape[1] >= 2 and self.kernel in KERNELS
                and kernel_class(self.kernel).per_feature_lengthscales):
            return fit
        ell, noise, signal, _ = fit_lengthscales(
            X, z, kernel=self.kernel, rows=X.shape[0], seed=self.seed_ % 2**32,
            kernel_params=self.kernel_params, noise=None if fit_noise else noise0,
            signal=None if fit_noise else 1.0)
        ard = (ell, signal if fit_noise else 1.0, noise if fit_noise else noise0)
        choice, self.kernel_choice_loo_ = choose_lengthscales(
            X, z, ard, fit, kernel=self.kernel, kernel_params=self.kernel_params)
        return ard if choice == "per_feature" else fit

    def _feature_map(self, X, sigma) -> FeatureMap:
        """The map of ``kernel`` at the bandwidth ``sigma`` (a number or ``(d,)`` lengthscales),
        built once."""
        block = self.n_components if self.variant == "random_features" else 2
        return build_feature_map(self.kernel, X, sigma=sigma, block_size=block, seed=self.seed_,
                                 kernel_params=self.kernel_params)

    def _features(self, Xt: torch.Tensor) -> torch.Tensor:
        return self.feature_map_.transform(Xt, 1)                 # (n, D), φᵀφ ≈ k

    def _validate(self, X, y, *, reset: bool):
        """Rows and targets as float64, with squared distances that stay finite."""
        if not reset and self._plain_row(X, y):  # a stream's row: validate_data costs its update
            check_magnitude(X, np.float64)
            return X, y
        # learnt row by row: held dense
        return self._check_X(X, y, reset=reset, magnitude=np.float64, dtype=(np.float64,),
                             dense=True, y_numeric=True)

    def _plain_row(self, X, y) -> bool:
        """Whether ``(X, y)`` is one finite float64 row and its target, numpy arrays, for a
        model fitted without feature names and a kernel that takes negative entries: nothing
        that ``validate_data`` would convert or refuse."""
        return (type(X) is np.ndarray and type(y) is np.ndarray
                and X.dtype == np.float64 and y.dtype == np.float64
                and X.shape == (1, getattr(self, "n_features_in_", -1)) and y.shape == (1,)
                and not hasattr(self, "feature_names_in_")
                and not (self.kernel in KERNELS and kernel_class(self.kernel).non_negative)
                and bool(np.isfinite(X).all()) and bool(np.isfinite(y).all()))

    def _validate_rows(self, X):
        return self._check_X(X, reset=False, magnitude=np.float64, dtype=(np.float64,), dense=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _learn_rows(self, Xt: torch.Tensor, z: np.ndarray) -> None:
        """Predict-then-learn each row; ``n_total`` (the paper's N) counts them, and is put back
        if a row fails (the rows' own updates commit only when their numbers are finite)."""
        self.state_.n_total += Xt.shape[0]
        try:
            self._learn_many(Xt, z, 1.0, record=True)
        except BaseException:
            self.state_.n_total -= Xt.shape[0]
            raise

    def _learn_many(self, Xt: torch.Tensor, z: np.ndarray, weight: float, record: bool,
                    bar=None, chunk: int = 1024) -> None:
        """Predict-then-learn the rows in order, ``chunk`` at a time (the kernel variant batches
        its kernel evaluations, :meth:`GoGPKernelState.update_many`); ``record`` adds each
        prediction's squared error to the progressive RMSE."""
        for a in range(0, Xt.shape[0], chunk):
            Xc, zc = Xt[a:a + chunk], np.asarray(z[a:a + chunk], dtype=np.float64)
            if self.variant == "kernel":
                means = self.state_.update_many(Xc, zc, weight)
            else:
                means = [self.state_.update(phi, float(zi), weight)
                         for phi, zi in zip(self._features(Xc), zc)]
            if bar is not None:
                bar.update(len(zc))
            if record:
                for mean, zi in zip(np.asarray(means).tolist(), zc.tolist()):
                    self._sq_sum += ((mean - zi) * self.y_scale_) ** 2
                self._n_online += len(zc)

    def _size(self) -> int:
        return self.state_.size if self.variant == "kernel" else 0

    def _progressive_rmse(self) -> float:
        return math.sqrt(self._sq_sum / self._n_online) if self._n_online else float("nan")

    def _finish(self) -> None:
        self.n_inducing_ = self._size()
        self.t_ = self.state_.t
        self.progressive_rmse_ = self._progressive_rmse()

    def _resolve_device(self) -> torch.device:
        """"auto" is the CPU: one point at a time is latency bound."""
        return torch.device("cpu") if self.device == "auto" else resolve_device(self.device)

    def _state_builders(self, device) -> dict:
        return {"feature_map_": feature_map_from_config, "state_": lambda state: self._empty_state(
            device).load_state_dict(state, device)}

    def _empty_state(self, device):
        """A solver state of this model's variant, to be filled by ``load_state_dict``."""
        if self.variant == "kernel":
            return GoGPKernelState(self.feature_map_.kernel, 1.0, 0.0,
                                   n_features_in=self.feature_map_.n_features_in, device=device)
        return GoGPFeatureState(self.n_components, 1.0, device=device)

    def _expected_failed_checks(self) -> dict[str, str]:
        """scikit-learn checks this estimator fails by design (:mod:`kernelstream.conformance`)."""
        if self.solver != "sgd":
            return {}
        return {"check_regressors_train": (
            "solver='sgd' is the paper's literal step 2α/(λt) with λ = 2s²/N: on small noise it "
            "overshoots by ~N/s² and only the ball bounds it (benchmarks/results/gogp.md); its "
            "scores fail scikit-learn's sanity threshold.")}

