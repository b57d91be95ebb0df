"""GP hyper-parameters by maximising the exact marginal likelihood on a small sample (ML-II).

``log p(z) = −½ zᵀ(aK_σ + s²I)⁻¹z − ½ log|aK_σ + s²I| − n/2 log 2π`` over the bandwidth σ, the
amplitude ``a`` and the noise variance ``s²`` (log-parametrised, L-BFGS, float64). Used by GoGP
on its warm-start portion: O(n³) once, with ``n`` capped by the caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

__all__ = ["GPHyperparameters", "fit_gp_hyperparameters", "neg_log_marginal_likelihood"]

#: kernel(sigma, A, B) -> (n, m) with ``sigma`` a 0-d tensor (autograd flows through it)
KernelOfSigma = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class GPHyperparameters:
    sigma: float
    amplitude: float
    noise: float
    nll: float


def neg_log_marginal_likelihood(K: torch.Tensor, z: torch.Tensor, amplitude, noise) -> torch.Tensor:
    """``−log p(z)`` for ``z ~ N(0, a K + s² I)`` by one Cholesky factorisation, O(n³)."""
    n = z.shape[0]
    C = amplitude * K + noise * torch.eye(n, dtype=K.dtype, device=K.device)
    L = torch.linalg.cholesky(C)
    v = torch.cholesky_solve(z[:, None], L)[:, 0]
    return 0.5 * z @ v + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)


def fit_gp_hyperparameters(kernel: KernelOfSigma, X: torch.Tensor, z: torch.Tensor, *,
                           sigma0: float, fit_sigma: bool = True, noise0: float = 0.1,
                           fit_noise: bool = True, max_iter: int = 60) -> GPHyperparameters:
    """ML-II estimate of ``(σ, a, s²)``; a fixed noise also fixes ``a = 1`` (noise in units of z).

    Starts from ``σ0·{0.5, 1, 2}`` (bandwidth) and keeps the best optimum; a failed Cholesky
    (too small a noise) scores ``+inf``.
    """
    X, z = X.double(), z.double()
    best = None
    starts = [sigma0 * f for f in (0.5, 1.0, 2.0)] if fit_sigma else [sigma0]
    for start in starts:
        params = torch.tensor([math.log(start), 0.0, math.log(noise0)], dtype=torch.float64,
                              device=X.device, requires_grad=True)
        mask = torch.tensor([fit_sigma, fit_noise, fit_noise], dtype=torch.float64, device=X.device)
        base = params.detach().clone()

        def objective():
            p = base + mask * (params - base)  # frozen entries stay at their start
            sigma, amp, noise = torch.exp(p[0]), torch.exp(p[1]), torch.exp(p[2]) + 1e-8
            return neg_log_marginal_likelihood(kernel(sigma, X, X), z, amp, noise) / len(z)

        optimizer = torch.optim.LBFGS([params], max_iter=max_iter, line_search_fn="strong_wolfe")

        def closure():
            optimizer.zero_grad()
            loss = objective()
            loss.backward()
            return loss

        try:
            if fit_sigma or fit_noise:
                optimizer.step(closure)
            with torch.no_grad():
                value = float(objective()) * len(z)
        except (RuntimeError, torch.linalg.LinAlgError):  # Cholesky failed on this path
            continue
        if math.isfinite(value) and (best is None or value < best.nll):
            p = (base + mask * (params - base)).detach()
            best = GPHyperparameters(math.exp(p[0]), math.exp(p[1]), math.exp(p[2]) + 1e-8, value)
    if best is None:
        best = GPHyperparameters(sigma0, 1.0, noise0, math.inf)
    return best
