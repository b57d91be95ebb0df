"""Products of a tall matrix by few columns, in both operand orders (record:
docs/decisions/narrow-products.md).

Every conjugate-gradient iteration of the cached route computes ``Ψθ`` and ``ΨᵀU`` for a cache
``Ψ`` ``(n, D)`` and ``C`` outputs (one per class beyond two). For each shape it times, on one
thread, ``AᵀU`` as written and as ``(UᵀA)ᵀ`` (:func:`kernelstream.ops.linalg.transposed_matmul`),
and ``AV`` as written and as ``(VᵀAᵀ)ᵀ`` (:func:`kernelstream.ops.linalg.narrow_matmul`'s
order): the same numbers, different BLAS calls. Min and median of ``--repeats`` after a warm-up.

    python -m benchmarks.perf.narrow_products --out benchmarks/results
    python -m benchmarks.perf.narrow_products --quick
"""

from __future__ import annotations

import torch

from benchmarks.common.report import markdown_table, report_or_print
from benchmarks.common.timing import milliseconds, shape_arguments, threads

#: (rows n, columns D): MNIST 8 vs 6's cache at 8,192 features, a 100,000-row one at 1,024
SHAPES = ((10592, 8192), (100000, 1024))
QUICK_SHAPES = ((2048, 1024),)
COLUMNS = (1, 2, 10, 16, 64)
HEADER = ["dtype", "n × D", "C", "AᵀU (ms)", "(UᵀA)ᵀ (ms)", "ratio", "AV (ms)", "(VᵀAᵀ)ᵀ (ms)",
          "ratio"]


def shape_rows(n: int, D: int, dtype: torch.dtype, repeats: int) -> list[list[object]]:
    g = torch.Generator().manual_seed(n + D)
    A = torch.randn(n, D, generator=g, dtype=dtype)
    rows = []
    for C in COLUMNS:
        U, V = torch.randn(n, C, generator=g, dtype=dtype), torch.randn(D, C, generator=g, dtype=dtype)
        times = [milliseconds(fn, repeats) for fn in (lambda: A.T @ U, lambda: (U.T @ A).T,
                                                      lambda: A @ V, lambda: (V.T @ A.T).T)]
        cells = [f"{best:.1f} / {median:.1f}" for best, median in times]
        rows.append([str(dtype).removeprefix("torch."), f"{n:,} × {D:,}", C, cells[0], cells[1],
                     f"{times[0][0] / times[1][0]:.2f}", cells[2], cells[3],
                     f"{times[2][0] / times[3][0]:.2f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    args = shape_arguments(__doc__, "narrow_products.md", argv)
    rows = []
    with threads(1):
        for dtype in (torch.float32, torch.float64):
            for n, D in QUICK_SHAPES if args.quick else SHAPES:
                rows += shape_rows(n, D, dtype, args.repeats)
    body = [f"torch {torch.__version__}, "
            f"{'MKL' if torch.backends.mkl.is_available() else 'no MKL'}; one thread; ms: min / "
            f"median of {args.repeats} after a warm-up. Ratio: as written / the other order (above "
            "1: the other order is faster).", "", *markdown_table(HEADER, rows)]
    report_or_print(args.out, "narrow_products.md", "Products of a tall matrix by few columns, in "
                    "both operand orders", body)


if __name__ == "__main__":
    main()
