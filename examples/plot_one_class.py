"""
Novelty detection with DSGOneClass
==================================

``DSGOneClass(nu=0.05)`` learns the support of two Gaussian blobs from normal points only; the
contour ``decision_function = 0`` encloses about 95% of them. New points far from the blobs
are flagged −1. scikit-learn's ``OneClassSVM`` on the same points, bandwidth and ``nu`` is the
reference.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import OneClassSVM

from kernelstream import DSGOneClass

rng = np.random.default_rng(0)
X = np.vstack([rng.normal((-2, 0), 0.6, (3000, 2)), rng.normal((2, 1), 0.9, (3000, 2))])
novel = rng.uniform(-6, 6, (200, 2))

detector = DSGOneClass(nu=0.05, random_state=0).fit(X)
print(f"training points flagged: {np.mean(detector.predict(X) == -1):.1%} (nu = 5%)")
print(f"uniform points flagged:  {np.mean(detector.predict(novel) == -1):.1%}")
gamma = 1 / (2 * detector.sigma_**2)                 # the same kernel for the reference
reference = OneClassSVM(nu=0.05, gamma=gamma).fit(X)
agree = np.mean(detector.predict(novel) == reference.predict(novel))
print(f"agreement with OneClassSVM on the uniform points: {agree:.1%}")

# %%
grid = np.linspace(-6, 6, 150)
G = np.stack(np.meshgrid(grid, grid), axis=-1).reshape(-1, 2)
fig, ax = plt.subplots(figsize=(6, 5), constrained_layout=True)
ax.contourf(grid, grid, detector.decision_function(G).reshape(150, 150), levels=20,
            cmap="Blues_r")
ax.contour(grid, grid, detector.decision_function(G).reshape(150, 150), levels=[0],
           colors="k")
ax.contour(grid, grid, reference.decision_function(G).reshape(150, 150), levels=[0],
           colors="tab:orange", linestyles="--")
ax.scatter(X[::10, 0], X[::10, 1], s=2, color="w")
flagged = detector.predict(novel) == -1
ax.scatter(novel[flagged, 0], novel[flagged, 1], s=10, color="tab:red", label="flagged")
ax.scatter(novel[~flagged, 0], novel[~flagged, 1], s=10, color="tab:green", label="normal")
ax.set_title("black: DSGOneClass, dashed: OneClassSVM")
ax.legend(loc="lower right")
plt.show()
