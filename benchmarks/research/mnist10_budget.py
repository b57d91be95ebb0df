"""MNIST ten classes (60,000 training images, ``X/255``, no PCA): ``DSGClassifier()`` defaults
with another constant in the default feature budget ``c·√n·ln n`` (the library's is 8), on
whatever device ``device="auto"`` picks. Prints one JSON line.

    python -m benchmarks.research.mnist10_budget              # the defaults (c = 8)
    python -m benchmarks.research.mnist10_budget --features-per-root 16
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import kernelstream.estimators._budget as budget
from benchmarks.common.data import load
from kernelstream import DSGClassifier


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features-per-root", type=float, default=budget.FEATURES_PER_ROOT)
    parser.add_argument("--n-train", type=int, default=60000)
    args = parser.parse_args(argv)
    budget.FEATURES_PER_ROOT = args.features_per_root
    data = load("mnist")
    X = data["X_train"][: args.n_train].reshape(-1, 784) / 255.0
    X_test = data["X_test"].reshape(-1, 784) / 255.0
    synchronize = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    start = time.perf_counter()
    model = DSGClassifier(random_state=0).fit(X, data["y_train"][: args.n_train])
    synchronize()
    fit_s = time.perf_counter() - start
    record = dict(features_per_root=args.features_per_root, n_train=len(X), device=str(model.device_),
                  test_error=float(np.mean(model.predict(X_test) != data["y_test"])), fit_s=fit_s,
                  sigma=model.sigma_, alpha=model.alpha_, n_components=model.n_components_,
                  n_iter=model.n_iter_, growth=model.feature_growth_)
    print(json.dumps(record), flush=True)
    return record


if __name__ == "__main__":
    main()
