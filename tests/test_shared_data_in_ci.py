"""Under ``CI=true`` a missing ``../shared/data`` fails the run; elsewhere its tests skip."""

import os
import subprocess
import sys

import pytest
from support import ROOT, require_shared


def test_a_missing_data_set_skips_outside_ci(monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not present"):
        require_shared(tmp_path / "a9a.npz")


def test_a_missing_data_set_fails_under_ci(monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require_shared(tmp_path / "a9a.npz")


def test_a_run_without_the_data_folder_fails_under_ci(tmp_path):
    env = dict(os.environ, CI="true", KERNELSTREAM_SHARED_DATA=str(tmp_path / "absent"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_readme.py::test_the_readme_has_python_examples"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "CI=true and" in done.stdout + done.stderr
