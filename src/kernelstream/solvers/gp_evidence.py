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

__all__ = ["GPHyperparameters", "fit_gp_hyperparameters", "fit_gp_hyperparameters_coarse_to_fine",
           "neg_log_marginal_likelihood"]

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
    X, z = X.double(), z.double()
    best = None
    starts = [sigma0 * f for f in sigma_factors] if fit_sigma else [sigma0]
    free = np.array([fit_sigma, fit_noise, fit_noise])
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
                              options=dict(maxiter=max_iter))
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


def fit_gp_hyperparameters_coarse_to_fine(kernel: KernelOfSigma, X: torch.Tensor,
                                          z: torch.Tensor, *, n_coarse: int = 250,
                                          **kwargs) -> GPHyperparameters:
    """:func:`fit_gp_hyperparameters` from every bandwidth start on the first ``n_coarse`` rows
    (``(n_coarse/n)³`` of the cost), then once on all rows from that optimum.

    The rows should be in random order. Arguments as :func:`fit_gp_hyperparameters`.
    """
    if X.shape[0] <= 2 * n_coarse:
        return fit_gp_hyperparameters(kernel, X, z, **kwargs)
    coarse = fit_gp_hyperparameters(kernel, X[:n_coarse], z[:n_coarse], **kwargs)
    if not math.isfinite(coarse.nll):
        return fit_gp_hyperparameters(kernel, X, z, **kwargs)
    fine = dict(kwargs, sigma0=coarse.sigma, sigma_factors=(1.0,))
    if kwargs.get("fit_noise", True):
        fine.update(noise0=coarse.noise, amplitude0=coarse.amplitude)
    return fit_gp_hyperparameters(kernel, X, z, **fine)
