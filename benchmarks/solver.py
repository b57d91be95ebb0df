"""Issue 16: the default solver against the alternatives, on one fixed set of random features.

The paper's 2-D regression (``n`` training points, σ = 0.1 × median, ν = 1e-6), ``D`` features
of one seeded map, one thread. Test MSE against the noise-free function after 1, 2, 4 and 8
epochs, and the time, for

- the closed form (streaming normal equations ``ΦᵀΦ``, ``O(n·D²)``): the optimum itself;
- the preconditioned solver of :mod:`kernelstream.solvers.preconditioned` (the default);
- the same loop with ``P = I/(λ_1 + α)``: plain SGD, same step rule and tail averaging;
- the paper's algorithm with a budget of ``D`` features, revisiting blocks with the block
  preconditioner (``DSGRegressor(solver="one_pass", n_components=D)``).

    python -m benchmarks.solver [--n 65536] [--features 1024] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.common.data import RESULTS
from benchmarks.common.machine import machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import threads
from kernelstream import DSGRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.features import make_feature_map, median_distance
from kernelstream.losses import get_loss
from kernelstream.solvers.preconditioned import (INTERCEPT_FEATURE, EpochControl, Preconditioner,
                                                 _outputs, feature_matrix, run_epochs)
from kernelstream.solvers.selection import Problem, _batches, train

EPOCHS = (1, 2, 4, 8)
ALPHA = 1e-6


def _setup(n: int, features: int):
    X, y, _ = synthetic_regression(n, random_state=0)
    X_test, _, f_test = synthetic_regression(2**14, random_state=1)
    sigma = 0.1 * median_distance(X, seed=0)
    offset, scale = float(y.mean()), float(y.std())
    problem = Problem(torch.from_numpy(X), torch.from_numpy((y - offset) / scale).reshape(-1, 1),
                      torch.ones(n), None, get_loss("squared"), 1, 2048, 0)
    fm = make_feature_map("rbf", 2, sigma, min(features, 1024), 0)
    mse = lambda theta: float(np.mean(((_outputs(fm, features // fm.block_size, torch.from_numpy(X_test), theta)  # noqa: E731
                                        [:, 0].numpy() * scale + offset) - f_test) ** 2))
    return X, y, X_test, f_test, sigma, problem, fm, mse


def closed_form(problem: Problem, fm, n_blocks: int):
    """``θ`` minimising the ridge objective, by the normal equations in float64."""
    D = n_blocks * fm.block_size
    H = torch.zeros((D + 1, D + 1), dtype=torch.float64)
    g = torch.zeros((D + 1, 1), dtype=torch.float64)
    for i in range(0, problem.X.shape[0], 8192):
        Phi = feature_matrix(fm, problem.X[i:i + 8192], n_blocks)
        A = torch.cat([Phi, torch.full((Phi.shape[0], 1), INTERCEPT_FEATURE)], 1).double()
        H += A.T @ A
        g += A.T @ problem.y[i:i + 8192].double()
    n = problem.X.shape[0]
    H /= n
    H[:D, :D] += ALPHA * torch.eye(D, dtype=torch.float64)
    return torch.linalg.solve(H, g / n).float()


def plain_sgd(problem: Problem, fm, n_blocks: int, epochs: int):
    """The solver's loop with ``P = I/(λ_1 + α)`` (rank-one ``V`` along the constant feature)."""
    D = n_blocks * fm.block_size
    Phi = feature_matrix(fm, problem.X[:2048], n_blocks).double()
    lam1 = float(torch.linalg.matrix_norm(Phi, ord=2) ** 2 / 2048)
    V = torch.zeros((D + 1, 1))
    V[-1] = 1.0
    sq = (Phi * Phi).sum(1) + INTERCEPT_FEATURE**2
    precond = Preconditioner(V=V, eigenvalues=torch.tensor([lam1, lam1], dtype=torch.float64),
                             curvature=1.0, alphas=torch.tensor([ALPHA], dtype=torch.float64),
                             beta_rows=(sq, torch.zeros((2048, 1), dtype=torch.float64)))
    return run_epochs(fm, n_blocks, torch.zeros((D + 1, 1)), precond, problem.loss, _batches(problem),
                      EpochControl(max_iter=epochs, tol=None)).theta


def timed(fn):
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def rows_for(n: int, features: int, epochs=EPOCHS) -> list[tuple]:
    X, y, X_test, f_test, sigma, problem, fm, mse = _setup(n, features)
    J = features // fm.block_size
    theta, seconds = timed(lambda: closed_form(problem, fm, J))
    rows = [("normal equations (optimum)", "-", f"{mse(theta):.3e}", f"{seconds:.2f}")]
    for name, run in (
            ("preconditioned (default)", lambda e: train(problem, fm, J, [ALPHA], EpochControl(max_iter=e, tol=None)).theta),
            ("plain SGD, P = I/λ₁", lambda e: plain_sgd(problem, fm, J, e))):
        for e in epochs:
            theta, seconds = timed(lambda e=e: run(e))
            rows.append((name, e, f"{mse(theta):.3e}", f"{seconds:.2f}"))
    for e in epochs:
        model, seconds = timed(lambda e=e: DSGRegressor(
            solver="one_pass", sigma=sigma, alpha=ALPHA, n_components=features, max_iter=e,
            random_state=0, device="cpu").fit(X, y))
        error = float(np.mean((model.predict(X_test) - f_test) ** 2))
        rows.append(("paper's one pass, budget D, blocks revisited", e, f"{error:.3e}", f"{seconds:.2f}"))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2**16)
    parser.add_argument("--features", type=int, default=1024)
    parser.add_argument("--quick", action="store_true", help="n = 4096, 256 features, 1 and 2 epochs")
    parser.add_argument("--out", type=Path, default=RESULTS / "solver.md")
    args = parser.parse_args(argv)
    n, D, epochs = (4096, 256, (1, 2)) if args.quick else (args.n, args.features, EPOCHS)
    with threads(1):
        rows = rows_for(n, D, epochs)
    table = markdown_table(["solver", "epochs", "test MSE", "CPU s"], rows)
    write_report(args.out, "The default solver against the alternatives (issue 16)", [
        f"2-D synthetic regression, n = {n}, D = {D} features of one seeded map, σ = 0.1 × "
        f"median, ν = {ALPHA}; test MSE against the noise-free function on 2^14 points; one "
        "thread, process CPU time.", "", *table],
        command=command_line(), machine=machine_line(1))


if __name__ == "__main__":
    main()
