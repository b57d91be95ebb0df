"""
Gaussian-process posterior with error bars
==========================================

``DSGGaussianProcessRegressor()`` on a 1-D regression with a gap in the inputs, against
scikit-learn's exact ``GaussianProcessRegressor`` with an RBF + white-noise kernel. Both fit
the bandwidth, the amplitude and the noise by the marginal likelihood; the error bars (noise
included) widen in the gap.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from kernelstream import DSGGaussianProcessRegressor

rng = np.random.default_rng(0)
X = np.concatenate([rng.uniform(-4, -1, 300), rng.uniform(1, 4, 300)]).reshape(-1, 1)
y = np.sin(2 * X[:, 0]) + 0.5 * np.cos(5 * X[:, 0]) + 0.2 * rng.standard_normal(len(X))
grid = np.linspace(-5, 5, 300).reshape(-1, 1)

gp = DSGGaussianProcessRegressor(random_state=0).fit(X, y)
mean, std = gp.predict(grid, return_std=True)
print(f"sigma_={gp.sigma_:.3g}, noise_={gp.noise_:.3g}")

exact = GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(), normalize_y=True,
                                 random_state=0).fit(X, y)
exact_mean, exact_std = exact.predict(grid, return_std=True)
print("exact GP:", exact.kernel_)
print(f"largest gap between the means {np.abs(mean - exact_mean).max():.3f}, "
      f"between the stds {np.abs(std - exact_std).max():.3f}")

# %%
fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
ax.scatter(X[:, 0], y, s=3, color="0.6", label="data")
ax.fill_between(grid[:, 0], mean - 1.96 * std, mean + 1.96 * std, alpha=0.3,
                label="DSG GP, 95%")
ax.plot(grid, mean, lw=2, label="DSG GP mean")
ax.plot(grid, exact_mean, "k--", lw=1, label="exact GP mean")
ax.plot(grid, exact_mean + 1.96 * exact_std, "k:", lw=1)
ax.plot(grid, exact_mean - 1.96 * exact_std, "k:", lw=1, label="exact GP, 95%")
ax.set(xlabel="x", ylabel="y")
ax.legend(loc="lower left", fontsize="small")
plt.show()
