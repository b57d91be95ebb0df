"""``kernelstream predict`` and ``kernelstream evaluate``: a saved model on a data file."""

from __future__ import annotations

import csv
import io
import os
import sys

import click
import numpy as np

from ..data.whole_files import read_labelled
from .fit import data_options
from .models import (CliError, check_writable, has_proba, has_std, prepare_labels, prepare_rows,
                     proba_error)
from .output import emit, output_options, plain

__all__ = ["predict", "evaluate"]

PREDICT_EXAMPLES = """
\b
Examples:
  kernelstream predict a9a.kst a9a.t -o predictions.csv
  kernelstream predict a9a.kst a9a.t --proba -o probabilities.csv
  kernelstream predict gp.kst test.csv --std            # mean and std of y, to stdout
"""

EVALUATE_EXAMPLES = """
\b
Examples:
  kernelstream evaluate a9a.kst a9a.t
  kernelstream evaluate gp.kst test.csv --label price --level 0.9 --json
"""


def _read_rows(model, model_path, data, fmt, label, zero_based):
    """The rows of ``data`` as ``model`` takes them (its width; sparse or dense); a table's
    column names must be those of the training file, when both have names."""
    from ..io import read_header

    rows = read_labelled(data, fmt, label, n_features=model.n_features_in_, zero_based=zero_based)
    if rows.feature_names is not None:
        training = read_header(model_path).get("metadata", {}).get("training") or {}
        expected = training.get("feature_names")
        if expected is not None and list(expected) != list(rows.feature_names):
            raise CliError(f"{data}: the columns {rows.feature_names} are not the training "
                           f"file's {expected} (the same names in the same order)")
    return rows, prepare_rows(model, rows.X)


@click.command(epilog=PREDICT_EXAMPLES, short_help="Predict a data file with a saved model.")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.argument("data", metavar="DATA", type=click.Path())
@click.option("-o", "--output", default="-", show_default=True, type=click.Path(dir_okay=False),
              help="CSV file of predictions ('-': standard output).")
@click.option("--proba", is_flag=True, help="Class probabilities (classifiers with predict_proba).")
@click.option("--std", is_flag=True, help="Predictive std of y, noise included (GP models).")
@data_options
@output_options
def predict(model_path, data, output, proba, std, fmt, label, zero_based, quiet, as_json):
    """Predict the rows of DATA with the model saved in MODEL; writes a CSV with a header."""
    from ..io import load  # torch: imported when the command runs, not for --help

    if output != "-":
        check_writable(output)
    model = load(model_path)
    kind = type(model).__name__
    if proba and not has_proba(model):
        raise CliError(proba_error(model, model_path))
    if std and not has_std(model):
        raise CliError(f"--std needs a model with a predictive std (GoGPRegressor, "
                       f"DSGGaussianProcessRegressor); {model_path} holds a {kind}")
    rows, X = _read_rows(model, model_path, data, fmt, label, zero_based)
    names, columns = _prediction_columns(model, X, proba, std)
    if output == "-" and as_json:
        emit({"rows": X.shape[0], **{n: c for n, c in zip(names, columns)}}, as_json=True,
             quiet=quiet, lines=[])
        return
    _write_csv(output, names, columns)
    if output != "-":
        emit({"rows": int(X.shape[0]), "output": os.fspath(output), "columns": names},
             as_json=as_json, quiet=quiet,
             lines=[f"{X.shape[0]} predictions ({', '.join(names)}) written to {output}"])


def _prediction_columns(model, X, proba: bool, std: bool) -> tuple[list[str], list[np.ndarray]]:
    """Column names and values: the prediction, then probabilities or the std."""
    if std:
        from .metrics import predictive_std

        mean, sd = predictive_std(model, X)
        return ["prediction", "std"], [mean, sd]
    prediction = model.predict(X)
    if prediction.ndim == 2:  # multi-output regression
        names = [f"prediction_{j}" for j in range(prediction.shape[1])]
        columns = list(prediction.T)
    else:
        names, columns = ["prediction"], [prediction]
    if proba:
        p = model.predict_proba(X)
        names += [f"proba_{c}" for c in model.classes_]
        columns += list(p.T)
    return names, columns


def _write_csv(output, names: list[str], columns: list[np.ndarray]) -> None:
    """A CSV with a header row: to ``output``, or standard output for ``-``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(zip(*(plain(c) for c in columns)))
    if output == "-":
        sys.stdout.write(buffer.getvalue())
        sys.stdout.flush()
        return
    with open(output, "w", encoding="utf-8", newline="") as f:
        f.write(buffer.getvalue())


@click.command(epilog=EVALUATE_EXAMPLES,
               short_help="Score a saved model on a labelled data file.")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=False))
@click.argument("data", metavar="DATA", type=click.Path())
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Level of the predictive intervals (GP models).")
@data_options
@output_options
def evaluate(model_path, data, level, fmt, label, zero_based, quiet, as_json):
    """Score the model in MODEL on the labelled rows of DATA: error, accuracy, AUC, log loss
    (classifiers); RMSE, MAE, R² and interval coverage (regressors, GP models)."""
    from ..io import load  # torch and scikit-learn: imported when the command runs
    from .metrics import classification_metrics, regression_metrics

    model = load(model_path)
    rows, X = _read_rows(model, model_path, data, fmt, label, zero_based)
    if rows.y is None:
        raise CliError(f"{data}: no labels to evaluate against; name the label column with "
                       "--label")
    if hasattr(model, "classes_"):
        result = classification_metrics(model, X, prepare_labels(rows.y, "classification"))
    else:
        result = regression_metrics(model, X, rows.y.astype(np.float64), level)
    result = {"model": os.fspath(model_path), "class": type(model).__name__, **result}
    emit(result, as_json=as_json, quiet=quiet,
         lines=[f"{type(model).__name__} on {result['rows']} rows of {data}:",
                *(f"  {key:10s} {value:.6g}" for key, value in result.items()
                  if isinstance(value, float))])
