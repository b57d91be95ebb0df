"""Losses of the kernel machines (Dai et al. 2014, Section 4): a value and a derivative in ``u``.

``u`` is the model output, shape ``(b, C)``; ``y`` is the target in the encoding the loss
expects (``±1`` for margin losses, real values for regression losses, class indices for
softmax). Derivatives are (sub)gradients ``∂ℓ(u, y)/∂u`` of the same shape as ``u``.
Conventions: squared loss carries ``½``; squared hinge does not (as scikit-learn).
"""

from __future__ import annotations

import inspect
from typing import ClassVar

import torch
import torch.nn.functional as F

__all__ = ["Loss", "LOSSES", "get_loss"]


class Loss:
    """Base class: ``value(u, y)`` per sample and ``derivative(u, y)``."""

    name: ClassVar[str] = ""
    #: "regression", "margin" (y in {-1, +1}) or "multiclass" (y class indices)
    kind: ClassVar[str] = "regression"
    has_proba: ClassVar[bool] = False
    #: ``1/L`` for a bound ``L`` on ``∂²ℓ/∂u²``: the preconditioned step is a Gauss–Newton step
    #: with the Hessian block ``L·ΨᵀΨ/b``, so one ``eta0`` serves every loss. Piecewise-linear
    #: losses have no curvature; theirs is set by the size of the (sub)gradient.
    step_scale: ClassVar[float] = 1.0

    def value(self, u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def derivative(self, u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Squared(Loss):
    """``½ (u − y)²``.

    >>> Squared().derivative(torch.tensor([3.0]), torch.tensor([1.0]))
    tensor([2.])
    """

    name = "squared"

    def value(self, u, y):
        return 0.5 * (u - y).square()

    def derivative(self, u, y):
        return u - y


class Huber(Loss):
    """``½ r²`` for ``|r| ≤ δ``, ``δ(|r| − ½δ)`` beyond, with ``r = u − y``.

    >>> Huber(1.0).derivative(torch.tensor([3.0, 0.5]), torch.tensor([0.0, 0.0]))
    tensor([1.0000, 0.5000])
    """

    name = "huber"

    def __init__(self, delta: float = 1.0):
        self.delta = float(delta)

    def value(self, u, y):
        r = (u - y).abs()
        return torch.where(r <= self.delta, 0.5 * r.square(), self.delta * (r - 0.5 * self.delta))

    def derivative(self, u, y):
        return (u - y).clamp(-self.delta, self.delta)


class EpsilonInsensitive(Loss):
    """``max(0, |u − y| − ε)`` (support vector regression).

    >>> EpsilonInsensitive(0.5).derivative(torch.tensor([2.0, 0.2]), torch.tensor([0.0, 0.0]))
    tensor([1., 0.])
    """

    name = "epsilon_insensitive"

    def __init__(self, epsilon: float = 0.1):
        self.epsilon = float(epsilon)

    def value(self, u, y):
        return ((u - y).abs() - self.epsilon).clamp_min(0)

    def derivative(self, u, y):
        r = u - y
        return torch.sign(r) * (r.abs() > self.epsilon).to(u.dtype)


class Absolute(Loss):
    """``|u − y|``.

    >>> Absolute().derivative(torch.tensor([2.0, -1.0]), torch.tensor([0.0, 0.0]))
    tensor([ 1., -1.])
    """

    name = "absolute"

    def value(self, u, y):
        return (u - y).abs()

    def derivative(self, u, y):
        return torch.sign(u - y)


class Quantile(Loss):
    """Pinball loss ``max(τ(y − u), (1 − τ)(u − y))``; its minimiser is the τ-quantile.

    >>> Quantile(0.9).derivative(torch.tensor([2.0, -1.0]), torch.tensor([0.0, 0.0]))
    tensor([ 0.1000, -0.9000])
    """

    name = "quantile"

    def __init__(self, quantile: float = 0.5):
        self.quantile = float(quantile)

    def value(self, u, y):
        r = y - u
        return torch.maximum(self.quantile * r, (self.quantile - 1) * r)

    def derivative(self, u, y):
        return (u > y).to(u.dtype) - self.quantile  # 1[u > y] − τ


class Hinge(Loss):
    """``max(0, 1 − y u)`` (SVM).

    >>> Hinge().derivative(torch.tensor([0.5, 2.0]), torch.tensor([1.0, 1.0]))
    tensor([-1., -0.])
    """

    name = "hinge"
    kind = "margin"
    step_scale = 2.0  # measured: a9a, MNIST 8-vs-6

    def value(self, u, y):
        return (1 - y * u).clamp_min(0)

    def derivative(self, u, y):
        return -y * (y * u < 1).to(u.dtype)


class SquaredHinge(Loss):
    """``max(0, 1 − y u)²`` (L2-SVM).

    >>> SquaredHinge().derivative(torch.tensor([0.5]), torch.tensor([1.0]))
    tensor([-1.])
    """

    name = "squared_hinge"
    kind = "margin"
    step_scale = 0.5  # ℓ'' = 2 inside the margin

    def value(self, u, y):
        return (1 - y * u).clamp_min(0).square()

    def derivative(self, u, y):
        return -2 * y * (1 - y * u).clamp_min(0)


class Logistic(Loss):
    """``log(1 + exp(−y u))``, computed as ``softplus(−y u)`` (finite for any ``u``).

    >>> Logistic().derivative(torch.tensor([0.0]), torch.tensor([1.0]))
    tensor([-0.5000])
    """

    name = "logistic"
    kind = "margin"
    has_proba = True
    step_scale = 4.0  # ℓ'' = σ(u)(1 − σ(u)) ≤ 1/4

    def value(self, u, y):
        return F.softplus(-y * u)

    def derivative(self, u, y):
        return -y * torch.sigmoid(-y * u)


class Softmax(Loss):
    """Multiclass cross-entropy ``−u_y + log Σ_c exp(u_c)``; ``y`` holds class indices.

    >>> Softmax().derivative(torch.zeros(1, 2), torch.tensor([1]))
    tensor([[ 0.5000, -0.5000]])
    """

    name = "softmax"
    kind = "multiclass"
    has_proba = True
    step_scale = 4.0  # as logistic; see docs/decisions/softmax-step-scale.md

    def value(self, u, y):
        return torch.logsumexp(u, dim=1) - u.gather(1, y.view(-1, 1)).squeeze(1)

    def derivative(self, u, y):
        g = torch.softmax(u, dim=1)  # softmax(u) − onehot(y)
        g[torch.arange(u.shape[0], device=u.device), y] -= 1
        return g


class OneClass(Loss):
    """Novelty detection ``max(0, −u)`` with ``u = f(x) − τ`` (one-class SVM, Dai et al. §4).

    The offset ``τ`` is the negated intercept; its ``−ντ`` term enters as the constant
    ``intercept_offset = ν`` of :class:`~kernelstream.solvers.DSGConfig`.

    >>> OneClass().derivative(torch.tensor([-0.5, 0.5]), torch.tensor([0.0, 0.0]))
    tensor([-1., -0.])
    """

    name = "one_class"
    kind = "one_class"

    def value(self, u, y):
        return (-u).clamp_min(0)

    def derivative(self, u, y):
        return -(u < 0).to(u.dtype)


class KLDensityRatio(Loss):
    """KL density-ratio loss: ``−u`` on numerator samples (``y = 1``), ``exp(u)`` on
    denominator samples (``y = 0``). ``min E_q[e^f] − E_p[f]`` is attained at ``f = log p/q``.

    >>> KLDensityRatio().derivative(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 0.0]))
    tensor([-1.,  1.])
    """

    name = "kl_ratio"
    kind = "density_ratio"

    def value(self, u, y):
        return torch.where(y > 0, -u, torch.exp(u.clamp_max(50.0)))

    def derivative(self, u, y):
        return torch.where(y > 0, -torch.ones_like(u), torch.exp(u.clamp_max(50.0)))


LOSSES: dict[str, type[Loss]] = {
    cls.name: cls
    for cls in (Squared, Huber, EpsilonInsensitive, Absolute, Quantile, Hinge, SquaredHinge,
                Logistic, Softmax, OneClass, KLDensityRatio)
}
LOSSES["log_loss"] = Logistic


def get_loss(name: str, **params) -> Loss:
    """Instantiate a loss by name; ``params`` go to its constructor (e.g. ``delta=1.0``)."""
    if name not in LOSSES:
        raise ValueError(f"Unknown loss {name!r}; choose one of {sorted(LOSSES)}.")
    cls = LOSSES[name]
    accepted = inspect.signature(cls).parameters
    return cls(**{k: v for k, v in params.items() if k in accepted})
