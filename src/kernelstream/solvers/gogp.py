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
    ``P = (Σ c_s d_s d_sᵀ)⁻¹`` by Sherman–Morrison, ``γ ← γ + P d c(z − dᵀγ)/(1 + c dᵀPd)``,
    ``r = Σ c_s z_s d_s``. A new member extends ``P⁻¹`` by a diagonal entry (past projections
    do not involve it), so ``P⁻¹ ⪰ diag(c)`` stays well conditioned. With ``θ → 0`` every
    ``d_s = e_s`` and ``μ`` is the exact posterior mean after one pass.
``"sgd"``
    The paper's update (the step before Lemma 2): ``α_t = f(x_t) − z_t``, ``w ← (t−1)/t · w``,
    then a new member gets ``−2α_t/(λt)`` or ``w_U ← w_U − 2α_t/(λt) · d`` (projection onto all
    of ``U`` or onto its ``n_neighbors`` nearest members), ``λ = 2s²/N``; projection onto the
    ball ``‖w‖ ≤ z_max/√λ`` when ``λ < 2``; optional iterate averaging. ``f(x) = k_U(x)ᵀw``.

Budget: past ``max_inducing`` members, the most redundant one — largest ``[G⁻¹]_uu``, i.e. the
smallest distance ``1/[G⁻¹]_uu`` of ``Φ̃(u)`` to the span of the others — leaves ``U``; the
data projected on it are re-projected on the rest (``Φ̃(u) ≈ Σ_v e_v Φ̃(v)``,
``e = −G⁻¹_{-u,u}/G⁻¹_uu``, so ``d ← d_{-u} + d_u e``).

Matrices live in preallocated buffers (capacity doubles when full); only the leading
``|U| × |U|`` block is used.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from .._state import SolverState

__all__ = ["GoGPKernelState", "schur_grow", "schur_shrink"]

Kernel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def schur_grow(out: torch.Tensor, d: torch.Tensor, g: float) -> None:
    """In place: ``out[:m+1, :m+1] = [[G, k], [kᵀ, κ]]⁻¹`` from ``out[:m, :m] = G⁻¹``,
    ``d = G⁻¹k`` and ``g = κ − kᵀd`` (the Schur complement), O(m²)."""
    m = d.shape[0]
    out[:m, :m].addr_(d, d, alpha=1.0 / g)  # G⁻¹ + d dᵀ/g
    out[:m, m] = -d / g
    out[m, :m] = -d / g
    out[m, m] = 1.0 / g


def schur_shrink(Ginv: torch.Tensor, j: int) -> torch.Tensor:
    """Inverse of ``G`` without row/column ``j``: ``A − a aᵀ/a_jj`` on the rest, O(m²)."""
    a = Ginv[:, j]
    reduced = Ginv - torch.outer(a, a) / a[j]
    keep = torch.arange(Ginv.shape[0], device=Ginv.device) != j
    return reduced[keep][:, keep]


def check_finite_update(mean: float, var: float, direction: torch.Tensor) -> None:
    """Refuse a point whose prediction, variance or projection is not finite (nothing is
    committed yet)."""
    if not (math.isfinite(mean) and math.isfinite(var) and bool(torch.isfinite(direction).all())):
        raise FloatingPointError(
            "GoGP met a non-finite prediction: the kernel matrix of the inducing set is "
            "numerically singular at these hyper-parameters, or the inputs are far outside the "
            "scale seen so far. Standardise X, or set a larger noise.")


class GoGPKernelState(SolverState):
    """Inducing set, ``(K_UU + s²I)⁻¹`` and the mean learner of the GoGP kernel variant.

    All tensors float64 on one device; no scikit-learn. ``update`` learns one point (returning
    the prediction made *before* learning it); ``predict`` gives mean and latent variance.
    """

    _state_fields = ("noise", "theta", "solver", "max_inducing", "n_neighbors", "average", "z_max",
                     "n_total", "size", "t", "n_removed", "_Ub", "_mats", "_vecs")

    def __init__(self, kernel: Kernel, noise: float, theta: float, *, solver: str = "rls",
                 max_inducing: int | None = None, n_neighbors: int | None = None,
                 average: bool = False, z_max: float = 1.0, n_total: int = 1,
                 n_features_in: int = 1, device=None, capacity: int = 64) -> None:
        self.kernel, self.noise, self.theta = kernel, float(noise), float(theta)
        self.solver, self.max_inducing, self.n_neighbors = solver, max_inducing, n_neighbors
        self.average, self.z_max, self.n_total = average, float(z_max), int(n_total)
        self.size, self.t, self.n_removed = 0, 0, 0
        self._opts = dict(dtype=torch.float64, device=device)
        self._Ub = torch.empty((capacity, n_features_in), **self._opts)
        self._mats = {name: torch.zeros((capacity, capacity), **self._opts)
                      for name in ("Ginv", "P", "K")}   # (K_UU+s²I)⁻¹; RLS P; K_UU (sgd ball)
        self._vecs = {name: torch.zeros(capacity, **self._opts)
                      for name in ("gamma", "r", "w", "w_avg")}

    # -- views on the buffers -------------------------------------------------------------
    @property
    def U(self) -> torch.Tensor:
        return self._Ub[:self.size]

    def __getattr__(self, name):
        mats, vecs = self.__dict__.get("_mats", {}), self.__dict__.get("_vecs", {})
        if name in mats:
            return mats[name][:self.size, :self.size]
        if name in vecs:
            return vecs[name][:self.size]
        raise AttributeError(name)

    def _reserve(self, m: int) -> None:
        """Double the buffers when ``m`` rows do not fit."""
        cap = self._Ub.shape[0]
        if m <= cap:
            return
        new = max(m, 2 * cap)
        Ub = torch.empty((new, self._Ub.shape[1]), **self._opts)
        Ub[:cap] = self._Ub
        self._Ub = Ub
        for name, A in self._mats.items():
            B = torch.zeros((new, new), **self._opts)
            B[:cap, :cap] = A
            self._mats[name] = B
        for name, v in self._vecs.items():
            B = torch.zeros(new, **self._opts)
            B[:cap] = v
            self._vecs[name] = B

    # -- geometry -------------------------------------------------------------------------
    def _kxx(self, x: torch.Tensor) -> float:
        return float(self.kernel(x[None], x[None])[0, 0])

    def project(self, x: torch.Tensor):
        """``k_U(x)``, ``d = G⁻¹k_U(x)``, ``σ²(x) = k(x,x) − k_U·d`` and the index of an equal member."""
        if self.size == 0:
            empty = self._Ub.new_zeros(0)
            return empty, empty, self._kxx(x), None
        k = self.kernel(x[None], self.U)[0]                       # O(|U|·d)
        d = self.Ginv @ k                                         # O(|U|²)
        var = self._kxx(x) - float(k @ d)
        same = torch.nonzero((self.U == x).all(dim=1))
        return k, d, max(var, 0.0), (int(same[0, 0]) if len(same) else None)

    # -- one point ------------------------------------------------------------------------
    def update(self, x: torch.Tensor, z: float, weight: float = 1.0) -> float:
        """Learn ``(x, z)`` with data weight ``c``; returns ``μ(x)`` predicted before learning."""
        k, d, var, same = self.project(x)
        if same is not None:  # Φ̃(x) = Φ̃(u): a second observation of a member
            d = torch.zeros_like(d)
            d[same] = 1.0
            var = 0.0
        joins = same is None and math.sqrt(var) > self.theta
        mean = float(d @ self.gamma) if self.solver == "rls" else float(k @ self.w)
        check_finite_update(mean, var, d)  # before anything changes: a failed point commits nothing
        self.t += 1
        if self.solver == "rls":
            self._rls_step(x, z, weight, k, d, var, joins, mean)
        else:
            self._sgd_step(x, z, k, d, var, joins, same is not None, mean)
        if self.max_inducing is not None and self.size > self.max_inducing:
            self.remove(self.most_redundant())
        return mean

    def _grow(self, x, k, d, var) -> int:
        """Append ``x`` to U; ``g = var + s²`` is the squared distance of ``Φ̃(x)`` to the span."""
        m = self.size
        self._reserve(m + 1)
        schur_grow(self._mats["Ginv"], d, var + self.noise)
        self._Ub[m] = x
        self.size = m + 1
        return m

    def _rls_step(self, x, z, c, k, d, var, joins, mean) -> None:
        if joins:  # P⁻¹ ← blockdiag(P⁻¹, c): past projections do not involve x
            j = self._grow(x, k, d, var)
            self._mats["P"][j, :j + 1] = 0.0
            self._mats["P"][:j + 1, j] = 0.0
            self._mats["P"][j, j] = 1.0 / c
            self._vecs["r"][j] = c * z
            self._vecs["gamma"][j] = z
            return
        P = self.P
        Pd = P @ d                                               # O(|U|²)
        denom = 1.0 + c * float(d @ Pd)
        self.gamma.add_(Pd, alpha=c * (z - mean) / denom)        # γ ← γ + P_new d c (z − dᵀγ)
        P.addr_(Pd, Pd, alpha=-c / denom)                        # Sherman–Morrison
        self.r.add_(d, alpha=c * z)

    def _sgd_step(self, x, z, k, d, var, joins, same, mean) -> None:
        t = self.t
        lam = 2.0 * self.noise / max(self.n_total, 1)
        step = 2.0 * (mean - z) / (lam * t)                      # 2α_t/(λt)
        self.w.mul_((t - 1.0) / t)
        if joins:
            j = self._grow(x, k, d, var)
            K = self._mats["K"]
            K[j, :j] = k
            K[:j, j] = k
            K[j, j] = self._kxx(x)
            self._vecs["w"][j] = -step
            self._vecs["w_avg"][j] = 0.0
        else:
            self.w.sub_(step * (d if same else self._neighbour_projection(k, d)))
        if lam < 2.0:  # Π_S: ball of radius z_max/√λ, ‖w‖² = wᵀK_UU w
            norm = max(float(self.w @ (self.K @ self.w)), 0.0) ** 0.5
            radius = self.z_max / lam**0.5
            if norm > radius:
                self.w.mul_(radius / norm)
        if self.average:
            self.w_avg.add_((self.w - self.w_avg) / t)

    def _neighbour_projection(self, k, d) -> torch.Tensor:
        """``d`` over all of U, or over its ``n_neighbors`` nearest members (zeros elsewhere)."""
        if self.n_neighbors is None or self.n_neighbors >= self.size:
            return d
        idx = torch.topk(k, self.n_neighbors).indices  # largest k = nearest for shift-invariant k
        G = self.K[idx][:, idx] + self.noise * torch.eye(len(idx), **self._opts)
        out = torch.zeros_like(d)
        out[idx] = torch.linalg.solve(G, k[idx])  # O(n_neighbors³)
        return out

    # -- budget ---------------------------------------------------------------------------
    def most_redundant(self) -> int:
        """Member with the largest ``[G⁻¹]_uu``: the nearest to the span of the others."""
        return int(torch.argmax(torch.diagonal(self.Ginv)))

    def remove(self, j: int) -> None:
        """Drop member ``j``, re-projecting what was learnt on it onto the others, O(|U|²)."""
        Ginv = self.Ginv
        e = -Ginv[:, j] / Ginv[j, j]                  # Φ̃(u_j) ≈ Σ_v e_v Φ̃(u_v)
        keep = torch.arange(self.size, device=Ginv.device) != j
        e = e[keep]
        new = {"Ginv": schur_shrink(Ginv, j)}
        vecs = {}
        if self.solver == "rls":
            new["P"], vecs["r"] = self._rls_removed(j, keep, e)
            vecs["gamma"] = new["P"] @ vecs["r"]
        else:
            vecs["w"] = self.w[keep] + self.w[j] * e
            vecs["w_avg"] = self.w_avg[keep] + self.w_avg[j] * e
            new["K"] = self.K[keep][:, keep]
        m = self.size - 1
        self._Ub[:m] = self.U[keep].clone()
        for name, A in new.items():
            self._mats[name][:m, :m] = A
        for name, v in vecs.items():
            self._vecs[name][:m] = v
        self.size = m
        self.n_removed += 1

    def _rls_removed(self, j, keep, e):
        """``d ← Td`` with ``T = [I | e]``: ``P ← (T P⁻¹ Tᵀ)⁻¹ = Y₁₁ − y₁₂y₁₂ᵀ/y₂₂``, ``r ← T r``.

        ``Y = S⁻ᵀ P S⁻¹`` for ``S = [[I, e], [0, 1]]``: ``Y₁₁ = P₁₁``, ``y₁₂ = p₁₂ − P₁₁e``,
        ``y₂₂ = p₂₂ − 2p₁₂ᵀe + eᵀP₁₁e``; O(|U|²).
        """
        P = self.P
        P11, p12, p22 = P[keep][:, keep], P[keep, j], P[j, j]
        P11e = P11 @ e
        y12 = p12 - P11e
        y22 = p22 - 2.0 * (p12 @ e) + e @ P11e
        return P11 - torch.outer(y12, y12) / y22, self.r[keep] + self.r[j] * e

    # -- prediction -----------------------------------------------------------------------
    def predict(self, X: torch.Tensor, chunk: int = 2048):
        """Mean and latent variance ``σ²(x) = k(x,x) − k_Uᵀ G⁻¹ k_U`` (Prop. 1) for rows of X."""
        coef = self.gamma if self.solver == "rls" else (self.w_avg if self.average else self.w)
        means, variances = [], []
        for i in range(0, X.shape[0], chunk):
            Xb = X[i:i + chunk]
            kdiag = torch.diagonal(self.kernel(Xb, Xb)).clone()
            if self.size == 0:
                means.append(torch.zeros(len(Xb), **self._opts))
                variances.append(kdiag)
                continue
            K = self.kernel(Xb, self.U)                  # (n, m)
            D = K @ self.Ginv                            # projection coefficients, (n, m)
            means.append(D @ coef if self.solver == "rls" else K @ coef)
            variances.append(torch.clamp(kdiag - (D * K).sum(1), min=0.0))
        return torch.cat(means), torch.cat(variances)
