"""
Regression on the paper's 2-D synthetic function
================================================

``DSGRegressor()`` with its defaults on 20,000 noisy points of the synthetic regression of
Dai et al. (2014, Section 7.1): ``f(x) = cos(0.5π‖x‖) · exp(−0.1π‖x‖)`` on ``[−5, 5]²``,
noise standard deviation 0.1.
The converging ``fit`` races bandwidths, grows the features while the validation loss
improves and stops when it no longer does; the fitted attributes say what it chose.
"""

import matplotlib.pyplot as plt
import numpy as np

from kernelstream import DSGRegressor
from kernelstream.datasets import synthetic_function, synthetic_regression

X, y, _ = synthetic_regression(20_000, noise=0.1, random_state=0)
X_test, _, f_test = synthetic_regression(5_000, noise=0.1, random_state=1)

model = DSGRegressor(random_state=0).fit(X, y)
mse = np.mean((model.predict(X_test) - f_test) ** 2)
print(f"test MSE against the noise-free f: {mse:.2e} (noise variance 1e-2)")
print(f"sigma_={model.sigma_:.3g}, alpha_={model.alpha_:g}, "
      f"{model.n_components_} features, {model.n_iter_} epochs")

# %%
# Left: the learned function next to the true one, on a grid. Right: the validation loss per
# epoch of the size kept (minus ``validation_scores_``); ``feature_growth_`` holds each size's
# best validation loss.
for step in model.feature_growth_:
    print(step)
grid = np.linspace(-5, 5, 121)
G = np.stack(np.meshgrid(grid, grid), axis=-1).reshape(-1, 2).astype(np.float32)
fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), constrained_layout=True)
for ax, values, title in [(axes[0], synthetic_function(G), "true f"),
                          (axes[1], model.predict(G), "DSGRegressor")]:
    image = ax.imshow(values.reshape(121, 121), extent=(-5, 5, -5, 5), origin="lower",
                      vmin=-0.8, vmax=1.0, cmap="viridis")
    ax.set_title(title)
fig.colorbar(image, ax=axes[:2], shrink=0.8)
axes[2].plot(np.arange(1, len(model.validation_scores_) + 1),
             -np.asarray(model.validation_scores_), marker="o")
axes[2].set(xlabel="epoch", ylabel="validation loss", yscale="log",
            title=f"{model.n_components_} features")
plt.show()
