"""Save and load fitted models without pickle: one safetensors file, JSON metadata + tensors.

The file holds the prediction coefficients ``(n_blocks, r, C)`` (float32 or float64), the
intercept, and a JSON header with the class name, the constructor parameters, the feature map's
configuration (kernel, bandwidth, seed, block size) and the fitted scalars. Random-feature
weights are not stored: they are regenerated from the seed. A SHA-256 of the tensor bytes in the
header detects truncated or edited files. Loading builds objects only from a fixed whitelist of
classes; nothing in the file is executed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import torch

__all__ = ["save_model", "load", "ModelFileError"]

FORMAT = "kernelstream"
FORMAT_VERSION = 1


class ModelFileError(ValueError):
    """The file is missing, truncated, edited or not a kernelstream model."""


def _registry() -> dict:
    from .estimators import DSGClassifier, DSGRegressor

    return {cls.__name__: cls for cls in (DSGClassifier, DSGRegressor)}


def _digest(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        h.update(name.encode())
        h.update(str(t.dtype).encode() + str(tuple(t.shape)).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, dict):
        return {"__dict__": [[_jsonable(k), _jsonable(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store {type(value).__name__} in a model file")


def _from_json(value):
    if isinstance(value, dict) and "__dict__" in value:
        return {_hashable(_from_json(k)): _from_json(v) for k, v in value["__dict__"]}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def save_model(model, path) -> None:
    """Write ``model`` (a fitted DSG estimator) to ``path`` (safetensors format)."""
    from safetensors.torch import save_file
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "expansion_")
    if type(model).__name__ not in _registry():
        raise TypeError(f"cannot save {type(model).__name__}; supported: {sorted(_registry())}")
    expansion = model.expansion_
    coef, intercept = expansion.prediction_parameters()
    tensors = {"coef": coef.detach().cpu().contiguous(),
               "intercept": intercept.detach().cpu().contiguous()}
    params = {k: v for k, v in model.get_params(deep=False).items() if k != "random_state"}
    fitted = {k: getattr(model, k) for k in _fitted_names(model)}
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "class": type(model).__name__,
        "params": _jsonable(params),
        "random_state": _jsonable(model.random_state if isinstance(model.random_state, (int, type(None))) else None),
        "feature_map": expansion.feature_map.config(),
        "fitted": _jsonable(fitted),
        "step": expansion.step,
        "max_blocks": expansion.max_blocks,
        "average_start": expansion.average_start,
        "sha256": _digest(tensors),
    }
    save_file(tensors, str(path), metadata={"kernelstream": json.dumps(header)})


def _fitted_names(model) -> list[str]:
    names = ["n_features_in_", "seed_", "sigma_", "n_components_", "t_", "n_iter_"]
    for optional in ("classes_", "feature_names_in_", "y_offset_", "y_scale_", "n_outputs_", "_y_1d"):
        if hasattr(model, optional):
            names.append(optional)
    return names


def _read(path) -> tuple[dict, dict[str, torch.Tensor]]:
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"No model file at {str(path)!r}; check the path (save with model.save(path)).")
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}
        header = json.loads(metadata["kernelstream"])
    except Exception as exc:  # safetensors raises several types on corrupt input
        raise ModelFileError(f"{str(path)!r} is not a readable kernelstream model (truncated or "
                             f"corrupt: {exc}). Re-save the model.") from None
    if header.get("format") != FORMAT or header.get("version") != FORMAT_VERSION:
        raise ModelFileError(f"{str(path)!r} is not a kernelstream model of format version "
                             f"{FORMAT_VERSION}.")
    if _digest(tensors) != header.get("sha256"):
        raise ModelFileError(f"{str(path)!r} was modified after saving: its checksum does not "
                             "match. Re-save the model.")
    return header, tensors


def load(path):
    """Load a model saved with ``model.save(path)``; it predicts exactly as the saved model.

    Raises
    ------
    ModelFileError
        If the file is missing, truncated, edited, or not a kernelstream model.
    """
    from ._device import resolve_device
    from .expansion import Expansion
    from .features import make_feature_map

    header, tensors = _read(path)
    cls = _registry().get(header["class"])
    if cls is None:
        raise ModelFileError(f"Unknown model class {header['class']!r} in {str(path)!r}.")
    try:
        params = _from_json(header["params"])
        model = cls(**params, random_state=header["random_state"])
        fm_config = dict(header["feature_map"])
        kernel = fm_config.pop("kernel")
        d, sigma = fm_config.pop("n_features_in"), fm_config.pop("sigma")
        r, seed = fm_config.pop("block_size"), fm_config.pop("seed")
        feature_map = make_feature_map(kernel, d, sigma, r, seed, kernel_params=fm_config)
        for name, value in _from_json(header["fitted"]).items():
            setattr(model, name, np.asarray(value) if name in ("classes_", "feature_names_in_", "y_offset_", "y_scale_") else value)
        device = resolve_device(model.device)
        coef, intercept = tensors["coef"], tensors["intercept"]
        expansion = Expansion(feature_map, coef.shape[2], dtype=coef.dtype, device=device,
                              max_blocks=header["max_blocks"], average_start=header["average_start"])
        expansion.load_prediction_state(coef, intercept, header["step"])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ModelFileError(f"{str(path)!r} has an inconsistent header ({exc}); re-save the model.") from None
    model.expansion_ = expansion
    model.device_ = device
    return model
