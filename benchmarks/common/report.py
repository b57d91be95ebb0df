"""The markdown result file of a benchmark: a title, the command line, the machine line, a table."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from .data import ROOT
from .machine import machine_line

__all__ = ["command_line", "markdown_table", "report_or_print", "write_report"]


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command that ran this process, as typed from the repository root.

    ``python -m benchmarks.gp --threads 1`` for a module run; ``argv`` replaces ``sys.argv[1:]``.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name.startswith("benchmarks."):
        head = ["python", "-m", spec.name]
    else:
        script = Path(sys.argv[0]).resolve()
        head = ["python", str(script.relative_to(ROOT) if script.is_relative_to(ROOT) else script)]
    return shlex.join(head + list(sys.argv[1:] if argv is None else argv))


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """The lines of a markdown table; every row must have one cell per column."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {row!r} has {len(row)} cells for {len(header)} columns")
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return lines


def write_report(path: Path, title: str, body: Sequence[str], *, command: str | None = None,
                 machine: str | None = None, threads: int | None = None) -> Path:
    """Write ``# title``, the command line, the machine line, then ``body`` (lines) to ``path``.

    ``command`` defaults to :func:`command_line`, ``machine`` to :func:`~.machine.machine_line`.
    Creates the folder; returns the path.
    """
    head = [f"# {title}", "", f"Command: `{command or command_line()}`", "",
            f"Machine: {machine or machine_line(threads)}", ""]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(head + list(body)).rstrip("\n") + "\n")
    return path


def report_table(out: Path | None, name: str, title: str, note: str, header: Sequence[str],
                 rows: Iterable[Sequence[object]]) -> None:
    """:func:`report_or_print` of ``note`` (what was measured, how) above a table, one thread."""
    report_or_print(out, name, title, [note, "", *markdown_table(header, rows)])


def report_or_print(out: Path | None, name: str, title: str, body: Sequence[str],
                    threads: int | None = 1) -> None:
    """``body`` written to ``out/name`` by :func:`write_report` where ``out`` is given, else
    printed after the machine line."""
    if out:
        write_report(Path(out) / name, title, body, threads=threads)
    else:
        print("\n".join([machine_line(threads=threads), ""] + list(body)))
