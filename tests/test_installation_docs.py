"""The installation page lists every extra of pyproject.toml, and no other."""

import re

from support import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def test_every_extra_is_documented():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    page = (ROOT / "docs" / "installation.md").read_text()
    documented = set(re.findall(r"^\| `([a-z]+)` \|", page, flags=re.M))
    assert documented == extras
