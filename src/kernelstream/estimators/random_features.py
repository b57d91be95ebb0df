"""RandomFeatures: the seeded feature blocks as a scikit-learn transformer (like RBFSampler)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._device import resolve_device, to_numpy, to_tensor
from .._validation import Integral, Interval, Real, StrOptions
from ..glossary import constraints
from ..features import FeatureMap, build_feature_map, kernel_class, make_feature_map
from .._state import feature_map_from_config
from ..rng import draw_seed
from ._base import assign_parameters
from ._estimator import KernelEstimator
from ._sources import is_source, sample_of

__all__ = ["RandomFeatures"]

_ROWS_PER_CHUNK = 4096  # transform evaluates this many rows at a time


class RandomFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, KernelEstimator):
    """Random features ``Φ(x)`` with ``Φ(x)ᵀΦ(y) ≈ k(x, y)``, drawn in seeded blocks.

    The same blocks (a pure function of ``(random_state, j)``) that the DSG estimators
    regenerate. ``n_components`` features are ``⌊n_components / block_size⌋`` blocks of
    ``block_size`` features plus, when it does not divide, one last block of the remainder
    (drawn as block number ``⌊n_components / block_size⌋`` at that size); block ``j`` of ``r_j``
    features is scaled by ``sqrt(r_j / n_components)``, so that ``E[Φ(x)ᵀΦ(y)] = k(x, y)``.

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
        Features per block; ``None`` draws all ``n_components`` features as one block (the
        structured and sketched families are most accurate with the largest blocks).
    random_state : int, RandomState or None
    device : {"auto", "cpu", "cuda"}, default="auto"
    n_jobs : int or None, default=None
        Threads: ``None`` is one, ``-1`` every thread the environment allows (see
        :class:`DSGRegressor`).

    Attributes
    ----------
    feature_map_ : FeatureMap
    sigma_ : float
    seed_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names (a pandas DataFrame).

    Examples
    --------
    >>> import numpy as np
    >>> from kernelstream import RandomFeatures
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> rf = RandomFeatures(n_components=4096, sigma=2.0, random_state=0).fit(X)
    >>> Z = rf.transform(X)
    >>> bool(np.abs(Z @ Z.T - rf.kernel_matrix(X, X)).max() < 0.1)
    True
    >>> rf.get_feature_names_out()[:2].tolist()
    ['randomfeatures0', 'randomfeatures1']
    """

    _state_attributes = ("n_features_in_", "feature_names_in_", "feature_map_")

    _parameter_constraints = {
        **constraints("kernel", "sigma_scale", "kernel_params", "random_state", "device",
                      "n_jobs"),
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "sigma": [Interval(Real, 0, None, closed="neither"), StrOptions({"median"})],
        "block_size": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, kernel="rbf", n_components=256, sigma="median", sigma_scale=1.0,
                 kernel_params=None, block_size=None, random_state=None, device="auto",
                 n_jobs=None):
        assign_parameters(self, locals())

    def fit(self, X, y=None):
        """Resolve the bandwidth from ``X`` and fix the seed; no weights are stored.

        Raises
        ------
        ValueError
            If the kernel is unknown, a block size does not suit it, or ``X`` has negative
            entries for a kernel on histograms (``"chi2"``, ``"additive_chi2"``, ...).
        """
        self._validate_params()
        kernel_class(self.kernel)  # an unknown name fails here, with the registered names
        if is_source(X):  # a seeded sample gives the width and the median heuristic
            X = sample_of(X)
        X = self._check_X(X, reset=True, magnitude=np.float64)
        seed = draw_seed(self.random_state)
        block_size = self.block_size or self.n_components
        with self._explain_block_size(block_size):
            feature_map = build_feature_map(self.kernel, X, sigma=self.sigma,
                                            sigma_scale=self.sigma_scale, block_size=block_size,
                                            seed=seed, kernel_params=self.kernel_params)
        self._set_feature_map(feature_map)
        self.device_ = resolve_device(self.device)
        return self

    @contextmanager
    def _explain_block_size(self, block_size: int) -> Iterator[None]:
        """Re-raise a family's refusal of ``block_size`` as an error saying which size is wrong."""
        try:
            yield
        except ValueError as exc:
            if "block_size" not in str(exc):
                raise
            raise ValueError(f"n_components={self.n_components} with block_size="
                             f"{self.block_size} needs a block of {block_size} features, which "
                             f"kernel {self.kernel!r} cannot draw ({exc}). Choose n_components "
                             "(and block_size) accordingly.") from None

    def _state_builders(self, device) -> dict:
        return {"feature_map_": feature_map_from_config}

    def _after_load_state(self) -> None:
        self._set_feature_map(self.feature_map_)

    def _set_feature_map(self, feature_map: FeatureMap) -> None:
        """Fitted state of ``feature_map`` (from ``fit`` or a model file): the map, the map of
        the last, smaller block when the block size does not divide ``n_components``, and the
        attributes read from them (``seed_``, ``sigma_``)."""
        r = feature_map.block_size
        n_full, rest = divmod(self.n_components, r)
        self._tail_map = None
        if rest:
            with self._explain_block_size(rest):  # the same kernel at the same bandwidth
                self._tail_map = make_feature_map(self.kernel, feature_map.n_features_in,
                                                  feature_map.sigma, rest, feature_map.seed,
                                                  kernel_params=self.kernel_params)
        self.feature_map_, self._n_full_blocks = feature_map, n_full
        self.sigma_, self.seed_ = feature_map.sigma, feature_map.seed
        self._n_features_out = self.n_components

    def transform(self, X):
        """``Φ(X)``, shape ``(n, n_components)``, in the dtype of ``X`` (float32 or float64)."""
        check_is_fitted(self, "feature_map_")
        X = self._check_X(X, reset=False, magnitude=np.float64)
        dtype = torch.float32 if X.dtype == np.float32 else torch.float64
        out = np.empty((X.shape[0], self.n_components), dtype=X.dtype)
        for i in range(0, X.shape[0], _ROWS_PER_CHUNK):
            rows = to_tensor(X[i : i + _ROWS_PER_CHUNK], dtype, self.device_)
            out[i : i + _ROWS_PER_CHUNK] = to_numpy(self._features(rows))
        return out

    def _features(self, rows: torch.Tensor) -> torch.Tensor:
        """The blocks of ``rows`` concatenated, block ``j`` of ``r_j`` features times
        ``sqrt(r_j / n_components)``."""
        fm, n_full, D = self.feature_map_, self._n_full_blocks, self.n_components
        if self._tail_map is None:
            return fm.transform(rows, n_full)  # times n_full^(-1/2)
        parts = [self._tail_map.features(rows, [n_full]).reshape(rows.shape[0], -1)
                 * (self._tail_map.block_size / D) ** 0.5]
        if n_full:
            parts.insert(0, fm.features(rows, range(n_full)).reshape(rows.shape[0], -1)
                         * (fm.block_size / D) ** 0.5)
        return torch.cat(parts, dim=1)

    def kernel_matrix(self, X, Y=None):
        """The exact kernel matrix ``k(X, Y)``, ``(n, m)`` (``Y = X`` when omitted), in float64.

        The kernel the features approximate, with the fitted bandwidth ``sigma_``.
        """
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
