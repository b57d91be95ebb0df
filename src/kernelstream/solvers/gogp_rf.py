"""GoGP random-feature variant: ``w ∈ R^D`` on Fourier features, no inducing set.

``f(x) = φ(x)ᵀw`` with ``φ`` a seeded block of the registry's random features
(``φ(x)ᵀφ(x') ≈ k(x, x')``). The variance is that of Bayesian linear regression in feature
space, prior ``w ~ N(0, I)``, noise ``s²``:

    Σ = (I + Σ_s c_s φ_s φ_sᵀ / s²)⁻¹,    σ²(x) = φ(x)ᵀ Σ φ(x),

kept by Sherman–Morrison, O(D²) per point: ``Σ ← Σ − c Σφ φᵀΣ / (s² + c φᵀΣφ)``. The mean is
the posterior mean (``"rls"``: ``m ← m + c Σφ (z − φᵀm)/(s² + c φᵀΣφ)``) or the paper's SGD
step (``"sgd"``: ``w ← (t−1)/t · w − 2α_t/(λt) · φ``, ball ``‖w‖ ≤ z_max/√λ``, optional averaging).
"""

from __future__ import annotations

import torch

from .._state import SolverState
from .gogp import check_finite_update

__all__ = ["GoGPFeatureState"]


class GoGPFeatureState(SolverState):
    """Posterior of ``w`` (or the SGD iterate) over ``D`` random features; float64 tensors."""

    _state_fields = ("noise", "solver", "average", "z_max", "n_total", "Sigma", "w", "w_avg", "t")

    def __init__(self, n_components: int, noise: float, *, solver: str = "rls",
                 average: bool = False, z_max: float = 1.0, n_total: int = 1, device=None) -> None:
        opts = dict(dtype=torch.float64, device=device)
        self.noise, self.solver, self.average = float(noise), solver, average
        self.z_max, self.n_total = float(z_max), int(n_total)
        self.Sigma = torch.eye(n_components, **opts)   # posterior covariance of w
        self.w = torch.zeros(n_components, **opts)     # posterior mean (rls) or SGD iterate
        self.w_avg = torch.zeros(n_components, **opts)
        self.t = 0

    @property
    def coef(self) -> torch.Tensor:
        return self.w_avg if (self.solver == "sgd" and self.average) else self.w

    def update(self, phi: torch.Tensor, z: float, weight: float = 1.0) -> float:
        """Learn one feature vector ``φ`` with target ``z``; returns ``φᵀw`` before learning."""
        mean = float(phi @ self.coef)
        Sphi = self.Sigma @ phi                                # O(D²)
        denom = self.noise + weight * float(phi @ Sphi)        # s² + c φᵀΣφ
        check_finite_update(mean, denom, Sphi)  # before anything changes
        self.t += 1
        if self.solver == "rls":
            self.w += Sphi * (weight * (z - float(phi @ self.w)) / denom)
        else:
            self._sgd_step(phi, z)
        self.Sigma -= torch.outer(Sphi, Sphi) * (weight / denom)
        return mean

    def _sgd_step(self, phi, z) -> None:
        t = self.t
        lam = 2.0 * self.noise / max(self.n_total, 1)
        alpha = float(phi @ self.w) - z
        self.w *= (t - 1.0) / t
        self.w -= (2.0 * alpha / (lam * t)) * phi            # 2α_t/(λt) φ
        norm, radius = float(self.w.norm()), self.z_max / lam**0.5
        if lam < 2.0 and norm > radius:
            self.w *= radius / norm
        if self.average:
            self.w_avg += (self.w - self.w_avg) / t

    def predict(self, Phi: torch.Tensor):
        """Mean ``Φw`` and latent variance ``diag(Φ Σ Φᵀ)``."""
        return Phi @ self.coef, torch.clamp(((Phi @ self.Sigma) * Phi).sum(1), min=0.0)
