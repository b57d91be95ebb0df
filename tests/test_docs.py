"""The documentation's generated parts, without Sphinx (``make docs`` builds the site itself):
every committed benchmark result gets a page that includes it and links its data, the quick
build skips exactly the slow examples, and every README fragment the site includes exists."""

import importlib.util
import re
from pathlib import Path

import pytest

from support import ROOT

DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
_spec = importlib.util.spec_from_file_location("sitegen", DOCS / "sitegen.py")
sitegen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sitegen)

INCLUDE = re.compile(r"```\{include\} (?P<path>\S+)\n(?P<options>(?::[^\n]*\n)*)```")
OPTION = re.compile(r':(start-after|end-before): "(.*)"')


def _downloads(page: str) -> set[str]:
    """The files a page links, relative to the results folder."""
    targets = re.findall(r"\{download\}`[^<`]*<([^>]+)>`", page)
    return {target.split("/results/", 1)[1] for target in targets}


def test_every_committed_result_is_included_with_its_files(tmp_path):
    pages = sitegen.write_result_pages(RESULTS, tmp_path)
    sources = sorted(p.name for p in RESULTS.glob("*.md") if p.name != "README.md")
    assert [p.name for p in pages] == sources
    linked = set()
    for page in pages:
        text = page.read_text(encoding="utf-8")
        include = INCLUDE.search(text)
        assert include and (tmp_path / include["path"]).resolve() == RESULTS / page.name
        assert ":relative-images:" in include["options"]
        linked |= _downloads(text)
    committed = {p.relative_to(RESULTS).as_posix() for p in RESULTS.rglob("*") if p.is_file()}
    assert committed - linked == {"README.md"}, "a results file no page links"


def test_result_pages_follow_the_results_folder(tmp_path):
    results, out = tmp_path / "results", tmp_path / "pages"
    (results / "run").mkdir(parents=True)
    for name in ("run.png", "run/seed0.json", "other.md", "running.md", "plot.png", "unused.png"):
        (results / name).write_text("x\n")
    (results / "run.md").write_text("# run\n\n![the plot](plot.png)\n")
    sitegen.write_result_pages(results, out)
    run = (out / "run.md").read_text()
    assert _downloads(run) == {"run.md", "run.png", "run/seed0.json", "plot.png"}
    (results / "other.md").unlink()
    sitegen.write_result_pages(results, out)
    assert sorted(p.name for p in out.iterdir()) == ["run.md", "running.md"]


def test_quick_build_skips_exactly_the_slow_examples():
    examples = sorted(str(p) for p in (ROOT / "examples").glob("plot_*.py"))
    assert set(sitegen.SLOW_EXAMPLES) <= {Path(p).name for p in examples}
    full = [p for p in examples if re.search(sitegen.gallery_pattern(False), p)]
    quick = [Path(p).name for p in examples if re.search(sitegen.gallery_pattern(True), p)]
    assert full == examples
    assert sorted(quick) == sorted({Path(p).name for p in examples} - set(sitegen.SLOW_EXAMPLES))
    assert quick, "the quick build runs no example at all"


WRITTEN_PAGES = [p for p in sorted(DOCS.rglob("*.md"))
                 if not {"_build", "results", "auto_examples"} & set(p.relative_to(DOCS).parts)]


@pytest.mark.parametrize("page", WRITTEN_PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_included_fragments_exist_once(page):
    for include in INCLUDE.finditer(page.read_text(encoding="utf-8")):
        source = (page.parent / include["path"]).resolve()
        assert source.is_file(), f"{page.name} includes {include['path']}, which does not exist"
        text = source.read_text(encoding="utf-8")
        for option, marker in OPTION.findall(include["options"]):
            marker = marker.replace("\\n", "\n")
            assert text.count(marker) == 1, (f"{page.name}: {option} {marker!r} occurs "
                                             f"{text.count(marker)} times in {source.name}")
