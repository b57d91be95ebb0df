"""``kernelstream fit``: train an estimator on a data file and save it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from .. import __version__
from ..data.whole_files import WHOLE_FILE_FORMATS, read_labelled
from .config import CONFIG_PARAMS, apply_config
from .models import (TASKS, CliError, build_estimator, check_writable, estimator_class,
                     estimator_options, fit_options, parse_assignment, parse_value,
                     prepare_labels, prepare_rows)
from .output import emit, file_size, fitted_summary, output_options

__all__ = ["fit"]

#: typed options passed to the estimator under the same name (values as ``parse_value`` reads)
ESTIMATOR_OPTIONS = ("kernel", "loss", "solver", "sigma", "alpha", "n_components", "batch_size",
                     "max_iter", "random_state", "device", "n_jobs")

EXAMPLES = """
\b
Examples:
  kernelstream fit a9a.svm --task classification -o a9a.kst
  kernelstream fit train.csv --label price --task regression --estimator gogp -o gp.kst
  kernelstream fit data/ --format parquet --task regression --kernel laplace \\
      --param n_iter_no_change=3 -o model.kst
  kernelstream fit train.svm --config fit.toml --json
"""


def data_options(command):
    """``--format``, ``--label`` and ``--zero-based``: how a data file is read."""
    command = click.option("--zero-based", is_flag=True,
                           help="LIBSVM feature indices start at 0 (default: 1).")(command)
    command = click.option("--label", default=None, metavar="COLUMN",
                           help="Label column of a CSV/Parquet table (name or index; default: a "
                                "column named y/label/target, else the last), the label key of "
                                "an npz file (default y), or 'none'.")(command)
    return click.option("--format", "fmt", type=click.Choice(WHOLE_FILE_FORMATS), default=None,
                        help="File format (default: from the suffix or the first line).")(command)


@click.command(epilog=EXAMPLES, short_help="Fit an estimator on a data file and save it.")
@click.argument("data", type=click.Path(dir_okay=True), metavar="DATA")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Model file to write (safetensors + JSON, SHA-256 checked on load).")
@click.option("--task", type=click.Choice(TASKS), default=None,
              help="classification or regression (needed when the estimator does both: dsg).")
@click.option("--estimator", default="dsg", show_default=True,
              help="dsg, gogp, gp, aogd, or a class name such as DSGClassifier.")
@data_options
@click.option("--n-features", type=click.IntRange(min=1), default=None,
              help="Input width (LIBSVM files do not state it; default: the largest index).")
@click.option("--kernel", help="Kernel: rbf, laplace, matern, chi2, ... (estimator default: rbf).")
@click.option("--loss", help="Loss, e.g. logistic, hinge (classification), squared, huber.")
@click.option("--solver", help="DSG: preconditioned, cg (squared loss) or one_pass; GoGP: rls or sgd.")
@click.option("--sigma", help="Bandwidth: a number, median or auto.")
@click.option("--alpha", help="Regularisation: a number or auto.")
@click.option("--n-components", type=click.IntRange(min=1), help="Random features (budget).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Rows per step.")
@click.option("--max-iter", help="Most epochs: a number or auto.")
@click.option("--random-state", type=int, default=0, show_default=True,
              help="Seed of the features and the shuffling (the same seed, the same model).")
@click.option("--device", help="auto, cpu or cuda.")
@click.option("--n-jobs", type=int, help="Threads: -1 for all the environment allows.")
@click.option("-p", "--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Any other estimator parameter, e.g. -p eta0=0.5 "
                   "-p 'kernel_params={\"nu\": 1.5}'.")
@click.option("--config", type=click.Path(dir_okay=False), is_eager=True, expose_value=False,
              callback=apply_config, help="TOML or YAML file of options (the command line wins).")
@click.option("--resume", type=click.Path(dir_okay=False), default=None,
              help="Continue an interrupted fit from its checkpoint file (dsg): the same data "
                   "and parameters give the model of the uninterrupted fit.")
@click.option("--checkpoint", type=click.Path(dir_okay=False), default=None,
              help="Write checkpoints to this file during the fit (dsg).")
@click.option("--checkpoint-every", default=None, metavar="N|TIME",
              help="Epochs between checkpoints, or a time such as 10min (default: 1 epoch).")
@output_options
@click.pass_context
def fit(ctx, data, output, task, estimator, fmt, label, zero_based, n_features, params, resume,
        checkpoint, checkpoint_every, quiet, as_json, **options):
    """Fit an estimator on DATA (a LIBSVM, CSV, Parquet or npz file, or a directory of them)
    and save it to --output."""
    from ..io import save  # torch: imported when the command runs, not for --help

    check_writable(output)
    cls = estimator_class(estimator, task)
    task = "classification" if "Classifier" in cls.__name__ else "regression"
    settings = _estimator_params(ctx, options, params, verbose=0 if quiet or as_json else 1)
    every = int(checkpoint_every) if str(checkpoint_every).isdigit() else checkpoint_every
    settings.update(estimator_options(cls, {"checkpoint": checkpoint, "checkpoint_every": every}))
    model = build_estimator(cls, settings)
    extra = fit_options(model, {"resume": resume})
    if resume is not None and not Path(resume).is_file():
        raise CliError(f"--resume {resume}: no such checkpoint file")
    rows = read_labelled(data, fmt, label, n_features=n_features, zero_based=zero_based)
    if rows.y is None:
        how = " (--label none)" if label is not None else "; name them with --label"
        raise click.UsageError(f"{data}: no labels to fit on{how}")
    X, y = prepare_rows(model, rows.X), prepare_labels(rows.y, task)
    start = time.perf_counter()
    model.fit(X, y, **extra)
    seconds = time.perf_counter() - start
    if "verbose" in model.get_params():
        model.set_params(verbose=0)  # progress bars belong to this run, not to the saved model
    metadata = {"training": {"rows": int(X.shape[0]), "features": int(X.shape[1]),
                             "files": [str(f) for f in rows.files], "format": rows.fmt,
                             "feature_names": rows.feature_names,
                             "fit_seconds": round(seconds, 3)},
                "written_by": f"kernelstream fit {__version__}"}
    save(model, output, metadata=metadata)
    result = {"model": os.fspath(output), "class": cls.__name__, "task": task,
              "rows": int(X.shape[0]), "features": int(X.shape[1]), "fit_seconds": seconds,
              "file_bytes": file_size(output), "fitted": fitted_summary(model)}
    emit(result, as_json=as_json, quiet=quiet, lines=[
        f"{cls.__name__} fitted on {X.shape[0]} rows x {X.shape[1]} features in {seconds:.2f} s",
        *(f"  {key} = {value}" for key, value in result["fitted"].items()),
        f"model written to {output} ({result['file_bytes'] / 1024:.1f} KiB)"])


def _estimator_params(ctx, options: dict, assignments, verbose: int) -> dict:
    """Estimator parameters: the config file's ``params`` table, then ``--param`` pairs, then the
    typed options that were given (on the command line or in the config file)."""
    params = dict(ctx.meta.get(CONFIG_PARAMS, {}))
    params.update(parse_assignment(text) for text in assignments)
    for name in ESTIMATOR_OPTIONS:
        value = options.get(name)
        if value is not None:
            params[name] = parse_value(value) if isinstance(value, str) else value
    params.setdefault("verbose", verbose)
    return params
