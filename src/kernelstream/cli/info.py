"""``kernelstream info``: what a model file holds."""

from __future__ import annotations

import os

import click

from .output import emit, file_size, fitted_summary, output_options

__all__ = ["info"]

INFO_EXAMPLES = """
\b
Examples:
  kernelstream info a9a.kst
  kernelstream info a9a.kst --json > a9a.json
"""


@click.command(epilog=INFO_EXAMPLES, short_help="Show what a model file holds.")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@output_options
def info(model_path, quiet, as_json):
    """Show what MODEL holds: class, parameters, input features, fitted sizes, the training
    data's shape (for files written by kernelstream fit), file size and library version."""
    from ..io import load, read_header  # torch: imported when the command runs, not for --help

    header = read_header(model_path)          # checksum verified
    model = load(model_path)
    defaults = type(model)().get_params()
    params = {k: v for k, v in header["params"].items() if defaults.get(k) != v}
    stored = sum(_numel(t["shape"]) for t in header["tensors"].values())
    result = {"model": os.fspath(model_path), "class": header["class"],
              "library_version": header.get("library_version"),
              "format_version": header.get("version"), "file_bytes": file_size(model_path),
              "stored_numbers": stored, "random_state": header.get("random_state"),
              "params": header["params"], "non_default_params": params,
              "fitted": fitted_summary(model),
              "training": header.get("metadata", {}).get("training")}
    emit(result, as_json=as_json, quiet=quiet, lines=_lines(result))


def _lines(result: dict) -> list[str]:
    training = result["training"]
    lines = [f"{result['model']}: {result['class']} (kernelstream {result['library_version']}, "
             f"model format {result['format_version']})",
             f"  file          {result['file_bytes'] / 1024:.1f} KiB, "
             f"{result['stored_numbers']} stored numbers, SHA-256 verified",
             f"  random_state  {result['random_state']}",
             "  parameters    " + (", ".join(f"{k}={v!r}" for k, v in
                                            result["non_default_params"].items()) or "defaults")]
    lines += [f"  {key:13s} {value}" for key, value in result["fitted"].items()]
    if training and training.get("feature_names"):
        lines.append(f"  features      {', '.join(training['feature_names'])}")
    if training:
        lines.append(f"  trained on    {training['rows']} rows x {training['features']} features "
                     f"({training['format']}: {', '.join(training['files'])}) in "
                     f"{training['fit_seconds']} s")
    return lines


def _numel(shape) -> int:
    n = 1
    for size in shape:
        n *= size
    return n
