"""Every Python code block of the README runs as written, from the repository root, and writes
nothing into the repository."""

import os
import re
from pathlib import Path

import pytest
from support import require_shared

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, monkeypatch):
    require_shared()
    monkeypatch.chdir(ROOT)
    before = set(os.listdir(ROOT))
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {"__name__": "__readme__"})
    assert set(os.listdir(ROOT)) == before, "a README example wrote into the repository"
