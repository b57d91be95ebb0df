"""The kernel registry: names to feature-map families, and building a map from a name.

A map is fully specified at construction, bandwidth included: :func:`build_feature_map` looks
the kernel up, resolves ``sigma`` (``"median"`` → ``sigma_scale ×`` the median heuristic in the
family's distance) and constructs the map once.
"""

from __future__ import annotations

import numpy as np

from .additive import AdditiveChi2, ExpChi2, Hellinger, Intersection, JensenShannon
from .bandwidth import resolve_sigma
from .base import FeatureMap
from .dot_product import ArcCosine, RandomMaclaurin, TensorSketch
from .shift_invariant import GaussianRFF, LaplaceRFF, MaternRFF
from .structured import FastfoodRBF

__all__ = ["KERNELS", "build_feature_map", "kernel_class", "make_feature_map", "register_kernel",
           "resolve_bandwidth"]

#: name -> (FeatureMap subclass, default family parameters)
KERNELS: dict[str, tuple[type[FeatureMap], dict]] = {
    "rbf": (GaussianRFF, {}),
    "gaussian": (GaussianRFF, {}),
    "laplace": (LaplaceRFF, {}),
    "matern": (MaternRFF, {"nu": 1.5}),
    "matern12": (MaternRFF, {"nu": 0.5}),
    "matern32": (MaternRFF, {"nu": 1.5}),
    "matern52": (MaternRFF, {"nu": 2.5}),
    "rbf_orf": (GaussianRFF, {"sampling": "orthogonal"}),
    "rbf_qmc": (GaussianRFF, {"sampling": "sobol"}),
    "rbf_halton": (GaussianRFF, {"sampling": "halton"}),
    "rbf_fastfood": (FastfoodRBF, {}),
    "polynomial": (TensorSketch, {}),
    "exp_dot": (RandomMaclaurin, {}),
    "dot_product": (RandomMaclaurin, {}),
    "arccos": (ArcCosine, {}),
    "arccos0": (ArcCosine, {"order": 0}),
    "arccos1": (ArcCosine, {"order": 1}),
    "arccos2": (ArcCosine, {"order": 2}),
    "chi2": (ExpChi2, {}),
    "additive_chi2": (AdditiveChi2, {}),
    "intersection": (Intersection, {}),
    "hellinger": (Hellinger, {}),
    "js": (JensenShannon, {}),
    "exp_chi2": (ExpChi2, {}),
}


def register_kernel(name: str, cls: type[FeatureMap], **defaults) -> None:
    """Make ``cls`` available as ``kernel=name`` to :class:`RandomFeatures` and every estimator.

    ``cls`` implements the :class:`FeatureMap` contract: ``kernel_at(X, Y, sigma)`` (exact, at
    any bandwidth; or ``kernel(X, Y)`` alone if σ is never fitted by marginal likelihood),
    ``_draw(block, device)`` (block parameters as one float64 tensor, a pure function of
    ``(self.seed, block)``: draw them with :mod:`kernelstream.rng`, never a global RNG) and
    ``_features(X, params)`` (``(n, K, r)`` with ``E[ψ(x)ᵀψ(y)] = k(x, y)`` per block). Its
    constructor takes ``(n_features_in, sigma, block_size, seed, **params)``; ``defaults`` are
    the ``params`` used unless ``kernel_params`` overrides them. For saved models to load,
    ``cls.name`` must be a registered name and ``extra_params()`` must return ``params``.

    Examples
    --------
    A map written from scratch: the linear kernel ``⟨x, y⟩/σ²`` by Gaussian projections,
    ``ψ(x) = Wᵀx / (σ√r)`` with ``W ~ N(0, I)``.

    >>> import torch
    >>> from kernelstream import rng
    >>> from kernelstream.features import FeatureMap, make_feature_map, register_kernel
    >>> class LinearProjections(FeatureMap):
    ...     name = "linear_rp"
    ...     def kernel(self, X, Y):
    ...         return X @ Y.T / self.sigma**2
    ...     def _draw(self, block, device):
    ...         shape = (self.n_features_in, self.block_size)
    ...         return rng.normal(shape, self.seed, block, rng.Stream.WEIGHTS, device)
    ...     def _features(self, X, params):
    ...         Z = X @ torch.cat(params, dim=1) / (self.sigma * self.block_size**0.5)
    ...         return Z.view(X.shape[0], len(params), self.block_size)
    >>> register_kernel("linear_rp", LinearProjections)
    >>> fm = make_feature_map("linear_rp", 3, 1.0, 256, seed=0)
    >>> X = torch.eye(3, dtype=torch.float64)
    >>> Z = fm.transform(X, 64)  # 64 blocks of 256 features
    >>> bool((Z @ Z.T - fm.kernel(X, X)).abs().max() < 0.05)
    True

    Every estimator now takes ``kernel="linear_rp"``. A variant of a built-in family:

    >>> import torch
    >>> from kernelstream.features import GaussianRFF, register_kernel
    >>> class WideRBF(GaussianRFF):
    ...     name = "wide_rbf"
    ...     def _draw(self, block, device):
    ...         return super()._draw(block, device) / 2   # bandwidth 2σ
    ...     def kernel_at(self, X, Y, sigma):
    ...         return torch.exp(-torch.cdist(X, Y).square() / (8 * sigma**2))
    >>> register_kernel("wide_rbf", WideRBF)
    >>> for name in ("linear_rp", "wide_rbf"):  # (leave the registry as it was)
    ...     del KERNELS[name]
    """
    if not (isinstance(cls, type) and issubclass(cls, FeatureMap)):
        raise TypeError(f"cls must be a FeatureMap subclass; got {cls!r}.")
    KERNELS[name] = (cls, dict(defaults))


def kernel_class(name: str) -> type[FeatureMap]:
    """The family registered as ``name``; a ``ValueError`` listing the registered names if none."""
    if name not in KERNELS:
        raise ValueError(f"Unknown kernel {name!r}; choose one of {sorted(KERNELS)} "
                         "or add yours with kernelstream.features.register_kernel.")
    return KERNELS[name][0]


def make_feature_map(name: str, n_features_in: int, sigma: float | np.ndarray, block_size: int,
                     seed: int, kernel_params: dict | None = None, **kw) -> FeatureMap:
    """Instantiate the registered family ``name`` with its defaults updated by ``kernel_params``,
    at the bandwidth ``sigma`` (a number, or per-feature lengthscales for rbf, laplace and
    matern; :func:`build_feature_map` resolves ``"median"``)."""
    cls = kernel_class(name)
    params = {**KERNELS[name][1], **(kernel_params or {})}
    try:
        feature_map = cls(n_features_in, sigma, block_size, seed, **params, **kw)
    except TypeError as exc:
        raise ValueError(f"Bad kernel_params {kernel_params!r} for kernel {name!r}: {exc}") from exc
    feature_map.alias = name  # its errors name the kernel the user asked for
    return feature_map


def resolve_bandwidth(kernel: str, X, sigma, sigma_scale: float = 1.0,
                      seed: int = 0) -> float | np.ndarray:
    """The bandwidth of ``kernel`` on ``X``: ``sigma`` itself when a number, a read-only float64
    copy when a 1-D array of per-feature lengthscales (one per column of ``X``, each positive
    and finite, else ``ValueError``), else ``σ = sigma_scale · median_{i<j} dist(x_i, x_j)`` on
    a subsample of ``X`` seeded by ``seed mod 2³²``, in the family's distance (``cityblock`` for
    laplace, else euclidean)."""
    return resolve_sigma(sigma, X, kernel_class(kernel).distance, sigma_scale, seed=seed % 2**32)


def build_feature_map(kernel: str, X, *, sigma, sigma_scale: float = 1.0, block_size: int,
                      seed: int, kernel_params: dict | None = None, **kw) -> FeatureMap:
    """The map of the registered family ``kernel`` on the columns of ``X``, built once.

    Parameters
    ----------
    kernel : str
        A registered name (:data:`KERNELS`); an unknown one raises ``ValueError`` listing them.
    X : array of shape (n, d)
        Data: its width is ``n_features_in``; its rows give the median heuristic.
    sigma : float, array of shape (d,) or "median"
        The bandwidth, exactly; per-feature lengthscales (rbf, laplace, matern); or
        ``sigma_scale ×`` the median distance (:func:`resolve_bandwidth`).
    sigma_scale : float, default=1.0
    block_size, seed, kernel_params, **kw
        As :func:`make_feature_map`.
    """
    bandwidth = resolve_bandwidth(kernel, X, sigma, sigma_scale, seed)
    return make_feature_map(kernel, X.shape[1], bandwidth, block_size, seed,
                            kernel_params=kernel_params, **kw)
