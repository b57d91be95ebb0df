"""``python -m benchmarks``: list the benchmark scripts and their result files, or run one.

    python -m benchmarks                      # every script, its question and its result files
    python -m benchmarks list --results       # every committed results file and what wrote it
    python -m benchmarks run gp --quick       # python -m benchmarks.gp --quick --out <temp folder>
    python -m benchmarks run perf.peers --only mnist --out /tmp/peers.md

``run NAME ARGS`` runs the module as ``python -m benchmarks.NAME ARGS`` (the file records that
command). ``--quick`` becomes the script's own quick arguments and, unless ``--out`` is given,
sends the output to a temporary folder, so that a quick run never overwrites a committed file.
"""

from __future__ import annotations

import runpy
import sys
import tempfile
from pathlib import Path

from benchmarks.registry import ARCHIVED, BENCHMARKS, RESULTS, find, origin

__all__ = ["main", "run_arguments"]


def _listing() -> str:
    width = max(len(b.name) for b in BENCHMARKS)
    lines = ["python -m benchmarks run NAME [--quick] [ARGS]   (from the repository root)", ""]
    for b in BENCHMARKS:
        lines.append(f"{b.name:<{width}}  {b.question}")
        if b.results:
            lines.append(f"{'':<{width}}    writes: {', '.join(b.results)}")
        if b.quick is None:
            lines.append(f"{'':<{width}}    no quick mode")
    lines += ["", f"Retired scripts and hand-written files ({len(ARCHIVED)}): "
              "python -m benchmarks list --results"]
    return "\n".join(lines)


def _results_listing() -> str:
    files = sorted(p.relative_to(RESULTS).as_posix() for p in RESULTS.rglob("*") if p.is_file())
    width = max(map(len, files))
    return "\n".join(f"{f:<{width}}  {', '.join(origin(f)) or '(no origin: add it to benchmarks/registry.py)'}"
                     for f in files)


def run_arguments(name: str, args: list[str]) -> tuple[str, list[str]]:
    """``(module, argv)`` of ``python -m benchmarks run NAME ARGS``."""
    bench = find(name)
    if "--quick" not in args:
        return bench.module, list(args)
    if bench.quick is None:
        raise SystemExit(f"{bench.name} has no quick mode")
    rest = [a for a in args if a != "--quick"]
    argv = list(bench.quick) + rest
    if bench.out is not None and "--out" not in rest:
        folder = Path(tempfile.mkdtemp(prefix=f"kernelstream-{bench.name}-"))
        argv += ["--out", str(folder / f"{bench.name.rsplit('.', 1)[-1]}.md"
                              if bench.out == "file" else folder)]
    return bench.module, argv


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] == "list":
        print(_results_listing() if "--results" in argv else _listing())
        return
    if argv[0] != "run" or len(argv) < 2:
        raise SystemExit("usage: python -m benchmarks [list [--results] | run NAME [--quick] [ARGS]]")
    try:
        module, args = run_arguments(argv[1], argv[2:])
    except KeyError as error:
        raise SystemExit(error.args[0]) from None
    print(f"python -m {module} {' '.join(args)}".rstrip(), flush=True)
    saved = sys.argv
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved


if __name__ == "__main__":
    main()
