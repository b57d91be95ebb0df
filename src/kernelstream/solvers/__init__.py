"""Pure solver functions on torch tensors; no scikit-learn here."""

from .doubly_sgd import DSGConfig, dsg_step, run_dsg
from .pairwise import PairwiseState, aogd_chunk, chunk_update, pair_directions

__all__ = ["DSGConfig", "PairwiseState", "aogd_chunk", "chunk_update", "dsg_step",
           "pair_directions", "run_dsg"]
