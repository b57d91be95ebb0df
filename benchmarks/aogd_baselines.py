"""The online pairwise baselines of the AOGD paper's Table 2, as scikit-learn estimators (issue 8).

- :class:`OGDLastClassifier` pairs each example with the previous example of the opposite class,
  one step per example (Yang et al. 2021: a FIFO buffer of size one).
- :class:`ReservoirOGDClassifier` keeps ``buffer_size`` examples per class by reservoir sampling
  and averages the pairwise gradients over the opposite class's buffer (Zhao et al. 2011;
  Kar et al. 2013).

Both reuse :class:`kernelstream.AOGDClassifier`'s features (random Fourier features of the
registry, or ``kernel="linear"``), step schedules, step scale, L2 term, averaging, validation and
``partial_fit``; only the pairs differ. ``benchmarks/aogd.py`` runs the same per-chunk updates on a
whole (η, λ) grid at once. They live in ``benchmarks/`` because they are comparison points, not
methods we recommend: on the same features and tuning AOGD is at least as good on every data set
of ``results/aogd.md`` but german.
"""

from __future__ import annotations

import numpy as np
import torch

from kernelstream import AOGDClassifier
from kernelstream._validation import Integral, Interval
from kernelstream.estimators._base import assign_parameters
from kernelstream.solvers.pairwise import chunk_update

__all__ = ["OGDLastClassifier", "ReservoirOGDClassifier", "ReservoirBuffers", "reservoir_chunk"]


class ReservoirBuffers:
    """Per-class reservoirs of ``size`` mapped examples (``2·size·D`` numbers) and their counts."""

    def __init__(self, size: int, n_components: int, seed: int, device=None) -> None:
        self.size = size
        self.rows = [torch.zeros(size, n_components, dtype=torch.float64, device=device) for _ in (0, 1)]
        self.filled, self.seen = [0, 0], [0, 0]
        self.rng = np.random.default_rng(seed)


def reservoir_chunk(w: torch.Tensor, buffers: ReservoirBuffers, Z: torch.Tensor,
                    positive: torch.Tensor, steps: torch.Tensor, lam: torch.Tensor,
                    loss: str = "squared", *, weights: torch.Tensor | None = None,
                    total: torch.Tensor | None = None) -> torch.Tensor:
    """One chunk of reservoir OGD: example ``k`` takes one step on the mean pairwise gradient over
    the opposite buffer *as it is when ``k`` arrives*, then enters its own class's reservoir
    (kept while the buffer fills, then with probability ``size/seen``). Exact for any chunking.

    ``w`` (G, D); ``Z`` (m, D) float64; ``positive`` (m,) bool; ``steps`` (G, m); ``lam`` (G, 1);
    ``weights``/``total`` accumulate the per-example iterates as in :func:`chunk_update`.
    """
    m, s = Z.shape[0], buffers.size
    B = torch.cat([Z, buffers.rows[0], buffers.rows[1]])  # basis: chunk rows, then the buffers
    slots = [list(range(m + c * s, m + (c + 1) * s)) for c in (0, 1)]
    own, partner, signs, step_of_row = [], [], [], []
    for k in range(m):
        c = int(positive[k])
        o = 1 - c
        for j in range(buffers.filled[o]):  # pairs with the opposite buffer as it is now
            own.append(k)
            partner.append(slots[o][j])
            signs.append(1.0 if c else -1.0)  # d = z⁺ − z⁻
            step_of_row.append(k)
        buffers.seen[c] += 1  # reservoir sampling of the new example into its class's buffer
        if buffers.filled[c] < s:
            slots[c][buffers.filled[c]] = k
            buffers.filled[c] += 1
        elif buffers.rng.random() < s / buffers.seen[c]:
            slots[c][buffers.rng.integers(s)] = k
    if own:
        T = torch.zeros(len(own), B.shape[0], dtype=torch.float64, device=B.device)
        rows, sign = torch.arange(len(own)), torch.tensor(signs, dtype=torch.float64, device=B.device)
        T[rows, torch.tensor(own)] = sign
        T[rows, torch.tensor(partner)] = -sign
        w = chunk_update(w, T, B, steps, lam, loss, torch.tensor(step_of_row, device=B.device),
                         iterate_weights=weights, iterate_sum=total)
    elif weights is not None:  # no pairs yet: every iterate of the chunk is w
        total += weights.sum() * w
    for c in (0, 1):
        kept = B[slots[c][: buffers.filled[c]]]
        buffers.rows[c] = torch.cat([kept, B.new_zeros(s - buffers.filled[c], B.shape[1])])
    return w


class OGDLastClassifier(AOGDClassifier):
    """OGD on the pair (new example, previous example of the opposite class).

    This is Algorithm 1 without its mean step and with ``p = 1`` (the random example is always
    the newest): ``w ← w − η_t (ℓ'(wᵀd) d + λw)``, ``d = s_t (z_t − z_prev)``. Parameters as in
    :class:`~kernelstream.AOGDClassifier`, without ``gamma0`` and ``p``.
    """

    p = 1.0        # the random example is always the newest of its class
    gamma0 = None  # the one step uses eta0

    def __init__(self, *, loss="squared", kernel="rbf", n_components=1024, sigma="median",
                 sigma_scale=1.0, kernel_params=None, eta0=0.5, learning_rate="invscaling",
                 t0=1.0, power_t=0.5, alpha=1e-6, average=False, batch_size=64, max_iter=1,
                 shuffle=True, random_state=None, verbose=0, device="auto", n_jobs=None):
        assign_parameters(self, locals())

    def _schedules(self):
        shape, eta0, _ = super()._schedules()
        return shape, 0.0, eta0  # no mean step; the random-example step is the OGD step


class ReservoirOGDClassifier(AOGDClassifier):
    """OGD on the mean pairwise loss over a reservoir of ``buffer_size`` past examples of the
    opposite class (Zhao et al. 2011; Kar et al. 2013), one step per example:
    ``w ← w − η_t (mean_j ℓ'(wᵀd_j) d_j + λw)``. State ``(2·buffer_size + 4)·D`` numbers.
    Parameters as in :class:`~kernelstream.AOGDClassifier`, without ``gamma0`` and ``p``.
    """

    p = 1.0
    gamma0 = None
    _parameter_constraints = {**AOGDClassifier._parameter_constraints,
                              "buffer_size": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, *, loss="squared", kernel="rbf", n_components=1024, sigma="median",
                 sigma_scale=1.0, kernel_params=None, buffer_size=16, eta0=0.5,
                 learning_rate="invscaling", t0=1.0, power_t=0.5, alpha=1e-6, average=False,
                 batch_size=16, max_iter=1, shuffle=True, random_state=None, verbose=0,
                 device="auto", n_jobs=None):
        assign_parameters(self, locals())

    def _start(self, X, random) -> None:
        super()._start(X, random)
        self.buffers_ = ReservoirBuffers(self.buffer_size, self.n_components_, self.seed_ % 2**32,
                                         self.device_)

    def _update(self, w, Z, positive, eta, gamma, lam, weights, total) -> torch.Tensor:
        w = reservoir_chunk(w, self.buffers_, Z, positive, eta, lam, self.loss, weights=weights,
                            total=total)
        for c in (0, 1):  # class means (for threshold_) and the example count
            in_class = positive == bool(c)
            self.state_.sums[c] += Z[in_class].sum(0)
            self.state_.counts[c] += int(in_class.sum())
        self.state_.t += Z.shape[0]
        return w
