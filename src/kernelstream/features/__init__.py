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

A map is built once, bandwidth included, and never changed (:class:`FeatureMap`):
:func:`build_feature_map` looks the kernel up in the registry (:mod:`.registry`), resolves
``sigma="median"`` on the data and constructs the map; :func:`make_feature_map` takes a number.

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
from .registry import (KERNELS, build_feature_map, kernel_class, make_feature_map, register_kernel,
                       resolve_bandwidth)
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
    "build_feature_map",
    "fourier_features",
    "gamma_to_sigma",
    "make_feature_map",
    "median_distance",
    "register_kernel",
    "resolve_bandwidth",
    "resolve_sigma",
    "sigma_to_gamma",
]

