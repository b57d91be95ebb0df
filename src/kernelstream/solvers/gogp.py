"""GoGP kernel variant: an inducing set chosen by distance to its span, on torch tensors.

Geometry (Le et al., KAIS 2019, Prop. 1). With augmented features ``Φ̃(x)``,
``⟨Φ̃(x), Φ̃(x')⟩ = k(x, x') + s²·[x = x']``, the projection of ``Φ̃(x)`` onto ``span Φ̃(U)`` has
coefficients ``d(x) = (K_UU + s²I)⁻¹ k_U(x)``, and the posterior of the GP on ``U`` is

    μ(x) = d(x)ᵀ z_U,            σ²(x) = k(x, x) − k_U(x)ᵀ d(x).

A point joins ``U`` when ``σ(x) > θ`` (its distance to the span, noise left out), so ``θ → 0``
keeps every point and gives the exact GP. ``G⁻¹ = (K_UU + s²I)⁻¹`` is kept by Schur-complement
updates (grow and shrink), O(|U|²) each, never re-inverted.

Two learners of the mean, both O(|U|²) per point:

``"rls"`` (default)
    Prop. 1 with the labels of ``U`` replaced by *effective* labels ``γ``: ``μ(x) = d(x)ᵀγ``,
    ``γ = argmin Σ_s c_s (d_sᵀγ − z_s)²`` over every point seen, each represented by its projection
    coefficients ``d_s`` (``e_u`` for a member of ``U``). Kept by recursive least squares:
    ``M = Σ c_s d_s d_sᵀ`` with inverse ``P`` (Sherman–Morrison), ``r = Σ c_s z_s d_s``,
    ``γ = P r``. A new member extends ``M`` by a diagonal entry (its past projections do not
    involve it), so ``M ⪰ diag(c)`` stays well conditioned. With ``θ → 0`` every ``d_s = e_s``
    and ``μ`` is the exact posterior mean.
``"sgd"``
    The paper's update (the step before Lemma 2): ``α_t = f(x_t) − z_t``, ``w ← (t−1)/t · w``,
    then a new member gets ``−2α_t/(λt)`` or ``w_U ← w_U − 2α_t/(λt) · d`` (projection onto all
    of ``U`` or onto its ``n_neighbors`` nearest members), ``λ = 2s²/N``; projection onto the
    ball ``‖w‖ ≤ z_max/√λ`` when ``λ < 2``; optional iterate averaging. ``f(x) = k_U(x)ᵀw``.

Budget: past ``max_inducing`` members, the most redundant one — largest ``[G⁻¹]_uu``, i.e. the
smallest distance ``1/[G⁻¹]_uu`` of ``Φ̃(u)`` to the span of the others — leaves ``U``; the
data projected on it are re-projected on the rest (``Φ̃(u) ≈ Σ_v e_v Φ̃(v)``, ``e = −G⁻¹_{-u,u}/G⁻¹_uu``).
"""

from __future__ import annotations

import math
from typing import Callable

import torch

__all__ = ["GoGPKernelState", "schur_grow", "schur_shrink"]

Kernel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def schur_grow(Ginv: torch.Tensor, d: torch.Tensor, g: float) -> torch.Tensor:
    """Inverse of ``[[G, k], [kᵀ, κ]]`` from ``G⁻¹``, ``d = G⁻¹k`` and ``g = κ − kᵀd``: O(m²)."""
    m = Ginv.shape[0]
    out = Ginv.new_empty((m + 1, m + 1))
    out[:m, :m] = Ginv + torch.outer(d, d) / g  # G⁻¹ + d dᵀ/g
    out[:m, m] = out[m, :m] = -d / g
    out[m, m] = 1.0 / g
    return out


def schur_shrink(Ginv: torch.Tensor, j: int) -> torch.Tensor:
    """Inverse of ``G`` without row/column ``j``: ``A − a aᵀ/a_jj`` on the rest, O(m²)."""
    a = Ginv[:, j]
    reduced = Ginv - torch.outer(a, a) / a[j]
    keep = torch.arange(Ginv.shape[0], device=Ginv.device) != j
    return reduced[keep][:, keep]


class GoGPKernelState:
    """Inducing set, ``(K_UU + s²I)⁻¹`` and the mean learner of the GoGP kernel variant.

    All tensors float64 on one device; no scikit-learn. ``update`` learns one point (returning
    the prediction made *before* learning it); ``predict`` gives mean and variance.
    """

    def __init__(self, kernel: Kernel, noise: float, theta: float, *, solver: str = "rls",
                 max_inducing: int | None = None, n_neighbors: int | None = None,
                 average: bool = False, z_max: float = 1.0, n_total: int = 1,
                 n_features_in: int = 1, device=None) -> None:
        self.kernel, self.noise, self.theta = kernel, float(noise), float(theta)
        self.solver, self.max_inducing, self.n_neighbors = solver, max_inducing, n_neighbors
        self.average, self.z_max, self.n_total = average, float(z_max), int(n_total)
        opts = dict(dtype=torch.float64, device=device)
        self.U = torch.empty((0, n_features_in), **opts)
        self.Ginv = torch.empty((0, 0), **opts)        # (K_UU + s²I)⁻¹
        self.M = torch.empty((0, 0), **opts)           # Σ c d dᵀ          (rls)
        self.P = torch.empty((0, 0), **opts)           # M⁻¹               (rls)
        self.r = torch.empty(0, **opts)                # Σ c z d           (rls)
        self.w = torch.empty(0, **opts)                # coefficients      (sgd)
        self.w_avg = torch.empty(0, **opts)
        self.K = torch.empty((0, 0), **opts)           # K_UU              (sgd ball)
        self.gamma = torch.empty(0, **opts)            # effective labels  (rls)
        self.t = 0
        self.n_removed = 0

    # -- geometry -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.U.shape[0]

    def _kdiag(self, X: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.kernel(x[None], x[None])[0, 0] for x in X]) if len(X) < 2 \
            else torch.diagonal(self.kernel(X, X))

    def project(self, x: torch.Tensor):
        """``k_U(x)``, ``d = G⁻¹k_U(x)``, ``σ²(x) = k(x,x) − k_U·d`` and the index of an equal member."""
        k = self.kernel(x[None], self.U)[0]                       # O(|U|·d)
        d = self.Ginv @ k                                         # O(|U|²)
        var = float(self.kernel(x[None], x[None])[0, 0] - k @ d)
        same = torch.nonzero((self.U == x).all(dim=1))
        return k, d, max(var, 0.0), (int(same[0, 0]) if len(same) else None)

    # -- one point ------------------------------------------------------------------------
    def update(self, x: torch.Tensor, z: float, weight: float = 1.0) -> float:
        """Learn ``(x, z)`` with data weight ``c``; returns ``μ(x)`` predicted before learning."""
        self.t += 1
        k, d, var, same = self.project(x)
        if same is not None:  # Φ̃(x) = Φ̃(u): a second observation of a member
            d = torch.zeros_like(d)
            d[same] = 1.0
            var = 0.0
        joins = same is None and math.sqrt(var) > self.theta
        if self.solver == "rls":
            mean = float(d @ self.gamma) if self.size else 0.0
            self._rls_step(x, z, weight, k, d, var, joins, mean)
        else:
            mean = float(k @ self.w) if self.size else 0.0
            self._sgd_step(x, z, k, d, var, joins, same is not None, mean)
        if self.max_inducing is not None and self.size > self.max_inducing:
            self.remove(self.most_redundant())
        return mean

    def _grow(self, x, k, d, var) -> None:
        g = var + self.noise  # κ + s² − kᵀd: distance² of Φ̃(x) to span Φ̃(U)
        self.Ginv = schur_grow(self.Ginv, d, g)
        self.U = torch.cat([self.U, x[None]])

    def _rls_step(self, x, z, c, k, d, var, joins, mean) -> None:
        if joins:  # M ← blockdiag(M, c): past projections do not involve x
            self._grow(x, k, d, var)
            self.M = _pad(self.M)
            self.M[-1, -1] = c
            self.P = _pad(self.P)
            self.P[-1, -1] = 1.0 / c
            self.r = torch.cat([self.r, self.r.new_tensor([c * z])])
        else:  # Sherman–Morrison: P ← P − c P d dᵀ P / (1 + c dᵀPd)
            Pd = self.P @ d
            self.P -= torch.outer(Pd, Pd) * (c / (1.0 + c * float(d @ Pd)))
            self.M += c * torch.outer(d, d)
            self.r += (c * z) * d
        self.gamma = self.P @ self.r  # γ = M⁻¹ r, O(|U|²)

    def _sgd_step(self, x, z, k, d, var, joins, same, mean) -> None:
        t = self.t
        lam = 2.0 * self.noise / max(self.n_total, 1)
        alpha = mean - z
        step = 2.0 * alpha / (lam * t)  # 2α_t/(λt)
        self.w *= (t - 1.0) / t
        if joins:
            self._grow(x, k, d, var)
            self.K = _pad(self.K)
            self.K[-1, :-1] = self.K[:-1, -1] = k
            self.K[-1, -1] = self.kernel(x[None], x[None])[0, 0]
            self.w = torch.cat([self.w, self.w.new_tensor([-step])])
            self.w_avg = torch.cat([self.w_avg, self.w.new_zeros(1)])
        else:
            self.w -= step * (d if same else self._neighbour_projection(k, d))
        if lam < 2.0:  # Π_S: ball of radius z_max/√λ, ‖w‖² = wᵀK_UU w
            norm = float(self.w @ self.K @ self.w) ** 0.5
            radius = self.z_max / lam**0.5
            if norm > radius:
                self.w *= radius / norm
        if self.average:
            self.w_avg += (self.w - self.w_avg) / t

    def _neighbour_projection(self, k, d) -> torch.Tensor:
        """``d`` over all of U, or over its ``n_neighbors`` nearest members (zeros elsewhere)."""
        if self.n_neighbors is None or self.n_neighbors >= self.size:
            return d
        idx = torch.topk(k, self.n_neighbors).indices  # largest k = nearest for shift-invariant k
        G = self.K[idx][:, idx] + self.noise * torch.eye(len(idx), dtype=k.dtype, device=k.device)
        out = torch.zeros_like(d)
        out[idx] = torch.linalg.solve(G, k[idx])  # O(n_neighbors³)
        return out

    # -- budget ---------------------------------------------------------------------------
    def most_redundant(self) -> int:
        """Member with the largest ``[G⁻¹]_uu``: the nearest to the span of the others."""
        return int(torch.argmax(torch.diagonal(self.Ginv)))

    def remove(self, j: int) -> None:
        """Drop member ``j``, re-projecting what was learnt on it onto the others, O(|U|²)."""
        e = -self.Ginv[:, j] / self.Ginv[j, j]        # Φ̃(u_j) ≈ Σ_v e_v Φ̃(u_v)
        keep = torch.arange(self.size, device=self.U.device) != j
        e = e[keep]
        if self.solver == "rls":
            self._rls_remove(j, keep, e)
        else:
            self.w = self.w[keep] + self.w[j] * e
            self.w_avg = self.w_avg[keep]
            self.K = self.K[keep][:, keep]
        self.Ginv = schur_shrink(self.Ginv, j)
        self.U = self.U[keep]
        self.n_removed += 1

    def _rls_remove(self, j, keep, e) -> None:
        """``d ← d_{-j} + d_j e`` for every past point: ``M ← T M Tᵀ``, ``r ← T r``, ``P`` by Woodbury."""
        M11, m12, m22 = self.M[keep][:, keep], self.M[keep, j], self.M[j, j]
        p12, p22 = self.P[keep, j], self.P[j, j]
        B = self.P[keep][:, keep] - torch.outer(p12, p12) / p22      # M11⁻¹
        u, v = e, m12 + 0.5 * m22 * e                                # M11 + u vᵀ + v uᵀ
        W, V = torch.stack([u, v], 1), torch.stack([v, u], 1)
        BW = B @ W
        small = torch.eye(2, dtype=B.dtype, device=B.device) + V.T @ BW
        self.P = B - BW @ torch.linalg.solve(small, V.T @ B)         # Woodbury, rank 2
        self.M = M11 + torch.outer(u, v) + torch.outer(v, u)
        self.r = self.r[keep] + self.r[j] * e
        self.gamma = self.P @ self.r

    # -- prediction -----------------------------------------------------------------------
    def predict(self, X: torch.Tensor, chunk: int = 2048):
        """Mean and latent variance ``σ²(x) = k(x,x) − k_Uᵀ G⁻¹ k_U`` (Prop. 1) for rows of X."""
        means, variances = [], []
        coef = None
        if self.solver == "sgd":
            coef = self.w_avg if self.average else self.w
        for i in range(0, X.shape[0], chunk):
            Xb = X[i:i + chunk]
            kdiag = self._kdiag(Xb)
            if self.size == 0:
                means.append(torch.zeros(len(Xb), dtype=torch.float64, device=X.device))
                variances.append(kdiag)
                continue
            K = self.kernel(Xb, self.U)                  # (n, m)
            D = K @ self.Ginv                            # projection coefficients, (n, m)
            means.append(D @ self.gamma if coef is None else K @ coef)
            variances.append(torch.clamp(kdiag - (D * K).sum(1), min=0.0))
        return torch.cat(means), torch.cat(variances)


def _pad(A: torch.Tensor) -> torch.Tensor:
    m = A.shape[0]
    out = A.new_zeros((m + 1, m + 1))
    out[:m, :m] = A
    return out

