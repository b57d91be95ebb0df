"""
Density ratio and KL divergence
===============================

``DSGDensityRatio`` estimates ``log p(x)/q(x)`` from one sample of each: here
``p = N(0, 1)`` and ``q = N(0.5, 1.5²)`` in one dimension, where the log ratio and
``KL(p‖q)`` have closed forms to compare with.
"""

import matplotlib.pyplot as plt
import numpy as np

from kernelstream import DSGDensityRatio

rng = np.random.default_rng(0)
mu, s = 0.5, 1.5
X_p = rng.normal(0.0, 1.0, (20_000, 1))
X_q = rng.normal(mu, s, (20_000, 1))


def true_log_ratio(x):
    """``log N(x; 0, 1) − log N(x; μ, s²)``."""
    return np.log(s) - x**2 / 2 + (x - mu) ** 2 / (2 * s**2)


true_kl = np.log(s) + (1 + mu**2) / (2 * s**2) - 0.5
model = DSGDensityRatio(random_state=0).fit(X_p, X_q)
print(f"KL(p||q): estimated {model.kl_divergence_:.3f}, exact {true_kl:.3f}")

# %%
grid = np.linspace(-3, 3, 200).reshape(-1, 1)
fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
ax.plot(grid, model.log_ratio(grid), lw=2, label="DSGDensityRatio")
ax.plot(grid, true_log_ratio(grid[:, 0]), "k--", label="exact log p/q")
ax.set(xlabel="x", ylabel="log p(x)/q(x)")
ax.legend()
plt.show()
