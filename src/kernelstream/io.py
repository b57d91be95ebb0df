"""Save and load fitted models without pickle: one safetensors file, JSON metadata + tensors.

A file is a container for an estimator's :meth:`state_dict` (every estimator has one, as in
PyTorch): its tensors and numeric arrays are the safetensors entries, everything else (the
class name, the constructor parameters, the fitted scalars, the feature map's configuration)
is the JSON header. Loading builds the estimator from its parameters and calls
``load_state_dict``, so a loaded model predicts as the saved one and an online model's
``partial_fit`` continues the stream exactly; this module names no estimator's attributes.
Random-feature weights are never stored: they are regenerated from the seed.

**Checksum.** The safetensors metadata holds a SHA-256 of the *whole file* (length prefix, JSON
header with its padding, kernelstream metadata, tensor data) computed with the digest's own 64
characters set to a placeholder, so that any edited, truncated or damaged byte is detected
before anything is parsed. Saving is atomic: the file is written to a temporary file in the
same directory and moved into place with ``os.replace``. Fit checkpoints
(:func:`save_checkpoint`, :func:`load_checkpoint`) are files of the same kind, with their own
format name, so one can never be loaded as the other. Loading builds objects only from a
fixed whitelist of classes; nothing in the file is executed. Files of the earlier formats (1
and 2, before state dicts) are refused with a message saying to refit and save again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

__all__ = ["save", "save_model", "load", "read_header", "ModelFileError", "save_checkpoint",
           "load_checkpoint", "CheckpointError", "register_model_class", "jsonable", "from_json",
           "params_json"]

FORMAT = "kernelstream"
FORMAT_VERSION = 3
#: safetensors metadata key of the whole-file digest, and the placeholder it is hashed with
_DIGEST_KEY = "kernelstream_sha256"
_MARKER = b'"' + _DIGEST_KEY.encode() + b'":"'
_PLACEHOLDER = b"0" * 64
_CHUNK_BYTES = 2**20  # the file is hashed in chunks of this size
_MAX_HEADER_BYTES = 100 * 2**20  # safetensors' own limit on its JSON header


class ModelFileError(ValueError):
    """The file is missing, truncated, edited or not a kernelstream model."""


class CheckpointError(ValueError):
    """A fit checkpoint is missing, truncated, edited, or was written by another fit (other
    data, other parameters)."""


@dataclass(frozen=True)
class _FileKind:
    """What a file is, for its error messages: a model or a fit checkpoint."""

    noun: str
    remedy: str
    error: type


_MODEL = _FileKind("model", "Re-save the model.", ModelFileError)
_CHECKPOINT = _FileKind("checkpoint", "Delete it and fit without resume, or resume from another "
                        "checkpoint.", CheckpointError)
CHECKPOINT_FORMAT = "kernelstream-checkpoint"
CHECKPOINT_VERSION = 1


#: class name -> class: the only classes a file can name (:func:`register_model_class`)
_MODEL_CLASSES: dict[str, type] = {}
#: the package whose import registers the public estimators
_ESTIMATORS_PACKAGE = "kernelstream.estimators"


def register_model_class(cls: type) -> type:
    """Allow files to name ``cls`` (the estimators package registers its public classes)."""
    _MODEL_CLASSES[cls.__name__] = cls
    return cls


def _registry() -> dict:
    """Class name -> class: the only classes a file can name. The estimators register
    themselves on import; loading imports their package by name first, as pickle imports a
    class's module (this module imports no estimator)."""
    importlib.import_module(_ESTIMATORS_PACKAGE)
    return _MODEL_CLASSES


def _digest_offset(f, path, kind: _FileKind = _MODEL) -> int | None:
    """Byte offset of the whole-file digest's 64 characters in the safetensors header of the
    open file ``f``; ``None`` when the header has no digest (format version 1, or not ours)."""
    size = os.fstat(f.fileno()).st_size
    f.seek(0)
    prefix = f.read(8)
    n = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
    if not 0 <= n <= min(size - 8, _MAX_HEADER_BYTES):
        raise kind.error(f"{str(path)!r} is not a readable kernelstream {kind.noun} (truncated or "
                         f"corrupt: bad header length). {kind.remedy}")
    header = f.read(n)
    start = header.find(_MARKER)
    if start < 0:
        return None
    offset = start + len(_MARKER)
    if header.find(_MARKER, offset) >= 0 or header[offset + 64 : offset + 65] != b'"':
        raise kind.error(f"{str(path)!r} is truncated or corrupt: its checksum field is "
                         f"damaged. {kind.remedy}")
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


def _verify_file_digest(path: Path, kind: _FileKind = _MODEL) -> bool:
    """Check the whole-file digest; ``False`` when the file has none (format version 1)."""
    with open(path, "rb") as f:
        offset = _digest_offset(f, path, kind)
        if offset is None:
            return False
        f.seek(offset)
        stored = f.read(len(_PLACEHOLDER))
        if _file_digest(f, offset) != stored:
            raise kind.error(f"{str(path)!r} is truncated or corrupt, or was modified after "
                             "saving: its SHA-256 checksum does not match the file's bytes. "
                             f"{kind.remedy}")
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


def jsonable(value):
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, dict):
        return {"__dict__": [[jsonable(k), jsonable(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store {type(value).__name__} in a model file")


def params_json(params: dict) -> dict:
    """Constructor parameters as JSON: :func:`jsonable`, except that a numeric array (per-feature
    lengthscales) is tagged with its dtype, so that :func:`from_json` gives the array back."""
    return {"__dict__": [[name, {"__array__": jsonable(value), "dtype": value.dtype.str}
                          if isinstance(value, np.ndarray) and value.dtype.kind in "biuf"
                          else jsonable(value)] for name, value in params.items()]}


def from_json(value):
    if isinstance(value, dict) and "__array__" in value:
        return np.asarray(value["__array__"], dtype=np.dtype(value["dtype"]))
    if isinstance(value, dict) and "__dict__" in value:
        return {_hashable(from_json(k)): from_json(v) for k, v in value["__dict__"]}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def save_model(model, path, *, metadata: dict | None = None) -> None:
    """Write the fitted ``model`` (any class of the whitelist) to ``path`` (safetensors),
    atomically and with a whole-file checksum. ``metadata`` (JSON-able: numbers, strings,
    lists, dicts) is stored beside it, e.g. the shape of the training data; :func:`read_header`
    returns it."""
    if _registry().get(type(model).__name__) is not type(model):
        raise TypeError(f"cannot save {type(model).__name__}; supported: {sorted(_registry())}")
    tensors: dict[str, torch.Tensor] = {}
    state = _to_json(model.state_dict(), "state", tensors)
    params = {k: v for k, v in model.get_params(deep=False).items() if k != "random_state"}
    random_state = model.random_state if isinstance(model.random_state, (int, type(None))) else None
    header = {"format": FORMAT, "version": FORMAT_VERSION, "class": type(model).__name__,
              "library_version": _library_version(), "params": params_json(params),
              "random_state": jsonable(random_state), "state": state}
    if metadata is not None:
        header["metadata"] = json.loads(json.dumps(metadata))  # plain JSON only, checked here
    _write_atomic(tensors, {"kernelstream": json.dumps(header)}, path)


#: the same function as :func:`save_model`
save = save_model


def read_header(path) -> dict:
    """What a model file holds, its checksum verified, without building the model: ``class``,
    ``library_version``, ``version`` (format), ``params``, ``random_state``, ``metadata`` (if
    saved with some) and ``tensors`` (name → ``{"shape", "dtype"}``)."""
    header, tensors = _read(path)
    summary = {key: value for key, value in header.items() if key != "state"}
    summary["params"] = from_json(header.get("params", {}))
    summary["tensors"] = {name: {"shape": list(t.shape),
                                 "dtype": str(t.dtype).replace("torch.", "")}
                          for name, t in tensors.items()}
    return summary


def _library_version() -> str:
    from . import __version__

    return __version__


def _to_json(value, key: str, tensors: dict):
    """``value`` as JSON, its tensors and numeric arrays moved to ``tensors`` under ``key``."""
    if isinstance(value, torch.Tensor):
        tensors[key] = value.detach().cpu().contiguous().clone()
        return {"__tensor__": key}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        tensors[key] = torch.from_numpy(np.ascontiguousarray(value).copy())
        return {"__ndarray__": key}
    if isinstance(value, np.ndarray):
        return {"__array__": jsonable(value), "dtype": value.dtype.str}
    if isinstance(value, dict):
        return {"__map__": {str(k): _to_json(v, f"{key}.{k}", tensors) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return [_to_json(v, f"{key}.{i}", tensors) for i, v in enumerate(value)]
    return jsonable(value)


def _from_state_json(value, tensors: dict):
    """The inverse of :func:`_to_json`."""
    if isinstance(value, dict):
        if "__tensor__" in value:
            return tensors[value["__tensor__"]]
        if "__ndarray__" in value:
            return tensors[value["__ndarray__"]].numpy().copy()
        if "__array__" in value:
            return np.asarray(value["__array__"], dtype=np.dtype(value["dtype"]))
        return {k: _from_state_json(v, tensors) for k, v in value["__map__"].items()}
    if isinstance(value, list):
        return [_from_state_json(v, tensors) for v in value]
    return value


def _read(path) -> tuple[dict, dict[str, torch.Tensor]]:
    """Header and tensors of a model file, its whole-file checksum verified."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"No model file at {str(path)!r}; check the path (save with model.save(path)).")
    whole_file = _verify_file_digest(path)
    header, tensors = _parse(path)
    version = header.get("version")
    if header.get("format") != FORMAT:
        raise ModelFileError(f"{str(path)!r} is not a kernelstream model.")
    if version in (1, 2):
        raise ModelFileError(f"{str(path)!r} has model format version {version}, written before "
                             "models were stored as state dicts; this kernelstream reads format "
                             f"{FORMAT_VERSION}. Refit the model and save it again.")
    if version != FORMAT_VERSION:
        raise ModelFileError(f"{str(path)!r} has model format version {version!r}; this "
                             f"kernelstream reads format {FORMAT_VERSION}. Upgrade kernelstream.")
    if not whole_file:
        raise ModelFileError(f"{str(path)!r} is truncated or corrupt, or was modified after "
                             "saving: its checksum field is missing. Re-save the model.")
    return header, tensors


def _parse(path: Path, kind: _FileKind = _MODEL) -> tuple[dict, dict[str, torch.Tensor]]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}
        header = json.loads(metadata["kernelstream"])
        if not isinstance(header, dict):
            raise TypeError("the kernelstream metadata is not a JSON object")
    except Exception as exc:  # safetensors raises several types on corrupt input
        raise kind.error(f"{str(path)!r} is not a readable kernelstream {kind.noun} (truncated or "
                         f"corrupt: {exc}). {kind.remedy}") from None
    return header, tensors


def load(path):
    """Load a model saved with ``model.save(path)``; it predicts exactly as the saved model.

    Raises
    ------
    ModelFileError
        If the file is missing, truncated, edited, of an earlier format, or not a kernelstream
        model.
    """
    header, tensors = _read(path)
    name = header.get("class")
    cls = _registry().get(name) if isinstance(name, str) else None
    if cls is None:
        raise ModelFileError(f"Unknown model class {name!r} in {str(path)!r}; only "
                             f"{sorted(_registry())} can be loaded.")
    try:
        model = cls(**from_json(header["params"]), random_state=header["random_state"])
        model.load_state_dict(_from_state_json(header["state"], tensors))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ModelFileError(f"{str(path)!r} has an inconsistent header ({type(exc).__name__}: "
                             f"{exc}); re-save the model.") from None
    return model


def save_checkpoint(header: dict, state: dict, path) -> None:
    """Write a fit checkpoint atomically, with a whole-file checksum: ``state`` (a state dict:
    tensors, arrays and plain values, nested) and the JSON-able ``header`` (what the fit was:
    class, parameters, data fingerprint). A reader sees the previous checkpoint or this one,
    never a part of one."""
    tensors: dict[str, torch.Tensor] = {}
    document = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
                "library_version": _library_version(), **{k: jsonable(v) for k, v in header.items()},
                "state": _to_json(state, "state", tensors)}
    _write_atomic(tensors, {"kernelstream": json.dumps(document)}, path)


def load_checkpoint(path) -> tuple[dict, dict]:
    """``(header, state)`` of a checkpoint written by :func:`save_checkpoint`.

    Raises
    ------
    CheckpointError
        If the file is missing, truncated, edited, of another version or not a checkpoint; the
        message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"No checkpoint at {str(path)!r}; check the path (a fit with "
                              "checkpoint=PATH writes one at the end of its epochs).")
    if not _verify_file_digest(path, _CHECKPOINT):
        raise CheckpointError(f"{str(path)!r} is not a kernelstream checkpoint (no checksum).")
    header, tensors = _parse(path, _CHECKPOINT)
    if header.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{str(path)!r} is not a kernelstream checkpoint (format "
                              f"{header.get('format')!r}); a model file is loaded with "
                              "kernelstream.load, not resumed from.")
    if header.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(f"{str(path)!r} is a checkpoint of version {header.get('version')!r}; "
                              f"this kernelstream resumes version {CHECKPOINT_VERSION}. Fit "
                              "again without resume.")
    state = _from_state_json(header.pop("state"), tensors)
    return {key: from_json(value) for key, value in header.items()}, state
