"""Save and load fitted models without pickle: one safetensors file, JSON metadata + tensors.

For ``RandomFeatures`` the file holds no tensors, only the feature map's configuration. For the
DSG estimators the file holds the prediction coefficients ``(n_blocks, r, C)`` (float32
or float64) and the intercept; for ``AOGDClassifier`` the model, the last iterate and the stream
statistics (``O(D)`` numbers); for ``GoGPRegressor`` its solver state (inducing set and its
matrices, or the feature posterior); for ``DSGGaussianProcessRegressor`` the mean's coefficients
and the variance state (the ``X_variance`` rows with their variances and covariance, or the
operator's ``D×D`` Cholesky factor). ``partial_fit`` on a loaded online model resumes exactly. A JSON header holds
the class name, the constructor parameters, the feature map's configuration (kernel, bandwidth,
seed, block size) and the fitted scalars; the seed, bandwidth and input dimension are stored once,
in the feature map's configuration, and the fitted ``seed_``, ``sigma_`` and ``n_features_in_``
are read back from the feature map that predicts. Random-feature weights are not stored: they
are regenerated from the seed.

**Checksum (format version 2).** The safetensors metadata holds a SHA-256 of the *whole file*
(length prefix, JSON header with its padding, kernelstream metadata, tensor data) computed with
the digest's own 64 characters set to a placeholder, so that any edited, truncated or damaged
byte is detected before anything is parsed. Files of format version 1 (a digest of the tensor
bytes only) still load, with a ``UserWarning`` to re-save them. Saving is atomic: the file is
written to a temporary file in the same directory and moved into place with ``os.replace``.
Loading builds objects only from a fixed whitelist of classes; nothing in the file is executed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
import warnings
from pathlib import Path

import numpy as np
import torch

__all__ = ["save_model", "load", "ModelFileError"]

FORMAT = "kernelstream"
FORMAT_VERSION = 2
#: safetensors metadata key of the whole-file digest, and the placeholder it is hashed with
_DIGEST_KEY = "kernelstream_sha256"
_MARKER = b'"' + _DIGEST_KEY.encode() + b'":"'
_PLACEHOLDER = b"0" * 64
_CHUNK_BYTES = 2**20  # the file is hashed in chunks of this size
_MAX_HEADER_BYTES = 100 * 2**20  # safetensors' own limit on its JSON header


class ModelFileError(ValueError):
    """The file is missing, truncated, edited or not a kernelstream model."""


def _registry() -> dict:
    """Class name -> (class, its fitted attribute, pack, unpack): the only classes a file can
    name."""
    from .estimators import (AOGDClassifier, DSGClassifier, DSGDensityRatio,
                             DSGGaussianProcessRegressor, DSGOneClass, DSGRegressor, GoGPRegressor,
                             RandomFeatures)

    expansion = ("expansion_", _pack_expansion, _unpack_expansion)
    return {**{cls.__name__: (cls, *expansion)
               for cls in (DSGClassifier, DSGRegressor, DSGOneClass, DSGDensityRatio)},
            AOGDClassifier.__name__: (AOGDClassifier, "coef_", _pack_pairwise, _unpack_pairwise),
            GoGPRegressor.__name__: (GoGPRegressor, "state_", _pack_gogp, _unpack_gogp),
            DSGGaussianProcessRegressor.__name__: (DSGGaussianProcessRegressor, "expansion_",
                                                   _pack_gp, _unpack_gp),
            RandomFeatures.__name__: (RandomFeatures, "feature_map_", _pack_features,
                                      _unpack_features)}


def _tensor_digest(tensors: dict[str, torch.Tensor]) -> str:
    """Format version 1's digest: the tensors' names, dtypes, shapes and bytes only."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        h.update(name.encode())
        h.update(str(t.dtype).encode() + str(tuple(t.shape)).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _digest_offset(f, path) -> int | None:
    """Byte offset of the whole-file digest's 64 characters in the safetensors header of the
    open file ``f``; ``None`` when the header has no digest (format version 1, or not ours)."""
    size = os.fstat(f.fileno()).st_size
    f.seek(0)
    prefix = f.read(8)
    n = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
    if not 0 <= n <= min(size - 8, _MAX_HEADER_BYTES):
        raise ModelFileError(f"{str(path)!r} is not a readable kernelstream model (truncated or "
                             "corrupt: bad header length). Re-save the model.")
    header = f.read(n)
    start = header.find(_MARKER)
    if start < 0:
        return None
    offset = start + len(_MARKER)
    if header.find(_MARKER, offset) >= 0 or header[offset + 64 : offset + 65] != b'"':
        raise ModelFileError(f"{str(path)!r} is truncated or corrupt: its checksum field is "
                             "damaged. Re-save the model.")
    return 8 + offset


def _file_digest(f, offset: int) -> bytes:
    """SHA-256 (hex, ASCII) of the whole file with the digest at ``offset`` set to the
    placeholder, read in chunks."""
    h = hashlib.sha256()
    f.seek(0)
    h.update(f.read(offset))
    h.update(_PLACEHOLDER)
    f.seek(offset + len(_PLACEHOLDER))
    while chunk := f.read(_CHUNK_BYTES):
        h.update(chunk)
    return h.hexdigest().encode()


def _verify_file_digest(path: Path) -> bool:
    """Check the whole-file digest; ``False`` when the file has none (format version 1)."""
    with open(path, "rb") as f:
        offset = _digest_offset(f, path)
        if offset is None:
            return False
        f.seek(offset)
        stored = f.read(len(_PLACEHOLDER))
        if _file_digest(f, offset) != stored:
            raise ModelFileError(f"{str(path)!r} is truncated or corrupt, or was modified after "
                                 "saving: its SHA-256 checksum does not match the file's bytes. "
                                 "Re-save the model from the fitted estimator.")
    return True


def _write_atomic(tensors: dict[str, torch.Tensor], metadata: dict[str, str], path) -> None:
    """Write the safetensors file with its whole-file digest to a temporary file in the same
    directory, then move it onto ``path`` (a reader never sees a partial file)."""
    from safetensors.torch import save_file

    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        save_file(tensors, str(tmp), metadata={**metadata, _DIGEST_KEY: _PLACEHOLDER.decode()})
        with open(tmp, "r+b") as f:
            offset = _digest_offset(f, tmp)
            digest = _file_digest(f, offset)
            f.seek(offset)
            f.write(digest)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


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
    """Write the fitted ``model`` (any class of the whitelist) to ``path`` (safetensors),
    atomically and with a whole-file checksum."""
    from sklearn.utils.validation import check_is_fitted

    entry = _registry().get(type(model).__name__)
    if entry is None:
        raise TypeError(f"cannot save {type(model).__name__}; supported: {sorted(_registry())}")
    check_is_fitted(model, entry[1])
    tensors, extra = entry[2](model)
    tensors = {name: t.detach().cpu().contiguous() for name, t in tensors.items()}
    params = {k: v for k, v in model.get_params(deep=False).items() if k != "random_state"}
    fitted = {k: getattr(model, k) for k in _fitted_names(model)}
    for name in _derived_from_feature_map(model, fitted):
        del fitted[name]  # stored once, in the feature map's configuration
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "class": type(model).__name__,
        "params": _jsonable(params),
        "random_state": _jsonable(model.random_state if isinstance(model.random_state, (int, type(None))) else None),
        "fitted": _jsonable(fitted),
        **extra,
    }
    _write_atomic(tensors, {"kernelstream": json.dumps(header)}, path)


#: fitted attribute -> the feature map attribute that predicts with it
_FEATURE_MAP_ATTRIBUTES = {"seed_": "seed", "sigma_": "sigma", "n_features_in_": "n_features_in"}


def _model_feature_map(model):
    """The feature map a model predicts with (``None`` for a linear AOGD model)."""
    expansion = getattr(model, "expansion_", None)
    return expansion.feature_map if expansion is not None else getattr(model, "feature_map_", None)


def _derived_from_feature_map(model, fitted: dict) -> list[str]:
    """The fitted attributes that equal their feature map's value (so the file keeps one copy)."""
    fm = _model_feature_map(model)
    if fm is None:
        return []
    return [name for name, key in _FEATURE_MAP_ATTRIBUTES.items()
            if name in fitted and fitted[name] == getattr(fm, key)]


def _restore_from_feature_map(model) -> None:
    """Set ``seed_``, ``sigma_`` and ``n_features_in_`` from the loaded feature map, the one
    source of truth (a version 1 file also stored them in its ``fitted`` section)."""
    fm = _model_feature_map(model)
    if fm is not None:
        for name, key in _FEATURE_MAP_ATTRIBUTES.items():
            setattr(model, name, getattr(fm, key))


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


def _pack_features(model) -> tuple[dict, dict]:
    """RandomFeatures: no tensors, only the feature map's configuration (weights come from
    the seed)."""
    return {}, {"feature_map": model.feature_map_.config()}


def _unpack_features(model, header: dict, tensors: dict, device) -> None:
    model._set_feature_map(_feature_map(header["feature_map"]))


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
    """Header and tensors of a model file, its checksum verified (whole file from version 2)."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"No model file at {str(path)!r}; check the path (save with model.save(path)).")
    whole_file = _verify_file_digest(path)
    header, tensors = _parse(path)
    version = header.get("version")
    if header.get("format") != FORMAT or version not in (1, FORMAT_VERSION):
        raise ModelFileError(f"{str(path)!r} is not a kernelstream model of format version 1 or "
                             f"{FORMAT_VERSION}.")
    if version == 1 and not whole_file:
        _check_version_1(path, header, tensors)
    elif not whole_file:
        raise ModelFileError(f"{str(path)!r} is truncated or corrupt, or was modified after "
                             "saving: its checksum field is missing. Re-save the model.")
    return header, tensors


def _parse(path: Path) -> tuple[dict, dict[str, torch.Tensor]]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}
        header = json.loads(metadata["kernelstream"])
        if not isinstance(header, dict):
            raise TypeError("the kernelstream metadata is not a JSON object")
    except Exception as exc:  # safetensors raises several types on corrupt input
        raise ModelFileError(f"{str(path)!r} is not a readable kernelstream model (truncated or "
                             f"corrupt: {exc}). Re-save the model.") from None
    return header, tensors


def _check_version_1(path: Path, header: dict, tensors: dict) -> None:
    """Format version 1: only the tensors are checksummed; warn that the header is not."""
    if _tensor_digest(tensors) != header.get("sha256"):
        raise ModelFileError(f"{str(path)!r} is truncated or corrupt, or was modified after "
                             "saving: its checksum does not match. Re-save the model.")
    warnings.warn(f"{str(path)!r} has model format version 1, whose checksum covers the "
                  "tensors but not the header (kernel, seed, parameters); an edited header "
                  f"would go unnoticed. Load it and save it again (model.save(path)) to get "
                  f"format version {FORMAT_VERSION}, which checksums the whole file.",
                  UserWarning, stacklevel=3)


def load(path):
    """Load a model saved with ``model.save(path)``; it predicts exactly as the saved model.

    Raises
    ------
    ModelFileError
        If the file is missing, truncated, edited, or not a kernelstream model.
    """
    from ._device import resolve_device

    header, tensors = _read(path)
    name = header.get("class")
    entry = _registry().get(name) if isinstance(name, str) else None
    if entry is None:
        raise ModelFileError(f"Unknown model class {name!r} in {str(path)!r}; only "
                             f"{sorted(_registry())} can be loaded.")
    cls, _, _, unpack = entry
    try:
        model = cls(**_from_json(header["params"]), random_state=header["random_state"])
        for name, value in _from_json(header["fitted"]).items():
            setattr(model, name, np.asarray(value) if name in _ARRAYS and isinstance(value, list) else value)
        device = resolve_device(model.device)
        unpack(model, header, tensors, device)
        _restore_from_feature_map(model)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ModelFileError(f"{str(path)!r} has an inconsistent header ({exc}); re-save the model.") from None
    model.device_ = device
    return model
