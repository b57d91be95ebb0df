"""The kernel-machine baselines of Dai et al. 2014, Section 7 (their Table 2), for benchmarks.

=============  ===================================================  ==========================
name           method                                               paper
=============  ===================================================  ==========================
NORMA          kernel SGD keeping every support vector (full kernel)  Kivinen et al. 2004
k-SDCA         dual coordinate ascent on the exact kernel           Shalev-Shwartz & Zhang 2013
r-SDCA         SDCA on 2^8 random features (``RandomFeatures``)     + Rahimi & Recht 2008
n-SDCA         SDCA on a rank-2^8 Nyström map                       + Williams & Seeger 2001
r-Pegasos      Pegasos on 2^8 random features                       Shalev-Shwartz et al. 2011
n-Pegasos      Pegasos on a rank-2^8 Nyström map
=============  ===================================================  ==========================

They use only kernelstream's public API (the feature maps of ``RandomFeatures`` and
``kernelstream.features``, whose exact ``kernel(X, Y)`` every kernel method calls), run in torch
on the CPU, and share one loop (:class:`~.base.Baseline`): ``fit(X, y, epochs=)``,
``partial_fit`` (one more pass), ``steps`` (one update at a time, for timing), ``predict``.

>>> import numpy as np
>>> from benchmarks.baselines import make_baseline
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(300, 2)); y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
>>> model = make_baseline("k-SDCA", loss="hinge", sigma=1.0, alpha=1e-3, batch_size=64)
>>> bool(np.mean(model.fit(X, y, epochs=20).predict(X) == y) > 0.9)
True
"""

from __future__ import annotations

from .base import Baseline, Progress
from .features import NystromFeatures, random_features
from .norma import NORMA
from .pegasos import Pegasos
from .sdca import SDCA, KernelSDCA

__all__ = ["BASELINES", "Baseline", "KernelSDCA", "NORMA", "NystromFeatures", "Pegasos",
           "Progress", "SDCA", "make_baseline", "random_features"]

#: the names of :func:`make_baseline`, in the paper's order
BASELINES = ("NORMA", "k-SDCA", "r-SDCA", "r-Pegasos", "n-SDCA", "n-Pegasos")


def make_baseline(name: str, *, loss: str, sigma: float, alpha: float, batch_size: int,
                  kernel: str = "rbf", kernel_params: dict | None = None,
                  n_components: int = 256, random_state: int = 0, dtype: str = "float64",
                  **options) -> Baseline:
    """The baseline ``name`` (one of :data:`BASELINES`) on ``kernel`` at bandwidth ``sigma``,
    with ``n_components`` random features or Nyström landmarks for the r- and n- methods;
    ``options`` go to the class (e.g. NORMA's ``eta0``)."""
    common = dict(loss=loss, alpha=alpha, batch_size=batch_size, random_state=random_state,
                  dtype=dtype, **options)
    kernel_args = dict(kernel=kernel, sigma=sigma, kernel_params=kernel_params)
    if name == "NORMA":
        return NORMA(**kernel_args, **common)
    if name == "k-SDCA":
        return KernelSDCA(**kernel_args, **common)
    if name in ("r-SDCA", "r-Pegasos", "n-SDCA", "n-Pegasos"):
        features = (random_features(n_components=n_components, random_state=random_state, **kernel_args)
                    if name[0] == "r" else
                    NystromFeatures(n_components=n_components, random_state=random_state,
                                    dtype=dtype, **kernel_args))
        return (SDCA if name.endswith("SDCA") else Pegasos)(features=features, **common)
    raise ValueError(f"unknown baseline {name!r}; choose one of {list(BASELINES)}.")
