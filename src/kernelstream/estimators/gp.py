"""DSGGaussianProcessRegressor: GP posterior mean and variance from seeded random-feature blocks."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._device import resolve_device, resolve_dtype, to_tensor
from .._validation import Integral, Interval, Real, StrOptions
from ..expansion import Expansion
from ..features import KERNELS, make_feature_map, resolve_sigma
from ..solvers.gp_dual import (kernel_diagonal, kernel_in_chunks, nystrom_preconditioner,
                               posterior_from_duals, safe_step_size, solve_dual)
from ._base import assign_parameters
from ._rollback import unchanged_on_error

__all__ = ["DSGGaussianProcessRegressor"]

#: route (a) keeps the posterior covariance of the test points for sample_y up to this many
MAX_COVARIANCE_POINTS = 4096
#: fitted state without a trailing underscore, cleared by a refit
_PRIVATE_STATE = ("_y_1d", "_row_index", "_cov", "_operator_cholesky", "_operator_noise")


class DSGGaussianProcessRegressor(RegressorMixin, BaseEstimator):
    """Gaussian-process regression whose posterior is computed from seeded random-feature blocks.

    Posterior (Rasmussen & Williams eq. 2.25-2.26, Dai et al. eq. 9):
    ``μ(x) = k(x, X)(K + s²I)⁻¹ y`` and ``v(x) = k(x, x) − k(x, X)(K + s²I)⁻¹ k(X, x)``.
    The solves run as a preconditioned stochastic iteration in dual coordinates with a fresh
    feature block per step (:mod:`kernelstream.solvers.gp_dual`); the mean is returned as a
    random-feature expansion over the run's blocks. The variance has two routes:

    - ``variance_method="targets"`` (route (a)): the test points are given to ``fit`` as
      ``X_variance``; their kernel columns ``k(X, x*_j)`` are ``m`` extra outputs solved on the
      same blocks, and ``v̂ = k** − 2k̂*ᵀā + āᵀ(K̂ + s²I)ā`` (second order in the error of ``ā``).
      Memory ``O(n(m + M))``.
    - ``variance_method="operator"`` (route (b)): the posterior operator over the first
      ``n_operator_features`` random features, ``v(x) = s² ψᵀ(ΦᵀΦ + s²I)⁻¹ψ + (k(x,x) − ψᵀψ)``,
      accumulated over row chunks (memory ``O(D²)``, any test point later). Its error is that of
      a ``D``-feature kernel and does not fall with more steps: on the paper's narrow-bandwidth
      2-D set it is 13.6% at ``D = 8192`` (``benchmarks/results/gp.md``) and 3.6% at
      ``D = 32768`` (``benchmarks/research/gp_random_feature_floor.py``).

    Parameters
    ----------
    kernel : str, default="rbf"
        A registered kernel family (its exact kernel is used for the targets and the
        preconditioner, its random features for everything the model keeps).
    sigma : float or "median", default="median"
        Bandwidth; "median" is ``sigma_scale`` × the median pairwise distance.
    sigma_scale : float, default=1.0
        Multiplier of the median heuristic (the paper's GP experiment uses the plain median).
    kernel_params : dict, default=None
    noise : float, default=0.1
        Noise variance ``s²`` in units of ``y²`` (the paper's ``σ²``; the primal view is ridge
        regression with ``ν = s²/n``).
    variance_method : {"targets", "operator"}, default="targets"
    block_size : int, default=2048
        Random features per step ``r``.
    max_iter : int, default=256
        Steps ``T`` (one block each). The mean uses ``T·r`` features.
    step_size : float or "auto", default="auto"
        ``γ``. "auto" is ``min(0.5, 1/λ̂)`` with ``λ̂`` the top eigenvalue of one step's
        preconditioned operator ``P(Ψ_tΨ_tᵀ + s²I)`` (power iteration on 12 probe blocks): it
        shrinks as ``n`` outgrows the landmarks. Either way ``γ`` is halved if the iteration
        becomes unstable.
    average_start : float in [0, 1), default=0.2
        Fraction of the steps before Polyak averaging starts.
    n_landmarks : int, default=1024
        Nyström landmarks ``M`` of the preconditioner (memory ``n·M``). Too few only slows the
        convergence; it never changes the answer.
    n_operator_features : int, default=8192
        ``D`` of route (b) (memory ``8 D²`` bytes).
    normalize_y : bool, default=False
        Centre and scale ``y`` before fitting (the prior is then on the standardised targets;
        ``noise`` stays in units of ``y²``).
    random_state : int, RandomState or None
        Seeds the feature blocks and the landmarks.
    verbose : int, default=0
        Show a progress bar.
    device : {"auto", "cpu", "cuda"}, default="auto"
    dtype : {"float32", "float64"}, default="float32"

    Attributes
    ----------
    expansion_ : Expansion
        The posterior mean as a random-feature expansion (``max_iter`` blocks).
    feature_map_ : FeatureMap
    sigma_, noise_ : float
    n_features_ : int
        Random features in the mean expansion.
    X_variance_ : ndarray of shape (m, d)
        Route (a): the test points given to ``fit``.
    variance_ : ndarray of shape (m,)
        Route (a): the posterior variance of ``f`` at ``X_variance_``.
    step_size_ : float
        ``γ`` after any automatic halving.
    n_step_halvings_ : int
        How often instability halved ``γ`` (0 in a healthy run).
    residual_norms_ : list of float
        ``‖Y − Ψ_tΨ_tᵀA − s²A‖`` per step.

    Notes
    -----
    Accuracy is a Monte Carlo one: the mean's error falls like ``1/√t`` and the variance's like
    ``1/t`` (``benchmarks/results/gp.md``: 3.9% and 4.0% at the defaults on the paper's GP set).
    Where the posterior variance is tiny against the prior (a smooth kernel and noise ≪ 1), the
    variance is a small difference of numbers near ``k(x, x)`` and its *relative* error grows:
    13% at noise 0.01 and ×30 at noise 1e-4 on 500 points of ``sin`` in 1-D after 64 steps —
    absolute errors of 2e-5 and 6e-5, mostly upwards (the second-order form adds
    ``eᵀ(K + s²I)e ≥ 0`` for a dual error ``e``). An exact solver is the better tool there.

    Examples
    --------
    >>> import numpy as np
    >>> from kernelstream import DSGGaussianProcessRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (500, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(500)
    >>> X_test = np.array([[-2.0], [0.0], [2.0], [6.0]])  # the last one far from the data
    >>> gp = DSGGaussianProcessRegressor(noise=0.01, max_iter=64, random_state=0)
    >>> mean, std = gp.fit(X, y, X_variance=X_test).predict(X_test, return_std=True)
    >>> np.round(mean[:3], 1), np.round(std, 1)
    (array([-0.9,  0. ,  0.9]), array([0. , 0. , 0. , 0.9]))
    """

    _parameter_constraints = {
        "kernel": [str],
        "sigma": [Interval(Real, 0, None, closed="neither"), StrOptions({"median"})],
        "sigma_scale": [Interval(Real, 0, None, closed="neither")],
        "kernel_params": [dict, None],
        "noise": [Interval(Real, 0, None, closed="neither")],
        "variance_method": [StrOptions({"targets", "operator"})],
        "block_size": [Interval(Integral, 2, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"})],
        "average_start": [Interval(Real, 0, 1, closed="left")],
        "n_landmarks": [Interval(Integral, 1, None, closed="left")],
        "n_operator_features": [Interval(Integral, 1, None, closed="left")],
        "normalize_y": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "device": [str],
        "dtype": [StrOptions({"float32", "float64"})],
    }

    def __init__(self, *, kernel="rbf", sigma="median", sigma_scale=1.0, kernel_params=None,
                 noise=0.1, variance_method="targets", block_size=2048, max_iter=256,
                 step_size="auto", average_start=0.2, n_landmarks=1024, n_operator_features=8192,
                 normalize_y=False, random_state=None, verbose=0, device="auto",
                 dtype="float32"):
        assign_parameters(self, locals())

    # -- public API -----------------------------------------------------------------------
    def fit(self, X, y, X_variance=None):
        """Posterior of the GP on ``(X, y)``.

        ``X_variance`` (route (a), required with ``variance_method="targets"`` for
        ``return_std``): the points where the variance is wanted. Without it the targets route
        fits the mean only.
        """
        with unchanged_on_error(self):
            self._validate_params()
            if self.kernel not in KERNELS:
                raise ValueError(f"Unknown kernel {self.kernel!r}; choose one of {sorted(KERNELS)} "
                                 "or register yours with kernelstream.features.register_kernel.")
            X, y = validate_data(self, X, y, reset=True, dtype=np.float64, y_numeric=True,
                                 multi_output=True)
            if X_variance is not None:
                if self.variance_method != "targets":
                    raise ValueError("X_variance is the test set of variance_method='targets'; "
                                     "the operator route predicts the variance anywhere, so "
                                     "drop X_variance or set variance_method='targets'.")
                X_variance = self._check_test_points(X_variance, "X_variance")
            stale = [n for n in vars(self) if n.endswith("_") and n not in
                     ("n_features_in_", "feature_names_in_")]
            for name in stale + [n for n in _PRIVATE_STATE if hasattr(self, n)]:
                delattr(self, name)
            self._fit(X, y, X_variance)
        return self

    def save(self, path) -> None:
        """Save to one safetensors file: the mean's random-feature coefficients and the variance
        state (route (a): the ``X_variance`` rows, their variances and covariance; route (b):
        the ``D×D`` Cholesky factor of the operator, 8·D² bytes). Load with
        :func:`kernelstream.load`; predictions, standard deviations and samples are identical."""
        from ..io import save_model

        save_model(self, path)

    def predict(self, X, return_std=False, return_cov=False):
        """Posterior mean of ``f``; with ``return_std``/``return_cov`` also its standard deviation
        (``(n,)``) or covariance (``(n, n)``) — the noise ``s²`` is not included.

        With ``variance_method="targets"`` the standard deviation exists only at the rows of
        ``X_variance`` given to ``fit``.
        """
        if return_std and return_cov:
            raise ValueError("At most one of return_std or return_cov can be requested.")
        check_is_fitted(self, "expansion_")
        X = self._check_test_points(X, "X")
        Xt = to_tensor(X, self._dtype, self.device_)
        mean = self.expansion_.predict(Xt).to(torch.float64).cpu().numpy()
        mean = mean * self.y_scale_ + self.y_offset_
        mean = mean[:, 0] if self._y_1d else mean
        if not (return_std or return_cov):
            return mean
        cov = self._covariance(X, Xt, diagonal=return_std) * self.y_scale_**2
        if return_std:
            return mean, np.sqrt(np.maximum(cov, 0.0))
        return mean, cov

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draws of ``f`` from the posterior at ``X``: ``(n, n_samples)`` (``(n, C, n_samples)``
        for several outputs), like scikit-learn's ``GaussianProcessRegressor.sample_y``."""
        check_is_fitted(self, "expansion_")
        mean, cov = self.predict(X, return_cov=True)
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
        self.seed_ = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
        generator = torch.Generator().manual_seed(self.seed_ % 2**63)
        fm = make_feature_map(self.kernel, X.shape[1], 1.0, self.block_size, self.seed_,
                              kernel_params=self.kernel_params)
        fm.sigma = resolve_sigma(self.sigma, X, type(fm).distance, self.sigma_scale,
                                 seed=self.seed_ % 2**32)
        self.feature_map_, self.sigma_ = fm, float(fm.sigma)
        self._y_1d = y.ndim == 1
        Y = y.reshape(len(y), -1)
        self.n_outputs_ = Y.shape[1]
        if self.normalize_y:
            self.y_offset_ = Y.mean(axis=0)
            std = Y.std(axis=0)
            self.y_scale_ = float(np.mean(np.where(std > 0, std, 1.0)))
        else:
            self.y_offset_, self.y_scale_ = np.zeros(Y.shape[1]), 1.0
        self.noise_ = float(self.noise)
        s2 = self.noise_ / self.y_scale_**2  # noise in the units of the fitted targets
        Xt = to_tensor(X, self._dtype, self.device_)
        targets = [torch.as_tensor((Y - self.y_offset_) / self.y_scale_, dtype=self._dtype,
                                   device=self.device_)]
        Xv = None
        if X_variance is not None:
            Xv = to_tensor(X_variance, self._dtype, self.device_)
            targets.append(kernel_in_chunks(fm, Xt, Xv))  # k(X, x*_j): route (a)'s outputs
        precond = nystrom_preconditioner(fm, Xt, s2, self.n_landmarks, generator)
        step = self.step_size
        if step == "auto":
            step = safe_step_size(fm, Xt, s2, precond, generator=generator)
        bar = _progress_bar(self.verbose, self.max_iter)
        result = solve_dual(fm, Xt, torch.cat(targets, 1), s2, precond, n_steps=self.max_iter,
                            step_size=step,
                            average_start=int(self.average_start * self.max_iter),
                            callback=(lambda t, avg: bar.update(1)) if bar else None)
        if bar:
            bar.close()
        del precond
        C = self.n_outputs_
        duals = result.duals
        post = posterior_from_duals(fm, Xt, duals[:, :C], range(self.max_iter), Xv,
                                    duals[:, C:] if Xv is not None else None)
        self.expansion_ = Expansion(fm, C, dtype=self._dtype, device=self.device_)
        self.expansion_.load_prediction_state(post.mean_coef, torch.zeros(C), self.max_iter)
        self.n_features_ = self.expansion_.n_features
        self.n_iter_, self.step_size_ = result.n_steps, result.step_size
        self.n_step_halvings_ = result.n_halvings
        self.residual_norms_ = result.residual_norms
        if Xv is not None:
            self._set_targets_variance(Xt, Xv, X_variance, targets[1], duals[:, C:], post, s2)
        if self.variance_method == "operator":
            self._set_operator(Xt, s2)

    def _set_targets_variance(self, Xt, Xv, X_variance, K_star, var_duals, post, s2) -> None:
        """``v̂_j = k**_j − 2 k̂*_jᵀā_j + ā_jᵀK̂ā_j + s²‖ā_j‖²`` and, for ``return_cov`` and
        ``sample_y``, the covariance ``k(x*_i, x*_j) − (k*_iᵀā_j + k*_jᵀā_i)/2`` with ``v̂`` on
        its diagonal, projected on the PSD cone (its diagonal may then differ slightly from
        ``v̂``, which ``return_std`` reports)."""
        prior = kernel_diagonal(self.feature_map_, Xv)
        var = prior - 2 * post.cross + post.quadratic + s2 * var_duals.square().sum(0)
        self.X_variance_ = X_variance
        self.variance_ = np.maximum(var.to(torch.float64).cpu().numpy(), 0.0)
        self._row_index = {row.tobytes(): i for i, row in enumerate(X_variance)}
        self._cov = None
        if Xv.shape[0] <= MAX_COVARIANCE_POINTS:
            cross = (K_star.T @ var_duals).to(torch.float64)
            cov = kernel_in_chunks(self.feature_map_, Xv, Xv).to(torch.float64) - (cross + cross.T) / 2
            cov.diagonal().copy_(torch.as_tensor(self.variance_))
            vals, vecs = torch.linalg.eigh(cov)  # nearest PSD matrix: clip negative eigenvalues
            self._cov = ((vecs * vals.clamp(min=0)) @ vecs.T).cpu().numpy()

    def _set_operator(self, Xt, s2) -> None:
        """Route (b): ``L = chol(ΦᵀΦ + s²I)`` over the first ``J`` blocks, ``Φ`` scaled so that
        ``ΦΦᵀ ≈ K``; ``ΦᵀΦ`` is summed over row chunks in float64."""
        fm = self.feature_map_
        J = max(1, self.n_operator_features // fm.block_size)
        D = J * fm.block_size
        gram = torch.zeros((D, D), dtype=torch.float64, device=self.device_)
        rows = max(1, 2**24 // D)
        for i in range(0, Xt.shape[0], rows):
            Phi = fm.transform(Xt[i:i + rows], J).to(torch.float64)
            gram.addmm_(Phi.T, Phi)
        gram.diagonal().add_(s2)
        self.operator_blocks_ = J
        self._operator_cholesky = torch.linalg.cholesky(gram).contiguous()  # one layout, saved or not
        self._operator_noise = s2

    # -- variance -------------------------------------------------------------------------
    def _covariance(self, X, Xt, *, diagonal: bool) -> np.ndarray:
        if self.variance_method == "operator":
            return self._operator_covariance(Xt, diagonal)
        if not hasattr(self, "variance_"):
            raise ValueError("This model has no variance: with variance_method='targets' pass "
                             "the test points to fit(X, y, X_variance=...), or use "
                             "variance_method='operator'.")
        rows = [self._row_index.get(row.tobytes()) for row in X]
        if any(i is None for i in rows):
            raise ValueError("variance_method='targets' knows the variance only at the "
                             "X_variance rows given to fit; some rows of X are not among them. "
                             "Refit with those points in X_variance, or use "
                             "variance_method='operator'.")
        if diagonal:
            return self.variance_[rows]
        if self._cov is None:
            raise ValueError(f"The covariance is kept for at most {MAX_COVARIANCE_POINTS} "
                             "X_variance points; ask for return_std instead.")
        return self._cov[np.ix_(rows, rows)]

    def _operator_covariance(self, Xt, diagonal: bool) -> np.ndarray:
        """``s² ψᵀ(ΦᵀΦ + s²I)⁻¹ψ'`` plus, on the diagonal, the prior variance the features miss,
        ``k(x, x) − ψᵀψ`` (zero for paired Fourier features). PSD by construction."""
        fm = self.feature_map_
        Phi = fm.transform(Xt, self.operator_blocks_).to(torch.float64)
        Z = torch.linalg.solve_triangular(self._operator_cholesky, Phi.T, upper=False)
        missed = (kernel_diagonal(fm, Xt).to(torch.float64) - Phi.square().sum(1)).clamp(min=0)
        if diagonal:
            cov = missed + self._operator_noise * Z.square().sum(0)
        else:
            cov = self._operator_noise * Z.T @ Z + torch.diag(missed)
        return cov.cpu().numpy()

    # -- validation -----------------------------------------------------------------------
    def _check_test_points(self, X, name: str) -> np.ndarray:
        X = check_array(X, dtype=np.float64, input_name=name)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"{name} has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags


def _progress_bar(verbose, total):
    if not verbose:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="GP dual steps", unit="block")
