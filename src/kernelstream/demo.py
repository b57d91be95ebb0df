"""``make demo``: the paper's 2-D synthetic regression, DSGRegressor at the paper's bandwidth.

Defaults otherwise (the converging solver: alpha, features and epochs chosen on held-out rows).
Prints the test MSE against the noise-free function, fit time, number of random features and
the size of the saved model. ``--compare`` also fits scikit-learn's RBFSampler(4096) + Ridge.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from . import DSGRegressor, load
from .datasets import synthetic_regression
from .features import median_distance, sigma_to_gamma


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2**16, help="training points (default 2^16)")
    parser.add_argument("--compare", action="store_true", help="also fit RBFSampler(4096)+Ridge")
    args = parser.parse_args(argv)

    X, y, _ = synthetic_regression(args.n, random_state=0)
    X_test, _, f_test = synthetic_regression(10_000, random_state=1)
    sigma = 0.1 * median_distance(X)  # the paper's bandwidth for this data set
    print(f"synthetic regression: {args.n} training points, 10000 test points, sigma={sigma:.4f}")

    model = DSGRegressor(sigma=sigma, random_state=0)
    start = time.perf_counter()
    model.fit(X, y)
    fit_time = time.perf_counter() - start
    mse = float(np.mean((model.predict(X_test) - f_test) ** 2))

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.kst")
        model.save(path)
        size = os.path.getsize(path)
        same = np.array_equal(load(path).predict(X_test), model.predict(X_test))

    print(f"DSGRegressor      test MSE {mse:.3e}   fit {fit_time:6.2f} s   "
          f"features {model.n_components_}   steps {model.t_}   model file {size / 1024:.0f} KiB "
          f"(reloaded predictions identical: {same})")
    if args.compare:
        from sklearn.kernel_approximation import RBFSampler
        from sklearn.linear_model import Ridge

        start = time.perf_counter()
        sampler = RBFSampler(gamma=sigma_to_gamma(sigma), n_components=4096, random_state=0)
        ridge = Ridge(alpha=1e-6 * args.n).fit(sampler.fit_transform(X), y)
        peer_time = time.perf_counter() - start
        peer_mse = float(np.mean((ridge.predict(sampler.transform(X_test)) - f_test) ** 2))
        print(f"RBFSampler+Ridge  test MSE {peer_mse:.3e}   fit {peer_time:6.2f} s   features 4096"
              f"   (MSE ratio ours/peer {mse / peer_mse:.2f})")


if __name__ == "__main__":
    main()
