"""QM7, fold 0: how low can kernel ridge regression on binarised random Coulomb matrices go,
exactly and with ``D`` random Fourier features solved in closed form? The ceiling that the
library's iterative solvers approach (``benchmarks/paper/qm7.py``). Prints one line per setting.

- exact: ``(K + λnI)a = y − ȳ`` with the Gaussian kernel on every training row (``--draws``
  random sortings per molecule; 4 draws are 22,928 rows: a float64 ``n × n`` solve);
- features: ``D`` i.i.d. Fourier features ``√(2/D) cos(ωᵀx + b)``, ``(ΦᵀΦ + λnI)w = Φᵀ(y − ȳ)``;
  with ``D`` above the rows, the same model in the dual: ``(ΦΦᵀ + λnI)a = y − ȳ``, ``w = Φᵀa``
  (the Gram summed over chunks of 4,096 features, never the ``n × D`` matrix at once).

``--pca k`` projects the codes on the top ``k`` principal axes of the training rows first (as
``benchmarks.paper.qm7 --pca``).

Test predictions are averaged over 10 random sortings of every test molecule (one draw: the
first). Needs about 8 GB for 4 draws.

    python -m benchmarks.research.qm7_ceiling --draws 1 --sigma 117 200 300 --lam 1e-9 1e-8
    python -m benchmarks.research.qm7_ceiling --draws 4 --sigma 200 300 --lam 1e-9
    python -m benchmarks.research.qm7_ceiling --draws 4 --sigma 200 --lam 1e-9 1e-8 --features 16384
    python -m benchmarks.research.qm7_ceiling --draws 2 --spectrum   # what PCA-k of the codes loses
    python -m benchmarks.research.qm7_ceiling --pca 256 --sigma 200 --lam 1e-9 1e-8 --features 65536
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from benchmarks.common.data import load
from benchmarks.paper.coulomb import CoulombBinariser
from benchmarks.paper.qm7 import fold_indices, project

TEST_DRAWS = 10
#: features per chunk of the dual route's Gram
DUAL_CHUNK = 4096


def squared_distances(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``‖a − b‖²`` for every pair of rows, clamped at 0."""
    return ((A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T).clamp_min(0)


def fourier(A: torch.Tensor, W: torch.Tensor, b: torch.Tensor, rows: int = 4096) -> torch.Tensor:
    """``√(2/D) cos(AW + b)`` in chunks of rows."""
    out = torch.empty(A.shape[0], W.shape[1])
    for i in range(0, A.shape[0], rows):
        out[i:i + rows] = torch.cos(A[i:i + rows] @ W + b) * (2.0 / W.shape[1]) ** 0.5
    return out


def dual_predictions(X: torch.Tensor, X_test: torch.Tensor, y: torch.Tensor, W0: torch.Tensor,
                     b: torch.Tensor, sigma: float, lams) -> list[torch.Tensor]:
    """Test predictions of ``D > n`` features in the dual, one per ``λ``: ``(ΦΦᵀ + λnI)a = y``,
    then ``Φ_test(Φᵀa)``; ``Φ`` is regenerated chunk by chunk (``√(2/D)`` scaling included)."""
    n, D = X.shape[0], W0.shape[1]
    chunks = [slice(j, min(j + DUAL_CHUNK, D)) for j in range(0, D, DUAL_CHUNK)]
    gram = torch.zeros((n, n), dtype=torch.float64)
    for c in chunks:
        Phi = fourier(X, W0[:, c] / sigma, b[c]) * (W0[:, c].shape[1] / D) ** 0.5
        gram += (Phi @ Phi.T).double()
    eye = torch.eye(n, dtype=gram.dtype)
    A = torch.stack([torch.linalg.solve(gram + lam * n * eye, y) for lam in lams], dim=1)  # (n, L)
    pred = torch.zeros((X_test.shape[0], len(lams)), dtype=torch.float64)
    for c in chunks:  # one more pass over the features serves every λ: Φ_test(ΦᵀA)
        scale = (W0[:, c].shape[1] / D) ** 0.5
        w = (fourier(X, W0[:, c] / sigma, b[c]) * scale).double().T @ A
        pred += (fourier(X_test, W0[:, c] / sigma, b[c]) * scale).double() @ w
    return list(pred.T)


def errors(pred: torch.Tensor, truth: torch.Tensor) -> dict:
    """MAE of one draw and of the mean over the test draws (kcal/mol)."""
    pred = pred.reshape(TEST_DRAWS, -1)
    return dict(mae_one_draw=round(float((pred[0] - truth).abs().mean()), 2),
                mae=round(float((pred.mean(0) - truth).abs().mean()), 2))


def spectrum(X: torch.Tensor, ks=(64, 128, 256, 384, 512, 1024)) -> list[dict]:
    """Variance the top ``k`` principal axes of the rows leave out, and the squared distance
    between two rows it accounts for on average (``2 × the variance left``)."""
    X = X.double() - X.double().mean(0)
    eig = torch.linalg.eigvalsh(X.T @ X / X.shape[0]).flip(0)
    total = float(eig.sum())
    return [dict(k=k, variance_left=round(float(eig[k:].sum()) / total, 6),
                 squared_distance_left=round(2 * float(eig[k:].sum()), 2)) for k in ks]


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1, help="random sortings per training molecule")
    parser.add_argument("--sigma", type=float, nargs="+", default=[200.0])
    parser.add_argument("--lam", type=float, nargs="+", default=[1e-9])
    parser.add_argument("--features", type=int, default=None, help="D random features (default: exact)")
    parser.add_argument("--pca", type=int, default=None, help="project on this many principal axes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--spectrum", action="store_true",
                        help="only the principal-axis spectrum of the training codes")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = load("qm7")
    C, T = data["X"], data["T"].astype(np.float64)
    train, test = fold_indices(data["P"], 0)
    binariser = CoulombBinariser(seed=0).fit(C[train])
    X, X_test = binariser.transform_draws(C[train], args.draws, 1), binariser.transform_draws(C[test], TEST_DRAWS, 2)
    if args.pca:
        X, X_test = project(X, X_test, args.pca, 0)
    X, X_test = torch.from_numpy(X), torch.from_numpy(X_test)
    y = torch.from_numpy(np.tile(T[train], args.draws))
    mean, truth, n = y.mean(), torch.from_numpy(T[test]), X.shape[0]
    if args.spectrum:
        median = float(squared_distances(X[:2000], X[:2000]).median())
        records = [{**r, "median_squared_distance": round(median, 1)} for r in spectrum(X)]
        for record in records:
            print(json.dumps(record), flush=True)
        return records
    records = []
    if args.features is None:
        D2, D2_test = squared_distances(X, X), squared_distances(X_test, X)
    else:
        g = torch.Generator().manual_seed(0)
        W0, b = torch.randn(X.shape[1], args.features, generator=g), torch.rand(args.features, generator=g) * 2 * np.pi
    for sigma in args.sigma:
        start = time.perf_counter()
        if args.features is None:
            K, K_test = torch.exp(-D2.double() / (2 * sigma**2)), torch.exp(-D2_test.double() / (2 * sigma**2))
        elif args.features > n:
            dual = dual_predictions(X, X_test, y - mean, W0, b, sigma, args.lam)
        else:
            Phi, Phi_test = fourier(X, W0 / sigma, b), fourier(X_test, W0 / sigma, b)
            G, r = (Phi.T @ Phi).double(), (Phi.T @ (y - mean).float()).double()
        for lam in args.lam:
            if args.features is None:
                a = torch.linalg.solve(K + lam * n * torch.eye(n, dtype=K.dtype), y - mean)
                pred = K_test @ a + mean
            elif args.features > n:
                pred = dual[args.lam.index(lam)] + mean
            else:
                w = torch.linalg.solve(G + lam * n * torch.eye(G.shape[0], dtype=G.dtype), r)
                pred = (Phi_test @ w.float()).double() + mean
            record = dict(draws=args.draws, rows=n, pca=args.pca, features=args.features or "exact", sigma=sigma,
                          lam=lam, **errors(pred, truth), seconds=round(time.perf_counter() - start, 1))
            print(json.dumps(record), flush=True)
            records.append(record)
    return records


if __name__ == "__main__":
    main()
