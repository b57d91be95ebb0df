"""Save and load fitted models without pickle: one safetensors file, JSON metadata + tensors.

For the DSG estimators the file holds the prediction coefficients ``(n_blocks, r, C)`` (float32
or float64) and the intercept; for ``AOGDClassifier`` the model, the last iterate and the stream
statistics (``O(D)`` numbers); for ``GoGPRegressor`` its solver state (inducing set and its
matrices, or the feature posterior); for ``DSGGaussianProcessRegressor`` the mean's coefficients
and the variance state (the ``X_variance`` rows with their variances and covariance, or the
operator's ``D×D`` Cholesky factor). ``partial_fit`` on a loaded online model resumes exactly. A JSON header holds
the class name, the constructor parameters, the feature map's configuration (kernel, bandwidth,
seed, block size) and the fitted scalars. Random-feature weights are not stored: they are
regenerated from the seed. A SHA-256 of the tensor bytes in the
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
    """Class name -> (class, its fitted attribute, pack, unpack): the only classes a file can
    name."""
    from .estimators import (AOGDClassifier, DSGClassifier, DSGDensityRatio,
                             DSGGaussianProcessRegressor, DSGOneClass, DSGRegressor, GoGPRegressor)

    expansion = ("expansion_", _pack_expansion, _unpack_expansion)
    return {**{cls.__name__: (cls, *expansion)
               for cls in (DSGClassifier, DSGRegressor, DSGOneClass, DSGDensityRatio)},
            AOGDClassifier.__name__: (AOGDClassifier, "coef_", _pack_pairwise, _unpack_pairwise),
            GoGPRegressor.__name__: (GoGPRegressor, "state_", _pack_gogp, _unpack_gogp),
            DSGGaussianProcessRegressor.__name__: (DSGGaussianProcessRegressor, "expansion_",
                                                   _pack_gp, _unpack_gp)}


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
    """Write ``model`` (a fitted DSG estimator or ``AOGDClassifier``) to ``path`` (safetensors)."""
    from safetensors.torch import save_file
    from sklearn.utils.validation import check_is_fitted

    entry = _registry().get(type(model).__name__)
    if entry is None:
        raise TypeError(f"cannot save {type(model).__name__}; supported: {sorted(_registry())}")
    check_is_fitted(model, entry[1])
    tensors, extra = entry[2](model)
    tensors = {name: t.detach().cpu().contiguous() for name, t in tensors.items()}
    params = {k: v for k, v in model.get_params(deep=False).items() if k != "random_state"}
    fitted = {k: getattr(model, k) for k in _fitted_names(model)}
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "class": type(model).__name__,
        "params": _jsonable(params),
        "random_state": _jsonable(model.random_state if isinstance(model.random_state, (int, type(None))) else None),
        "fitted": _jsonable(fitted),
        **extra,
        "sha256": _digest(tensors),
    }
    save_file(tensors, str(path), metadata={"kernelstream": json.dumps(header)})


_ARRAYS = ("classes_", "feature_names_in_", "y_offset_", "y_scale_")


_FITTED = ("n_features_in_", "seed_", "sigma_", "n_components_", "t_", "n_iter_", *_ARRAYS,
           "n_outputs_", "_y_1d", "threshold_", "n_averaged_", "kl_divergence_",
           "_noise_z", "noise_", "amplitude_", "theta_", "_sq_sum", "_n_online", "n_inducing_",
           "progressive_rmse_", "n_features_", "step_size_", "n_step_halvings_", "residual_norms_",
           "operator_blocks_", "_operator_noise", "step_scale_", "variance_method_")


def _fitted_names(model) -> list[str]:
    """The fitted scalars (and small label arrays) a class has; its tensors travel separately."""
    return [name for name in _FITTED if hasattr(model, name)]


def _feature_map(config: dict | None):
    """The feature map of a saved ``FeatureMap.config()``: weights regenerated from the seed."""
    from .features import make_feature_map

    if config is None:
        return None
    config = dict(config)
    kernel, d, sigma = config.pop("kernel"), config.pop("n_features_in"), config.pop("sigma")
    r, seed = config.pop("block_size"), config.pop("seed")
    return make_feature_map(kernel, d, sigma, r, seed, kernel_params=config)


def _pack_expansion(model) -> tuple[dict, dict]:
    """DSG estimators: the prediction coefficients ``(n_blocks, r, C)`` and the intercept."""
    expansion = model.expansion_
    coef, intercept = expansion.prediction_parameters()
    return {"coef": coef, "intercept": intercept}, {
        "feature_map": expansion.feature_map.config(), "step": expansion.step,
        "max_blocks": expansion.max_blocks, "average_start": expansion.average_start}


def _unpack_expansion(model, header: dict, tensors: dict, device) -> None:
    from .expansion import Expansion

    coef, intercept = tensors["coef"], tensors["intercept"]
    expansion = Expansion(_feature_map(header["feature_map"]), coef.shape[2], dtype=coef.dtype,
                          device=device, max_blocks=header["max_blocks"],
                          average_start=header["average_start"])
    expansion.load_prediction_state(coef, intercept, header["step"])
    model.expansion_ = expansion


def _pack_pairwise(model) -> tuple[dict, dict]:
    """AOGD: the scored model, the last iterate and the stream statistics (``O(D)`` numbers), so
    ``partial_fit`` on the loaded model continues the stream exactly."""
    state = model.state_
    tensors = {"coef": torch.tensor(model.coef_), "iterate": torch.tensor(model.iterate_),  # copies
               "sums": state.sums, "counts": state.counts, "random": state.random}
    fm = model.feature_map_
    return tensors, {"feature_map": None if fm is None else fm.config(), "stream_t": state.t}


def _unpack_pairwise(model, header: dict, tensors: dict, device) -> None:
    from .solvers.pairwise import PairwiseState

    model.feature_map_ = _feature_map(header["feature_map"])
    model.coef_, model.iterate_ = tensors["coef"].numpy(), tensors["iterate"].numpy()
    if model.coef_.shape != (model.n_components_,) or model.iterate_.shape != model.coef_.shape:
        raise ValueError("coefficient shapes do not match n_components_")
    own = {name: tensors[name].clone().to(device) for name in ("sums", "counts", "random")}
    model.state_ = PairwiseState(own["sums"], own["counts"], own["random"], int(header["stream_t"]))


def _pack_gogp(model) -> tuple[dict, dict]:
    """GoGP: every attribute of the solver state (inducing set, inverse Gram, RLS matrices,
    weights; or the feature posterior), tensors as tensors and the rest as JSON, so that
    ``partial_fit`` on the loaded model continues exactly. The kernel is the feature map's."""
    tensors, scalars = {}, {}
    for name, value in vars(model.state_).items():
        if isinstance(value, torch.Tensor):
            tensors[f"state.{name}"] = value
        elif isinstance(value, dict) and value and all(isinstance(v, torch.Tensor) for v in value.values()):
            tensors.update({f"state.{name}.{key}": v for key, v in value.items()})
        elif name not in ("kernel", "_opts"):
            scalars[name] = _jsonable(value)
    return tensors, {"feature_map": model.feature_map_.config(), "state": scalars}


def _unpack_gogp(model, header: dict, tensors: dict, device) -> None:
    from .solvers.gogp import GoGPKernelState
    from .solvers.gogp_rf import GoGPFeatureState

    model.feature_map_ = _feature_map(header["feature_map"])
    cls = GoGPKernelState if model.variant == "kernel" else GoGPFeatureState  # not from the file
    state = cls.__new__(cls)
    state.__dict__.update(header["state"])
    for key, value in tensors.items():
        _, name, *item = key.split(".")
        value = value.clone()  # own, aligned memory (not a view of the file's buffer)
        if item:
            state.__dict__.setdefault(name, {})[item[0]] = value.to(device)
        else:
            setattr(state, name, value.to(device))
    if cls is GoGPKernelState:
        state.kernel, state._opts = model.feature_map_.kernel, dict(dtype=torch.float64, device=device)
    model.state_ = state


#: the GP's variance state: route (a) at the ``X_variance`` rows, route (b) the operator's factor
_GP_TENSORS = {"X_variance": "X_variance_", "variance": "variance_", "cov": "_cov",
               "operator_cholesky": "_operator_cholesky"}


#: route (c): the landmark rows and the two factors of :class:`LandmarkVariance`
_GP_LANDMARK_TENSORS = {"landmarks": "landmarks", "landmark_kmm_cholesky": "kmm_cholesky",
                        "landmark_inner_cholesky": "inner_cholesky"}


def _pack_gp(model) -> tuple[dict, dict]:
    """The GP: the mean's expansion plus whichever variance state ``fit`` built."""
    tensors, extra = _pack_expansion(model)
    for key, name in _GP_TENSORS.items():
        value = getattr(model, name, None)
        if value is not None:
            tensors[key] = torch.as_tensor(value).clone()
    landmark = getattr(model, "_landmark_variance", None)
    if landmark is not None:
        for key, name in _GP_LANDMARK_TENSORS.items():
            tensors[key] = getattr(landmark, name).clone()
    return tensors, extra


def _unpack_gp(model, header: dict, tensors: dict, device) -> None:
    _unpack_expansion(model, header, tensors, device)
    model.feature_map_ = model.expansion_.feature_map
    for key, name in _GP_TENSORS.items():
        if key in tensors:
            value = tensors[key].clone()
            setattr(model, name, value.to(device) if key == "operator_cholesky" else value.numpy())
    if "X_variance" in tensors:
        model._row_index = {row.tobytes(): i for i, row in enumerate(model.X_variance_)}
        model._cov = getattr(model, "_cov", None)
    if not hasattr(model, "variance_method_"):  # saved before the "auto" and landmark routes
        model.variance_method_ = model.variance_method
    if "landmarks" in tensors:
        from .solvers.gp_variance import LandmarkVariance

        model._landmark_variance = LandmarkVariance(
            *(tensors[key].clone().to(device) for key in _GP_LANDMARK_TENSORS), model._noise_z)


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

    header, tensors = _read(path)
    entry = _registry().get(header["class"])
    if entry is None:
        raise ModelFileError(f"Unknown model class {header['class']!r} in {str(path)!r}.")
    cls, _, _, unpack = entry
    try:
        model = cls(**_from_json(header["params"]), random_state=header["random_state"])
        for name, value in _from_json(header["fitted"]).items():
            setattr(model, name, np.asarray(value) if name in _ARRAYS and isinstance(value, list) else value)
        device = resolve_device(model.device)
        unpack(model, header, tensors, device)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ModelFileError(f"{str(path)!r} has an inconsistent header ({exc}); re-save the model.") from None
    model.device_ = device
    return model
