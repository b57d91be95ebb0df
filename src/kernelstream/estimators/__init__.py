"""scikit-learn estimators over the solvers (doubly stochastic, pairwise)."""

from .aogd import AOGDClassifier
from .classification import DSGClassifier
from .gogp import GoGPRegressor
from .gp import DSGGaussianProcessRegressor
from .novelty import DSGDensityRatio, DSGOneClass
from .random_features import RandomFeatures
from .regression import DSGRegressor

__all__ = ["AOGDClassifier", "DSGClassifier", "DSGDensityRatio", "DSGGaussianProcessRegressor",
           "DSGOneClass", "DSGRegressor", "GoGPRegressor", "RandomFeatures"]

from ..io import register_model_class

for _name in __all__:
    register_model_class(globals()[_name])
