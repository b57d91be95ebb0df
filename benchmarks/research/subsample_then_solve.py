"""Probe for issue 32: choose on a subsample, solve once at full size. How fast, how accurate?

A prototype of the route the time issue asks for, outside the library, on one thread:

1. **Selection** on a seeded subsample of ``m`` rows: for each bandwidth ``σ`` (0.25, 0.5, 1,
   2 × the median distance) the random-feature Gram ``Φ_sΦ_sᵀ`` at the final ``D`` features,
   one eigendecomposition, and the exact leave-one-out squared error of ridge for every ``α``
   (``(y − ŷ)/(1 − H_ii)``, Allen's PRESS) — the dual route's selection, on ``m`` rows.
2. **One solve** at full size with the chosen ``(σ, α)``: the features ``Φ`` (``n × D``, float32)
   once, then the squared hinge ``Σ max(0, 1 − y f)²/(2n) + α/2‖W‖²`` by Newton's method on the
   active set (Chapelle 2007; least squares when ``--loss squared``), each Newton system
   ``(Φ_AᵀΦ_A/n + αI)W = Φ_Aᵀy_A/n`` by conjugate gradients preconditioned with the same
   matrix on a row sample (Falkon's idea with random features), warm-started.

Run from the repository root (prints; minutes)::

    python -m benchmarks.research.subsample_then_solve --sets a9a mnist8v6
    python -m benchmarks.research.subsample_then_solve --quick
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from kernelstream.features import make_feature_map, resolve_bandwidth

from ..common.data import official_split

SCALES = (0.25, 0.5, 1.0, 2.0)
ALPHAS = tuple(10.0 ** (-k / 2) for k in range(4, 17))  # 1e-2 … 1e-8, half decades
INTERCEPT = 1.0  # the constant feature that carries the intercept


def _data(name: str, quick: bool):
    n = 2000 if quick else None
    if name == "a9a":
        X, y, Xt, yt = official_split("a9a", n)
    else:  # MNIST 8 vs 6, X/255, PCA 50 on the training rows
        X, y, Xt, yt = official_split("mnist")
        keep, keep_t = np.isin(y, (6, 8)), np.isin(yt, (6, 8))
        X, y, Xt, yt = X[keep][:n] / 255.0, y[keep][:n], Xt[keep_t] / 255.0, yt[keep_t]
        pca = PCA(50, random_state=0).fit(X)
        X, Xt = pca.transform(X), pca.transform(Xt)
    classes = np.unique(y)
    sign = lambda v: np.where(v == classes[1], 1.0, -1.0)  # noqa: E731
    return X.astype(np.float32), sign(y), Xt.astype(np.float32), sign(yt)


def _features(fmap, X: torch.Tensor, n_blocks: int) -> torch.Tensor:
    """``[Φ, c]`` (n × (D+1)), ``φ = [ψ_1 … ψ_J]/√J``, float32."""
    Phi = fmap.features(X, range(n_blocks)).reshape(X.shape[0], -1) / math.sqrt(n_blocks)
    return torch.cat([Phi, torch.full((X.shape[0], 1), INTERCEPT)], 1)


def select(X, y, sigmas, block, n_blocks, m, seed):
    """``(σ, α, LOO squared error)`` of least leave-one-out error on ``m`` seeded rows."""
    rows = np.random.default_rng(seed).permutation(len(y))[:m]
    Xs, ys = torch.as_tensor(X[rows]), torch.as_tensor(y[rows], dtype=torch.float64)
    best = (math.inf, None, None)
    for sigma in sigmas:
        fmap = make_feature_map("rbf", X.shape[1], sigma, block, seed)
        Phi = _features(fmap, Xs, n_blocks).double()
        lam, V = torch.linalg.eigh(Phi @ Phi.T)
        proj = V.T @ ys
        V2 = V.square()
        for alpha in ALPHAS:
            shrink = lam.clamp_min(0) / (lam.clamp_min(0) + m * alpha)
            fitted, leverage = V @ (shrink * proj), V2 @ shrink
            loo = ((ys - fitted) / (1 - leverage).clamp_min(1e-12)).square().mean()
            if float(loo) < best[0]:
                best = (float(loo), sigma, alpha)
    return best[1], best[2], best[0]


def pcg(matvec, b, precond, x0, tol=1e-4, max_iter=50):
    """Conjugate gradients on ``A x = b`` with ``precond(r) ≈ A⁻¹r``; ``(x, iterations)``."""
    x = x0.clone()
    r = b - matvec(x)
    z = precond(r)
    p, rz = z.clone(), r @ z
    b_norm = float(b.norm()) or 1.0
    for k in range(max_iter):
        if float(r.norm()) <= tol * b_norm:
            return x, k
        Ap = matvec(p)
        step = rz / (p @ Ap)
        x, r = x + step * p, r - step * Ap
        z = precond(r)
        rz, rz_old = r @ z, rz
        p = z + (rz / rz_old) * p
    return x, max_iter


def solve(Phi, y, alpha, loss, sample_rows, seed, newton_steps=20):
    """``W`` of the squared hinge (Newton on the active set) or least squares, each system by
    PCG preconditioned with ``(Φ_sᵀΦ_s/m + αI)`` on ``sample_rows`` rows."""
    n, D = Phi.shape
    y_t = torch.as_tensor(y, dtype=torch.float32)
    rows = torch.as_tensor(np.random.default_rng(seed).permutation(n)[:sample_rows])
    Ps = Phi[rows]
    gram = (Ps.T @ Ps).double() / len(rows)  # float32 product, float64 factor
    chol = torch.linalg.cholesky(gram + alpha * torch.eye(D, dtype=torch.float64))
    precond = lambda r: torch.cholesky_solve(r.double()[:, None], chol)[:, 0].float()  # noqa: E731
    W = torch.zeros(D)
    active = torch.ones(n, dtype=torch.bool)
    iterations = 0
    for _ in range(newton_steps if loss == "squared_hinge" else 1):
        PA, yA = Phi[active], y_t[active]
        matvec = lambda v: PA.T @ (PA @ v) / n + alpha * v  # noqa: E731
        W, k = pcg(matvec, PA.T @ yA / n, precond, W)
        iterations += k
        new_active = (y_t * (Phi @ W)) < 1
        if loss != "squared_hinge" or bool((new_active == active).all()):
            break
        active = new_active
    return W, iterations


def run(name: str, args) -> None:
    X, y, Xt, yt = _data(name, args.quick)
    n_blocks = args.features // args.block
    with threadpool_limits(1):
        torch.set_num_threads(1)
        start = time.process_time()
        median = resolve_bandwidth("rbf", X, "median", 1.0, args.seed)
        sigma, alpha, loo = select(X, y, [s * median for s in SCALES], args.block, n_blocks,
                                   min(args.subsample, len(y)), args.seed)
        m = min(args.subsample, len(y))
        alpha = alpha * (m / len(y)) ** args.alpha_power  # carried to n rows
        chose = time.process_time()
        fmap = make_feature_map("rbf", X.shape[1], sigma, args.block, args.seed)
        Phi = _features(fmap, torch.as_tensor(X), n_blocks)
        featured = time.process_time()
        W, iterations = solve(Phi, y, alpha, args.loss, args.sample_rows, args.seed)
        end = time.process_time()
        scores = _features(fmap, torch.as_tensor(Xt), n_blocks) @ W
    error = float(np.mean(np.sign(scores.numpy()) != yt))
    print(f"{name}: n={len(y):,} D={args.features} loss={args.loss}: test error {error:.4%}, "
          f"CPU {end - start:.2f} s (selection {chose - start:.2f}, features "
          f"{featured - chose:.2f}, solve {end - featured:.2f}; {iterations} CG iterations); "
          f"σ = {sigma / median:g} × median, α = {alpha:g}, subsample LOO {loo:.4f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=["a9a", "mnist8v6"], choices=["a9a", "mnist8v6"])
    parser.add_argument("--features", type=int, default=2048)
    parser.add_argument("--block", type=int, default=256)
    parser.add_argument("--subsample", type=int, default=1024)
    parser.add_argument("--sample-rows", type=int, default=4096)
    parser.add_argument("--loss", choices=["squared_hinge", "squared"], default="squared_hinge")
    parser.add_argument("--alpha-power", type=float, default=0.0,
                        help="α chosen on m rows, used at n rows as α·(m/n)^power")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2,000 training rows")
    args = parser.parse_args(argv)
    for name in args.sets:
        run(name, args)


if __name__ == "__main__":
    main()
