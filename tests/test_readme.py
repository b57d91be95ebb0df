"""The README is a front page, and every Python code block of it and of the documentation's
written pages (where the guides moved to) runs as written, from the repository root, and writes
nothing into the repository."""

import os
import re
from pathlib import Path

import pytest
from support import require_shared

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", flags=re.S)

#: the README, then every page written by hand under docs/ (not the generated ones)
PAGES = [ROOT / "README.md"] + [
    p for p in sorted(DOCS.rglob("*.md"))
    if not {"_build", "results", "auto_examples", "api"} & set(p.relative_to(DOCS).parts)]
BLOCKS = [(page, i, code) for page in PAGES
          for i, code in enumerate(PYTHON_BLOCK.findall(page.read_text(encoding="utf-8")))]


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def test_the_readme_has_one_example_per_family():
    blocks = PYTHON_BLOCK.findall(README)
    assert len(blocks) >= 4
    for family in ("DSGClassifier", "DSGGaussianProcessRegressor", "GoGPRegressor",
                   "AOGDClassifier"):
        assert any(f"{family}(" in block for block in blocks), family


def test_the_readme_is_a_front_page():
    assert len(README.encode()) <= 12 * 1024, "the README is a front page: guides go to docs/"
    headings = re.findall(r"^## (.+)$", README, flags=re.M)
    for section in ("Install", "Two commands", "Headline results", "Documentation"):
        assert section in headings, section
    for paper in ("Dai et al.", "GoGP", "AOGD"):
        assert paper in README.split("## Install")[0], paper
    install = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert install.index("torch==2.13.0") < install.index("pip install -e ."), "CPU torch first"
    for command in ("make demo", "make test", "make test-fast"):
        assert command in README, command


def test_the_readme_links_resolve_and_name_every_guide():
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", README)
               if not t.startswith(("http://", "https://", "#"))}
    assert [t for t in targets if not (ROOT / t).exists()] == []
    guides = {p.relative_to(ROOT).as_posix() for p in (DOCS / "user_guide").glob("*.md")}
    assert guides - targets == set(), "a user-guide page the README does not link"


def test_the_moved_guides_kept_their_examples():
    """The README's former guides live in docs/ and keep their code (run below)."""
    assert len(BLOCKS) >= 15
    pages = {_name(page) for page, _, _ in BLOCKS}
    for page in ("docs/quickstart.md", "docs/how_it_works.md", "docs/user_guide/streaming.md",
                 "docs/user_guide/river.md", "docs/user_guide/gaussian_process.md",
                 "docs/user_guide/gogp.md", "docs/user_guide/aogd.md"):
        assert page in pages, page


@pytest.mark.slow
@pytest.mark.parametrize("page, index, code", BLOCKS,
                         ids=[f"{_name(page)}:{i}" for page, i, _ in BLOCKS])
def test_readme_block_runs(page, index, code, monkeypatch):
    require_shared()
    monkeypatch.chdir(ROOT)
    before = set(os.listdir(ROOT))
    exec(compile(code, f"{_name(page)} block {index}", "exec"), {"__name__": "__readme__"})
    assert set(os.listdir(ROOT)) == before, f"an example of {_name(page)} wrote into the repository"
