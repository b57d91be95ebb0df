"""The parameter vocabulary: one name, one type, one meaning, one constraint, for every estimator.

Each :class:`Term` states a parameter's type, meaning and scikit-learn constraint; estimators
build their ``_parameter_constraints`` for these names with :func:`constraints`, so a name
cannot mean one thing in one class and another elsewhere. ``docs/glossary.md`` is the reader's
table; ``tests/test_glossary.py`` checks both against the estimators.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validation import Integral, Interval, Real, StrOptions

__all__ = ["Term", "GLOSSARY", "constraints", "sigma_constraint"]


@dataclass(frozen=True)
class Term:
    """A parameter: its numpydoc type, its meaning in one sentence, its constraint."""

    type: str
    meaning: str
    constraint: tuple


GLOSSARY: dict[str, Term] = {
    "random_state": Term("int, RandomState or None",
                         "seeds the feature blocks and every random choice of the fit",
                         ("random_state",)),
    "verbose": Term('int or "auto"', "progress bar: \"auto\" on a terminal for work of more than "
                    "a few seconds, 0 never, 1 always (epochs are logged either way)",
                    ("verbose", StrOptions({"auto"}))),
    "device": Term('{"auto", "cpu", "cuda"} or str', "where tensors live: \"auto\" is CUDA when "
                   "available", (str,)),
    "n_jobs": Term("int or None", "threads for the computation: None one, -1 every thread the "
                   "environment allows, k at most k", (Integral, None)),
    "kernel": Term("str", "the kernel's name in the feature-map registry (\"rbf\", \"laplace\", "
                   "\"matern\", ...)", (str,)),
    "kernel_params": Term("dict or None", "the kernel's own parameters (Matérn's nu, the "
                          "polynomial's degree, ...)", (dict, None)),
    "sigma_scale": Term("float > 0", "multiplier of the median distance when sigma=\"median\"",
                        (Interval(Real, 0, None, closed="neither"),)),
    "dtype": Term('{"float32", "float64"}', "the precision of the features and coefficients",
                  (StrOptions({"float32", "float64"}),)),
    "average": Term("bool or int >= 1", "Polyak–Ruppert averaging of the iterates: True from the "
                    "start, k from update k", ("boolean", Interval(Integral, 1, None, closed="left"))),
    "average_fraction": Term("float in [0, 1)", "the GP's averaging: the last 1 − average_fraction "
                             "of the steps are averaged",
                             (Interval(Real, 0, 1, closed="left"),)),
    "join_threshold": Term('float >= 0 or "auto"', "GoGP: a point joins the inducing set when its "
                           "feature's distance to the set's span exceeds it",
                           (Interval(Real, 0, None, closed="left"), StrOptions({"auto"}))),
}


def constraints(*names: str) -> dict[str, list]:
    """``{name: constraint}`` of the glossary's ``names`` (a class's ``_parameter_constraints``)."""
    return {name: list(GLOSSARY[name].constraint) for name in names}


def sigma_constraint(*options: str) -> list:
    """The constraint of ``sigma``: a positive number, per-feature lengthscales (any array-like;
    :func:`~kernelstream.features.bandwidth.check_lengthscales` checks its length and values when
    the fit resolves it) or one of the strings ``options`` ("median", "auto")."""
    return [Interval(Real, 0, None, closed="neither"), "array-like", StrOptions(set(options))]
