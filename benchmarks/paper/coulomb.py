"""Randomly sorted, binarised Coulomb matrices: the QM7 input of Montavon et al. (NIPS 2012).

A molecule's Coulomb matrix ``C`` (``C_ii = ½ Z_i^2.4``, ``C_ij = Z_i Z_j / |R_i − R_j|``) depends
on the order of its atoms. Montavon et al. make the input invariant in distribution:

1. **Random sorting.** Permute rows and columns of ``C`` by the descending order of
   ``‖C_i‖ + n_i``, ``n ~ N(0, noise² I)`` (``noise = 1``): atoms of close row norms swap at
   random, every draw is a plausible sorted matrix. Keep the upper triangle, diagonal included
   (276 entries for 23 atoms).
2. **Binarisation.** Replace each entry ``x_e`` by the steps
   ``tanh((x_e − k)/θ)`` for ``k = 0, θ, 2θ, …, ⌈max_e/θ⌉θ`` (``θ = step = 1``), ``max_e`` the
   largest value of the entry over ``n_max_draws`` random sortings of the fitting molecules: a
   smooth thermometer code. Per entry, away from the ends of its steps,
   ``‖b(x) − b(x')‖² ≈ ∫ (tanh(u + Δ) − tanh u)² du = 4(Δ coth Δ − 1)`` with ``Δ = |x − x'|/θ``:
   ``4Δ²/3`` for small and ``4(Δ − 1)`` for large differences, so a Gaussian kernel on the codes
   acts like a Laplace (L1) kernel on the matrix entries beyond one step.
3. **Normalisation.** Subtract the mean of every coordinate and divide by one global standard
   deviation (a scalar), both from one random sorting of the fitting molecules.

This follows the authors' code (the ``Input`` class of their QM7 example: ``step = 1``,
``noise = 1``, maxima over 10 sortings) and gives 2,098 coordinates on QM7; the median distance
between molecules is then 58.8, the σ = 60 that Dai et al. (2014, Section 7.4) report from the
median trick.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CoulombBinariser", "random_sorted_upper"]


def random_sorted_upper(C: np.ndarray, rng: np.random.Generator, noise: float = 1.0) -> np.ndarray:
    """Upper triangles ``(n, a(a+1)/2)`` of the Coulomb matrices ``C`` ``(n, a, a)``, each with
    rows and columns in the descending order of ``‖C_i‖ + N(0, noise²)`` (one draw per molecule).

    ``noise=0`` is the plain sorted Coulomb matrix.
    """
    C = np.asarray(C)
    if C.ndim != 3 or C.shape[1] != C.shape[2]:
        raise ValueError(f"Coulomb matrices must have shape (n, atoms, atoms), got {C.shape}")
    norms = np.linalg.norm(C, axis=2)  # ‖C_i‖, (n, a)
    order = np.argsort(-(norms + rng.normal(0.0, noise, norms.shape)), axis=1, kind="stable")
    permuted = np.take_along_axis(C, order[:, :, None], axis=1)
    permuted = np.take_along_axis(permuted, order[:, None, :], axis=2)  # P C Pᵀ
    upper = np.triu_indices(C.shape[1])
    return permuted[:, upper[0], upper[1]]


@dataclass
class CoulombBinariser:
    """Random sorting, binarisation and normalisation (module docstring) fitted on molecules.

    Parameters
    ----------
    step : float
        ``θ``: the spacing and the width of the tanh steps.
    noise : float
        Standard deviation of the noise added to the row norms before sorting.
    n_max_draws : int
        Random sortings over which each entry's maximum (its last step) is taken.
    seed : int
        Seeds the sortings used by :meth:`fit`.
    """

    step: float = 1.0
    noise: float = 1.0
    n_max_draws: int = 10
    seed: int = 0
    thresholds_: np.ndarray = field(init=False, repr=False)
    entries_: np.ndarray = field(init=False, repr=False)
    mean_: np.ndarray = field(init=False, repr=False)
    scale_: float = field(init=False, repr=False)

    def fit(self, C: np.ndarray) -> CoulombBinariser:
        """Steps of every entry from the maxima over ``n_max_draws`` sortings of ``C``, then the
        mean and global standard deviation of one more sorting's codes."""
        if self.step <= 0 or self.noise < 0 or self.n_max_draws < 1:
            raise ValueError(f"need step > 0, noise >= 0 and n_max_draws >= 1, got {self.step}, "
                             f"{self.noise} and {self.n_max_draws}")
        rng = np.random.default_rng(self.seed)
        largest = np.max([random_sorted_upper(C, rng, self.noise).max(axis=0)
                          for _ in range(self.n_max_draws)], axis=0)
        counts = np.floor(np.maximum(largest, 0.0) / self.step).astype(int) + 2  # k = 0 … ⌈max/θ⌉θ
        self.entries_ = np.repeat(np.arange(largest.shape[0]), counts)
        self.thresholds_ = np.concatenate([np.arange(c) * self.step for c in counts])
        codes = self._codes(random_sorted_upper(C, rng, self.noise))
        self.mean_ = codes.mean(axis=0)
        self.scale_ = float((codes - self.mean_).std())
        return self

    @property
    def n_features_out(self) -> int:
        """Coordinates of a binarised matrix."""
        return int(self.thresholds_.shape[0])

    def _codes(self, upper: np.ndarray) -> np.ndarray:
        """``tanh((x_e − k)/θ)`` for every entry ``e`` and its steps ``k``, float32."""
        return np.tanh((upper[:, self.entries_] - self.thresholds_) / self.step).astype(np.float32)

    def transform(self, C: np.ndarray, rng: np.random.Generator, rows_per_chunk: int = 4096) -> np.ndarray:
        """One random sorting of every molecule of ``C``, binarised and normalised:
        ``(n, n_features_out)`` float32, built in chunks of molecules."""
        if not hasattr(self, "scale_"):
            raise RuntimeError("CoulombBinariser is not fitted; call fit(C) first")
        upper = random_sorted_upper(C, rng, self.noise)
        out = np.empty((upper.shape[0], self.n_features_out), dtype=np.float32)
        for i in range(0, upper.shape[0], rows_per_chunk):
            rows = slice(i, i + rows_per_chunk)
            out[rows] = (self._codes(upper[rows]) - self.mean_) / self.scale_
        return out

    def transform_draws(self, C: np.ndarray, n_draws: int, seed: int) -> np.ndarray:
        """``n_draws`` random sortings of every molecule, draw-major: row ``j·n + i`` is draw
        ``j`` of molecule ``i``; ``(n_draws·n, n_features_out)`` float32, seeded by ``seed``."""
        rng = np.random.default_rng(seed)
        return np.concatenate([self.transform(C, rng) for _ in range(n_draws)])
