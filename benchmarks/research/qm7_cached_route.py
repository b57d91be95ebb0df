"""Research probe (issue 34): what QM7 fold 0 needs of the cached route.

Three measurements on fold 0 (5,732 training molecules × ``--draws`` random sortings, 1,433 test
molecules × 10 sortings, a molecule's prediction the mean over its sortings), the codes of
:mod:`benchmarks.paper.coulomb` projected on ``--pca`` principal axes:

- ``exact``: exact Gaussian kernel ridge ``(K + λnI)a = y − ȳ`` in float64 (``λ = α``);
- ``closed``: ``D`` random features of the library's map, the normal equations in float64;
- ``pcg``: the same features cached in float32 and solved by conjugate gradients with the
  library's :class:`~kernelstream.solvers.cached.SketchPreconditioner` of ``--sketch`` rows,
  printing the relative residual and the MAE every 25 iterations.

    python -m benchmarks.research.qm7_cached_route exact --draws 4 --pca 256 --alpha 1e-9
    python -m benchmarks.research.qm7_cached_route pcg --draws 4 --pca 1024 --features 65536 --sketch 4096
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from benchmarks.common.data import load
from benchmarks.paper.coulomb import CoulombBinariser
from benchmarks.paper.qm7 import fold_indices, project
from kernelstream.features import make_feature_map
from kernelstream.solvers.cached import FeatureCache, SketchPreconditioner


def fold0(draws: int, pca: int, test_draws: int = 10):
    data = load("qm7")
    C, T = data["X"], data["T"].astype(np.float64)
    train, test = fold_indices(data["P"], 0)
    encode = CoulombBinariser(seed=0).fit(C[train]).transform_draws
    X, X_test = encode(C[train], draws, 1), encode(C[test], test_draws, 2)
    X, X_test = project(X, X_test, pca, 0)
    return torch.from_numpy(X), np.tile(T[train], draws), torch.from_numpy(X_test), T[test]


def mae(predictions: np.ndarray, truth: np.ndarray) -> float:
    return float(np.abs(predictions.reshape(-1, len(truth)).mean(axis=0) - truth).mean())


def exact(X, y, X_test, truth, sigma, alphas):
    X, X_test = X.double(), X_test.double()

    def kernel(A, B):
        squared = ((A * A).sum(1)[:, None] + (B * B).sum(1)[None] - 2 * A @ B.T).clamp_min(0)
        return torch.exp(-squared / (2 * sigma**2))

    K, K_test, mean = kernel(X, X), kernel(X_test, X), y.mean()
    for alpha in alphas:
        a = torch.linalg.solve(K + alpha * len(y) * torch.eye(len(y), dtype=K.dtype),
                               torch.from_numpy(y - mean))
        print(f"exact alpha={alpha:g} mae={mae((K_test @ a).numpy() + mean, truth):.3f}", flush=True)


def features(X, X_test, sigma, n_features, kernel="rbf"):
    fmap = make_feature_map(kernel, X.shape[1], sigma, 1024, 0)
    cache, test = FeatureCache(fmap, X), FeatureCache(fmap, X_test)
    cache.grow(n_features // 1024)
    test.grow(n_features // 1024)
    return fmap, cache, test


def pcg(X, y, X_test, truth, args):
    start = time.perf_counter()
    fmap, cache, test = features(X, X_test, args.sigma, args.features, args.kernel)
    n, J, alpha = len(y), cache.n_blocks, args.alpha[0]
    index = torch.randperm(n, generator=torch.Generator().manual_seed(1))[:args.sketch]
    precond = SketchPreconditioner(fmap, J, X[index], alpha, 1.0)
    print(f"features and preconditioner {time.perf_counter() - start:.0f} s", flush=True)
    penalty = torch.full((args.features + 1, 1), alpha, dtype=torch.float64)
    penalty[-1] = 0.0
    mean = y.mean()
    b = cache.rmatmul(torch.from_numpy(y - mean)[:, None]) / n
    theta, r = torch.zeros_like(b), b.clone()
    z = precond(r)
    d, rz = z.clone(), (r * z).sum()
    for it in range(1, args.iterations + 1):
        Hd = cache.rmatmul(cache.matmul(d)) / n + penalty * d
        step = rz / (d * Hd).sum()
        theta, r = theta + step * d, r - step * Hd
        z = precond(r)
        rz, previous = (r * z).sum(), rz
        d = z + d * (rz / previous)
        if it % 25 == 0:
            print(f"iteration {it} residual {float(r.norm() / b.norm()):.2e} "
                  f"mae {mae(test.matmul(theta)[:, 0].numpy() + mean, truth):.3f} "
                  f"{time.perf_counter() - start:.0f} s", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["exact", "pcg"])
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--pca", type=int, default=1024)
    parser.add_argument("--sigma", type=float, default=200.0)
    parser.add_argument("--alpha", type=float, nargs="+", default=[1e-9])
    parser.add_argument("--features", type=int, default=65536)
    parser.add_argument("--kernel", default="rbf")
    parser.add_argument("--sketch", type=int, default=4096)
    parser.add_argument("--iterations", type=int, default=250)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    X, y, X_test, truth = fold0(args.draws, args.pca)
    if args.what == "exact":
        exact(X, y, X_test, truth, args.sigma, args.alpha)
    else:
        pcg(X, y, X_test, truth, args)


if __name__ == "__main__":
    main()
