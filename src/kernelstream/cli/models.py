"""Which estimator a command line asks for, built from its options; rows and labels made ready.

No algorithm here: names map to the public estimators, ``KEY=VALUE`` strings to parameters,
and the estimator validates the values itself when it fits.
"""

from __future__ import annotations

import difflib
import inspect
import json
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["ESTIMATORS", "TASKS", "CliError", "estimator_class", "build_estimator",
           "parse_assignment", "parse_value", "prepare_rows", "prepare_labels",
           "fit_options", "estimator_options", "has_proba", "proba_error", "has_std",
           "check_writable"]

#: short names of the supervised estimators a command line can fit, by task
ESTIMATORS = {
    "classification": {"dsg": "DSGClassifier", "aogd": "AOGDClassifier"},
    "regression": {"dsg": "DSGRegressor", "gogp": "GoGPRegressor",
                   "gp": "DSGGaussianProcessRegressor"},
}
TASKS = tuple(ESTIMATORS)
#: estimators whose ``predict`` returns a predictive standard deviation (``return_std``)
STD_MODELS = ("GoGPRegressor", "DSGGaussianProcessRegressor")


class CliError(Exception):
    """A failure the command line reports as one line (exit code 2)."""


def estimator_class(name: str, task: str | None) -> type:
    """The class a short name (``dsg``, ``gogp``, ...) or a class name denotes for ``task``."""
    from .. import estimators  # torch: imported when a command runs, not for --help

    classes = {cls: t for t, names in ESTIMATORS.items() for cls in names.values()}
    if name in classes:
        if task is not None and classes[name] != task:
            raise CliError(f"--estimator {name} is a {classes[name]} model, not {task}")
        return getattr(estimators, name)
    tasks = [t for t, names in ESTIMATORS.items() if name in names]
    if not tasks:
        known = sorted({*classes, *(n for names in ESTIMATORS.values() for n in names)})
        raise CliError(f"unknown estimator {name!r}{_did_you_mean(name, known)}; "
                       f"choose from {', '.join(known)}")
    if task is None and len(tasks) > 1:
        raise CliError(f"--estimator {name} does {' and '.join(tasks)}: pass --task "
                       f"{' or --task '.join(tasks)}")
    if task is not None and task not in tasks:
        raise CliError(f"--estimator {name} does not do {task}; for {task} use one of "
                       f"{', '.join(ESTIMATORS[task])}")
    return getattr(estimators, ESTIMATORS[task or tasks[0]][name])


def build_estimator(cls: type, params: dict):
    """``cls(**params)``, with an unknown parameter named (and a close match suggested)."""
    valid = set(cls().get_params())
    unknown = sorted(set(params) - valid)
    if unknown:
        raise CliError(f"{cls.__name__} has no parameter {unknown[0]!r}"
                       f"{_did_you_mean(unknown[0], valid)}; see kernelstream fit --help")
    model = cls(**params)
    model._validate_params()  # scikit-learn's check of the values, before any data is read
    return model


def parse_assignment(text: str) -> tuple[str, object]:
    """``"key=value"`` → ``(key, value)`` with the value parsed by :func:`parse_value`."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise CliError(f"--param {text!r}: expected KEY=VALUE, e.g. --param eta0=0.5")
    return key.strip().replace("-", "_"), parse_value(value.strip())


def parse_value(text: str):
    """A JSON number, boolean, null, list or object (``{"nu": 1.5}``), else the string."""
    lowered = {"true": True, "false": False, "none": None, "null": None}
    if text.lower() in lowered:
        return lowered[text.lower()]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def given_options(requested: dict, accepted, owner: str) -> dict:
    """The entries of ``requested`` that were given (not ``None``); an error naming the flag
    ``--the-name`` if one of them is not in ``accepted`` (``owner`` says what lacks it)."""
    for name, value in requested.items():
        if value is not None and name not in accepted:
            flag = "--" + name.replace("_", "-")
            raise CliError(f"{flag} is not supported by this estimator ({owner} {name!r})")
    return {name: value for name, value in requested.items() if value is not None}


def fit_options(estimator, requested: dict) -> dict:
    """The keyword arguments of ``requested`` (e.g. ``resume``) for ``estimator.fit``; an error
    if its ``fit`` does not take one of them."""
    return given_options(requested, inspect.signature(estimator.fit).parameters,
                         f"{type(estimator).__name__}.fit takes no")


def estimator_options(cls: type, requested: dict) -> dict:
    """The estimator parameters of ``requested`` (e.g. ``checkpoint``) that were given; an error
    if ``cls`` has no such parameter."""
    return given_options(requested, cls().get_params(), f"{cls.__name__} has no parameter")


def prepare_rows(model, X):
    """``X`` as the model takes it: CSR rows stay sparse for the estimators that accept them
    (their tags say so: DSG, AOGD); the others get dense rows. The densified copy is
    ``n × d`` float64: the GP and GoGP estimators work on dense rows."""
    if sp.issparse(X) and not model.__sklearn_tags__().input_tags.sparse:
        return X.toarray()
    return X


def prepare_labels(y: np.ndarray, task: str) -> np.ndarray:
    """Classification labels that are whole numbers (LIBSVM and CSV read them as floats) as
    int64, so predictions print as ``1``, not ``1.0``."""
    if task == "classification" and y.dtype.kind == "f" and np.all(np.mod(y, 1) == 0):
        return y.astype(np.int64)
    return y


def check_writable(path) -> None:
    """Refuse an output path whose directory is missing or read-only (before any work)."""
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise CliError(f"cannot write {path}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise CliError(f"cannot write {path}: the directory {folder} is not writable")


def has_proba(model) -> bool:
    """``predict_proba`` is available (``DSGClassifier``, unless a margin loss was trained by
    the one-pass solver)."""
    return hasattr(model, "predict_proba")


def proba_error(model, model_path) -> str:
    """Why ``--proba`` cannot run on ``model``: the estimator's own reason where the class has
    ``predict_proba`` but this model does not (e.g. the one-pass solver with the hinge)."""
    kind = type(model).__name__
    message = (f"--proba needs a classifier with predict_proba (DSGClassifier with its default "
               f"loss or loss='logistic'); {model_path} holds a {kind} without it")
    if hasattr(type(model), "predict_proba"):
        try:
            model.predict_proba  # noqa: B018 — raises the estimator's reason
        except AttributeError as exc:
            return f"{message}: {exc}"
    return message


def has_std(model) -> bool:
    return type(model).__name__ in STD_MODELS


def _did_you_mean(name: str, choices) -> str:
    close = difflib.get_close_matches(name, sorted(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
