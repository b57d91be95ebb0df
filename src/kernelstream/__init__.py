"""kernelstream: kernel machines that scale, by doubly stochastic gradients on seeded features.

The public names are imported on first use (PEP 562), so that ``import kernelstream`` and the
command line's ``--help`` do not load torch and scikit-learn before they are needed.
"""

from __future__ import annotations

from ._lazy import lazy_attributes

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


__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC)
