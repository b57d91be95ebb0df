"""What the Section-7 scripts share: the closing options (``--threads``, ``--clock``, ``--out``,
``--quick``) with the ``--quick`` sizes applied, and the "run every data set, one report section
each, write the three files" main loop."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.common.data import RESULTS
from benchmarks.common.timing import threads

from ._runs import add_clock_option, command, write_outputs


def parse_with_quick(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
                     quick: dict) -> argparse.Namespace:
    """Add ``--threads``, ``--clock``, ``--out`` and ``--quick`` to ``parser``, parse ``argv``
    and, under ``--quick``, replace the parsed values by those of ``quick``."""
    parser.add_argument("--threads", type=int, default=1)
    add_clock_option(parser)
    parser.add_argument("--out", type=Path, default=RESULTS / "paper")
    parser.add_argument("--quick", action="store_true", help=f"seconds: {quick}")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(quick)
    return args


def write_paper_outputs(args: argparse.Namespace, argv: Sequence[str] | None, name: str,
                        title: str, body: list[str], figure: Callable[[Path], None],
                        **payload) -> list[Path]:
    """``write_outputs`` under ``args.out`` with the arguments (as strings) first in the JSON
    payload and the command ``python -m benchmarks.paper.NAME ARGV``."""
    return write_outputs(args.out, name, title, body,
                         dict(args={k: str(v) for k, v in vars(args).items()}, **payload),
                         command_text=command(f"benchmarks.paper.{name}", argv), figure=figure)


def run_datasets(args: argparse.Namespace, argv: Sequence[str] | None, name: str, title: str, *,
                 run_dataset: Callable[[argparse.Namespace, str], dict],
                 describe: Callable[[argparse.Namespace, dict], str], table: Callable[[dict], list[str]],
                 draw: Callable[[dict], Callable[[Path], None]]) -> list[Path]:
    """On ``args.threads`` threads, ``run_dataset(args, d)`` for every ``d`` in ``args.datasets``;
    the report has a section ``## d`` a data set (``describe(args, result)`` followed by the
    threads and the clock, then ``table(result)``), the figure is ``draw(results)`` and the JSON payload ``{"args", "results"}``."""
    with threads(args.threads):
        results = {dataset: run_dataset(args, dataset) for dataset in args.datasets}
        body = []
        for dataset, result in results.items():
            setting = f"{describe(args, result)} ({args.threads} thread(s), {args.clock} clock)."
            body += [f"## {dataset}", "", setting, "", *table(result), ""]
        return write_paper_outputs(args, argv, name, title, body, draw(results), results=results)
