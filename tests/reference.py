"""Oracles for the tests: naive loops and closed forms, written for clarity, not speed."""

from __future__ import annotations

import numpy as np




def exact_kernel_ridge(K_train, y, K_test_train, lam):
    """Closed form ``k*ᵀ (K + n λ I)⁻¹ y`` of ``min 1/(2n) Σ (f(x_i) − y_i)² + λ/2 ‖f‖²``."""
    n = K_train.shape[0]
    return K_test_train @ np.linalg.solve(K_train + n * lam * np.eye(n), y)


def sgd_on_fixed_features(Phi_blocks, y, batches, step_sizes, alpha):
    """Plain mini-batch SGD on the fixed model ``f = Σ_j Φ_j w_j + b`` with squared loss:

    ``w_j ← w_j / (1 + γ_t α)`` for every block (the proximal step of the regulariser), then ``w_{t mod J} −= γ_t Φ_{t mod J}ᵀ(f − y)/b``
    and ``b −= γ_t mean(f − y)``. ``Phi_blocks`` is ``(n, J, r)``; returns ``(w, b)``.
    """
    n, J, r = Phi_blocks.shape
    w = np.zeros((J, r))
    b = 0.0
    for t, (rows, gamma) in enumerate(zip(batches, step_sizes)):
        Phi = Phi_blocks[rows]
        f = np.einsum("njr,jr->n", Phi, w) + b
        g = f - y[rows]
        w /= 1 + gamma * alpha
        w[t % J] -= gamma * Phi[:, t % J, :].T @ g / len(rows)
        b -= gamma * g.mean()
    return w, b
