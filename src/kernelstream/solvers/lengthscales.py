"""Per-feature lengthscales (ARD) fitted on a seeded subsample of rows.

The exact GP's log marginal likelihood of ``m`` rows (``y`` centred and scaled to unit
variance),

    log p(y) = −½ yᵀ(s·K_ℓ + s_n²·I)⁻¹y − ½ log|s·K_ℓ + s_n²·I| − m/2 log 2π,

is maximised over ``log ℓ`` (one lengthscale per feature), ``log s`` (signal variance) and
``log s_n²`` (noise variance) by L-BFGS in float64, gradients from one Cholesky
factorisation per evaluation (O(m³ + m²·d)): in closed form for the Gaussian kernel, by
autograd through ``K_ℓ`` for the other families. The alternative objective is kernel ridge's
closed-form leave-one-out error, ``e_i = [A⁻¹y]_i / [A⁻¹]_ii`` with ``A = K_ℓ + λI``
(``λ = s_n²/s``), minimised over ``log ℓ`` and ``log λ``. The kernel is any family with
per-feature lengthscales (``rbf``, ``laplace``, ``matern``), at unit bandwidth of ``(x − y)/ℓ``.

The rows, the start and the iteration budget are measured in ``docs/decisions/ard-lengthscales.md``.
Classifiers call it with ``y ∈ {−1, +1}`` as regression targets (least squares on the labels).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from scipy.optimize import minimize

from ..features import make_feature_map
from ..features.shift_invariant import GaussianRFF
from ..ops.linalg import gaussian_gram
from .gp_evidence import evidence_ftol, lengthscale_spread, nll_weights

__all__ = ["fit_lengthscales", "initial_lengthscales", "loo_error", "choose_lengthscales",
           "OBJECTIVES", "DEFAULT_ROWS", "SIGNAL_BOUNDS", "DEFAULT_MAX_ITER", "PER_FEATURE_LOO_RATIO",
           "MIN_ROWS_PER_LENGTHSCALE", "KERNEL_CHOICES"]

#: rows of the subsample (docs/decisions/ard-lengthscales.md)
DEFAULT_ROWS = 1000
#: L-BFGS iterations at most
DEFAULT_MAX_ITER = 60
#: the objectives: exact GP marginal likelihood, kernel ridge's closed-form leave-one-out
OBJECTIVES = ("marginal_likelihood", "loo")
#: noise variance floor, in units of var(y) (keeps the Cholesky factorisation defined)
NOISE_FLOOR = 1e-6
#: a column whose standard deviation is below this fraction of the widest's does not vary (a
#: constant column of standardised data keeps a rounding-error spread)
CONSTANT_SCALE = 1e-9
#: the search box, relative to the start: ℓ within [start / LENGTHSCALE_RANGE[0], start ·
#: LENGTHSCALE_RANGE[1]], the signal and noise variances within these bounds (units of var(y))
LENGTHSCALE_RANGE = (100.0, 1000.0)
SIGNAL_BOUNDS = (1e-2, 1e2)
NOISE_BOUNDS = (1e-6, 10.0)
#: per-feature lengthscales are kept only when the exact GP's leave-one-out mean squared error on
#: the rows they were fitted on is at most this fraction of the isotropic kernel's (ratios
#: measured in docs/decisions/ard-lengthscales.md: friedman1 0.06–0.09, the GP's qm7 0.90,
#: abalone 0.95–0.96; ARD paid on test rows wherever the ratio was below 0.74)
PER_FEATURE_LOO_RATIO = 0.8
#: ... and only from this many evidence rows per feature (the fewest at which that margin was
#: measured: GoGP's 500 rows of friedman1's 25 features; a handful of rows overfits d + 2
#: hyper-parameters and their leave-one-out error with them)
MIN_ROWS_PER_LENGTHSCALE = 20
#: ... and the full fit is tried only where per-feature lengthscales fitted on the coarse
#: half of the evidence rows (at most ``COARSE_ROWS``) already score at most this fraction of
#: the isotropic fit's leave-one-out error there: fewer rows flatter the per-feature fit, so
#: the screen is looser than the guard (coarse against full ratios: diabetes 0.88 / 0.96,
#: friedman1 0.17 / 0.52, friedman3 0.68 / 0.77, abalone 0.92 / 0.97;
#: docs/decisions/ard-lengthscales.md)
PER_FEATURE_SCREEN_RATIO = 0.85
COARSE_ROWS = 250
#: the values of the estimators' ``kernel_choice_``
KERNEL_CHOICES = ("per_feature", "isotropic")


@dataclass
class _Problem:
    """The subsample and the kernel of one fit, in float64."""

    X: torch.Tensor
    y: torch.Tensor  # (m,) or (m, c): c outputs sharing the kernel
    kernel: object  # (X, Y, lengthscales) -> K, a feature map's kernel_at
    objective: str
    noise_floor: float = NOISE_FLOOR  # added to exp(θ_noise); 0 when the noise is given
    gaussian: bool = False  # the Gaussian kernel: gradients in closed form


def initial_lengthscales(X: np.ndarray, init: str = "std") -> np.ndarray:
    """The start of the search, ``(d,)``: ``"std"`` is ``ℓ_k = √d · std_k`` per feature (a column
    that does not vary, ``std_k ≤ CONSTANT_SCALE · max std``, gets the median of the others'); ``"median"`` is the isotropic median
    heuristic ``ℓ_k = median_{i<j} ‖x_i − x_j‖`` for every feature."""
    d = X.shape[1]
    if init == "median":
        from ..features import median_distance

        return np.full(d, median_distance(X, seed=0))
    if init != "std":
        raise ValueError(f"init must be 'std' or 'median'; got {init!r}.")
    scales = np.std(X, axis=0)
    varies = scales > CONSTANT_SCALE * max(float(scales.max()), np.finfo(np.float64).tiny)
    fill = float(np.median(scales[varies])) if varies.any() else 1.0
    return math.sqrt(d) * np.where(varies, scales, fill)


def loo_error(K: torch.Tensor, y: torch.Tensor, lam) -> torch.Tensor:
    """Mean squared leave-one-out error of kernel ridge ``(K + λI)⁻¹``, in closed form:
    ``e_i = (y_i − ŷ_i)/(1 − H_ii) = [A⁻¹y]_i / [A⁻¹]_ii``, ``A = K + λI``. O(m³)."""
    A = K + lam * torch.eye(K.shape[0], dtype=K.dtype, device=K.device)
    A_inv = torch.cholesky_inverse(torch.linalg.cholesky(A))
    residual = (A_inv @ y.reshape(K.shape[0], -1)) / torch.diagonal(A_inv)[:, None]
    return residual.square().mean()


def _weights_loo(A: torch.Tensor, y: torch.Tensor) -> tuple[float, torch.Tensor]:
    """Mean ``e_ik²`` of kernel ridge's leave-one-out errors ``e_ik = a_ik/c_i`` (``a = A⁻¹Y``,
    ``c = diag A⁻¹``, ``n = mc`` entries) and its gradient in ``A``:
    ``W = −sym(A⁻¹ g_a aᵀ) − A⁻¹ diag(g_c) A⁻¹`` with ``g_a = 2a/(n c²)``,
    ``g_c = −Σ_k 2a_k²/(n c³)`` (from ``dA⁻¹ = −A⁻¹ dA A⁻¹``). O(m³)."""
    Y = y.reshape(y.shape[0], -1)
    n = Y.numel()
    A_inv = torch.cholesky_inverse(torch.linalg.cholesky(A))
    a, c = A_inv @ Y, torch.diagonal(A_inv)[:, None]
    g_a, g_c = 2 * a / (n * c**2), (-2 * a**2 / (n * c**3)).sum(1)
    outer = (A_inv @ g_a) @ a.T
    W = -0.5 * (outer + outer.T) - (A_inv * g_c) @ A_inv
    return float((a / c).square().mean()), W


def _value_and_gradient(problem: _Problem, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """The objective at ``θ = [log ℓ (d), log s, log s_n²]`` and its gradient: the O(m³) part in
    closed form (:func:`~.gp_evidence.nll_weights`, :func:`_weights_loo`), autograd through ``K_ℓ`` only
    (the Gaussian kernel's in closed form: :func:`_gaussian_value_and_gradient`)."""
    if problem.gaussian:
        return _gaussian_value_and_gradient(problem, theta)
    d = problem.X.shape[1]
    params = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
    K = problem.kernel(problem.X, problem.X, torch.exp(params[:d]))
    eye = torch.eye(K.shape[0], dtype=K.dtype)
    signal, noise = torch.exp(params[d]), torch.exp(params[d + 1]) + problem.noise_floor
    loo = problem.objective == "loo"
    C = K + (noise / signal) * eye if loo else signal * K + noise * eye
    try:
        value, W = (_weights_loo if loo else nll_weights)(C.detach(), problem.y)
    except torch.linalg.LinAlgError:  # not positive definite here: the line search backs off
        return math.inf, np.zeros_like(theta)
    (W * C).sum().backward()  # Σ W_ij C_ij(θ): its gradient is the objective's
    return value, params.grad.numpy().copy()


def _gaussian_value_and_gradient(problem: _Problem, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """:func:`_value_and_gradient` of the Gaussian kernel without autograd: with ``Z = X/ℓ``,
    ``∂K_ij/∂log ℓ_k = K_ij (z_ik − z_jk)²``, so that ``Σ_ij G_ij ∂K_ij/∂log ℓ_k = 2(Σ_j G_ij)ᵀz_k²
    − 2 z_kᵀGz_k`` for the symmetric ``G = W ⊙ K`` (O(m²d), against autograd's O(m²d) tensors
    of pairs kept for the backward pass)."""
    d = problem.X.shape[1]
    Z = problem.X / torch.from_numpy(np.exp(theta[:d]))
    K = gaussian_gram(Z, Z, 1.0)
    signal, noise_part = math.exp(theta[d]), math.exp(theta[d + 1])
    noise = noise_part + problem.noise_floor
    loo = problem.objective == "loo"
    C = K.clone() if loo else K * signal
    C.diagonal().add_(noise / signal if loo else noise)
    try:
        value, W = (_weights_loo if loo else nll_weights)(C, problem.y)
    except torch.linalg.LinAlgError:  # not positive definite here: the line search backs off
        return math.inf, np.zeros_like(theta)
    trace = float(torch.diagonal(W).sum())
    G = W.mul_(K)  # W ⊙ K, in place
    grad_lengthscales = lengthscale_spread(Z, G)
    if loo:  # C = K + (s_n²/s)·I
        grad_signal, grad_noise = -(noise / signal) * trace, noise_part / signal * trace
    else:  # C = s·K + s_n²·I
        grad_signal, grad_noise = float(G.sum()) * signal, noise_part * trace
    if not loo:
        grad_lengthscales = grad_lengthscales * signal
    return value, np.r_[grad_lengthscales.numpy(), grad_signal, grad_noise]


def _minimise(problem: _Problem, theta0: np.ndarray, bounds: list, max_iter: int,
              max_seconds: float) -> tuple[np.ndarray, dict]:
    """L-BFGS-B from ``theta0`` within ``bounds``, stopped after ``max_iter`` iterations,
    ``max_seconds`` of CPU or an iteration's gain below
    :data:`~kernelstream.solvers.gp_evidence.EVIDENCE_NATS` in total; returns ``θ`` and ``n_iter``, ``n_eval``, ``value``, ``converged``."""
    start = time.process_time()

    def stop_when_late(intermediate_result):
        if time.process_time() - start > max_seconds:
            raise StopIteration

    result = minimize(lambda theta: _value_and_gradient(problem, theta), theta0, jac=True,
                      method="L-BFGS-B", bounds=bounds, callback=stop_when_late,
                      options=dict(maxiter=max_iter, ftol=evidence_ftol(problem.X.shape[0])))
    return result.x, dict(n_iter=int(result.nit), n_eval=int(result.nfev), value=float(result.fun),
                          converged=bool(result.success))


def _subsample(X, y, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``rows`` rows of ``(X, y)`` drawn without replacement by ``seed``, dense float64."""
    n = X.shape[0]
    index = np.sort(np.random.default_rng(seed).choice(n, size=min(n, rows), replace=False))
    sample = X[index]
    sample = sample.toarray() if sp.issparse(sample) else np.asarray(sample)
    return sample.astype(np.float64), np.asarray(y, dtype=np.float64)[index]


def fit_lengthscales(X, y, *, kernel: str = "rbf", rows: int = DEFAULT_ROWS, seed: int = 0,
                     objective: str = "marginal_likelihood", max_iter: int = DEFAULT_MAX_ITER,
                     max_seconds: float = math.inf, init: str = "std",
                     kernel_params: dict | None = None, noise: float | None = None,
                     signal: float | None = None,
                     signal_bounds: tuple[float, float] = SIGNAL_BOUNDS,
                     ) -> tuple[np.ndarray, float, float, dict]:
    """Per-feature lengthscales by the exact GP marginal likelihood (or kernel ridge's
    leave-one-out error) on a seeded subsample of ``rows`` rows, by L-BFGS.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    y : array-like of shape (n,) or (n, c)
        Regression targets (``c`` outputs sharing the kernel: the sum of their likelihoods);
        labels in {−1, +1} for a classifier (least squares on the labels).
    kernel : str, default="rbf"
        A family with per-feature lengthscales: ``"rbf"``, ``"laplace"``, ``"matern"``, ...
    rows : int, default=DEFAULT_ROWS
        Rows of the subsample (all of them when fewer); the cost is O(rows³) per evaluation.
    seed : int, default=0
        Seeds the subsample.
    objective : {"marginal_likelihood", "loo"}, default="marginal_likelihood"
    max_iter : int, default=DEFAULT_MAX_ITER
        L-BFGS iterations at most.
    max_seconds : float, default=inf
        CPU seconds after which the search stops (checked every few iterations).
    init : {"std", "median"}, default="std"
        The start (:func:`initial_lengthscales`); signal variance 1 and noise 0.1 (units of
        var(y)).
    kernel_params : dict or None
        The family's other parameters (Matérn's ``nu``).
    noise, signal : float or None
        Fixed noise and signal variances in units of ``y²`` (as given, without the noise floor);
        ``None`` fits them. Only with the marginal likelihood.
    signal_bounds : (float, float), default=SIGNAL_BOUNDS
        The box of a fitted signal variance, in units of var(y).

    Returns
    -------
    lengthscales : ndarray of shape (d,)
        In the units of ``X``; a large one marks a feature that does not matter.
    noise, signal : float
        Noise and signal variances ``s_n²``, ``s`` in units of ``y²``.
    info : dict
        ``objective``, ``rows``, ``n_iter``, ``n_eval``, ``seconds`` (CPU), ``init``
        (starting lengthscales), ``value`` (final objective per row), ``converged``.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}; got {objective!r}.")
    if objective == "loo" and (noise is not None or signal is not None):
        raise ValueError("fixed noise or signal variances need objective='marginal_likelihood'.")
    start = time.process_time()
    X_sub, y_sub = _subsample(X, y, rows, seed)
    offset, scale = y_sub.mean(axis=0), float(np.std(y_sub)) or 1.0
    feature_map = make_feature_map(kernel, X_sub.shape[1], 1.0, 2, seed, kernel_params=kernel_params)
    if not feature_map.per_feature_lengthscales:
        raise ValueError(f"kernel {kernel!r} has no per-feature lengthscales; use rbf, laplace "
                         "or matern.")
    problem = _Problem(torch.from_numpy(X_sub), torch.from_numpy((y_sub - offset) / scale),
                       feature_map.kernel_at, objective,
                       NOISE_FLOOR if noise is None else 0.0,
                       type(feature_map).kernel_at is GaussianRFF.kernel_at)
    ell0 = initial_lengthscales(X_sub, init)
    fixed = [None if v is None else math.log(v / scale**2) for v in (signal, noise)]
    theta0 = np.r_[np.log(ell0), 0.0 if fixed[0] is None else fixed[0],
                   math.log(0.1) if fixed[1] is None else fixed[1]]
    if fixed[0] is None and objective != "loo":
        fixed[0] = tuple(math.log(b) for b in signal_bounds)
        theta0[-2] = min(max(0.0, fixed[0][0]), fixed[0][1])
    theta, info = _minimise(problem, theta0, _bounds(ell0, objective, *fixed), max_iter,
                            max_seconds)
    d = X_sub.shape[1]
    signal_fit = math.exp(theta[d]) * scale**2
    noise_fit = (math.exp(theta[d + 1]) + problem.noise_floor) * scale**2
    if objective == "loo":  # the signal's ML estimate given (ℓ, λ): s = yᵀ(K + λI)⁻¹y / m
        noise_fit, signal_fit = _loo_variances(problem, theta, scale)
    info.update(objective=objective, rows=X_sub.shape[0], init=ell0,
                seconds=time.process_time() - start)
    return np.exp(theta[:d]), noise_fit, signal_fit, info


def _bounds(ell0: np.ndarray, objective: str, log_signal: float | tuple | None = None,
            log_noise: float | None = None) -> list[tuple[float, float]]:
    """The box of ``θ = [log ℓ, log s, log s_n²]``: :data:`LENGTHSCALE_RANGE` around the start,
    :data:`SIGNAL_BOUNDS` (fixed at 1 for the leave-one-out, which sees ``s_n²/s`` only) and
    :data:`NOISE_BOUNDS`; a given ``log s`` or ``log s_n²`` is a box of one point, a pair a box."""
    low, high = np.log(ell0) - math.log(LENGTHSCALE_RANGE[0]), np.log(ell0) + math.log(LENGTHSCALE_RANGE[1])
    signal = (0.0, 0.0) if objective == "loo" else tuple(math.log(b) for b in SIGNAL_BOUNDS)
    noise = tuple(math.log(b) for b in NOISE_BOUNDS)
    if log_signal is not None:
        signal = tuple(log_signal) if isinstance(log_signal, tuple) else (log_signal,) * 2
    noise = noise if log_noise is None else (log_noise, log_noise)
    return [*zip(low, high), signal, noise]


def _loo_variances(problem: _Problem, p: np.ndarray, scale: float) -> tuple[float, float]:
    """``(s_n², s)`` in units of y² for the leave-one-out fit: ``s = yᵀ(K + λI)⁻¹y / m`` (the
    amplitude's maximum likelihood at ``(ℓ, λ)``), ``s_n² = λ·s``."""
    d, y = problem.X.shape[1], problem.y.reshape(problem.y.shape[0], -1)
    with torch.no_grad():
        K = problem.kernel(problem.X, problem.X, torch.from_numpy(np.exp(p[:d])))
        lam = (math.exp(p[d + 1]) + NOISE_FLOOR) / math.exp(p[d])
        A = K + lam * torch.eye(K.shape[0], dtype=K.dtype)
        signal = float((y * torch.cholesky_solve(y, torch.linalg.cholesky(A))).sum()) / y.numel()
    return lam * signal * scale**2, signal * scale**2


def choose_lengthscales(X, y, per_feature: tuple, isotropic: tuple, *, kernel: str = "rbf",
                        kernel_params: dict | None = None,
                        ratio: float = PER_FEATURE_LOO_RATIO) -> tuple[str, np.ndarray]:
    """The guard of ARD: ``"per_feature"`` when the exact GP with per-feature lengthscales
    predicts the rows ``(X, y)`` it was fitted on clearly better than the isotropic one, else
    ``"isotropic"``.

    Each fit is ``(ℓ or σ, signal a, noise s²)``; its leave-one-out residuals
    ``r_i = [C⁻¹y]_i / [C⁻¹]_ii``, ``C = a·K_ℓ + s²I`` (:func:`loo_error` at ``λ = s²/a``), and
    per-feature is kept when ``mean r² ≤ ratio · mean r²_isotropic`` and ``m ≥
    MIN_ROWS_PER_LENGTHSCALE · d``. The margin ``ratio`` (:data:`PER_FEATURE_LOO_RATIO`) pays
    for the ``d − 1`` extra hyper-parameters fitted on the same rows. Two Cholesky
    factorisations of ``m × m``, O(m³ + m²d).

    Parameters
    ----------
    X : array-like of shape (m, d)
        The evidence rows (float64).
    y : array-like of shape (m,) or (m, c)
        Their targets as the GP sees them (centred by the caller), in any units.
    per_feature, isotropic : (lengthscales or float, float, float)
        ``(ℓ, a, s²)`` of each fit, ``a`` and ``s²`` in the units of ``y²``.
    kernel, kernel_params
        The family (one with per-feature lengthscales) and its other parameters.
    ratio : float, default=PER_FEATURE_LOO_RATIO

    Returns
    -------
    choice : {"per_feature", "isotropic"}
    loo : ndarray of shape (2,)
        The leave-one-out mean squared errors ``(per-feature, isotropic)`` in units of
        ``mean(y²)``;
        a fit whose ``C`` is not positive definite scores ``inf``.
    """
    X = torch.as_tensor(np.asarray(X, dtype=np.float64))
    y = torch.as_tensor(np.asarray(y, dtype=np.float64))
    y = y / (float(y.square().mean().sqrt()) or 1.0)  # the caller's centring is the GP's prior mean
    kernel_at = make_feature_map(kernel, X.shape[1], 1.0, 2, 0, kernel_params=kernel_params).kernel_at
    loo = np.empty(2)
    for i, (ell, signal, noise) in enumerate((per_feature, isotropic)):
        ell = torch.as_tensor(np.broadcast_to(np.asarray(ell, dtype=np.float64), (X.shape[1],)).copy())
        try:
            with torch.no_grad():
                loo[i] = float(loo_error(kernel_at(X, X, ell), y, noise / signal))
        except torch.linalg.LinAlgError:
            loo[i] = math.inf
    enough = X.shape[0] >= MIN_ROWS_PER_LENGTHSCALE * X.shape[1]
    keep = enough and math.isfinite(loo[0]) and loo[0] <= ratio * loo[1]
    return KERNEL_CHOICES[0] if keep else KERNEL_CHOICES[1], loo
