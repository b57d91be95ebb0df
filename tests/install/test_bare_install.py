"""A bare install (no extras) imports, fits, saves and loads every public estimator.

``make test`` installs every extra, so this test makes the extras' modules unimportable (a
``sitecustomize`` on ``PYTHONPATH`` marks them absent, in the script and in the processes it starts)
and runs ``bare_install_smoke.py``. The modules refused are those of the distributions named in
``pyproject.toml``'s optional dependencies and not in its core dependencies. ``.ci/bare_install``
runs the same script in a fresh virtual environment holding only the built wheel.
"""

import os
import re
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
SMOKE = Path(__file__).with_name("bare_install_smoke.py")

BLOCKER = """
import importlib.abc, importlib.util, os, sys

BLOCKED = set(os.environ["KERNELSTREAM_BLOCKED"].split(","))


class Absent(importlib.abc.MetaPathFinder):
    # ``import name`` of a blocked module raises ModuleNotFoundError, as if it were not installed
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def find_spec(name, package=None, _find_spec=importlib.util.find_spec):
    # ``importlib.util.find_spec`` answers None for a blocked module, as for one not installed
    if name.partition(".")[0] in BLOCKED:
        return None
    return _find_spec(name, package)


sys.meta_path.insert(0, Absent())
importlib.util.find_spec = find_spec
"""


def _distribution(requirement: str) -> str:
    """``"dask[array]>=2024.4"`` → ``"dask"`` (normalised: lower case, ``-`` for ``_``)."""
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def extra_only_modules() -> set[str]:
    """Top-level modules of the distributions that only the extras bring."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_distribution(r) for r in project["dependencies"]}
    extras = {_distribution(r) for group in project["optional-dependencies"].values() for r in group}
    modules = set()
    for module, dists in packages_distributions().items():
        names = {d.lower().replace("_", "-") for d in dists}
        if names & (extras - core) and not names & core:
            modules.add(module)
    return modules


def test_the_extras_are_known_to_this_environment():
    """The refusal is not empty: make test installs the extras, whose modules are found."""
    assert {"pandas", "river", "pyarrow", "dask"} <= extra_only_modules()


@pytest.mark.slow
def test_bare_install_fits_saves_and_loads_every_estimator(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ, KERNELSTREAM_BLOCKED=",".join(sorted(extra_only_modules())),
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT / "src")]))
    done = subprocess.run([sys.executable, str(SMOKE)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "every public estimator" in done.stdout
