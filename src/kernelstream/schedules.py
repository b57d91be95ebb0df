"""Step-size schedules ``γ_t`` as callables of the 1-based step ``t``.

The paper's ``θ/(t + t0)`` and the authors' MATLAB ``η0/(1 + η1 t)`` are one family:
``InverseDecay(eta0, t0)`` is ``η0/(1 + t/t0)`` = ``θ/(t + t0)`` with ``θ = η0·t0``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Constant", "InverseDecay", "InverseScaling", "make_schedule", "SCHEDULES"]


@dataclass(frozen=True)
class Constant:
    """``γ_t = η0``."""

    eta0: float

    def __call__(self, t: int) -> float:
        return self.eta0


@dataclass(frozen=True)
class InverseDecay:
    """``γ_t = η0 / (1 + t/t0)`` (= ``θ/(t + t0)`` with ``θ = η0 t0``; MATLAB ``η1 = 1/t0``)."""

    eta0: float
    t0: float

    def __call__(self, t: int) -> float:
        return self.eta0 / (1.0 + t / self.t0)


@dataclass(frozen=True)
class InverseScaling:
    """``γ_t = η0 / t^p`` (scikit-learn's ``invscaling``)."""

    eta0: float
    power_t: float

    def __call__(self, t: int) -> float:
        return self.eta0 / max(t, 1) ** self.power_t


SCHEDULES = ("inverse", "constant", "invscaling")


def make_schedule(kind: str, eta0: float, t0: float = 1.0, power_t: float = 0.5):
    """The schedule named ``kind`` ("inverse", "constant" or "invscaling")."""
    if kind == "inverse":
        return InverseDecay(eta0, t0)
    if kind == "constant":
        return Constant(eta0)
    if kind == "invscaling":
        return InverseScaling(eta0, power_t)
    raise ValueError(f"Unknown learning_rate {kind!r}; choose one of {SCHEDULES}.")
