"""scikit-learn estimators over the doubly stochastic solver."""

from .classification import DSGClassifier
from .random_features import RandomFeatures
from .regression import DSGRegressor

__all__ = ["DSGClassifier", "DSGRegressor", "RandomFeatures"]
