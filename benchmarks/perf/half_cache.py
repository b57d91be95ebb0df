"""The default fit with its feature cache in float16 and in float32 (record:
docs/decisions/half-precision-cache.md).

The subsample route caches ``Ψ`` of every training row; bounded features (cosines, sines) are
held in float16 by default (:func:`kernelstream.planning.cache_dtype`). This runs
``DSGClassifier()``/``DSGRegressor()`` at their defaults on the rows of
:mod:`benchmarks.time_to_accuracy` that take the cached route, once as the library plans and
once with the cache in the fit's float32, on one thread: test error and CPU seconds of ``fit``
(min / median of the repeats after an untimed warm-up, as in that benchmark).

    python -m benchmarks.perf.half_cache --out benchmarks/results
    python -m benchmarks.perf.half_cache --rows a9a --quick
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Iterator

from benchmarks.common.machine import machine_line
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import threads
from benchmarks.time_to_accuracy import SPECS, Row, fmt_score, fmt_seconds, run_method
from kernelstream import planning

#: the rows whose default fit caches its features (hastie and digits take the dual route)
ROWS = (Row.A9A, Row.MNIST_8V6, Row.SYNTHETIC)
HEADER = ["set", "cache", "test error (MSE)", "CPU s of fit (min / median)", "repeats",
          "CPU s float16 / float32"]


@contextlib.contextmanager
def cache_in_fit_dtype() -> Iterator[None]:
    """Plan every cache in the fit's own dtype (the library before the float16 cache)."""
    planned = planning.cache_dtype
    planning.cache_dtype = lambda params, limits=planning.LIMITS: params.get("dtype", "float32")
    try:
        yield
    finally:
        planning.cache_dtype = planned


def row_results(row: Row, quick: bool, repeats: int | None) -> list[list[object]]:
    spec = SPECS[row]
    data = spec.load(quick)
    print(f"  {row}: {len(data.X)} / {len(data.X_test)} rows", flush=True)
    half = run_method(spec.methods()[0], data, repeats)
    with cache_in_fit_dtype():
        single = run_method(spec.methods()[0], data, repeats)
    ratio = f"{half.cpu / single.cpu:.2f}"
    return [[str(row), "float16 (default)", fmt_score(half.score, data.metric),
             fmt_seconds(half.timing), len(half.timing.cpu), ratio],
            [str(row), "float32", fmt_score(single.score, data.metric),
             fmt_seconds(single.timing), len(single.timing.cpu), ""]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=Row, nargs="+", default=list(ROWS), choices=list(Row))
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed fits per method (default: as benchmarks.time_to_accuracy)")
    parser.add_argument("--quick", action="store_true", help="the quick subsets: seconds")
    parser.add_argument("--out", type=Path, help="write DIR/half_cache.md")
    args = parser.parse_args(argv)
    rows = []
    with threads(1):
        for row in args.rows:
            rows += row_results(row, args.quick, args.repeats)
    body = ["One thread; `random_state=0, device=\"cpu\"`, every other parameter at its default. "
            "float32: the same fit with `kernelstream.planning.cache_dtype` replaced by the fit's "
            "dtype.", "", *markdown_table(HEADER, rows)]
    if args.out:
        write_report(args.out / "half_cache.md", "The feature cache in float16 and in float32",
                     body, threads=1)
    else:
        print("\n".join([machine_line(threads=1), ""] + body))


if __name__ == "__main__":
    main()
