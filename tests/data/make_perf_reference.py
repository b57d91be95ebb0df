"""Write ``perf_reference.npz``: seeded fits' predictions recorded before the issue-4 speed work.

Run once on commit f8051b6 (the code before any performance change):

    .venv/bin/python tests/data/make_perf_reference.py

``tests/test_perf_equivalence.py`` refits the same configurations and asserts the same outputs
to float tolerance, so a faster hot loop can never silently change results.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import make_classification

from kernelstream import DSGClassifier, DSGRegressor

torch.set_num_threads(1)

#: name -> (estimator class name, parameters, data kind)
CONFIGS = {
    "regressor": ("DSGRegressor", dict(batch_size=128, block_size=64, random_state=0), "reg2"),
    "regressor_f64": ("DSGRegressor", dict(batch_size=128, block_size=64, random_state=1,
                                           dtype="float64"), "reg2"),
    "regressor_averaged": ("DSGRegressor", dict(batch_size=128, block_size=64, random_state=2,
                                                average=True), "reg2"),
    "regressor_budget": ("DSGRegressor", dict(batch_size=128, block_size=64, random_state=3,
                                              n_components=256, max_iter=3), "reg2"),
    "regressor_laplace_odd": ("DSGRegressor", dict(batch_size=128, block_size=63, random_state=4,
                                                   kernel="laplace"), "reg2"),
    "regressor_matern_d54": ("DSGRegressor", dict(batch_size=256, block_size=256, random_state=5,
                                                  kernel="matern", n_components=2048), "reg54"),
    "binary": ("DSGClassifier", dict(batch_size=128, block_size=64, random_state=6), "bin"),
    "binary_hinge_averaged": ("DSGClassifier", dict(batch_size=128, block_size=64, random_state=7,
                                                    loss="hinge", average=3), "bin"),
    # precond_eps=3.0: the classifier default when recorded (now "auto", 0.1 for softmax)
    "multiclass": ("DSGClassifier", dict(batch_size=128, block_size=64, random_state=8,
                                         precond_eps=3.0), "multi"),
    "multiclass_budget_f64": ("DSGClassifier", dict(batch_size=128, block_size=128, random_state=9,
                                                    n_components=384, max_iter=2,
                                                    dtype="float64", precond_eps=3.0), "multi"),
    "regressor_fastfood": ("DSGRegressor", dict(batch_size=128, block_size=64, random_state=10,
                                                kernel="rbf_fastfood"), "reg54"),
    "regressor_arccos": ("DSGRegressor", dict(batch_size=128, block_size=64, random_state=11,
                                              kernel="arccos1"), "reg54"),
}


def dataset(kind: str):
    """Training and query rows of each data kind (seeded)."""
    rng = np.random.default_rng(0)
    if kind == "reg2":
        X = rng.uniform(-2, 2, (1536, 2))
        y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(1536)
    elif kind == "reg54":
        X = rng.standard_normal((1536, 54))
        y = np.tanh(X[:, :3].sum(axis=1)) + 0.1 * rng.standard_normal(1536)
    elif kind == "bin":
        X, y = make_classification(1536, 10, n_informative=5, random_state=0)
    else:
        X, y = make_classification(1536, 12, n_informative=6, n_classes=3, random_state=1)
    return X[:1024], y[:1024], X[1024:]


def fitted_output(name: str) -> np.ndarray:
    """Predictions (regressors) or decision values (classifiers) of config ``name`` on its query rows."""
    cls_name, params, kind = CONFIGS[name]
    X, y, Xq = dataset(kind)
    cls = {"DSGRegressor": DSGRegressor, "DSGClassifier": DSGClassifier}[cls_name]
    model = cls(device="cpu", solver="one_pass", **params).fit(X, y)  # the paper's Algorithm 1
    out = model.predict(Xq) if cls is DSGRegressor else model.decision_function(Xq)
    return np.asarray(out, dtype=np.float64)


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    arrays = {name: fitted_output(name) for name in CONFIGS}
    path = Path(__file__).with_name("perf_reference.npz")
    np.savez_compressed(path, commit=np.array(commit), **arrays)
    print(f"wrote {path} ({len(arrays)} configurations) from {commit}")


if __name__ == "__main__":
    main()
