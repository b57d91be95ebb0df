"""kernelstream: kernel machines that scale, by doubly stochastic gradients on seeded features.

The public names are imported on first use (PEP 562), so that ``import kernelstream`` and the
command line's ``--help`` do not load torch and scikit-learn before they are needed.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name → the module that defines it
_PUBLIC = {
    "AOGDClassifier": ".estimators",
    "DSGClassifier": ".estimators",
    "DSGDensityRatio": ".estimators",
    "DSGGaussianProcessRegressor": ".estimators",
    "DSGOneClass": ".estimators",
    "DSGRegressor": ".estimators",
    "GoGPRegressor": ".estimators",
    "RandomFeatures": ".estimators",
    "load": ".io",
}

__all__ = [*_PUBLIC, "__version__"]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'kernelstream' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
