"""What ``conf.py`` computes: the benchmark-result pages and the gallery's quick mode.

Every committed results file ``NAME.md`` gets a page ``docs/results/NAME.md`` that includes it
verbatim (its plots with it) and links the files that belong to it (``NAME.*``, the folder
``NAME/`` and the images it shows), so that every number on the site is a committed file with
its command.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["write_result_pages", "result_files", "gallery_pattern", "SLOW_EXAMPLES"]

#: a markdown image, ``![alt](file)``
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")

#: examples skipped by the quick build (CI): the slowest, 10-20 s each on a loaded 2-core machine
SLOW_EXAMPLES = ["plot_digits_classification.py", "plot_synthetic_regression.py",
                 "plot_regression_losses.py"]


def gallery_pattern(quick: bool) -> str:
    """sphinx-gallery's ``filename_pattern``: every ``plot_*.py``, or those not in
    ``SLOW_EXAMPLES`` when ``quick``."""
    if not quick:
        return r"/plot_"
    skipped = "|".join(re.escape(name) for name in SLOW_EXAMPLES)
    return rf"/(?!(?:{skipped})$)plot_[^/]*$"


def result_files(results: Path, source: Path) -> list[Path]:
    """The data files of result ``source`` (``NAME.md``): ``NAME.*``, the folder ``NAME/`` and
    the images the markdown shows."""
    stem = source.stem
    siblings = [p for p in results.glob(f"{stem}.*") if p != source]
    folder = results / stem
    nested = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
    shown = [results / name for name in IMAGE.findall(source.read_text(encoding="utf-8"))]
    return sorted({p for p in siblings + nested + shown if p.is_file()})


def _page(results: Path, source: Path, out: Path) -> str:
    """The MyST text of one result's page: the include and the list of its files."""
    relative = Path(os.path.relpath(results, out))
    lines = [f"```{{include}} {(relative / source.name).as_posix()}",
             ":relative-images:", "```", "",
             "```{rubric} Files", "```", "",
             f"- {{download}}`{source.name} <{(relative / source.name).as_posix()}>` (this page)"]
    for path in result_files(results, source):
        name = path.relative_to(results).as_posix()
        lines.append(f"- {{download}}`{name} <{(relative / name).as_posix()}>`")
    return "\n".join(lines) + "\n"


def write_result_pages(results: Path, out: Path) -> list[Path]:
    """Write one page per ``results/*.md`` (README excepted) into ``out``; stale pages go."""
    out.mkdir(parents=True, exist_ok=True)
    sources = sorted(p for p in results.glob("*.md") if p.name != "README.md")
    wanted = {out / source.name for source in sources}
    for stale in set(out.glob("*.md")) - wanted:
        stale.unlink()
    for source in sources:
        text = _page(results, source, out)
        target = out / source.name
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")  # unchanged pages keep their mtime
    return sorted(wanted)
