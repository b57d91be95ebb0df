"""State dicts: fitted state as tensors and plain numbers, as in PyTorch.

Every estimator lists the fitted attributes that make up its state (``_state_attributes``);
``state_dict()`` returns them, with objects that have a ``state_dict()`` of their own (the
expansion, a solver state, a feature map's configuration) nested as dicts, and
``load_state_dict()`` sets them back, rebuilding those objects through the estimator's
``_state_builders``. Model files (:mod:`kernelstream.io`) store a state dict; nothing outside
an estimator names its private attributes.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["EstimatorState", "SolverState", "feature_map_from_config", "random_state_from_state"]


def random_state_from_state(state) -> np.random.RandomState:
    """The ``RandomState`` whose ``get_state()`` was exported (a shuffling stream resumes)."""
    rng = np.random.RandomState()
    rng.set_state(tuple(state))
    return rng


def feature_map_from_config(config: dict | None):
    """The feature map of a ``FeatureMap.config()``: its weights are regenerated from the seed."""
    from .features import make_feature_map

    if config is None:
        return None
    config = dict(config)
    if config.get("kernel") == "kernel_columns":  # a Nyström model: its centres are stored
        from .features.kernel_columns import KernelColumns

        return KernelColumns.from_config(config, feature_map_from_config(config["kernel_map"]))
    kernel, d, sigma = config.pop("kernel"), config.pop("n_features_in"), config.pop("sigma")
    block_size, seed = config.pop("block_size"), config.pop("seed")
    return make_feature_map(kernel, d, sigma, block_size, seed, kernel_params=config)


def _exported(value: Any) -> Any:
    """A value of the state: nested state dicts for stateful objects, dense rows for CSR."""
    if hasattr(value, "state_dict"):
        return value.state_dict()
    if hasattr(value, "config") and hasattr(value, "block_features"):  # a feature map
        return value.config()
    if sp.issparse(value):
        return value.toarray()
    if isinstance(value, np.random.RandomState):
        return list(value.get_state())
    if isinstance(value, tuple):
        return [_exported(v) for v in value]
    return value


class EstimatorState:
    """``state_dict()`` / ``load_state_dict()`` for an estimator from ``_state_attributes``."""

    #: fitted attributes that make up the state, in the order ``load_state_dict`` sets them
    _state_attributes: ClassVar[tuple[str, ...]] = ()

    def state_dict(self) -> dict[str, Any]:
        """The fitted state: tensors, arrays and plain numbers (nested dicts for objects)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        return {name: _exported(getattr(self, name)) for name in self._state_attributes
                if hasattr(self, name)}

    def load_state_dict(self, state: dict[str, Any]):
        """Set the fitted state from :meth:`state_dict`'s output; returns ``self``."""
        unknown = sorted(set(state) - set(self._state_attributes))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no state {unknown}; expected names "
                             f"among {list(self._state_attributes)}.")
        self.device_ = self._resolve_device()
        builders = self._state_builders(self.device_)
        for name in self._state_attributes:
            if name in state:
                value = state[name]
                setattr(self, name, builders[name](value) if name in builders else value)
        self._after_load_state()
        return self

    def _resolve_device(self) -> torch.device:
        """The device of ``self.device`` ("auto": CUDA when available)."""
        from ._device import resolve_device

        return resolve_device(self.device)

    def _state_builders(self, device) -> dict[str, Callable[[Any], Any]]:
        """``name -> function`` turning a nested state back into the object it came from."""
        return {}

    def _after_load_state(self) -> None:
        """Derived attributes (indexes, caches) from the loaded state."""


class SolverState:
    """``state_dict()`` / ``load_state_dict()`` for a solver object from ``_state_fields``:
    tensors, dicts of tensors and plain numbers; loaded tensors get their own memory."""

    _state_fields: ClassVar[tuple[str, ...]] = ()

    def state_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._state_fields}

    def load_state_dict(self, state: dict[str, Any], device=None):
        missing = sorted(set(self._state_fields) - set(state))
        if missing:
            raise ValueError(f"{type(self).__name__} state lacks {missing}.")
        for name in self._state_fields:
            setattr(self, name, _owned(state[name], device))
        return self


def _owned(value, device):
    """A copy on ``device`` (own, aligned memory: not a view of a file's buffer)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().to(device)
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy()).to(device)
    if isinstance(value, dict):
        return {k: _owned(v, device) for k, v in value.items()}
    return value
