"""What the commands print: a few lines for people, one JSON object with ``--json``."""

from __future__ import annotations

import json
import math
import os

import click
import numpy as np

__all__ = ["output_options", "emit", "file_size", "fitted_summary", "plain"]

#: fitted attributes worth reporting, in this order, where a model has them
SUMMARY_ATTRIBUTES = ("n_features_in_", "classes_", "n_components_", "sigma_", "alpha_", "noise_",
                      "amplitude_", "n_inducing_", "t_", "n_iter_", "best_validation_score_",
                      "progressive_rmse_")


def output_options(command):
    """``--quiet`` (no progress bars, no report) and ``--json`` (one JSON object on stdout)."""
    command = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON object on stdout (for scripts); no bars.")(command)
    return click.option("-q", "--quiet", is_flag=True,
                        help="No progress bars and no report (errors are still printed).")(command)


def emit(result: dict, *, as_json: bool, quiet: bool, lines: list[str]) -> None:
    """``result`` as JSON with ``--json``, else ``lines`` unless ``--quiet``."""
    if as_json:
        click.echo(json.dumps(plain(result)))
    elif not quiet:
        for line in lines:
            click.echo(line)


def plain(value):
    """``value`` with numpy scalars and arrays as JSON numbers and lists (NaN as null)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def file_size(path) -> int:
    return os.path.getsize(path)


def fitted_summary(model) -> dict:
    """The fitted scalars (and classes) of ``model`` that it has, as plain values."""
    summary = {}
    for name in SUMMARY_ATTRIBUTES:
        value = getattr(model, name, None)
        if value is None:
            continue
        summary[name] = plain(value)
    return summary
