"""Pure solver functions on torch tensors; no scikit-learn here."""

from .doubly_sgd import DSGConfig, dsg_step, run_dsg

__all__ = ["DSGConfig", "dsg_step", "run_dsg"]
