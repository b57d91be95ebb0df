"""RandomFeatures: the seeded feature blocks as a scikit-learn transformer (like RBFSampler)."""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._device import resolve_device, to_numpy, to_tensor
from .._validation import Integral, Interval, Real, StrOptions
from ..features import KERNELS, make_feature_map, resolve_sigma
from ._base import assign_parameters
from ._kernel_param import KernelParameter

__all__ = ["RandomFeatures"]


class RandomFeatures(TransformerMixin, BaseEstimator):
    """Random features ``Φ(x)`` with ``Φ(x)ᵀΦ(y) ≈ k(x, y)``, drawn in seeded blocks.

    The same blocks (a pure function of ``(random_state, j)``) that the DSG estimators
    regenerate; ``n_components`` features are ``n_components / block_size`` blocks, concatenated
    and scaled by ``1/sqrt(n_blocks)``.

    Parameters
    ----------
    kernel : str, default="rbf"
        A registered kernel ("rbf", "laplace", "matern", ...).
    n_components : int, default=256
        Number of features ``D``.
    sigma : float or "median", default="median"
        Bandwidth; ``gamma = 1/(2σ²)`` in scikit-learn's RBF notation.
    sigma_scale : float, default=1.0
        Multiplier of the median heuristic (ignored when ``sigma`` is a number).
    kernel_params : dict, default=None
    block_size : int, default=None
        Features per block; ``None`` uses ``gcd(n_components, 1024)``.
    random_state : int, RandomState or None
    device : {"auto", "cpu", "cuda"}, default="cpu"

    Attributes
    ----------
    feature_map_ : FeatureMap
    sigma_ : float
    seed_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from kernelstream import RandomFeatures
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> rf = RandomFeatures(n_components=4096, sigma=2.0, random_state=0).fit(X)
    >>> Z = rf.transform(X)
    >>> bool(np.abs(Z @ Z.T - rf.kernel(X, X)).max() < 0.1)
    True
    """

    _parameter_constraints = {
        "kernel": [str],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "sigma": [Interval(Real, 0, None, closed="neither"), StrOptions({"median"})],
        "sigma_scale": [Interval(Real, 0, None, closed="neither")],
        "kernel_params": [dict, None],
        "block_size": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "device": [str],
    }

    def __init__(self, *, kernel="rbf", n_components=256, sigma="median", sigma_scale=1.0,
                 kernel_params=None, block_size=None, random_state=None, device="cpu"):
        assign_parameters(self, locals())

    def fit(self, X, y=None):
        """Resolve the bandwidth from ``X`` and fix the seed; no weights are stored."""
        self._validate_params()
        if self.kernel not in KERNELS:
            raise ValueError(f"Unknown kernel {self.kernel!r}; choose one of {sorted(KERNELS)}.")
        block_size = self.block_size or math.gcd(self.n_components, 1024)
        if self.n_components % block_size:
            raise ValueError(f"n_components={self.n_components} must be a multiple of "
                             f"block_size={block_size}.")
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32])
        seed = int(check_random_state(self.random_state).randint(0, 2**63 - 1, dtype=np.int64))
        feature_map = make_feature_map(self.kernel, X.shape[1], 1.0, block_size, seed,
                                       kernel_params=self.kernel_params)
        feature_map.sigma = resolve_sigma(self.sigma, X, type(feature_map).distance,
                                          self.sigma_scale, seed=seed % 2**32)
        self.device_ = resolve_device(self.device)
        self.feature_map_, self.sigma_, self.seed_ = feature_map, feature_map.sigma, seed
        self.n_blocks_ = self.n_components // block_size
        return self

    def transform(self, X):
        """``Φ(X)``, shape ``(n, n_components)``, in the dtype of ``X`` (float32 or float64)."""
        check_is_fitted(self, "feature_map_")
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False)
        dtype = torch.float32 if X.dtype == np.float32 else torch.float64
        out = np.empty((X.shape[0], self.n_components), dtype=X.dtype)
        step = 4096
        for i in range(0, X.shape[0], step):
            rows = to_tensor(X[i : i + step], dtype, self.device_)
            out[i : i + step] = to_numpy(self.feature_map_.transform(rows, self.n_blocks_))
        return out

    kernel = KernelParameter()

    def _kernel_matrix(self, X, Y=None):
        """The exact kernel matrix ``k(X, Y)`` (``Y = X`` when omitted); called as ``kernel(X, Y)``."""
        check_is_fitted(self, "feature_map_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        Y = X if Y is None else validate_data(self, Y, accept_sparse="csr", dtype=np.float64, reset=False)
        K = self.feature_map_.kernel(to_tensor(X, torch.float64, self.device_),
                                     to_tensor(Y, torch.float64, self.device_))
        return to_numpy(K)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
