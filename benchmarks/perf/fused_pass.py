"""A conjugate-gradient iteration's two products over a feature cache: in one pass or in two
(record: docs/decisions/fused-pass.md).

Each iteration of :func:`kernelstream.solvers.cached.ridge_pcg` needs ``Φ̃ᵀ(w ⊙ Φ̃p)``. For
each cache shape and storage dtype it times, on one thread, the two products one after the
other (``rmatmul(w * matmul(p))``: every row read twice) and
:meth:`~kernelstream.solvers.cached.FeatureCache.normal_matmul` (each chunk of rows read once,
widened once, used for both while in the processor's cache), at the default chunk rows
(:func:`~kernelstream.solvers.cached.chunk_rows`) and at several fixed chunk sizes. Min and
median of ``--repeats`` after a warm-up.

    python -m benchmarks.perf.fused_pass --out benchmarks/results
    python -m benchmarks.perf.fused_pass --quick
"""

from __future__ import annotations

import torch

from benchmarks.common.report import markdown_table, report_or_print
from benchmarks.common.timing import milliseconds, shape_arguments, threads
from kernelstream.features.registry import make_feature_map
from kernelstream.solvers import cached
from kernelstream.solvers.cached import FeatureCache, chunk_rows

#: (rows n, features D, outputs C): the 2-D set's training rows at 1,024 and 2,048 features,
#: MNIST 8 vs 6 at 4,096, a ten-class fit at 4,096
SHAPES = ((943718, 1024, 1), (943718, 2048, 1), (11769, 4096, 1), (54000, 4096, 10))
QUICK_SHAPES = ((20000, 1024, 1),)
FIXED_ROWS = (64, 256, 1024)
HEADER = ["storage", "n × D", "C", "two passes (ms)", "one pass, default rows (ms)", "rows",
          *[f"one pass, {r} rows (ms)" for r in FIXED_ROWS], "two / one"]


def fixed_rows(rows: int):
    """``normal_matmul`` with every chunk ``rows`` rows."""
    def run(cache, theta, w):
        saved = cached.PASS_ROWS
        cached.PASS_ROWS = (rows, rows)
        try:
            return cache.normal_matmul(theta, w)
        finally:
            cached.PASS_ROWS = saved
    return run


def shape_row(n: int, D: int, C: int, storage: torch.dtype, repeats: int) -> list[object]:
    g = torch.Generator().manual_seed(n + D + C)
    X = torch.randn(n, 8, generator=g)
    cache = FeatureCache(make_feature_map("rbf", 8, 2.0, min(D, 1024), 0), X, storage=storage)
    cache.grow(max(1, D // 1024))
    theta = torch.randn(D + 1, C, generator=g, dtype=torch.float64)
    w = torch.rand(n, C, generator=g, dtype=torch.float64)
    two = milliseconds(lambda: cache.rmatmul(w * cache.matmul(theta)), repeats)
    one = milliseconds(lambda: cache.normal_matmul(theta, w), repeats)
    fixed = [milliseconds(lambda r=r: fixed_rows(r)(cache, theta, w), repeats) for r in FIXED_ROWS]
    row = [str(storage).removeprefix("torch."), f"{n:,} × {D:,}", C, f"{two[0]:.0f} / {two[1]:.0f}",
           f"{one[0]:.0f} / {one[1]:.0f}", chunk_rows(D, C, X.device),
           *[f"{best:.0f} / {median:.0f}" for best, median in fixed], f"{two[0] / one[0]:.2f}"]
    print(" | ".join(map(str, row)), flush=True)
    return row


def main(argv: list[str] | None = None) -> None:
    args = shape_arguments(__doc__, "fused_pass.md", argv)
    rows = []
    with threads(1):
        for storage in (torch.float16, torch.float32):
            for n, D, C in QUICK_SHAPES if args.quick else SHAPES:
                rows.append(shape_row(n, D, C, storage, args.repeats))
    body = [f"torch {torch.__version__}; one thread; float32 features (`X` float32) cached in the "
            f"storage dtype; ms: min / median of {args.repeats} after a warm-up. Two passes: "
            "`rmatmul(w * matmul(θ))`; one pass: `normal_matmul(θ, w)`, at `chunk_rows(D, C)` "
            "rows a chunk (the default) and at fixed chunk rows. Two / one: the ratio of the mins "
            "at the default rows (above 1: one pass is faster).", "", *markdown_table(HEADER, rows)]
    report_or_print(args.out, "fused_pass.md", "A conjugate-gradient iteration's two products "
                    "over a feature cache, in one pass or two", body)


if __name__ == "__main__":
    main()
