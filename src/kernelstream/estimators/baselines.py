"""Online pairwise (AUC) baselines of the AOGD paper's Table 2, as scikit-learn estimators.

They exist so that benchmarks compare :class:`~kernelstream.AOGDClassifier` with its published
baselines on the same features, schedules and tuning; they are not methods we recommend (on the
features and tuning of ``benchmarks/results/aogd.md`` AOGD is at least as good on every data set
but german). Both subclass :class:`~kernelstream.AOGDClassifier` and keep its features, step
schedules, step scale, L2 term, averaging, validation and ``partial_fit``; only the pairs differ.
The per-chunk algorithms live in :mod:`kernelstream.solvers.pairwise`.
"""

from __future__ import annotations

import torch

from .._validation import Integral, Interval
from ..solvers.pairwise import ReservoirBuffers, reservoir_chunk
from ._base import assign_parameters
from .aogd import AOGDClassifier

__all__ = ["OGDLastClassifier", "ReservoirOGDClassifier"]


class OGDLastClassifier(AOGDClassifier):
    """Baseline: OGD on the pair (new example, previous example of the opposite class).

    Online gradient descent with a first-in-first-out buffer of size one (Yang et al. 2021), one
    step per example: ``w ← w − η_t (ℓ'(wᵀd) d + λw)`` with ``d = s_t (z_t − z_prev)``. This is
    AOGD's Algorithm 1 without its mean step and with ``p = 1`` (the random example of a class is
    always its newest). A baseline for benchmarks, not a recommendation: prefer
    :class:`~kernelstream.AOGDClassifier`.

    Parameters
    ----------
    loss, kernel, n_components, sigma, sigma_scale, kernel_params, eta0, learning_rate, t0, \
power_t, alpha, average, batch_size, max_iter, shuffle, random_state, verbose, device, n_jobs
        As in :class:`~kernelstream.AOGDClassifier` (which also has ``gamma0`` and ``p``; here
        the one step per example uses ``eta0``'s schedule and ``p`` is 1).

    Attributes
    ----------
    coef_, threshold_, t_, seed_, n_components_, sigma_
        As in :class:`~kernelstream.AOGDClassifier`.
    """

    p = 1.0        # the random example is always the newest of its class
    gamma0 = None  # the one step uses eta0

    def __init__(self, *, loss="squared", kernel="rbf", n_components=1024, sigma="median",
                 sigma_scale=1.0, kernel_params=None, eta0=0.5, learning_rate="invscaling",
                 t0=1.0, power_t=0.5, alpha=1e-6, average=False, batch_size=64, max_iter=1,
                 shuffle=True, random_state=None, verbose="auto", device="auto", n_jobs=None):
        assign_parameters(self, locals())

    def _schedules(self):
        shape, eta0, _ = super()._schedules()
        return shape, 0.0, eta0  # no mean step; the random-example step is the OGD step


class ReservoirOGDClassifier(AOGDClassifier):
    """Baseline: OGD on the mean pairwise loss over a reservoir of past examples.

    Each class keeps ``buffer_size`` past examples by reservoir sampling (Zhao et al. 2011;
    Kar et al. 2013); a new example takes one step on the mean pairwise gradient over the opposite
    class's reservoir, ``w ← w − η_t (mean_j ℓ'(wᵀd_j) d_j + λw)``, then may enter its own.
    State: ``(2·buffer_size + 4)·D`` numbers. A baseline for benchmarks, not a recommendation:
    prefer :class:`~kernelstream.AOGDClassifier`.

    Parameters
    ----------
    buffer_size : int, default=16
        Examples kept per class.
    loss, kernel, n_components, sigma, sigma_scale, kernel_params, eta0, learning_rate, t0, \
power_t, alpha, average, batch_size, max_iter, shuffle, random_state, verbose, device, n_jobs
        As in :class:`~kernelstream.AOGDClassifier` (without ``gamma0`` and ``p``). The result
        does not depend on ``batch_size``.

    Attributes
    ----------
    buffers_ : ReservoirBuffers
        The two reservoirs, their counts and their coin stream (seeded from ``seed_``).
    coef_, threshold_, t_, seed_, n_components_, sigma_
        As in :class:`~kernelstream.AOGDClassifier`.
    """

    p = 1.0
    gamma0 = None
    _parameter_constraints = {**AOGDClassifier._parameter_constraints,
                              "buffer_size": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, *, loss="squared", kernel="rbf", n_components=1024, sigma="median",
                 sigma_scale=1.0, kernel_params=None, buffer_size=16, eta0=0.5,
                 learning_rate="invscaling", t0=1.0, power_t=0.5, alpha=1e-6, average=False,
                 batch_size=16, max_iter=1, shuffle=True, random_state=None, verbose="auto",
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
