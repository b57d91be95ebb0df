"""The kernel's columns at stored centres as features: the fitted form of a Nyström model.

A model fitted on a Nyström basis (:mod:`kernelstream.solvers.nystroem`) is
``f(x) = k_C(x)ᵀβ + b`` over ``M`` centres ``C``, training rows. :class:`KernelColumns` gives
that model the shape of every other expansion: block ``j``'s "features" are the kernel's values
at its ``r`` centres, ``ψ_j(x) = k(x, C_j)``, and the coefficients of block ``j`` are
``β_j``, so ``Σ_j ψ_j(x)ᵀβ_j = k_C(x)ᵀβ``. The centres are the map's parameters: they are
stored, not regenerated from the seed, and saved with the model. Prediction costs ``O(n·M·d)``
and needs neither the triangular factor of ``K_CC`` nor any ``M × M`` matrix.

These features are not a kernel approximation (``ψ(x)ᵀψ(y)`` is not ``k(x, y)``):
:meth:`~KernelColumns.transform` refuses, and the basis cannot grow beyond its centres.
"""

from __future__ import annotations

import numpy as np
import torch

from .base import DEFAULT_CACHE_BYTES, FeatureMap

__all__ = ["KernelColumns"]


class KernelColumns(FeatureMap):
    """``ψ_j(x) = k(x, C_j)`` for the ``j``-th block of ``block_size`` centres ``C``.

    Parameters
    ----------
    kernel_map : FeatureMap
        Whose exact :meth:`~kernelstream.features.base.FeatureMap.kernel` is ``k`` (its
        bandwidth, block size and seed are this map's).
    centres : torch.Tensor of shape (M, d)
        ``M`` a multiple of the block size.
    block_size : int, optional
        Centres per block (the kernel map's by default).
    cache_bytes : int, default=32 MiB
        Budget of centre blocks held in the working dtype and device.
    """

    name = "kernel_columns"
    _settable = FeatureMap._settable

    def __init__(self, kernel_map: FeatureMap, centres: torch.Tensor, block_size: int | None = None,
                 *, cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        centres = torch.as_tensor(centres)
        r = kernel_map.block_size if block_size is None else int(block_size)
        if r < 1:
            raise ValueError(f"block_size must be positive; got {r}.")
        if centres.ndim != 2 or centres.shape[1] != kernel_map.n_features_in:
            raise ValueError(f"centres must be (M, {kernel_map.n_features_in}); got "
                             f"{tuple(centres.shape)}.")
        if centres.shape[0] == 0 or centres.shape[0] % r:
            raise ValueError(f"The number of centres ({centres.shape[0]}) must be a positive "
                             f"multiple of the block size {r}.")
        if not bool(torch.isfinite(centres).all()):
            raise ValueError("centres hold NaN or infinite values (an edited model file?).")
        self.kernel_map = kernel_map
        self.centres = centres.detach().cpu().contiguous()
        self.per_feature_lengthscales = kernel_map.per_feature_lengthscales
        self.distance = kernel_map.distance
        self.unit_diagonal = kernel_map.unit_diagonal
        self.non_negative = kernel_map.non_negative
        super().__init__(kernel_map.n_features_in, kernel_map.sigma, r, kernel_map.seed,
                         cache_bytes=cache_bytes)

    @property
    def max_blocks(self) -> int:
        """Blocks the centres hold: the most this basis has."""
        return self.centres.shape[0] // self.block_size

    def kernel_at(self, X: torch.Tensor, Y: torch.Tensor, sigma) -> torch.Tensor:
        return self.kernel_map.kernel_at(X, Y, sigma)

    def kernel(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return self.kernel_map.kernel(X, Y)

    def _draw(self, block: int, device: torch.device) -> torch.Tensor:
        if not 0 <= block < self.max_blocks:
            raise ValueError(f"A Nystrom model has {self.max_blocks} blocks of {self.block_size} "
                             f"centres; block {block} does not exist: the basis cannot grow. Refit "
                             "with warm_start=False (or pass solver='sgd' for a model that grows).")
        r = self.block_size
        return self.centres[block * r:(block + 1) * r].to(device, torch.float64)

    def _features(self, X: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack([self.kernel_map.kernel(X, C.to(X.dtype)) for C in params], dim=1)

    @property
    def precise(self) -> bool:
        """Whether the model computes in float64 (centres held in float64: a fit at an ``α``
        below float32's round-off, where ``k_C(x)ᵀβ`` cancels)."""
        return self.centres.dtype == torch.float64

    def contract(self, X: torch.Tensor, coef: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """``k_C(X)ᵀβ`` over the blocks of ``coef`` ``(J, r, C)``, in float64 where :attr:`precise`."""
        if not self.precise or X.dtype == torch.float64:
            return super().contract(X, coef, out)
        result = super().contract(X.double(), coef.double())
        return result.to(X.dtype) if out is None else out.add_(result.to(out.dtype))

    def transform(self, X: torch.Tensor, n_blocks: int) -> torch.Tensor:
        raise NotImplementedError("The kernel's columns at the centres are not random features: "
                                  "their inner products do not approximate the kernel.")

    def config(self) -> dict:
        """The kernel map's configuration and the centres (a tensor: model files store it)."""
        return {"kernel": self.name, "kernel_map": self.kernel_map.config(),
                "block_size": self.block_size, "centres": self.centres}

    def __repr__(self) -> str:
        return (f"KernelColumns({self.kernel_map!r}, centres of shape "
                f"{tuple(self.centres.shape)})")

    @classmethod
    def from_config(cls, config: dict, kernel_map: FeatureMap) -> "KernelColumns":
        """The map of :meth:`config`, given its kernel map rebuilt."""
        centres = config["centres"]
        if isinstance(centres, np.ndarray):
            centres = torch.from_numpy(centres)
        return cls(kernel_map, centres, int(config["block_size"]))
