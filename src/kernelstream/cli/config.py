"""``--config FILE``: a command's options from a TOML or YAML file.

The keys are the command's option names (``estimator``, ``kernel``, ``n_components`` or
``n-components``, ...); a ``params`` table holds any other estimator parameter. Options given
on the command line win over the file (the file supplies click's defaults, ``default_map``).

.. code-block:: toml

    task = "classification"
    estimator = "dsg"
    kernel = "laplace"
    output = "model.kst"

    [params]
    n_iter_no_change = 3
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["load_config", "apply_config", "CONFIG_PARAMS"]

#: ``ctx.meta`` key of the config file's ``params`` table
CONFIG_PARAMS = "kernelstream.config_params"


def load_config(path) -> dict:
    """The mapping in a ``.toml``, ``.yaml`` or ``.yml`` file, keys with ``-`` as ``_``."""
    path = Path(path)
    if not path.is_file():
        raise click.BadParameter(f"{path}: no such file", param_hint="--config")
    try:
        config = _parse(path)
    except click.BadParameter:
        raise
    except Exception as exc:  # tomllib / yaml report the line in their messages
        reason = " ".join(str(exc).split())
        raise click.BadParameter(f"{path}: not valid {path.suffix[1:].upper()} ({reason})",
                                 param_hint="--config") from None
    if not isinstance(config, dict):
        raise click.BadParameter(f"{path}: expected a table of options, got "
                                 f"{type(config).__name__}", param_hint="--config")
    return {str(key).replace("-", "_"): value for key, value in config.items()}


def _parse(path: Path):
    suffix = path.suffix.lower()
    if suffix == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        return tomllib.loads(path.read_text(encoding="utf-8"))
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise click.BadParameter(f"{path}: reading YAML needs PyYAML (pip install pyyaml), or "
                                     "use a .toml file", param_hint="--config") from None
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    raise click.BadParameter(f"{path}: use a .toml, .yaml or .yml file", param_hint="--config")


def apply_config(ctx: click.Context, param: click.Parameter, value):
    """Eager callback of ``--config``: the file's options become the command's defaults."""
    if value is None:
        return None
    config = load_config(value)
    extra = config.pop("params", {})
    if not isinstance(extra, dict):
        raise click.BadParameter(f"{value}: 'params' must be a table of estimator parameters",
                                 ctx=ctx, param=param)
    names = {p.name for p in ctx.command.params if p.name != param.name}
    unknown = sorted(set(config) - names)
    if unknown:
        raise click.BadParameter(f"{value}: unknown key {unknown[0]!r}; keys are the options of "
                                 f"'{ctx.command_path}' ({', '.join(sorted(names))}) and a "
                                 "'params' table", ctx=ctx, param=param)
    ctx.default_map = {**(ctx.default_map or {}), **config}
    ctx.meta[CONFIG_PARAMS] = extra
    return value
