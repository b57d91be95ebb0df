"""Random-feature maps and the kernel registry shared by every estimator."""

from __future__ import annotations

from .bandwidth import gamma_to_sigma, median_distance, resolve_sigma, sigma_to_gamma
from .base import FeatureMap
from .shift_invariant import GaussianRFF, LaplaceRFF, MaternRFF, fourier_features

__all__ = [
    "FeatureMap",
    "GaussianRFF",
    "LaplaceRFF",
    "MaternRFF",
    "KERNELS",
    "fourier_features",
    "gamma_to_sigma",
    "make_feature_map",
    "median_distance",
    "register_kernel",
    "resolve_sigma",
    "sigma_to_gamma",
]

#: name -> (FeatureMap subclass, default family parameters)
KERNELS: dict[str, tuple[type[FeatureMap], dict]] = {
    "rbf": (GaussianRFF, {}),
    "gaussian": (GaussianRFF, {}),
    "laplace": (LaplaceRFF, {}),
    "matern": (MaternRFF, {"nu": 1.5}),
    "matern12": (MaternRFF, {"nu": 0.5}),
    "matern32": (MaternRFF, {"nu": 1.5}),
    "matern52": (MaternRFF, {"nu": 2.5}),
}


def register_kernel(name: str, cls: type[FeatureMap], **defaults) -> None:
    """Make ``cls`` available as ``kernel=name`` to :class:`RandomFeatures` and every estimator.

    Examples
    --------
    >>> import torch
    >>> from kernelstream.features import GaussianRFF, register_kernel
    >>> class WideRBF(GaussianRFF):
    ...     name = "wide_rbf"
    ...     def _draw(self, block, device):
    ...         return super()._draw(block, device) / 2   # bandwidth 2σ
    ...     def kernel(self, X, Y):
    ...         return torch.exp(-torch.cdist(X, Y).square() / (8 * self.sigma**2))
    >>> register_kernel("wide_rbf", WideRBF)
    """
    if not (isinstance(cls, type) and issubclass(cls, FeatureMap)):
        raise TypeError(f"cls must be a FeatureMap subclass; got {cls!r}.")
    KERNELS[name] = (cls, dict(defaults))


def kernel_class(name: str) -> type[FeatureMap]:
    if name not in KERNELS:
        raise ValueError(f"Unknown kernel {name!r}; choose one of {sorted(KERNELS)} "
                         "or add yours with kernelstream.features.register_kernel.")
    return KERNELS[name][0]


def make_feature_map(name: str, n_features_in: int, sigma: float, block_size: int, seed: int,
                     kernel_params: dict | None = None, **kw) -> FeatureMap:
    """Instantiate the registered family ``name`` with its defaults updated by ``kernel_params``."""
    cls = kernel_class(name)
    params = {**KERNELS[name][1], **(kernel_params or {})}
    try:
        return cls(n_features_in, sigma, block_size, seed, **params, **kw)
    except TypeError as exc:
        raise ValueError(f"Bad kernel_params {kernel_params!r} for kernel {name!r}: {exc}") from exc
