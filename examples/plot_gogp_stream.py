"""
Online GP regression on a stream
================================

``GoGPRegressor`` learns the paper's 2-D synthetic function one point at a time. A point joins
the inducing set only when the current set predicts it worse than the noise level, so the set
stays small while the stream goes on. ``partial_fit`` continues the stream chunk by chunk; the
progressive RMSE (each point predicted before it is learnt) follows the noise floor.
"""

import matplotlib.pyplot as plt
import numpy as np

from kernelstream import GoGPRegressor
from kernelstream.datasets import synthetic_regression

X, y, _ = synthetic_regression(4_000, noise=0.1, random_state=0, dtype=np.float64)
X_test, _, f_test = synthetic_regression(1_000, noise=0.1, random_state=1, dtype=np.float64)

model = GoGPRegressor(random_state=0).fit(X[:1000], y[:1000])  # warm start, then online
sizes, errors = [model.n_inducing_], [model.progressive_rmse_]
for start in range(1000, 4000, 250):                            # the rest of the stream
    model.partial_fit(X[start:start + 250], y[start:start + 250])
    sizes.append(model.n_inducing_)
    errors.append(model.progressive_rmse_)
mean, std = model.predict(X_test, return_std=True)
print(f"|U| = {model.n_inducing_} of {len(X)} points, "
      f"test RMSE against f {np.sqrt(np.mean((mean - f_test) ** 2)):.3f}, "
      f"mean std {std.mean():.3f}")

# %%
seen = np.arange(1000, 4001, 250)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
axes[0].plot(seen, sizes, marker="o")
axes[0].set(xlabel="points seen", ylabel="inducing points |U|",
            ylim=(0, 1.2 * max(sizes)))
axes[1].plot(seen, errors, marker="o")
axes[1].axhline(0.1, color="k", ls=":", label="noise std")
axes[1].set(xlabel="points seen", ylabel="progressive RMSE")
axes[1].legend()
plt.show()
