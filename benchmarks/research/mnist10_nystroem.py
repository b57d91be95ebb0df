"""MNIST ten classes on a Nyström basis: the squared hinge below 1.5%, and at what cost? (issue 32)

The random Fourier route stops at 1.71% (least squares) and 1.52% (the squared hinge) on all
60,000 rows at 32,768 features (``mnist10_basis.md``); exact Nyström ridge at 16,384 centres
gave 1.51% in a scratch probe. This probe runs the route a default would take on every training
row with the library's Nyström cache (:mod:`kernelstream.solvers.nystroem`), one thread,
``X/255``, ``σ = 5.14``, ``α`` given (the Nyström probe's best of 3e-7, 1e-6, 3e-6, 1e-5 on
the test rows: an upper bound on what a selection would find):

1. the basis: ``M`` seeded training rows as centres, ``K_CC + εI`` factored (float64);
2. ``K_nC`` of every row (float32) and a Woodbury sketch preconditioner of ``s`` rows;
3. the squared hinge one-vs-rest by finite Newton from zero, each system by conjugate gradients
   (:func:`~kernelstream.solvers.cached.ridge_pcg`, every column at once, each preconditioned
   from its active sketch rows by one shared
   :class:`~kernelstream.solvers.cached.ColumnSketchPreconditioner`) to the inexact-Newton tolerance of the subsample route
   (``newton_forcing·min(1, last step)``): its first step is least squares, solved loosely.

Every stage's CPU seconds are cumulative; the test error after each Newton step is on the
official 10,000 test rows (prediction not timed).

    python -m benchmarks.research.mnist10_nystroem --out benchmarks/results
    python -m benchmarks.research.mnist10_nystroem --factor float32 --out /tmp/bench
    python -m benchmarks.research.mnist10_nystroem --quick --out /tmp/bench

``--alpha-path``: least squares on the same basis along ``α = 6e-6, 1.5e-6, 3.75e-7, 9.4e-8``
(each solve warm from the last), 54,000 seeded training rows and 6,000 held out, the held-out
losses beside the test error: can a path of ``α`` at the final size, judged on held-out rows,
find the ``α`` the subsample's carried one (6e-6) misses? (``mnist10_nystroem_alpha.md``;
record docs/decisions/nystroem-basis.md)

    python -m benchmarks.research.mnist10_nystroem --alpha-path --out benchmarks/results

``--hinge-from-least-squares``: least squares at ``α = 1.5e-6`` (the path's choice) on 54,000
rows, then up to eight Newton steps of the squared hinge from its solution by the library's
own iteration (the one the default fit of three or more classes finishes with), the held-out
hinge loss and the test error after each (``mnist10_nystroem_hinge.md``; record
docs/decisions/nystroem-basis.md)

    python -m benchmarks.research.mnist10_nystroem --hinge-from-least-squares --out benchmarks/results
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import threads
from benchmarks.research.mnist10_basis import SIGMA, load
from kernelstream.features import make_feature_map
from kernelstream.planning import LIMITS
from kernelstream.solvers.cached import ColumnSketchPreconditioner, SketchPreconditioner, ridge_pcg
from kernelstream.solvers.nystroem import NystroemBasis, NystroemCache

BLOCK = 1024  # centres per block


def hinge_route(n: int, centres: int, alpha: float, sketch: int, steps: int,
                factor_dtype: torch.dtype = torch.float64) -> list[list[str]]:
    """The table's rows: one per stage, the CPU seconds cumulative."""
    X, signs, X_test, y_test = load(n)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    kernel_map = make_feature_map("rbf", X.shape[1], SIGMA, BLOCK, 0)
    table, start = [], time.process_time()

    def row(stage: str, iterations: str = "", active: str = "", error: str = "") -> None:
        table.append([stage, iterations, active, error, f"{time.process_time() - start:.1f}"])
        print(" | ".join(table[-1]), flush=True)

    basis = NystroemBasis(kernel_map, X[order[:centres]], BLOCK)
    basis.grow(centres // BLOCK)
    row(f"factor of K_CC + εI, {centres:,} centres")
    cache = NystroemCache(basis, X, factor_dtype=factor_dtype)
    cache.grow(centres // BLOCK)
    row(f"K_nC of {n:,} rows")
    rows = order[:sketch]
    cache.gram(rows)  # the sketch rows whitened once
    row(f"sketch of {sketch:,} rows whitened")
    test = NystroemCache(basis, X_test)
    test.grow(centres // BLOCK)
    elapsed = time.process_time()
    tol = LIMITS.solve_tol * min(1.0, math.sqrt(alpha / LIMITS.solve_tol_alpha))
    theta, moved, active = None, math.inf, torch.ones_like(signs, dtype=torch.bool)
    start += time.process_time() - elapsed  # the test rows' kernel columns: prediction, not fit
    for step in range(steps):
        if theta is not None:
            now = signs * cache.matmul(theta) < 1
            if bool((now == active).all()):
                break
            active = now
        weights = active.double()
        precond = ColumnSketchPreconditioner(cache, rows, active[rows], alpha, weights.mean(dim=0),
                                             LIMITS.woodbury_max_roundoff)
        step_tol = max(tol, LIMITS.newton_forcing * min(1.0, moved))
        solve = ridge_pcg(cache, signs, weights, alpha, precond, theta, tol=step_tol,
                          max_iter=LIMITS.solve_max_iter)
        if theta is not None:
            moved = float((solve.theta - theta).norm()) / float(solve.theta.norm())
        theta = solve.theta
        mark = time.process_time()
        error = float((test.matmul(theta).argmax(1).numpy() != y_test).mean())
        start += time.process_time() - mark
        row(f"Newton step {step}" + (" (least squares)" if step == 0 else ""), str(solve.iterations),
            f"{100 * float(active.double().mean()):.1f}%", f"{100 * error:.2f}%")
        if step > 0 and moved <= tol:
            break
    return table


def split_basis(n_train: int, centres: int) -> tuple:
    """``((signs, test labels, training rows, held-out rows), the training rows' cache, [the
    held-out rows', the test rows'], the CPU clock before the basis)``: 60,000 rows in a seeded
    order, the first ``n_train`` training, the first ``centres`` of them the centres (and the
    first rows of the cache: a sketch of them reads its features from ``L``)."""
    X, signs, X_test, y_test = load(60000)
    order = torch.randperm(60000, generator=torch.Generator().manual_seed(0))
    train, held = order[:n_train], order[n_train:]
    kernel_map = make_feature_map("rbf", X.shape[1], SIGMA, BLOCK, 0)
    start = time.process_time()
    basis = NystroemBasis(kernel_map, X[train[:centres]], BLOCK)
    cache = NystroemCache(basis, X[train], factor_dtype=torch.float32,
                          centre_rows=torch.arange(centres))
    cache.grow(centres // BLOCK)
    setup = time.process_time() - start
    others = [cache.for_rows(X[held]), cache.for_rows(X_test)]
    for other in others:
        other.grow(centres // BLOCK)
    return (signs, y_test, train, held), cache, others, setup


def alpha_path(n_train: int, centres: int, alphas, sketch: int) -> list[list[str]]:
    """One row per ``α``: CG iterations, held-out squared and hinge losses, held-out and test
    error, CPU s of the solve (the setup's in the first row)."""
    (signs, y_test, train, held), cache, others, setup = split_basis(n_train, centres)
    start = time.process_time()
    rows = torch.arange(sketch)
    cache.gram(rows)
    setup += time.process_time() - start
    table, theta, weights = [], None, torch.ones(n_train, dtype=torch.float64)
    for alpha in alphas:
        start = time.process_time()
        precond = SketchPreconditioner(cache, rows, alpha, 1.0, LIMITS.woodbury_max_roundoff)
        tol = LIMITS.solve_tol * min(1.0, math.sqrt(alpha / LIMITS.solve_tol_alpha))
        solve = ridge_pcg(cache, signs[train], weights, alpha, precond, theta, tol=tol,
                          max_iter=LIMITS.solve_max_iter)
        seconds, theta = time.process_time() - start, solve.theta
        outputs, truth = others[0].matmul(theta), signs[held]
        squared = float(0.5 * (outputs - truth).square().sum(dim=1).mean())
        hinge = float(0.5 * (1 - truth * outputs).clamp_min(0).square().sum(dim=1).mean())
        held_error = float((outputs.argmax(1) != truth.argmax(1)).double().mean())
        error = float((others[1].matmul(theta).argmax(1).numpy() != y_test).mean())
        table.append([f"{alpha:.3g}", str(solve.iterations), f"{squared:.4f}", f"{hinge:.4f}",
                      f"{100 * held_error:.2f}%", f"{100 * error:.2f}%",
                      f"{seconds:.1f}" + (f" (+ setup {setup:.1f})" if not table else "")])
        print(" | ".join(table[-1]), flush=True)
    return table


def hinge_from_least_squares(n_train: int, centres: int, alpha: float, sketch: int,
                             steps: int) -> list[list[str]]:
    """Least squares from zero, then the library's Newton steps of the squared hinge
    (:func:`~kernelstream.solvers.newton.newton_squared_hinge`, each over the rows inside some
    margin where they are few) from its solution: one row per solve, the held-out hinge loss
    and error, the test error, CPU s (evaluation excluded)."""
    from kernelstream.solvers.newton import newton_squared_hinge as _newton_hinge

    (signs, y_test, train, held), cache, others, setup = split_basis(n_train, centres)
    table, clock = [], {"start": time.process_time(), "paused": 0.0}

    def record(stage: str, theta, iterations: str = "") -> bool:
        paused = time.process_time()
        outputs, truth = others[0].matmul(theta), signs[held]
        hinge = float(0.5 * (1 - truth * outputs).clamp_min(0).square().sum(dim=1).mean())
        held_error = float((outputs.argmax(1) != truth.argmax(1)).double().mean())
        error = float((others[1].matmul(theta).argmax(1).numpy() != y_test).mean())
        clock["paused"] += time.process_time() - paused
        seconds = time.process_time() - clock["start"] - clock["paused"]
        table.append([stage, iterations, f"{hinge:.4f}", f"{100 * held_error:.2f}%",
                      f"{100 * error:.2f}%", f"{seconds:.1f}" + (f" (+ setup {setup:.1f})" if not table else "")])
        print(" | ".join(table[-1]), flush=True)
        return False

    rows, weights = torch.arange(sketch), torch.ones(n_train, dtype=torch.float64)
    precond = SketchPreconditioner(cache, rows, alpha, 1.0, LIMITS.woodbury_max_roundoff)
    tol = LIMITS.solve_tol * min(1.0, math.sqrt(alpha / LIMITS.solve_tol_alpha))
    solve = ridge_pcg(cache, signs[train], weights, alpha, precond, tol=tol, max_iter=LIMITS.solve_max_iter)
    record("least squares", solve.theta, str(solve.iterations))
    count = iter(range(1, steps + 1))
    _newton_hinge(cache, signs[train], weights, alpha, (rows, torch.arange(n_train)), solve.theta,
                  LIMITS, stop=lambda theta: record(f"hinge step {next(count)}", theta),
                  max_steps=steps)
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3,000 rows, 1,024 centres")
    parser.add_argument("--out", type=Path, help="write DIR/mnist10_nystroem.md")
    parser.add_argument("--factor", choices=("float64", "float32"), default="float64",
                        help="the triangular factor's dtype in the products")
    parser.add_argument("--alpha-path", action="store_true",
                        help="least squares along a path of alpha, judged on held-out rows")
    parser.add_argument("--hinge-from-least-squares", action="store_true",
                        help="least squares, then the squared hinge's Newton from its solution")
    args = parser.parse_args(argv)
    if args.alpha_path:
        return _alpha_path_report(args)
    if args.hinge_from_least_squares:
        return _hinge_report(args)
    n, centres, alpha, sketch, steps = ((3000, 1024, 1e-5, 512, 3) if args.quick
                                        else (60000, 16384, 3e-7, 4096, 5))
    with threads(1):
        table = hinge_route(n, centres, alpha, sketch, steps, getattr(torch, args.factor))
    body = [f"## The squared hinge on a Nyström basis: {n:,} training rows, {centres:,} centres, "
            f"σ = {SIGMA}, α = {alpha:g}, a sketch of {sketch:,} rows, the factor in {args.factor}", "",
            *markdown_table(["stage", "CG iterations", "entries inside the margin", "test error",
                             "CPU s (cumulative)"], table)]
    _report(args.out, "mnist10_nystroem.md",
            "MNIST ten classes on a Nyström basis: the squared hinge's Newton from zero", body)


def _report(out: Path | None, name: str, title: str, body: list[str]) -> None:
    """``body`` written to ``out/name`` under ``title`` (one thread), or printed."""
    if out:
        write_report(out / name, title, body, threads=1)
    else:
        print("\n".join(body))


def _alpha_path_report(args) -> None:
    n_train, centres, sketch = (2700, 1024, 512) if args.quick else (54000, 16384, 4096)
    alphas = (6e-6, 1.5e-6, 3.75e-7, 9.4e-8)
    with threads(1):
        table = alpha_path(n_train, centres, alphas, sketch)
    body = [f"## Least squares along α on a Nyström basis: {n_train:,} training rows "
            f"({60000 - n_train:,} held out), {centres:,} centres, σ = {SIGMA}, a sketch of "
            f"{sketch:,} rows, the factor in float32, each α warm from the last", "",
            *markdown_table(["α", "CG iterations", "held-out squared loss", "held-out hinge loss",
                             "held-out error", "test error", "CPU s"], table)]
    _report(args.out, "mnist10_nystroem_alpha.md",
            "MNIST ten classes on a Nyström basis: a path of α judged on held-out rows", body)


def _hinge_report(args) -> None:
    n_train, centres, sketch, steps = (2700, 1024, 512, 3) if args.quick else (54000, 16384, 4096, 8)
    alpha = 1.5e-6
    with threads(1):
        table = hinge_from_least_squares(n_train, centres, alpha, sketch, steps)
    body = [f"## The squared hinge from least squares' solution: {n_train:,} training rows "
            f"({60000 - n_train:,} held out), {centres:,} centres, σ = {SIGMA}, α = {alpha:g}, a "
            f"sketch of {sketch:,} rows (the first centres), the factor in float32", "",
            *markdown_table(["solve", "CG iterations", "held-out hinge loss", "held-out error",
                             "test error", "CPU s (cumulative)"], table)]
    _report(args.out, "mnist10_nystroem_hinge.md",
            "MNIST ten classes on a Nyström basis: the squared hinge from least squares", body)


if __name__ == "__main__":
    main()
