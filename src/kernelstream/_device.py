"""Device and dtype policy, decided in one place, and numpy <-> torch at the boundary."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["resolve_device", "resolve_dtype", "to_tensor", "to_numpy"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` is CUDA when available, else CPU; ``"cuda"`` without CUDA is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but CUDA is not available; "
                         "use device='cpu' or device='auto'.")
    return device


def resolve_dtype(dtype: str) -> torch.dtype:
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}; got {dtype!r}.")
    return _DTYPES[dtype]


def to_tensor(X, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Rows of a dense or sparse array (or a tensor on any device) as a dense tensor on ``device``."""
    if isinstance(X, torch.Tensor):
        return X.to(device=device, dtype=dtype)
    if sp.issparse(X):
        X = X.toarray()
    X = np.ascontiguousarray(X)
    if not X.flags.writeable:  # torch.from_numpy warns on read-only memory
        X = X.copy()
    return torch.from_numpy(X).to(device=device, dtype=dtype)


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy()
