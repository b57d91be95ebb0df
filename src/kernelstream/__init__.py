"""kernelstream: kernel machines that scale, by doubly stochastic gradients on seeded features."""

from .estimators import (AOGDClassifier, DSGClassifier, DSGDensityRatio,
                         DSGGaussianProcessRegressor, DSGOneClass, DSGRegressor, GoGPRegressor,
                         RandomFeatures)
from .io import load

__version__ = "0.1.0"

__all__ = ["AOGDClassifier", "DSGClassifier", "DSGDensityRatio", "DSGGaussianProcessRegressor",
           "DSGOneClass", "DSGRegressor", "GoGPRegressor", "RandomFeatures", "load", "__version__"]
