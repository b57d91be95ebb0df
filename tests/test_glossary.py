"""One parameter vocabulary: every public estimator's parameters are in the README glossary."""

import re
from pathlib import Path

import pytest

import kernelstream.estimators as estimators
from support import ROOT

README = (ROOT / "README.md").read_text()


def _glossary() -> set[str]:
    section = README.split("## Parameter glossary", 1)[1].split("\n## ", 1)[0]
    names = set()
    for row in re.findall(r"^\| (`[^|]+`) \|", section, flags=re.M):
        names.update(re.findall(r"`([a-z_0-9]+)`", row))
    return names


def test_the_glossary_lists_parameters():
    assert {"n_components", "eta0", "average", "max_iter", "batch_size", "n_jobs"} <= _glossary()


@pytest.mark.parametrize("name", estimators.__all__)
def test_every_parameter_is_in_the_glossary(name):
    params = set(getattr(estimators, name)().get_params())
    assert params <= _glossary(), sorted(params - _glossary())
