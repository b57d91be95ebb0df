"""The two losses of the paper's baselines, with what each algorithm needs of them.

Primal objective of every baseline (Shalev-Shwartz & Zhang 2013, and the DSG paper's
``ν/2 ‖f‖²`` with ``ν = λ``): ``P(w) = (1/n) Σ_i φ(wᵀx_i, y_i) + λ/2 ‖w‖²``.

- :class:`Hinge`: ``φ(u, y) = max(0, 1 − y u)``, labels ±1 (kernel SVM).
- :class:`Squared`: ``φ(u, y) = ½ (u − y)²`` (kernel ridge regression, GP posterior mean).

Each gives its value, a (sub)gradient in ``u`` (NORMA, Pegasos), the dual term ``−φ*(−α)`` and
the exact sequential SDCA sweep over a mini-batch of coordinates (SDCA), and the radius of the
ball that holds the optimum (Pegasos' projection).
"""

from __future__ import annotations

import math

import torch

__all__ = ["LOSSES", "Hinge", "Squared", "get_loss"]


class Hinge:
    """``φ(u, y) = max(0, 1 − y u)`` for ``y ∈ {−1, +1}``."""

    name = "hinge"

    @staticmethod
    def value(u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (1 - y * u).clamp(min=0)

    @staticmethod
    def derivative(u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """A subgradient: ``−y`` where ``y u < 1``, else 0."""
        return torch.where(y * u < 1, -y, torch.zeros_like(u))

    @staticmethod
    def dual_value(alpha: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``−φ*(−α) = α y`` on the dual box ``α y ∈ [0, 1]`` (SSZ 2013, hinge loss)."""
        return alpha * y

    @staticmethod
    def sdca_sweep(G: torch.Tensor, u: torch.Tensor, y: torch.Tensor,
                   alpha: torch.Tensor) -> torch.Tensor:
        """Increments ``Δ`` of one sequential SDCA pass over a batch's coordinates, in order.

        ``G = X_B X_Bᵀ/(λn)`` (or the kernel's), ``u = X_B w`` before the pass. Coordinate i
        (SSZ 2013's closed form for the hinge loss):
        ``Δ_i = y_i clip((1 − y_i u_i)/G_ii + α_i y_i, 0, 1) − α_i``, then ``u += Δ_i G[:, i]``.
        """
        u = u.clone()
        delta = torch.zeros_like(u)
        diag = G.diagonal().tolist()
        for i, (y_i, a_i, q_i) in enumerate(zip(y.tolist(), alpha.tolist(), diag)):
            if q_i <= 0:  # x_i = 0: the dual term alone decides, α_i y_i = 1
                step = y_i - a_i
            else:
                step = y_i * min(1.0, max(0.0, (1 - y_i * float(u[i])) / q_i + a_i * y_i)) - a_i
            if step != 0.0:
                delta[i] = step
                u.add_(G[i], alpha=step)  # G is symmetric: row i = column i
        return delta

    @staticmethod
    def ball_radius(y: torch.Tensor, lam: float) -> float:
        """Pegasos' ``1/√λ``: the optimum lies in that ball (Shalev-Shwartz et al. 2011,
        the optional projection step)."""
        return 1 / math.sqrt(lam)

    @staticmethod
    def check_targets(y: torch.Tensor) -> None:
        if y.ndim != 1 or not bool(((y == 1) | (y == -1)).all()):
            raise ValueError("the hinge loss needs a 1-D y of labels -1 and +1; got values "
                             f"{torch.unique(y)[:5].tolist()} with shape {tuple(y.shape)}. "
                             "Map the two classes to -1 and +1 first.")


class Squared:
    """``φ(u, y) = ½ (u − y)²`` (one or several outputs)."""

    name = "squared"

    @staticmethod
    def value(u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return 0.5 * (u - y).square()

    @staticmethod
    def derivative(u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return u - y

    @staticmethod
    def dual_value(alpha: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``−φ*(−α) = α y − α²/2``."""
        return alpha * y - 0.5 * alpha.square()

    @staticmethod
    def sdca_sweep(G: torch.Tensor, u: torch.Tensor, y: torch.Tensor,
                   alpha: torch.Tensor) -> torch.Tensor:
        """The sequential SDCA pass in closed form: coordinate i sets
        ``Δ_i = (y_i − u_i − Σ_{j<i} G_ij Δ_j − α_i)/(1 + G_ii)`` (SSZ 2013's closed form for the
        squared loss, with the ½ of φ), so ``(I + tril(G)) Δ = y − u − α``: one triangular
        solve, O(b²)."""
        system = torch.eye(G.shape[0], dtype=G.dtype) + torch.tril(G)
        rhs = (y - u - alpha).unsqueeze(1)
        return torch.linalg.solve_triangular(system, rhs, upper=False).squeeze(1)

    @staticmethod
    def ball_radius(y: torch.Tensor, lam: float) -> float:
        """``√(2 P(0)/λ) = √(mean y²/λ)``: ``λ/2 ‖w*‖² ≤ P(w*) ≤ P(0) = ½ mean y²``."""
        return math.sqrt(float(y.square().mean()) / lam)

    @staticmethod
    def check_targets(y: torch.Tensor) -> None:
        return None


#: name -> loss
LOSSES = {"hinge": Hinge, "squared": Squared}


def get_loss(name: str):
    """The loss called ``name``; a ``ValueError`` naming the choices otherwise."""
    if name not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}; got {name!r}.")
    return LOSSES[name]
