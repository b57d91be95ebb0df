"""``kernelstream --help`` answers without importing torch, the estimators or scikit-learn: the
commands import them when they run, and the package imports its public names on first use
(issue 30: ``--help`` took about 3 s)."""

import subprocess
import sys

import pytest

COMMANDS = ["", "fit", "predict", "evaluate", "info", "demo"]

#: every command's --help through the click group, then the heavy modules that were imported
HELP_SCRIPT = """
import sys
from kernelstream.cli import main
for command in {commands!r}:
    try:
        main([*command.split(), "--help"], prog_name="kernelstream")
    except SystemExit as exit:
        assert exit.code == 0, (command, exit.code)
print(sorted({{name.split(".")[0] for name in sys.modules}} & {{"torch", "sklearn"}}))
"""

def test_kernelstream_help_does_not_import_torch_or_sklearn():
    script = HELP_SCRIPT.format(commands=COMMANDS)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Usage: kernelstream fit" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_public_names_are_imported_on_first_use():
    import kernelstream

    assert set(kernelstream.__all__) <= set(dir(kernelstream))
    assert kernelstream.DSGRegressor.__name__ == "DSGRegressor"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        kernelstream.Nope
