"""The documentation without Sphinx (``make docs`` builds the site itself): every committed
benchmark result gets a page that includes it and links its data, the quick build skips exactly
the slow examples, every fragment the site includes exists, every written page is in a toctree
(decision records by a glob), links between pages resolve, and the glossary page names every
estimator parameter (the README lists the same names)."""

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


# -- the written pages: every one in a toctree, links that resolve, the glossary, the records ----

TOCTREE = re.compile(r"```\{toctree\}\n(?P<body>.*?)```", flags=re.S)


def _toctree_entries(page: Path) -> set[Path]:
    """The pages a page's toctrees name (globs resolved), as paths."""
    found = set()
    for tree in TOCTREE.finditer(page.read_text(encoding="utf-8")):
        lines = [line.strip() for line in tree["body"].splitlines()]
        glob = ":glob:" in lines
        for entry in (line for line in lines if line and not line.startswith(":")):
            pattern = page.parent / entry
            if glob and any(c in entry for c in "*?["):
                found |= {p for p in page.parent.glob(entry + ".md") if p != page}
            else:
                found |= {p for p in (pattern.with_suffix(".md"), pattern.with_suffix(".rst"))
                          if p.exists()}
    return found


def test_every_written_page_is_in_a_toctree():
    reached, todo = {DOCS / "index.md"}, [DOCS / "index.md"]
    while todo:
        for page in _toctree_entries(todo.pop()):
            if page not in reached and page.suffix == ".md":
                reached.add(page)
                todo.append(page)
    assert [p.relative_to(DOCS).as_posix() for p in WRITTEN_PAGES if p not in reached] == []


def test_decision_records_are_globbed():
    """Records added to docs/decisions appear without editing the index; the index is linked."""
    index = DOCS / "decisions" / "index.md"
    tree = TOCTREE.search(index.read_text(encoding="utf-8"))["body"]
    assert ":glob:" in tree and "\n*\n" in f"\n{tree}"
    records = set((DOCS / "decisions").glob("*.md")) - {index}
    assert records and records <= _toctree_entries(index)
    assert index in _toctree_entries(DOCS / "index.md")


@pytest.mark.parametrize("page", WRITTEN_PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_links_between_pages_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s#]+\.md)(?:#[^)]*)?\)", text):
        if target.startswith(("http://", "https://")):
            continue
        path = (page.parent / target).resolve()
        if path.parent == (DOCS / "results").resolve():  # generated from benchmarks/results
            path = RESULTS / path.name
        assert path.is_file(), f"{page.name} links {target}"


def _glossary_names(text: str) -> set[str]:
    names = set()
    for row in re.findall(r"^\| (`[^|]+`) \|", text, flags=re.M):
        names.update(re.findall(r"`([a-z_0-9]+)`", row))
    return names


def test_the_glossary_page_names_every_parameter_and_the_readme_lists_them():
    import kernelstream.estimators as estimators

    glossary = _glossary_names((DOCS / "glossary.md").read_text(encoding="utf-8"))
    for name in estimators.__all__:
        params = set(getattr(estimators, name)().get_params())
        assert params <= glossary, (name, sorted(params - glossary))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Parameter glossary", 1)[1].split("\n## ", 1)[0]
    assert _glossary_names(section) == glossary, "the README's names and the glossary differ"
