"""GP hyper-parameters by maximising the exact marginal likelihood on a small sample (ML-II).

``log p(z) = −½ zᵀ(aK_σ + s²I)⁻¹z − ½ log|aK_σ + s²I| − n/2 log 2π`` over the bandwidth σ, the
amplitude ``a`` and the noise variance ``s²`` (log-parametrised, SciPy's L-BFGS-B, float64). Used by GoGP
on its warm-start portion: O(n³) once, with ``n`` capped by the caller.

The kernel is a pure function of the bandwidth, ``(X, Y, σ) ↦ k_σ(X, Y)``, such as a feature
map's :meth:`~kernelstream.features.FeatureMap.kernel_at`: nothing is copied or changed while σ
moves, and the caller builds its map once with the fitted σ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from scipy.optimize import minimize

from ..features.shift_invariant import GaussianRFF
from ..ops.linalg import gaussian_gram

__all__ = ["GPHyperparameters", "fit_gp_hyperparameters", "fit_gp_hyperparameters_coarse_to_fine",
           "lengthscale_spread", "neg_log_marginal_likelihood", "nll_weights", "EVIDENCE_NATS",
           "evidence_ftol"]

#: L-BFGS-B stops once an iteration gains less than this many nats of ``log p(z)`` over the
#: rows: far inside the hyper-parameters' own uncertainty (a nat or so), and half the
#: evaluations of SciPy's default ``ftol`` (diabetes: 109 → 45, at RMSE within 1e-5 relative;
#: docs/decisions/gp-exact-route.md)
EVIDENCE_NATS = 0.01


def evidence_ftol(n_rows: int, nats: float = EVIDENCE_NATS) -> float:
    """SciPy's relative ``ftol`` for an objective of ``−log p`` per row that should stop at a gain
    of ``nats`` in total: ``nats/n`` (the objective is of order one)."""
    return nats / max(1, n_rows)

#: kernel(X, Y, sigma) -> (n, m) with ``sigma`` a 0-d tensor (autograd flows through it)
KernelOfSigma = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class GPHyperparameters:
    sigma: float  # or the given (d,) lengthscales when σ is not fitted
    amplitude: float
    noise: float
    nll: float


def neg_log_marginal_likelihood(K: torch.Tensor, z: torch.Tensor, amplitude, noise) -> torch.Tensor:
    """``−log p(z)`` for ``z ~ N(0, a K + s² I)`` by one Cholesky factorisation, O(n³).

    ``z`` of shape ``(n, c)`` is ``c`` independent outputs sharing the kernel: the sum of their
    ``−log p``.
    """
    n = z.shape[0]
    Z = z.reshape(n, -1)
    C = amplitude * K + noise * torch.eye(n, dtype=K.dtype, device=K.device)
    L = torch.linalg.cholesky(C)
    V = torch.cholesky_solve(Z, L)
    log_det_half = torch.log(torch.diagonal(L)).sum()
    return 0.5 * (Z * V).sum() + Z.shape[1] * (log_det_half + 0.5 * n * math.log(2 * math.pi))


def fit_gp_hyperparameters(kernel: KernelOfSigma, X: torch.Tensor, z: torch.Tensor, *,
                           sigma0: float | np.ndarray, fit_sigma: bool = True, noise0: float = 0.1,
                           fit_noise: bool = True, max_iter: int = 60,
                           sigma_factors: tuple = (0.5, 1.0, 2.0),
                           amplitude0: float = 1.0) -> GPHyperparameters:
    """ML-II estimate of ``(σ, a, s²)``; a fixed noise also fixes ``a = amplitude0`` (noise in
    units of z). With ``fit_sigma=False``, ``sigma0`` is used exactly and may be a ``(d,)``
    array of per-feature lengthscales (per-feature fits: :mod:`kernelstream.solvers.lengthscales`).

    Starts from ``σ0·sigma_factors`` (bandwidth) and keeps the best optimum; a failed Cholesky
    (too small a noise) scores ``+inf``.
    """
    X, z = X.double().contiguous(), z.double().contiguous()  # products of one layout: one rounding
    best = None
    starts = [sigma0 * f for f in sigma_factors] if fit_sigma else [sigma0]
    free = np.array([fit_sigma, fit_noise, fit_noise])
    # the Gaussian kernel at one bandwidth: the gradient in closed form, no autograd
    gaussian = (getattr(kernel, "__func__", None) is GaussianRFF.kernel_at
                and np.ndim(sigma0) == 0)
    for start in starts:
        base = np.array([math.log(start) if fit_sigma else 0.0, math.log(amplitude0),
                         math.log(noise0)])

        def objective(p: torch.Tensor) -> torch.Tensor:
            sigma = torch.exp(p[0]) if fit_sigma else start  # a given σ: exactly that one
            amp, noise = torch.exp(p[1]), torch.exp(p[2]) + 1e-8
            return neg_log_marginal_likelihood(kernel(X, X, sigma), z, amp, noise) / len(z)

        def value_and_gradient(free_values: np.ndarray) -> tuple[float, np.ndarray]:
            p = base.copy()
            p[free] = free_values  # frozen entries stay at their start
            if gaussian:
                value, gradient = _gaussian_value_and_gradient(X, z, p, fit_sigma, start)
                return value, gradient[free]
            params = torch.tensor(p, dtype=torch.float64, device=X.device, requires_grad=True)
            try:
                loss = objective(params)
                loss.backward()
            except (RuntimeError, torch.linalg.LinAlgError):  # not positive definite: back off
                return math.inf, np.zeros(int(free.sum()))
            return float(loss.detach()), params.grad.cpu().numpy()[free]

        p = base.copy()
        if free.any():  # scipy's L-BFGS-B (torch.optim's imports torch._dynamo: 1.4 s, once)
            result = minimize(value_and_gradient, base[free], jac=True, method="L-BFGS-B",
                              options=dict(maxiter=max_iter, ftol=evidence_ftol(len(z))))
            p[free] = result.x
        try:
            with torch.no_grad():
                value = float(objective(torch.tensor(p, dtype=torch.float64, device=X.device))) * len(z)
        except (RuntimeError, torch.linalg.LinAlgError):  # Cholesky failed at the optimum
            continue
        if math.isfinite(value) and (best is None or value < best.nll):
            best = GPHyperparameters(math.exp(p[0]) if fit_sigma else start, math.exp(p[1]),
                                     math.exp(p[2]) + 1e-8, value)
    if best is None:
        best = GPHyperparameters(sigma0, amplitude0, noise0, math.inf)
    return best


def nll_weights(C: torch.Tensor, y: torch.Tensor) -> tuple[float, torch.Tensor]:
    """``−log p(Y)/(mc)`` for the ``c`` columns of ``Y`` i.i.d. ``N(0, C)`` and its gradient in
    ``C``, ``W = (cC⁻¹ − AAᵀ)/(2mc)`` with ``A = C⁻¹Y``: ``d(−log p)/(mc) = Σ_ij W_ij dC_ij``.
    One Cholesky factorisation, O(m³)."""
    Y = y.reshape(y.shape[0], -1)
    m, c = Y.shape
    L = torch.linalg.cholesky(C)
    alpha = torch.cholesky_solve(Y, L)
    log_det_half = float(torch.log(torch.diagonal(L)).sum())
    value = 0.5 * float((Y * alpha).sum()) + c * (log_det_half + 0.5 * m * math.log(2 * math.pi))
    W = torch.cholesky_inverse(L).addmm_(alpha, alpha.T, beta=1 / (2 * m), alpha=-1 / (2 * m * c))
    return value / (m * c), W


def lengthscale_spread(Z: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``Σ_ij G_ij (z_ik − z_jk)²`` for each column ``k`` of ``Z`` ``(m, d)`` and a symmetric
    ``G``: ``2(Σ_j G_ij)ᵀz_k² − 2 z_kᵀGz_k``, O(m²d). With ``Z = X/ℓ`` and ``G = W ⊙ K`` of the
    Gaussian kernel, the gradient of ``Σ W_ij K_ij`` in ``log ℓ_k``."""
    return 2 * (G.sum(dim=1) @ Z.square()) - 2 * (Z * (G @ Z)).sum(dim=0)


def _gaussian_value_and_gradient(X: torch.Tensor, z: torch.Tensor, p: np.ndarray,
                                 fit_sigma: bool, sigma: float) -> tuple[float, np.ndarray]:
    """``−log p(z)/n`` of the Gaussian kernel at ``p = [log σ, log a, log s²]`` (``σ`` the
    given one without ``fit_sigma``) and its gradient in ``p``: with ``W = (cC⁻¹ − ααᵀ)/2n``
    (``α = C⁻¹z``, ``C = aK + (s² + 10⁻⁸)I``) and ``G = W ⊙ aK``, ``∂/∂log σ = Σ_ij G_ij
    ‖x_i − x_j‖²/σ²``, ``∂/∂log a = Σ G``, ``∂/∂log s² = s² tr W``. One Cholesky, O(n³ + n²d);
    ``inf`` where ``C`` is not positive definite."""
    sigma = math.exp(p[0]) if fit_sigma else float(sigma)
    amplitude, noise_part = math.exp(p[1]), math.exp(p[2])
    n = z.shape[0]
    scaled = X / sigma
    K = gaussian_gram(scaled, scaled, 1.0)
    C = amplitude * K
    C.diagonal().add_(noise_part + 1e-8)
    try:
        value, W = nll_weights(C, z)  # per entry of z: times its columns, per row
    except torch.linalg.LinAlgError:  # not positive definite here: the line search backs off
        return math.inf, np.zeros(3)
    columns = z.numel() // n  # W and the value per entry of z: times its columns, per row
    trace = columns * float(torch.diagonal(W).sum())
    G = W.mul_(K)  # W ⊙ K in place; the factor a·columns is applied to the sums
    scale = amplitude * columns
    spread = scale * float(lengthscale_spread(scaled, G).sum())
    return value * columns, np.array([spread, scale * float(G.sum()), noise_part * trace])


def fit_gp_hyperparameters_coarse_to_fine(kernel: KernelOfSigma, X: torch.Tensor,
                                          z: torch.Tensor, *, n_coarse: int = 250,
                                          min_coarse: int = 100,
                                          **kwargs) -> GPHyperparameters:
    """:func:`fit_gp_hyperparameters` from every bandwidth start on the first
    ``m = min(n_coarse, n/2)`` rows (``(m/n)³`` of the cost), then once on all rows from that
    optimum; every start on all rows when ``m < min_coarse``.

    The rows should be in random order. Arguments as :func:`fit_gp_hyperparameters`.
    """
    coarse_rows = min(n_coarse, X.shape[0] // 2)
    if coarse_rows < min_coarse:
        return fit_gp_hyperparameters(kernel, X, z, **kwargs)
    coarse = fit_gp_hyperparameters(kernel, X[:coarse_rows], z[:coarse_rows], **kwargs)
    if not math.isfinite(coarse.nll):
        return fit_gp_hyperparameters(kernel, X, z, **kwargs)
    fine = dict(kwargs, sigma0=coarse.sigma, sigma_factors=(1.0,))
    if kwargs.get("fit_noise", True):
        fine.update(noise0=coarse.noise, amplitude0=coarse.amplitude)
    return fit_gp_hyperparameters(kernel, X, z, **fine)
