"""Public names imported on first use (PEP 562): a package's ``__getattr__`` and ``__dir__``."""

from __future__ import annotations

import importlib
import sys
from typing import Callable

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, public: dict[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package`` whose ``public`` maps each name to the
    relative module that defines it; a name is imported on first use and then cached in the
    package's namespace, so later lookups skip ``__getattr__``."""

    def __getattr__(name: str):
        if name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(public[name], package), name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *public})

    return __getattr__, __dir__
