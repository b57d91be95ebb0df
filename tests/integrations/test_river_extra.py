"""Without the river extra, importing the adapters names the extra to install."""

import importlib
import sys

import pytest


def test_importing_the_adapters_without_river_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "river", None)  # as if river were not installed
    monkeypatch.delitem(sys.modules, "kernelstream.integrations.river", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'kernelstream\[river\]'"):
        importlib.import_module("kernelstream.integrations.river")
