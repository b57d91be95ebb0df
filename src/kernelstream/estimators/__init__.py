"""scikit-learn estimators over the doubly stochastic solver."""

from .classification import DSGClassifier
from .novelty import DSGDensityRatio, DSGOneClass
from .random_features import RandomFeatures
from .regression import DSGRegressor

__all__ = ["DSGClassifier", "DSGDensityRatio", "DSGOneClass", "DSGRegressor", "RandomFeatures"]
