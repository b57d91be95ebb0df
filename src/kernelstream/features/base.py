"""The FeatureMap contract: an exact kernel plus seeded blocks of random features.

A feature map is a *specification*, not a cache of weights: block ``j``'s parameters are a pure
function of ``(seed, j)`` (see :mod:`kernelstream.rng`), so any block can be regenerated on any
device at any time. ``k(x, y) ≈ Σ_j ψ_j(x)ᵀ ψ_j(y) / J`` over ``J`` blocks, each of ``r`` features
normalised so that ``E[ψ_j(x)ᵀ ψ_j(y)] = k(x, y)``.

A map is also **immutable**: everything that defines it (bandwidth, seed, block size, family
parameters) is fixed at construction, and assigning any of them afterwards raises
``AttributeError``. A map is cheap to build (a seed and a few numbers), so code that needs
another bandwidth builds another map; code that needs the kernel as a function of the bandwidth
(the marginal likelihood) calls :meth:`FeatureMap.kernel_at`, which changes nothing.

**Subclassing.** Implement :meth:`kernel_at` (the exact kernel at a given bandwidth, for tests,
small problems and the marginal likelihood; :meth:`kernel` follows from it), or :meth:`kernel`
alone if the bandwidth is never fitted; :meth:`_draw` (parameters of one block as one tensor,
float64) and :meth:`_features` (features of several blocks at once, given their stacked
parameters). Register the class with
:func:`kernelstream.features.register_kernel` to make it available by name to every estimator.
"""

from __future__ import annotations

import os
from abc import ABC, ABCMeta, abstractmethod
from typing import ClassVar, Sequence

import torch

import numpy as np

from ..ops.sparse import CSRRows
from .bandwidth import check_lengthscales, is_lengthscale_vector
from .param_cache import ParamCache

#: floats of one chunk of rows: features (:mod:`kernelstream.solvers.feature_rows`) or kernel
#: entries (:meth:`FeatureMap.kernel_into`) computed at once
CHUNK_FLOATS = 1 << 21

__all__ = ["FeatureMap"]

#: default memory budget of drawn block parameters, per feature map (env KERNELSTREAM_CACHE_MB)
DEFAULT_CACHE_BYTES = int(float(os.environ.get("KERNELSTREAM_CACHE_MB", 32)) * 2**20)
_CHUNK_BYTES = 16 * 2**20  # generic contraction: feature matrix evaluated at a time
_PARAM_BYTES = 4 * 2**20  # generic contraction: block parameters gathered at a time


class _FrozenAfterInit(ABCMeta):
    """Metaclass that freezes an instance once its whole constructor chain has returned."""

    def __call__(cls, *args, **kwargs):
        instance = super().__call__(*args, **kwargs)
        object.__setattr__(instance, "_frozen", True)
        return instance


class FeatureMap(ABC, metaclass=_FrozenAfterInit):
    """Random features of one kernel family, in blocks of ``block_size`` features.

    Parameters
    ----------
    n_features_in : int
        Input dimension ``d``.
    sigma : float or array of shape (n_features_in,)
        Bandwidth (length-scale) of the kernel, fixed for the life of the map (as is every
        other argument: build a new map for another value). Families with
        :attr:`per_feature_lengthscales` also take one lengthscale per feature (ARD):
        ``k(x, y) = k₁((x − y)/ℓ)``.
    block_size : int
        Number of features ``r`` per block.
    seed : int
        64-bit seed; block ``j`` depends on ``(seed, j)`` only.
    cache_bytes : int, default=32 MiB
        Memory budget for drawn block parameters (``KERNELSTREAM_CACHE_MB`` changes the
        default). The policy is a *pinned prefix* (:mod:`kernelstream.features.param_cache`):
        blocks are cached in index order until the budget is spent and regenerated beyond it.
    """

    name: ClassVar[str] = ""
    #: metric for the median heuristic: "euclidean" or "cityblock"
    distance: ClassVar[str] = "euclidean"
    #: block sizes must be a multiple of this (2 for paired cos/sin features)
    block_multiple: ClassVar[int] = 1
    #: ``sigma`` may be a vector of per-feature lengthscales (ARD), ``k(x, y) = k₁((x − y)/ℓ)``
    per_feature_lengthscales: ClassVar[bool] = False
    #: ``k(x, x) = 1`` for every x (shift-invariant kernels); else it depends on x
    unit_diagonal: ClassVar[bool] = False
    #: defined on non-negative inputs only (histograms: the χ² and additive families)
    non_negative: ClassVar[bool] = False
    #: every feature lies in ``[−√2, √2]`` (cosines and sines of one scale): a feature cache
    #: may hold them in float16 (:class:`~kernelstream.solvers.cached.FeatureCache`)
    bounded: ClassVar[bool] = False
    #: the registered name this map was made under (an alias such as "exp_chi2"), for messages;
    #: ``None`` means :attr:`name`
    alias: str | None = None
    #: attributes that may still be set on a built map: ``alias`` only names it in messages
    _settable: ClassVar[frozenset[str]] = frozenset({"alias"})

    def __init__(
        self,
        n_features_in: int,
        sigma: float | np.ndarray = 1.0,
        block_size: int = 256,
        seed: int = 0,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        if block_size < 1 or block_size % self.block_multiple:
            raise ValueError(
                f"block_size must be a positive multiple of {self.block_multiple} for "
                f"kernel {self.name!r}; got {block_size}."
            )
        sigma = self._checked_sigma(sigma, n_features_in)
        if type(self).kernel is FeatureMap.kernel and type(self).kernel_at is FeatureMap.kernel_at:
            raise TypeError(f"{type(self).__name__} must implement kernel_at(X, Y, sigma) "
                            "(or at least kernel(X, Y)), the exact kernel.")
        self.n_features_in = int(n_features_in)
        self._sigma = sigma
        self.block_size = int(block_size)
        self.seed = int(seed)
        self.cache_bytes = int(cache_bytes)
        self._params = ParamCache(self.cache_bytes)

    @property
    def sigma(self) -> float | np.ndarray:
        """Bandwidth σ, fixed at construction: a float, or a read-only float64 vector of
        per-feature lengthscales."""
        return self._sigma

    @property
    def lengthscales(self) -> np.ndarray:
        """``ℓ`` of every feature, ``(n_features_in,)``: σ repeated for one bandwidth."""
        if isinstance(self._sigma, np.ndarray):
            return self._sigma
        return np.full(self.n_features_in, self._sigma)

    def _checked_sigma(self, sigma, n_features_in: int) -> float | np.ndarray:
        """One positive bandwidth as a float, or a vector of lengthscales validated by
        :func:`~.bandwidth.check_lengthscales` (families with :attr:`per_feature_lengthscales`)."""
        if is_lengthscale_vector(sigma):
            if not self.per_feature_lengthscales:
                raise ValueError(
                    f"Kernel {self.name!r} takes one bandwidth, not one per feature; per-feature "
                    "lengthscales need a shift-invariant family (rbf, laplace, matern), or "
                    "rescale the columns (X / lengthscales) and pass one number.")
            return check_lengthscales(sigma, int(n_features_in))
        if not sigma > 0:
            raise ValueError(f"sigma must be positive; got {sigma!r}.")
        return float(sigma)

    def __setattr__(self, name: str, value) -> None:
        if getattr(self, "_frozen", False) and name not in self._settable:
            raise AttributeError(self._frozen_message(name))
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(self._frozen_message(name))
        object.__delattr__(self, name)

    def _frozen_message(self, name: str) -> str:
        return (f"Cannot set {name!r} of a built {type(self).__name__}: a feature map is fixed at "
                "construction (its random blocks and cached draws depend on every parameter). "
                "Build a new map instead, which is cheap (a seed and a few numbers): "
                f"make_feature_map({self.requested_name!r}, n_features_in, sigma, block_size, "
                "seed, kernel_params=...) or build_feature_map(...) from kernelstream.features; "
                "for the kernel at another bandwidth, call kernel_at(X, Y, sigma).")

    @property
    def requested_name(self) -> str:
        """The kernel name the user asked for (``alias``, else ``name``), for error messages."""
        return self.alias or self.name

    # -- the contract ------------------------------------------------------------------
    def kernel(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """Exact kernel matrix ``k(X, Y)`` of shape ``(n, m)`` at this map's bandwidth."""
        return self.kernel_at(X, Y, self.sigma)

    def kernel_into(self, X: torch.Tensor, Y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """``k(X, Y)`` written into ``out`` ``(n, m)``, a few rows at a time (no autograd)."""
        step = max(1, CHUNK_FLOATS // max(Y.shape[0], 1))
        for i in range(0, X.shape[0], step):
            out[i:i + step] = self.kernel(X[i:i + step], Y)
        return out

    def kernel_at(self, X: torch.Tensor, Y: torch.Tensor, sigma: float | torch.Tensor) -> torch.Tensor:
        """Exact kernel matrix ``k_σ(X, Y)``, ``(n, m)``, at bandwidth ``sigma`` and this map's
        other parameters; the map is unchanged.

        ``sigma`` is a float or a 0-d tensor, or for families with
        :attr:`per_feature_lengthscales` a ``(d,)`` array or tensor of lengthscales; autograd
        flows through it (marginal likelihood). Families whose kernel has no bandwidth ignore it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} implements kernel(X, Y) only, so its bandwidth cannot be fitted "
            "by marginal likelihood; implement kernel_at(X, Y, sigma) (kernel then follows from "
            "it), or give the estimator a number or 'median' for sigma.")

    @abstractmethod
    def _draw(self, block: int, device: torch.device) -> torch.Tensor:
        """Parameters of block ``block`` as one float64 tensor on ``device``."""

    @abstractmethod
    def _features(self, X: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
        """Features of ``K`` blocks, ``(n, K, r)``, from the list of their parameters."""

    # -- shared plumbing ---------------------------------------------------------------
    def draw(self, block: int, device=None, dtype=torch.float32) -> torch.Tensor:
        """Parameters of one block, from the cache when present."""
        return self._params.block(block, torch.device(device or "cpu"), dtype, self._draw)

    def features(self, X: torch.Tensor | CSRRows, blocks: Sequence[int]) -> torch.Tensor:
        """Features of the given blocks on ``X``: ``(n, len(blocks), r)``, block-major. Sparse
        rows (:class:`~kernelstream.ops.sparse.CSRRows`) are densified here, unless the family
        projects them sparse (the Fourier families)."""
        if isinstance(X, CSRRows):
            X = X.to_dense()
        return self._features(X, [self.draw(j, X.device, X.dtype) for j in blocks])

    def block_features(self, X: torch.Tensor, block: int, out: torch.Tensor | None = None) -> torch.Tensor:
        """``ψ_block(X)``, ``(n, r)``; families with a fused path write it into ``out`` when given."""
        return self.features(X, [block])[:, 0, :]

    def contract(self, X: torch.Tensor, coef: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """``Σ_j ψ_j(X) coef_j`` over blocks ``0..J−1`` (``coef`` is ``(J, r, C)``), added to
        ``out`` (zeros when ``None``), ``(n, C)``. O(n·J·r·d).

        This generic path evaluates the features in chunks of bounded size and contracts each
        chunk with one GEMM; families with a fused kernel override it.
        """
        n, (J, r, C) = X.shape[0], coef.shape
        if out is None:
            out = torch.zeros((n, C), dtype=X.dtype, device=X.device)
        if J == 0 or n == 0:
            return out
        row_chunk = max(1, min(n, _CHUNK_BYTES // (r * X.element_size())))
        block_chunk = max(1, min(_CHUNK_BYTES // (row_chunk * r * X.element_size()),
                                 _PARAM_BYTES // (self.block_param_numel() * X.element_size())))
        for i in range(0, n, row_chunk):
            rows = X[i : i + row_chunk]
            for j in range(0, J, block_chunk):
                blocks = range(j, min(j + block_chunk, J))
                Phi = self.features(rows, blocks)  # (m, K, r)
                out[i : i + row_chunk] += Phi.reshape(rows.shape[0], -1) @ coef[blocks.start : blocks.stop].reshape(-1, C)
        return out

    def block_param_numel(self) -> int:
        """Number of parameters of one block (sizes evaluation chunks); ``d·r`` by default."""
        return self.n_features_in * self.block_size

    def transform(self, X: torch.Tensor, n_blocks: int) -> torch.Tensor:
        """The first ``n_blocks`` blocks concatenated: ``(n, n_blocks·r)``, scaled so that
        ``Φ(X) Φ(Y)ᵀ ≈ k(X, Y)``."""
        Z = self.features(X, range(n_blocks))
        return Z.reshape(X.shape[0], -1) * n_blocks**-0.5

    def n_cached_blocks(self) -> int:
        """Number of blocks whose parameters are held in the cache (all devices and dtypes)."""
        return self._params.n_blocks()

    @property
    def _cached_bytes(self) -> int:
        """Bytes of drawn parameters held in the cache (at most ``cache_bytes``)."""
        return self._params.nbytes

    def clear_cache(self) -> None:
        self._params.clear()

    def config(self) -> dict:
        """JSON-serialisable constructor arguments (for saving models)."""
        return {
            "kernel": self.name,
            "n_features_in": self.n_features_in,
            "sigma": self.sigma.tolist() if isinstance(self.sigma, np.ndarray) else self.sigma,
            "block_size": self.block_size,
            "seed": self.seed,
            **self.extra_params(),
        }

    def extra_params(self) -> dict:
        """Family-specific parameters beyond sigma (overridden by families that have some)."""
        return {}

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_params"] = ParamCache(self.cache_bytes)  # a cache is not state
        return state

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items() if k != "kernel")
        return f"{type(self).__name__}({args})"
