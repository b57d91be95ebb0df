"""Pieces of one preconditioned DSG step: the new block's preconditioner against live-block evaluations.

At ``d``, block size ``r`` and ``b`` rows (default 54, 4096, 2048): the time of one block's
features (frequencies cached), of the fused contraction per live block, and of the preconditioner
``(ΨᵀΨ/b + εI)⁻¹ΨᵀG/b`` by the torch ops (GEMM Gram, ``torch.linalg.cholesky``,
``torch.cholesky_solve``) and by the CPU path (SYRK Gram, in-place ``dpotrf``/``dpotrs``), each
also in units of live-block evaluations. Process CPU time, minimum of ``--repeats``.

    python -m benchmarks.perf.precond_step [--d 54] [--r 4096] [--b 2048] [--threads 1]
    python -m benchmarks.perf.precond_step --quick     # seconds: r = 512, b = 256, 2 repeats
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.common.timing import measure, threads
from kernelstream.features import make_feature_map
from kernelstream.ops.precond import precond_direction, precond_direction_torch
from kernelstream.ops.workspace import scratch


def cpu_time(fn, repeats: int) -> float:
    """Minimum process CPU seconds of ``repeats`` calls after one warm-up."""
    return measure(fn, repeats=repeats, warmup=1).min("cpu")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=54)
    parser.add_argument("--r", type=int, default=4096)
    parser.add_argument("--b", type=int, default=2048)
    parser.add_argument("--live", type=int, default=16, help="live blocks in the timed contraction")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="r = 512, b = 256, 2 repeats (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.r, args.b, args.repeats = 512, 256, 2
    with threads(args.threads):
        report(args)


def report(args) -> None:
    """Time the pieces and print them."""
    b, d, r = args.b, args.d, args.r
    fm = make_feature_map("rbf", d, float(d) ** 0.5, r, seed=0, cache_bytes=2**30)
    X = torch.randn(b, d, generator=torch.Generator().manual_seed(0))
    G = torch.randn(b, 1, generator=torch.Generator().manual_seed(1))
    psi = lambda: fm.block_features(X, 0, scratch("psi", (b, r), X.dtype, X.device))  # noqa: E731
    Psi = psi()
    coef = torch.randn(args.live, r, 1)
    t_block = cpu_time(psi, args.repeats)
    t_live = cpu_time(lambda: fm.contract(X, coef, torch.zeros(b, 1)), args.repeats) / args.live
    t_torch = cpu_time(lambda: precond_direction_torch(Psi, G, 1.0), args.repeats)
    t_cpu = cpu_time(lambda: precond_direction(Psi, G, 1.0), args.repeats)
    print(f"d={d}, r={r}, b={b}, {torch.get_num_threads()} thread(s), process CPU time")
    print(f"new block's features: {1e3 * t_block:.1f} ms; contraction: {1e3 * t_live:.1f} ms per live block")
    print(f"preconditioner, torch ops:  {1e3 * t_torch:.0f} ms = {t_torch / t_live:.1f} live blocks")
    print(f"preconditioner, SYRK+LAPACK: {1e3 * t_cpu:.0f} ms = {t_cpu / t_live:.1f} live blocks")


if __name__ == "__main__":
    main()
