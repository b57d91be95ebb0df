"""Baseline estimators for benchmarks (not recommendations).

The online pairwise baselines of the AOGD paper's Table 2, on
:class:`~kernelstream.AOGDClassifier`'s features and schedules:

- :class:`OGDLastClassifier`: OGD pairing each example with the previous example of the opposite
  class (Yang et al. 2021).
- :class:`ReservoirOGDClassifier`: OGD over a reservoir buffer of past examples per class
  (Zhao et al. 2011; Kar et al. 2013).

>>> from kernelstream.baselines import OGDLastClassifier, ReservoirOGDClassifier
"""

from .estimators.baselines import OGDLastClassifier, ReservoirOGDClassifier

__all__ = ["OGDLastClassifier", "ReservoirOGDClassifier"]
