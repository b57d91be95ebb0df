"""DSGGaussianProcessRegressor: GP posterior mean and variance from seeded random-feature blocks."""

from __future__ import annotations

import math
import warnings

import numpy as np
import psutil
import torch
import scipy.sparse as sp
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted

from .._device import resolve_device, resolve_dtype, to_tensor
from .._validation import Integral, Interval, Real, StrOptions, check_magnitude
from ..expansion import Expansion
from ..glossary import constraints, sigma_constraint
from ..planning import DataShape, plan_gaussian_process
from ..features import build_feature_map, kernel_class, make_feature_map, resolve_bandwidth
from ..features.kernel_columns import KernelColumns
from ._sources import arrays_of
from ..solvers.gp_dual import (features_kernel, kernel_in_chunks, nystrom_factors,
                               nystrom_preconditioner, posterior_from_duals, safe_step_size,
                               solve_dual, solve_dual_fixed, NystromPreconditioner)
from ..solvers.gp_evidence import fit_gp_hyperparameters_coarse_to_fine
from ..solvers.gp_exact import ExactVariance, exact_bytes, exact_kernel_cg, exact_posterior
from ..solvers.lengthscales import (COARSE_ROWS, PER_FEATURE_SCREEN_RATIO, SIGNAL_BOUNDS,
                                   choose_lengthscales, fit_lengthscales)
from ..solvers.gp_variance import (LandmarkVariance, OperatorVariance, dual_fit_bytes,
                                   landmark_bytes, operator_bytes, targets_bytes,
                                   targets_variance)
from ..rng import draw_seed
from ._base import assign_parameters
from ._progress import progress_bar
from ._estimator import KernelEstimator

__all__ = ["DSGGaussianProcessRegressor"]

#: route (a) keeps the posterior covariance of the test points for sample_y up to this many
MAX_COVARIANCE_POINTS = 4096
#: fitted state without a trailing underscore, cleared by a refit
_PRIVATE_STATE = ("_y_1d", "_row_index", "_cov", "_operator_variance",
                  "_landmark_variance", "_exact_variance")
#: fraction of the available memory a fit or a covariance may plan to use
MEMORY_FRACTION = 0.8
#: lower bound of a fitted noise variance, relative to the fitted signal variance
MIN_NOISE = 1e-6
#: route (b)'s features when ``n_components`` is None (the first blocks of the run)
OPERATOR_FEATURES = 8192
#: the per-feature fit's amplitude ``a`` at most this × var(y) of the evidence rows: near-linear
#: directions pull ``a`` and their ``ℓ`` up together, and ``s²/a`` then becomes too small for the
#: stochastic dual iteration (friedman1: ``a ≤ 100·var(y)`` RMSE 5.75, ``≤ 1·var(y)`` 0.52;
#: docs/decisions/ard-lengthscales.md)
MAX_SIGNAL = 1.0


class DSGGaussianProcessRegressor(RegressorMixin, KernelEstimator):
    """Gaussian-process regression whose posterior is computed from seeded random-feature blocks.

    Posterior (Rasmussen & Williams eq. 2.25-2.26, Dai et al. eq. 9), prior ``f ~ GP(0, a k_σ)``
    and ``y = f + ε``, ``ε ~ N(0, s²)``:
    ``μ(x) = k(x, X)(K + s²I)⁻¹ y`` and ``v(x) = k(x, x) − k(x, X)(K + s²I)⁻¹ k(X, x)``.
    By default the bandwidth ``σ`` (three starts on 250 of the rows, then one run on all from
    the best, :func:`kernelstream.solvers.gp_evidence.fit_gp_hyperparameters_coarse_to_fine`),
    the amplitude ``a`` and the noise ``s²`` maximise the exact marginal likelihood of a seeded
    subsample of ``evidence_size`` rows; with two or more features and a family that has them,
    one lengthscale per feature ``ℓ`` (ARD, ``k(x, x') = k₁((x − x')/ℓ)``) is fitted too (ML-II
    by L-BFGS-B from ``ℓ_k = √d·std_k``,
    :func:`kernelstream.solvers.lengthscales.fit_lengthscales`) and kept only when the exact
    GP's leave-one-out error on those rows is at most 0.8 × the isotropic one's and there are
    at least 20 rows per feature (:func:`kernelstream.solvers.lengthscales.choose_lengthscales`);
    ``y`` is standardised first. Up to ``exact_gp_rows`` (4,096) rows the posterior is exact
    (``solver="exact"``: one Cholesky factorisation of ``K + s²I``, ``n³/3`` multiply-adds,
    :mod:`kernelstream.solvers.gp_exact`): the mean is the kernel's columns at the training rows
    times their duals, the variance ``k(x, x) − ‖L⁻¹k(X, x)‖²`` (route ``"exact"``, ``8n²``
    bytes kept: 128 MiB at 4,096 rows). Beyond, or with a feature budget
    (``solver="dual"``), the solves run as a preconditioned stochastic iteration in dual
    coordinates with a fresh feature block per step (:mod:`kernelstream.solvers.gp_dual`); the
    mean is returned as a random-feature expansion over the run's blocks. With a feature
    budget (``n_components``) the blocks are fixed and the duals are solved by conjugate
    gradients instead: the model is then the posterior of the GP whose kernel is those
    features'. The variance has three
    routes (memory for ``n`` rows, ``m`` test points, ``M`` landmarks, ``D`` operator features;
    the mean's fit itself needs ``24·n·M`` bytes plus a few ``n × block_size`` blocks):

    - ``variance_method="targets"`` (route (a)): the test points are given to ``fit`` as
      ``X_variance``; their kernel columns ``k(X, x*_j)`` are ``m`` extra outputs solved on the
      same blocks, and ``v̂ = k** − 2k̂*ᵀā + āᵀ(K̂ + s²I)ā`` (second order in the error of ``ā``).
      Memory ``5·w·n·m`` bytes (``w`` = 4 in float32) plus ``32·m²`` for the covariance
      (``m ≤ 4096``); time grows with ``m`` (1,177 test points on 3,000 rows: minutes).
    - ``variance_method="landmarks"`` (route (c)): the DTC posterior on the ``M = n_landmarks``
      landmarks of the preconditioner,
      ``v(x) = k(x, x) − bᵀb + s² bᵀ(BᵀB + s²I)⁻¹b``, ``b = L⁻¹k(Z, x)``
      (:mod:`kernelstream.solvers.gp_variance`): any test point later, ``16·M²`` bytes kept
      in memory (16 MiB at ``M = 1024``; a model file holds the two triangles, ``8·M(M+1)``),
      64 MiB per prediction chunk. Exact when the landmarks span
      the kernel's effective dimension, larger (conservative) otherwise, and far larger when
      ``M`` is below it — raise ``n_landmarks`` for narrow kernels (measured:
      docs/decisions/gp-accuracy.md).
    - ``variance_method="operator"`` (route (b)): the posterior operator over the model's
      ``D = n_components`` random features (the first 8192 without a budget),
      ``v(x) = s² ψᵀ(ΦᵀΦ + s²I)⁻¹ψ + (k(x,x) − ψᵀψ)``,
      accumulated over row chunks: ``32·D²`` bytes planned (the Gram, its factor and the
      factorisation's copy; 1.95 GB measured at ``D = 8192`` on 3,000 rows) plus a 128 MiB
      chunk; the factor, ``8·D²`` (512 MiB at ``D = 8192``; half of it in a model file, the
      lower triangle), is kept for any test point later.
      Its error is that of a ``D``-feature kernel and does not fall with more steps
      (measured: docs/decisions/gp-accuracy.md).
    - ``variance_method="auto"`` (default): ``"targets"`` when ``X_variance`` is given to
      ``fit`` (exact at those points with the exact solve), else ``"exact"`` with the exact
      solve and ``"landmarks"`` with the dual one.

    A fit whose estimated memory exceeds ``MEMORY_FRACTION`` (0.8) of the available memory
    (``psutil.virtual_memory().available``, or the free CUDA memory) is refused up front with a
    ``MemoryError`` that says which parameter to lower.

    Parameters
    ----------
    kernel : str, default="rbf"
        A registered kernel family (its exact kernel is used for the targets, the evidence and
        the preconditioner, its random features for the mean).
    sigma : float, array of shape (n_features,), "auto" or "median", default="auto"
        Bandwidth. "auto": one bandwidth by the marginal likelihood, starting from
        ``sigma_scale`` × the median pairwise distance, or one lengthscale per feature by the
        marginal likelihood for the rbf, laplace and matern families with two or more features
        when they pass the leave-one-out guard (``kernel_choice_``; measured:
        docs/decisions/ard-lengthscales.md); "median": that start,
        not fitted; a number: exactly that bandwidth; an array: exactly those per-feature
        lengthscales (rbf, laplace, matern).
    sigma_scale : float, default=1.0
        Multiplier of the median heuristic (the paper's GP experiment uses the plain median);
        unused by the per-feature fit, which starts from ``√d·std_k``.
    kernel_params : dict, default=None
    noise : float or "auto", default="auto"
        Noise variance ``s²`` in units of ``y²``. "auto": ``s²`` and the amplitude ``a`` by
        marginal likelihood (floored at ``MIN_NOISE`` = 1e-6 ``a``). A number: exactly that
        ``s²``, and the prior amplitude is the variance of the (normalised) targets, ``a = 1``
        in their units (as ``GoGPRegressor``).
    variance_method : {"auto", "targets", "landmarks", "operator"}, default="auto"
    solver : {"auto", "exact", "cg", "dual"}, default="auto"
        The posterior's solve. "exact": one Cholesky factorisation of the ``n × n`` kernel
        matrix plus noise (``n³/3`` time, ``16n²`` bytes while fitting, ``8n²`` kept for the
        variance), with ``variance_method`` "auto" or "targets" and no ``n_components``.
        "cg": the exact kernel's mean duals by conjugate gradients preconditioned by the
        Nyström landmarks (at most ``n_steps`` iterations to a relative residual of 1e-6, each
        ``n²d``; nothing ``n × n`` kept), the variance by the landmarks (route "landmarks"),
        without ``n_components`` or ``X_variance``. "dual": the stochastic dual iteration (its
        parameters below). "auto": "exact" up to ``exact_gp_rows`` (4,096) rows, "cg" up to
        ``cg_gp_rows`` (65,536), else "dual", where the other parameters allow (``fit_plan_``
        says which and why).
    evidence_size : int, default=1000
        Rows (a seeded subsample) on which "auto" hyper-parameters are fitted: ``O(size³)``
        time per likelihood evaluation, ``48·size²`` bytes (about 5 s at 1000 on one core).
    block_size : int, default=2048
        Random features per step ``r``.
    n_steps : int, default=256
        Steps ``T`` (one block each). Without a budget the mean uses ``T·r`` features; with one
        (``n_components``), the most conjugate-gradient iterations (each evaluates the budget's
        blocks once; they stop earlier at a relative residual of 1e-6).
    eta0 : float or "auto", default="auto"
        ``γ``. "auto" is ``min(0.5, 1/λ̂)`` with ``λ̂`` the top eigenvalue of one step's
        preconditioned operator ``P(Ψ_tΨ_tᵀ + s²I)`` (power iteration on 12 probe blocks).
        Either way ``γ`` is halved if the iteration becomes unstable. Unused with a budget.
    average_fraction : float in [0, 1), default=0.2
        Fraction of the steps before Polyak averaging starts. Unused with a budget.
    n_landmarks : int, default=1024
        Nyström landmarks ``M`` of the preconditioner and of the landmark variance (memory
        ``24·n·M`` bytes while fitting).
    n_components : int or None, default=None
        Random features of the fitted model ``D``, a budget. ``None``: a fresh block every
        step, so the mean holds ``n_steps·block_size`` features (524,288 at the defaults,
        4 MiB per output) and its Monte Carlo error falls like ``1/√T``; route (b) then uses
        the first ``OPERATOR_FEATURES`` (8192). An int: ``J = ceil(D/block_size)`` fixed
        blocks of ``floor(D/J)`` features (at most ``D``), and the mean and route (b) are
        the exact posterior of the GP whose kernel is those features' (duals by conjugate
        gradients): ``8·D`` bytes per output, an error that is that of a ``D``-feature kernel
        and does not fall with more steps (measurements: ``docs/user_guide/gaussian_process.md``,
        "Model size"). Route (b) needs ``32·D²`` bytes while fitting and keeps ``8·D²``.
    normalize_y : bool, default=True
        Centre and scale ``y`` before fitting (the prior is then on the standardised targets;
        ``noise`` stays in units of ``y²``).
    random_state : int, RandomState or None
        Seeds the evidence subsample, the feature blocks and the landmarks.
    verbose : int or "auto", default="auto"
        Progress bar over the dual steps: "auto" shows one on a terminal for work that lasts
        more than a few seconds, 0 never, 1 always.
    device : {"auto", "cpu", "cuda"}, default="auto"
    n_jobs : int or None, default=None
        Threads: ``None`` is one, ``-1`` every thread the environment allows (see
        :class:`DSGRegressor`).
    dtype : {"float32", "float64"}, default="float32"
        Precision of the dual iteration. The evidence, the variance and every prediction are
        computed in float64, so that a row's prediction does not depend on the other rows of
        the call (float32 GEMMs differ with the number of rows at 1e-7).

    Attributes
    ----------
    fit_plan_ : GaussianProcessPlan
        What the fit chose and why: the hyper-parameters fitted by the marginal likelihood, on
        how many rows, and the route (:func:`kernelstream.planning.plan_gaussian_process`);
        ``print`` it.
    expansion_ : Expansion
        The posterior mean as a random-feature expansion (``n_steps`` blocks, float64).
    feature_map_ : FeatureMap
    sigma_ : float or ndarray of shape (n_features,)
        The bandwidth the kernel was built with, as ``sigma`` takes it: one number, or the
        per-feature lengthscales (fitted by "auto", or given).
    lengthscales_ : ndarray of shape (n_features,)
        The lengthscale of each feature: ``sigma_`` itself when it is per feature, else
        ``sigma_`` repeated (the isotropic kernel: every feature weighs the same). A large one
        marks a feature the fit found irrelevant (the kernel barely varies along it): read it
        as feature relevance on standardised inputs.
    kernel_choice_ : {"per_feature", "isotropic"}
        Which kernel the fit uses: ``"per_feature"`` when ``sigma_`` is a vector (fitted and
        kept by the guard, or given), ``"isotropic"`` for one bandwidth (fitted, given, the
        median, or kept by the guard because per-feature lengthscales did not clearly pay).
    kernel_choice_loo_ : ndarray of shape (2,)
        The guard's evidence: the exact GP's leave-one-out mean squared errors on the evidence
        rows with the per-feature and the isotropic fit, in units of var(y) (``nan`` where no
        guard ran; on the first half of the evidence rows where per-feature lengthscales
        fitted there did not pass the screen, ``PER_FEATURE_SCREEN_RATIO`` (0.85)); per-feature is kept when the first is at most
        ``PER_FEATURE_LOO_RATIO`` (0.8) × the second.
    amplitude_ : float
        Prior variance ``a`` of ``f`` in units of ``y²``.
    noise_ : float
        Noise variance ``s²`` in units of ``y²``.
    variance_method_ : str
        The variance route used ("exact", "targets", "landmarks" or "operator").
    solver_ : str
        The solve used ("exact", "cg" or "dual").
    n_components_ : int
        Random features in the mean expansion: ``n_steps·block_size`` without a budget, at most
        ``n_components`` with one; the exact solve's kernel columns, one a training row.
    X_variance_ : ndarray of shape (m, d)
        Route (a): the test points given to ``fit``.
    variance_ : ndarray of shape (m,)
        Route (a): the posterior variance of ``f`` at ``X_variance_`` (noise excluded).
    eta0_ : float
        ``γ`` after any automatic halving (``nan`` with a budget or the exact solve: neither
        takes a step size).
    n_step_halvings_ : int
        How often instability halved ``γ``. A step's residual is one block's estimate and
        swings: a halving or two also happens in fits that converge (an H100 halved twice
        where the CPU did not); many mean ``step_size`` is too large.
    residual_norms_ : list of float
        ``‖Y − Ψ_tΨ_tᵀA − s²A‖`` per step (with a budget ``‖Y − (K̂ + s²I)A‖`` per
        conjugate-gradient iteration; the exact solve's ``‖Y − (K + s²I)A‖/‖Y‖``, once).
    n_iter_ : int
        Steps (conjugate-gradient iterations with a budget; 1, the factorisation, exact).

    Notes
    -----
    ``predict(X, return_std=True)`` returns the standard deviation of ``y`` — ``f`` plus the
    noise, ``sqrt(v(x) + s²)`` — by default (``include_noise=True``), as scikit-learn's
    ``GaussianProcessRegressor`` with a ``WhiteKernel`` does, so that its intervals are meant to
    cover new *targets*; ``include_noise=False`` gives the uncertainty of ``f`` alone.

    When to use which: scikit-learn's ``GaussianProcessRegressor`` is exact and costs
    ``O(n³)`` time and ``O(n²)`` memory (2,000 rows: about 12 s to fit on one core, 32 MB per
    kernel matrix; 20,000 rows: hours and 3.2 GB per matrix). Below a few thousand rows it is
    the better choice, with no Monte Carlo error. This estimator fits its hyper-parameters on
    ``evidence_size`` rows and then costs ``O(n·M)`` memory and ``O(T·n·r)`` time, so it is the
    one to use from a few thousand rows on, or when the kernel matrix does not fit in memory
    (``benchmarks/results/gp_defaults.md``, ``benchmarks/results/gp_scale.md``).

    Accuracy is a Monte Carlo one: the mean's error falls like ``1/√t`` and the variance's like
    ``1/t`` (measured at the defaults: docs/decisions/gp-accuracy.md).
    Where the posterior variance is tiny against the prior (a smooth kernel and noise ≪ 1), the
    variance is a small difference of numbers near ``k(x, x)`` and its *relative* error grows
    (thirtyfold at noise 1e-4 on ``sin`` in 1-D) while the absolute error stays near 1e-5,
    mostly upwards (the second-order form adds
    ``eᵀ(K + s²I)e ≥ 0`` for a dual error ``e``). An exact solver is the better tool there.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelstream import DSGGaussianProcessRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (500, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(500)
    >>> X_test = np.array([[-2.0], [0.0], [2.0], [6.0]])  # the last one far from the data
    >>> gp = DSGGaussianProcessRegressor(n_steps=64, random_state=0).fit(X, y)
    >>> mean, std = gp.predict(X_test, return_std=True)
    >>> np.round(mean[:3], 1) + 0.0, np.round(std, 1)  # std of y: noise 0.1 near the data
    (array([-0.9,  0. ,  0.9]), array([0.1, 0.1, 0.1, 1. ]))
    """

    _renamed_parameters = {"average": "average_fraction"}
    _state_attributes = ("n_features_in_", "feature_names_in_", "seed_", "sigma_", "lengthscales_",
                         "kernel_choice_", "kernel_choice_loo_", "noise_",
                         "amplitude_", "_noise_z", "n_outputs_", "_y_1d", "y_offset_", "y_scale_",
                         "variance_method_", "solver_", "expansion_", "n_components_", "n_iter_", "eta0_",
                         "n_step_halvings_", "residual_norms_", "X_variance_", "variance_", "_cov",
                         "operator_blocks_", "_operator_variance",
                         "_landmark_variance", "_exact_variance")

    _parameter_constraints = {
        **constraints("kernel", "sigma_scale", "kernel_params", "average_fraction",
                      "random_state", "verbose", "device", "n_jobs", "dtype"),
        "sigma": sigma_constraint("auto", "median"),
        "noise": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "variance_method": [StrOptions({"auto", "targets", "landmarks", "operator"})],
        "solver": [StrOptions({"auto", "exact", "cg", "dual"})],
        "evidence_size": [Interval(Integral, 3, None, closed="left")],
        "block_size": [Interval(Integral, 2, None, closed="left")],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "eta0": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"})],
        "n_landmarks": [Interval(Integral, 1, None, closed="left")],
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "normalize_y": ["boolean"],
    }

    def __init__(self, *, kernel="rbf", sigma="auto", sigma_scale=1.0, kernel_params=None,
                 noise="auto", variance_method="auto", solver="auto", evidence_size=1000,
                 block_size=2048,
                 n_steps=256, eta0="auto", average_fraction=0.2, n_landmarks=1024,
                 n_components=None, normalize_y=True, random_state=None, verbose="auto",
                 device="auto", dtype="float32", n_jobs=None):
        assign_parameters(self, locals())

    # -- public API -----------------------------------------------------------------------
    def fit(self, X, y=None, X_variance=None, *, limits=None):
        """Hyper-parameters (what is "auto") and the posterior of the GP on ``(X, y)``.

        ``X_variance`` (route (a)): the points where the variance is wanted; with
        ``variance_method="auto"`` giving it selects route (a), otherwise route (c). ``X`` may
        be a source of :mod:`kernelstream.data` (read whole: the posterior needs every row)
        or sparse (densified: the solver holds ``X``). ``limits``: the planner's table
        (:class:`~kernelstream.planning.FitLimits`, ``None`` the default), kept in ``fit_plan_``.
        """
        X, y, weight = arrays_of(X, y)
        if weight is not None:
            raise ValueError("DSGGaussianProcessRegressor takes no sample weights; open the "
                             "source without weight=.")
        with self._unchanged_on_error():
            self._validate_params()
            self._use_limits(limits)
            X, y = self._check_X(X, y, reset=True, magnitude=np.dtype(self.dtype),
                                 dtype=(np.float64,), dense=True, y_numeric=True, multi_output=True)
            if X_variance is not None:
                if self.variance_method not in ("auto", "targets"):
                    raise ValueError("X_variance is the test set of variance_method='targets'; "
                                     f"the {self.variance_method} route predicts the variance "
                                     "anywhere, so drop X_variance or set "
                                     "variance_method='targets'.")
                X_variance = self._check_test_points(X_variance, "X_variance")
            stale = [n for n in vars(self) if n.endswith("_") and n not in
                     ("n_features_in_", "feature_names_in_")]
            for name in stale + [n for n in _PRIVATE_STATE if hasattr(self, n)]:
                delattr(self, name)
            self._fit(X, y, X_variance)
        return self

    def predict(self, X, return_std=False, return_cov=False, include_noise=True):
        """Posterior mean; with ``return_std``/``return_cov`` also the standard deviation
        (``(n,)``) or covariance (``(n, n)``) of ``y = f + ε`` — ``v(x) + s²`` — or of ``f``
        alone with ``include_noise=False``.

        With ``variance_method="targets"`` the standard deviation exists only at the rows of
        ``X_variance`` given to ``fit``.
        """
        if return_std and return_cov:
            raise ValueError("At most one of return_std or return_cov can be requested.")
        check_is_fitted(self, "expansion_")
        X = self._check_test_points(X, "X")
        Xt = to_tensor(X, torch.float64, self.device_)
        mean = self.expansion_.predict(Xt).to(torch.float64).cpu().numpy()
        mean = mean * self.y_scale_ + self.y_offset_
        mean = mean[:, 0] if self._y_1d else mean
        _check_finite(mean, "mean")
        if not (return_std or return_cov):
            return mean
        cov = self._covariance(X, Xt, diagonal=return_std) * self.y_scale_**2
        noise = self.noise_ if include_noise else 0.0
        if return_std:
            return mean, np.sqrt(np.maximum(cov, 0.0) + noise)
        cov[np.diag_indices_from(cov)] += noise  # σ² + s² on the diagonal: y = f + ε
        return mean, cov

    def sample_y(self, X, n_samples=1, random_state=0, include_noise=True):
        """Draws of ``y`` (of ``f`` with ``include_noise=False``) from the posterior at ``X``:
        ``(n, n_samples)`` (``(n, C, n_samples)`` for several outputs), like scikit-learn's
        ``GaussianProcessRegressor.sample_y``."""
        check_is_fitted(self, "expansion_")
        mean, cov = self.predict(X, return_cov=True, include_noise=include_noise)
        rng = check_random_state(random_state)
        vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
        root = vecs * np.sqrt(np.clip(vals, 0.0, None))  # cov = root rootᵀ (PSD part)
        z = rng.standard_normal((cov.shape[0], n_samples))
        draws = root @ z
        if mean.ndim == 1:
            return mean[:, None] + draws
        return mean[:, :, None] + draws[:, None, :]

    # -- fitting --------------------------------------------------------------------------
    @property
    def _dtype(self) -> torch.dtype:
        return resolve_dtype(self.dtype)

    def _fit(self, X, y, X_variance) -> None:
        self.device_ = resolve_device(self.device)
        rng = check_random_state(self.random_state)
        self.seed_ = draw_seed(rng)
        self._y_1d = y.ndim == 1
        Y = y.reshape(len(y), -1)
        self.n_outputs_ = Y.shape[1]
        shape = DataShape(n_rows=X.shape[0], n_features=X.shape[1])
        params = self.get_params()
        if not isinstance(params["sigma"], str) and np.ndim(params["sigma"]) > 0:  # "as given"
            params["sigma"] = "lengthscales"
        self._check_solver(X_variance is not None)
        self.fit_plan_ = plan_gaussian_process(type(self).__name__, shape, params,
                                               test_points=X_variance is not None,
                                               limits=self._limits())
        self.variance_method_, self.solver_ = self.fit_plan_.route, self.fit_plan_.solve
        self._check_fit_memory(X.shape[0], 0 if X_variance is None else X_variance.shape[0])
        self._set_hyperparameters(X, Y)
        try:
            self._solve(X, Y, X_variance)
        except torch.linalg.LinAlgError as exc:
            raise ValueError(
                f"The GP's kernel matrix plus noise could not be factorised ({exc}). The noise "
                f"variance {self.noise_:.3g} (in y² units) is too small for these inputs, rows "
                "of X are duplicated, or X has huge values. Use noise='auto' or a larger noise, "
                "standardise X (e.g. StandardScaler), or set dtype='float64'.") from None

    def _set_hyperparameters(self, X, Y) -> None:
        """``y_offset_``, ``y_scale_``, ``sigma_``, ``amplitude_``, ``noise_`` and the noise of
        the internal unit-amplitude prior ``s_z² = s²/a`` (in units of ``((y − offset)/scale)²``,
        ``scale = spread·√a``); ML-II on a seeded subsample for what is "auto"; then the
        feature map, built once at ``sigma_``."""
        offset = Y.mean(axis=0) if self.normalize_y else np.zeros(Y.shape[1])
        std = Y.std(axis=0)
        if not std.any():
            warnings.warn("y is constant: the GP's mean is that constant, and its amplitude, "
                          "noise and standard deviation are fitted to no variation at all (they "
                          "come out near zero and mean nothing). Check the targets, or pass "
                          "noise= with the noise variance you expect.", UserWarning, stacklevel=5)
        spread = float(np.mean(np.where(std > 0, std, 1.0))) if self.normalize_y else 1.0
        _check_finite(np.r_[offset, spread], "mean or scale of y",
                      "y is too large to standardise; divide y by a constant")
        sigma, amplitude, noise = self._fit_evidence(X, (Y - offset) / spread, spread)
        self.sigma_ = sigma if isinstance(sigma, np.ndarray) else float(sigma)
        self.lengthscales_ = np.broadcast_to(self.sigma_, (X.shape[1],)).astype(np.float64)
        self.kernel_choice_ = "per_feature" if isinstance(sigma, np.ndarray) else "isotropic"
        self.feature_map_ = build_feature_map(self.kernel, X, sigma=self.sigma_,
                                              block_size=self._feature_layout()[0],
                                              seed=self.seed_, kernel_params=self.kernel_params)
        self.y_offset_ = offset
        self.y_scale_ = spread * math.sqrt(amplitude)  # internal prior: unit amplitude
        self._noise_z = noise / amplitude  # s² in internal units
        self.noise_ = self._noise_z * self.y_scale_**2  # s² in units of y²
        self.amplitude_ = self.y_scale_**2

    def _fit_evidence(self, X, Z, spread: float) -> tuple[float | np.ndarray, float, float]:
        """``(σ or ℓ, a, s²)`` in the units of the standardised targets ``Z``: what is "auto" by
        the marginal likelihood on :meth:`_evidence_rows`, the rest as given (a given noise
        fixes ``a = 1``); per-feature lengthscales when :meth:`_fits_lengthscales` and they
        pass :func:`~kernelstream.solvers.lengthscales.choose_lengthscales` against the
        isotropic fit. Sets ``kernel_choice_`` and ``kernel_choice_loo_``."""
        start = "median" if isinstance(self.sigma, str) else self.sigma
        sigma = resolve_bandwidth(self.kernel, X, start, self.sigma_scale, self.seed_)
        fit_sigma, fit_noise = isinstance(self.sigma, str) and self.sigma == "auto", self.noise == "auto"
        amplitude, noise = 1.0, 0.1 if fit_noise else float(self.noise) / spread**2
        self.kernel_choice_loo_ = np.full(2, np.nan)
        if not (fit_sigma or fit_noise) or X.shape[0] < 3:
            return sigma, amplitude, noise
        rows = self._evidence_rows(X.shape[0])
        if fit_sigma and self._fits_lengthscales(X.shape[1]):
            fit = self._choose_lengthscales(X[rows], Z[rows], sigma, noise, fit_noise)
        else:
            fit = self._fit_isotropic(X[rows], Z[rows], sigma, noise, fit_sigma, fit_noise)
        sigma = fit[0] if fit_sigma else sigma
        if fit_noise:  # a given noise stays exactly that number, with a = 1
            amplitude, noise = fit[1], max(fit[2], MIN_NOISE * fit[1])
        return sigma, amplitude, noise

    def _choose_lengthscales(self, X, Z, sigma: float, noise: float, fit_noise: bool) -> tuple:
        """``(ℓ or σ, a, s²)`` on the evidence rows ``(X, Z)``: one bandwidth from ``sigma``
        (:meth:`_fit_isotropic`) and one lengthscale per feature, the amplitude at most
        ``MAX_SIGNAL``·var(Z) (:func:`~kernelstream.solvers.lengthscales.fit_lengthscales`),
        by the marginal likelihood; the second kept when it passes
        :func:`~kernelstream.solvers.lengthscales.choose_lengthscales` (which sets
        ``kernel_choice_loo_``); a given noise is kept with ``a = 1``. The per-feature fit on
        every evidence row is tried only where one on the first half of them (at most
        ``COARSE_ROWS``) passes the looser ``PER_FEATURE_SCREEN_RATIO`` there."""
        isotropic = self._fit_isotropic(X, Z, sigma, noise, True, fit_noise)
        coarse = min(COARSE_ROWS, len(X) // 2)  # the rows come in a seeded random order
        if coarse > X.shape[1] + 2:  # more rows than hyper-parameters: screened on them first
            _, loo = choose_lengthscales(
                X[:coarse], Z[:coarse], self._per_feature_fit(X[:coarse], Z[:coarse], noise, fit_noise),
                isotropic, kernel=self.kernel, kernel_params=self.kernel_params)
            if not loo[0] <= PER_FEATURE_SCREEN_RATIO * loo[1]:
                self.kernel_choice_loo_ = loo  # the screen's evidence
                return isotropic
        per_feature = self._per_feature_fit(X, Z, noise, fit_noise)
        choice, self.kernel_choice_loo_ = choose_lengthscales(
            X, Z, per_feature, isotropic, kernel=self.kernel, kernel_params=self.kernel_params)
        return per_feature if choice == "per_feature" else isotropic

    def _per_feature_fit(self, X, Z, noise: float, fit_noise: bool) -> tuple:
        """``(ℓ, a, s²)`` of one lengthscale per feature on the rows ``(X, Z)``, the amplitude
        at most ``MAX_SIGNAL``·var(Z) (a given noise is kept with ``a = 1``)."""
        ell, noise_fit, signal_fit, _ = fit_lengthscales(
            X, Z, kernel=self.kernel, rows=len(X), seed=self.seed_ % 2**32,
            kernel_params=self.kernel_params, noise=None if fit_noise else noise,
            signal=None if fit_noise else 1.0, signal_bounds=(SIGNAL_BOUNDS[0], MAX_SIGNAL))
        return ell, signal_fit if fit_noise else 1.0, noise_fit if fit_noise else noise

    def _fit_isotropic(self, X, Z, sigma, noise: float, fit_sigma: bool,
                       fit_noise: bool) -> tuple[float, float, float]:
        """``(σ, a, s²)`` of one bandwidth by the marginal likelihood on the evidence rows
        ``(X, Z)`` (:func:`~kernelstream.solvers.gp_evidence.fit_gp_hyperparameters_coarse_to_fine`
        from ``sigma``); what is not fitted comes back as given (``a = 1``)."""
        start_map = make_feature_map(self.kernel, X.shape[1], sigma, self.block_size,
                                     self.seed_, kernel_params=self.kernel_params)
        hp = fit_gp_hyperparameters_coarse_to_fine(
            start_map.kernel_at, torch.as_tensor(X), torch.as_tensor(Z, dtype=torch.float64),
            sigma0=sigma, fit_sigma=fit_sigma, noise0=noise, fit_noise=fit_noise)
        return (hp.sigma if fit_sigma else sigma, hp.amplitude if fit_noise else 1.0,
                hp.noise if fit_noise else noise)

    def _fits_lengthscales(self, n_features: int) -> bool:
        """``sigma="auto"`` fits one lengthscale per feature (ARD) for a family that has them
        (rbf, laplace, matern) and two or more features; one feature is one bandwidth."""
        return n_features >= 2 and kernel_class(self.kernel).per_feature_lengthscales

    def _feature_layout(self) -> tuple[int, int | None]:
        """``(block_size, n_blocks)``: without a budget, ``block_size`` and no limit; with one,
        ``J = ceil(n_components / block_size)`` equal blocks of ``floor(n_components / J)``
        features, so that the model has at most ``n_components``."""
        if self.n_components is None:
            return self.block_size, None
        n_blocks = math.ceil(self.n_components / self.block_size)
        return self.n_components // n_blocks, n_blocks

    def _evidence_rows(self, n: int) -> np.ndarray:
        """``min(n, evidence_size)`` row indices in a seeded random order."""
        rng = np.random.default_rng(self.seed_ % 2**32)
        return rng.permutation(n)[:self.evidence_size]

    def _check_solver(self, test_points: bool) -> None:
        """``solver="exact"`` and ``"cg"`` solve with the exact kernel: ``ValueError`` with a
        feature budget or a variance route they do not compute (``test_points``: ``X_variance``
        was given)."""
        if self.solver not in ("exact", "cg"):
            return
        if self.n_components is not None:
            raise ValueError(f"solver={self.solver!r} uses the exact kernel, not n_components "
                             "random features; drop n_components or use solver='dual'.")
        allowed = ("auto", "targets") if self.solver == "exact" else ("auto", "landmarks")
        if self.variance_method not in allowed:
            raise ValueError(f"solver={self.solver!r} takes variance_method in {allowed}, not "
                             f"{self.variance_method!r}; use solver='dual' for that route.")
        if self.solver == "cg" and test_points:
            raise ValueError("solver='cg' gives the variance by the landmarks anywhere after fit; "
                             "drop X_variance, or use solver='exact' (up to a few thousand rows) "
                             "or 'dual' for the targets route.")

    def _solve(self, X, Y, X_variance) -> None:
        """The posterior: :meth:`_solve_exact`, or the duals of the mean (and of route (a)'s
        targets) by the dual iteration, then the mean's expansion over the blocks the solve
        used and the variance state."""
        if self.solver_ == "exact":
            self._solve_exact(X, Y, X_variance)
            return
        if self.solver_ == "cg":
            self._solve_cg(X, Y)
            return
        fm, s2, C = self.feature_map_, self._noise_z, self.n_outputs_
        generator = torch.Generator().manual_seed(self.seed_ % 2**63)
        Xt = to_tensor(X, self._dtype, self.device_)
        targets = [torch.as_tensor((Y - self.y_offset_) / self.y_scale_, dtype=self._dtype,
                                   device=self.device_)]
        Xv, n_blocks = None, self._feature_layout()[1]
        if X_variance is not None:  # route (a)'s outputs k(X, x*_j) (the budget's k̂ with one)
            Xv = to_tensor(X_variance, self._dtype, self.device_)
            targets.append(kernel_in_chunks(fm, Xt, Xv) if n_blocks is None
                           else features_kernel(fm, Xt, Xv, n_blocks))
        factors = nystrom_factors(fm, Xt, s2, self.n_landmarks, generator)
        result, n_blocks = self._run_solver(Xt, torch.cat(targets, 1), factors, generator)
        _check_finite(result.duals, "dual iteration")
        duals = result.duals.to(self._dtype)
        post = posterior_from_duals(fm, Xt, duals[:, :C], range(n_blocks), Xv,
                                    duals[:, C:] if Xv is not None else None)
        self.expansion_ = Expansion(fm, C, dtype=torch.float64, device=self.device_)
        self.expansion_.load_prediction_state(post.mean_coef.to(torch.float64), torch.zeros(C),
                                              self.n_steps)
        self.n_components_ = self.expansion_.n_features
        self.n_iter_, self.eta0_ = result.n_steps, result.step_size
        self.n_step_halvings_ = result.n_halvings
        self.residual_norms_ = result.residual_norms
        if self.variance_method_ == "targets" and Xv is not None:
            self._set_targets_variance(Xt, Xv, X_variance, targets[1], duals[:, C:], post, s2)
        elif self.variance_method_ == "landmarks":
            X64 = to_tensor(X, torch.float64, self.device_)
            self._landmark_variance = LandmarkVariance.from_factors(X64, factors)
        elif self.variance_method_ == "operator":
            self._set_operator(Xt, s2)

    def _solve_exact(self, X, Y, X_variance) -> None:
        """The exact posterior (:func:`~kernelstream.solvers.gp_exact.exact_posterior`): the mean
        as the kernel's columns at the training rows (one block of ``n``) times the duals, the
        variance kept (route "exact") or evaluated at ``X_variance`` (route "targets")."""
        X64 = to_tensor(X, torch.float64, self.device_)
        Z = torch.as_tensor((Y - self.y_offset_) / self.y_scale_, dtype=torch.float64,
                            device=self.device_)
        duals, exact, residual = exact_posterior(self.feature_map_, X64, Z, self._noise_z)
        _check_finite(duals, "exact solve")
        columns = self._kernel_columns(X64, duals)
        self.n_iter_, self.eta0_, self.n_step_halvings_ = 1, math.nan, 0
        self.residual_norms_ = [residual]
        if X_variance is None:
            self._exact_variance = exact
            return
        Xv = to_tensor(X_variance, torch.float64, self.device_)
        self.X_variance_ = X_variance
        self.variance_ = exact.variance(columns, Xv).cpu().numpy()
        _check_finite(self.variance_, "variance")
        self._row_index = {row.tobytes(): i for i, row in enumerate(X_variance)}
        self._cov = (exact.covariance(columns, Xv).cpu().numpy()
                     if X_variance.shape[0] <= MAX_COVARIANCE_POINTS else None)

    def _solve_cg(self, X, Y) -> None:
        """The exact kernel's mean duals by conjugate gradients
        (:func:`~kernelstream.solvers.gp_exact.exact_kernel_cg`) preconditioned by the Nyström
        landmarks, whose factors also give the variance (route "landmarks"), all in float64."""
        X64 = to_tensor(X, torch.float64, self.device_)
        Z = torch.as_tensor((Y - self.y_offset_) / self.y_scale_, dtype=torch.float64,
                            device=self.device_)
        s2 = self._noise_z
        generator = torch.Generator().manual_seed(self.seed_ % 2**63)
        factors = nystrom_factors(self.feature_map_, X64, s2, self.n_landmarks, generator)
        precond = NystromPreconditioner(factors.B, factors.inner_cholesky, s2)
        bar = progress_bar(self.verbose, total=self.n_steps, desc="GP conjugate gradients",
                           unit="iteration")
        result = exact_kernel_cg(self.feature_map_, X64, Z, s2, precond, max_iter=self.n_steps,
                                 callback=(lambda t, duals: bar.update(1)) if bar else None)
        if bar:
            bar.close()
        _check_finite(result.duals, "conjugate gradients")
        self._kernel_columns(X64, result.duals)
        self.n_iter_, self.eta0_, self.n_step_halvings_ = result.n_steps, math.nan, 0
        self.residual_norms_ = result.residual_norms
        self._landmark_variance = LandmarkVariance.from_factors(X64, factors)

    def _kernel_columns(self, X64, duals) -> KernelColumns:
        """The mean ``k(x, X)A`` as an expansion over the kernel's columns at the training
        rows (one block of ``n``); ``feature_map_`` becomes that map, as a loaded model's."""
        columns = KernelColumns(self.feature_map_, X64, block_size=X64.shape[0])
        self.expansion_ = Expansion(columns, self.n_outputs_, dtype=torch.float64,
                                    device=self.device_)
        self.expansion_.load_prediction_state(duals[None], torch.zeros(self.n_outputs_), 1)
        self.feature_map_ = columns
        self.n_components_ = X64.shape[0]
        return columns

    def _run_solver(self, Xt, targets, factors, generator):
        """``(result, n_blocks)``: without a budget, ``n_steps`` stochastic steps of a fresh
        block each (:func:`~kernelstream.solvers.gp_dual.solve_dual`); with one, conjugate
        gradients on its ``J`` fixed blocks
        (:func:`~kernelstream.solvers.gp_dual.solve_dual_fixed`), at most ``n_steps``
        iterations."""
        fm, s2 = self.feature_map_, self._noise_z
        n_blocks = self._feature_layout()[1]
        bar = progress_bar(self.verbose, total=self.n_steps, desc="GP dual steps", unit="block")
        callback = (lambda t, avg: bar.update(1)) if bar else None
        if n_blocks is not None:
            precond = NystromPreconditioner(factors.B, factors.inner_cholesky, s2)  # float64
            result = solve_dual_fixed(fm, Xt, targets, s2, precond, n_blocks=n_blocks,
                                      max_iter=self.n_steps, callback=callback)
        else:
            precond = nystrom_preconditioner(fm, Xt, s2, self.n_landmarks, generator, factors)
            step = self.eta0
            if step == "auto":
                step = safe_step_size(fm, Xt, s2, precond, generator=generator)
            result = solve_dual(fm, Xt, targets, s2, precond, n_steps=self.n_steps,
                                step_size=step, average_start=int(self.average_fraction * self.n_steps),
                                callback=callback)
            n_blocks = self.n_steps
        if bar:
            bar.close()
        return result, n_blocks

    def _check_fit_memory(self, n: int, n_test: int) -> None:
        """Refuse a fit whose estimated peak memory exceeds ``MEMORY_FRACTION`` of what is
        available, naming the parameter to lower."""
        w = torch.finfo(self._dtype).bits // 8
        route = self.variance_method_
        if self.solver_ == "exact":
            need = exact_bytes(n, self.n_outputs_ + n_test) + 48 * min(n, self.evidence_size) ** 2
            if route == "targets":
                need += 8 * n * n_test + (32 * n_test**2 if n_test <= MAX_COVARIANCE_POINTS else 0)
            _require_memory(need, self.device_, f"Fitting {n} rows exactly (solver='exact')",
                            "use solver='dual' (24·n·M bytes for M = n_landmarks)")
            return
        block_size, n_blocks = self._feature_layout()
        need = dual_fit_bytes(n, self.n_outputs_ + n_test, self.n_landmarks, block_size,
                              min(self.n_steps, n_blocks or self.n_steps), w) \
            + 48 * min(n, self.evidence_size) ** 2
        advice = "lower n_landmarks (24·n·M bytes), block_size or n_steps"
        if route == "targets":
            need += targets_bytes(n_test, block_size, w, MAX_COVARIANCE_POINTS)
            advice = ("pass fewer X_variance rows per fit (5·w·n·m bytes), or drop X_variance "
                      "and use variance_method='landmarks'")
        elif route == "operator":
            need += operator_bytes(self._operator_blocks() * block_size)
            advice = ("lower n_components (32·D² bytes), or use "
                      "variance_method='landmarks' (16·M² bytes)")
        else:
            need += landmark_bytes(min(n, self.n_landmarks))
        _require_memory(need, self.device_, f"Fitting {n} rows with variance_method='{route}'",
                        advice)

    def _set_targets_variance(self, Xt, Xv, X_variance, K_star, var_duals, post, s2) -> None:
        """Route (a): the variance (and covariance) at the ``X_variance`` rows
        (:func:`~kernelstream.solvers.gp_variance.targets_variance`)."""
        var, cov = targets_variance(self.feature_map_, Xv, K_star, var_duals, post.cross,
                                    post.quadratic, s2, MAX_COVARIANCE_POINTS)
        self.X_variance_ = X_variance
        self.variance_ = var.cpu().numpy()
        _check_finite(self.variance_, "variance")
        self._row_index = {row.tobytes(): i for i, row in enumerate(X_variance)}
        self._cov = None if cov is None else cov.cpu().numpy()

    def _operator_blocks(self) -> int:
        """Route (b)'s blocks: the budget's, or those covering ``OPERATOR_FEATURES`` (rounded
        down, at least one) without a budget."""
        block_size, n_blocks = self._feature_layout()
        return n_blocks if n_blocks is not None else max(1, OPERATOR_FEATURES // block_size)

    def _set_operator(self, Xt, s2) -> None:
        """Route (b) over the first :meth:`_operator_blocks` blocks (the mean's, with a budget)."""
        n_blocks = self._operator_blocks()
        self._operator_variance = OperatorVariance.fit(self.feature_map_, Xt, n_blocks, s2)
        self.operator_blocks_ = n_blocks

    # -- variance -------------------------------------------------------------------------
    def _covariance(self, X, Xt, *, diagonal: bool) -> np.ndarray:
        """Posterior covariance (or its diagonal) of ``f`` in internal units, float64."""
        if not diagonal:
            _require_memory(24 * X.shape[0] ** 2, self.device_,
                            f"return_cov on {X.shape[0]} points", "ask for return_std, or "
                            "predict the covariance on fewer points per call")
        route = self.variance_method_
        if route in ("operator", "landmarks", "exact"):
            fm = self.feature_map_
            solver = getattr(self, {"operator": "_operator_variance", "exact": "_exact_variance",
                                    "landmarks": "_landmark_variance"}[route])
            cov = (solver.variance(fm, Xt) if diagonal else solver.covariance(fm, Xt)).cpu().numpy()
        else:
            cov = self._targets_covariance(X, diagonal)
        _check_finite(cov, "variance")
        return cov

    def _targets_covariance(self, X, diagonal: bool) -> np.ndarray:
        if not hasattr(self, "variance_"):
            raise ValueError("This model has no variance: with variance_method='targets' pass "
                             "the test points to fit(X, y, X_variance=...), or use "
                             "variance_method='auto' or 'landmarks'.")
        rows = [self._row_index.get(row.tobytes()) for row in X]
        if any(i is None for i in rows):
            raise ValueError("variance_method='targets' knows the variance only at the "
                             "X_variance rows given to fit; some rows of X are not among them. "
                             "Refit with those points in X_variance, or use "
                             "variance_method='auto' (no X_variance) or 'landmarks'.")
        if diagonal:
            return self.variance_[rows]
        if self._cov is None:
            raise ValueError(f"The covariance is kept for at most {MAX_COVARIANCE_POINTS} "
                             "X_variance points; ask for return_std instead.")
        return self._cov[np.ix_(rows, rows)].copy()

    # -- state ----------------------------------------------------------------------------
    def _state_builders(self, device) -> dict:
        return {"expansion_": lambda state: Expansion.from_state_dict(state, device),
                "_operator_variance": lambda state: OperatorVariance.from_state_dict(
                    state, device),
                "_landmark_variance": lambda state: LandmarkVariance.from_state_dict(
                    state, device),
                "_exact_variance": lambda state: ExactVariance.from_state_dict(state, device)}

    def _after_load_state(self) -> None:
        self.feature_map_ = self.expansion_.feature_map
        if getattr(self, "X_variance_", None) is not None:
            self._row_index = {row.tobytes(): i for i, row in enumerate(self.X_variance_)}

    # -- validation -----------------------------------------------------------------------
    def _check_test_points(self, X, name: str) -> np.ndarray:
        X = check_array(X, dtype=np.float64, input_name=name, accept_sparse="csr")
        X = X.toarray() if sp.issparse(X) else X
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"{name} has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        check_magnitude(X, np.float64, name)
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags


_FINITE_ADVICE = ("overflow in the kernel or the solves. Standardise X (e.g. StandardScaler), "
                  "use noise='auto' or a larger noise, or set dtype='float64'")


def _check_finite(values, what: str, advice: str = _FINITE_ADVICE) -> None:
    """Never return non-finite numbers silently: ``FloatingPointError`` naming the fix."""
    finite = torch.isfinite(values).all() if torch.is_tensor(values) else np.isfinite(values).all()
    if not bool(finite):
        raise FloatingPointError(f"The GP's {what} is not finite: {advice}.")


def _available_memory(device: torch.device) -> int:
    """Free bytes: ``psutil.virtual_memory().available`` on the CPU, free memory on CUDA."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return int(psutil.virtual_memory().available)


def _require_memory(need: int, device: torch.device, what: str, advice: str) -> None:
    """Raise ``MemoryError`` when ``need`` bytes exceed ``MEMORY_FRACTION`` of the free memory."""
    available = _available_memory(device)
    if need > MEMORY_FRACTION * available:
        raise MemoryError(f"{what} needs about {need / 2**30:.2f} GiB, more than "
                          f"{MEMORY_FRACTION:g} × the {available / 2**30:.2f} GiB available: "
                          f"{advice}.")

