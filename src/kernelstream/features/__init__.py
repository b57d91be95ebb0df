"""Random-feature maps and the kernel registry shared by every estimator.

==================================  ===========================================  =================
``kernel=``                         k(x, y)                                      ``kernel_params``
==================================  ===========================================  =================
rbf, gaussian                       exp(−‖x − y‖²/(2σ²))                         sampling
laplace                             exp(−‖x − y‖₁/σ)                             sampling
matern, matern12/32/52              Matérn ν, length-scale σ                     nu, sampling
rbf_orf, rbf_qmc, rbf_halton        rbf, orthogonal / Sobol / Halton draws       (preset sampling)
rbf_fastfood                        rbf by Fastfood blocks, O(r log d)
polynomial                          (⟨x, y⟩/σ² + c)^p by TensorSketch            degree, coef0
exp_dot                             exp(⟨x, y⟩/σ²) by random Maclaurin           max_degree
dot_product                         Σ a_N (⟨x, y⟩/σ²)^N by random Maclaurin      coefs
arccos, arccos0/1/2                 arc-cosine of order n on x/σ                 order, sampling
chi2, exp_chi2                      exp(−γ Σ (x − y)²/(x + y)), γ = 1/(2σ²)      gamma, order
additive_chi2                       Σ 2xy/(x + y), Vedaldi–Zisserman             order, interval
intersection, hellinger, js         additive on histograms, Vedaldi–Zisserman    order, interval
==================================  ===========================================  =================

``sampling`` is ``"iid"`` (default), ``"orthogonal"`` (not for laplace), ``"sobol"`` or
``"halton"`` (:mod:`kernelstream.features.structured`). Families whose kernel has no bandwidth
(arccos of order 0, the additive ones) ignore ``sigma``: their ``sigma`` is 1.0 whatever is
given, so estimators report ``sigma_ = 1.0`` for them.

The χ² names follow scikit-learn: ``"chi2"`` is its ``chi2_kernel`` (the exponentiated χ²) and
``"additive_chi2"`` the additive kernel ``Σ 2xy/(x + y)`` (``additive_chi2_kernel`` up to sign
and the ``Σx + Σy`` terms). Until this naming, ``"chi2"`` meant the additive kernel.
"""

from __future__ import annotations

from .additive import AdditiveChi2, ExpChi2, Hellinger, Intersection, JensenShannon
from .bandwidth import gamma_to_sigma, median_distance, resolve_sigma, sigma_to_gamma
from .base import FeatureMap
from .dot_product import ArcCosine, RandomMaclaurin, TensorSketch
from .shift_invariant import GaussianRFF, LaplaceRFF, MaternRFF, fourier_features
from .structured import FastfoodRBF

__all__ = [
    "AdditiveChi2",
    "ArcCosine",
    "ExpChi2",
    "FastfoodRBF",
    "FeatureMap",
    "GaussianRFF",
    "Hellinger",
    "Intersection",
    "JensenShannon",
    "LaplaceRFF",
    "MaternRFF",
    "RandomMaclaurin",
    "TensorSketch",
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

    ``cls`` implements the :class:`FeatureMap` contract: ``kernel(X, Y)`` (exact),
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
    ...     def kernel(self, X, Y):
    ...         return torch.exp(-torch.cdist(X, Y).square() / (8 * self.sigma**2))
    >>> register_kernel("wide_rbf", WideRBF)
    >>> for name in ("linear_rp", "wide_rbf"):  # (leave the registry as it was)
    ...     del KERNELS[name]
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
        feature_map = cls(n_features_in, sigma, block_size, seed, **params, **kw)
    except TypeError as exc:
        raise ValueError(f"Bad kernel_params {kernel_params!r} for kernel {name!r}: {exc}") from exc
    feature_map.alias = name  # its errors name the kernel the user asked for
    return feature_map
