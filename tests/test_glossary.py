"""One parameter vocabulary: every public estimator's parameters are in docs/glossary.md, and a
name of :data:`kernelstream.glossary.GLOSSARY` has the glossary's constraint in every class."""

import re

import pytest

import kernelstream.estimators as estimators
from kernelstream.glossary import GLOSSARY
from support import ROOT

TABLE = (ROOT / "docs" / "glossary.md").read_text()
#: where a class accepts fewer values than the glossary's type (same meaning, narrower type)
NARROWER = {("GoGPRegressor", "average"): "GoGP averages from the start or not at all"}


def _glossary() -> set[str]:
    names = set()
    for row in re.findall(r"^\| (`[^|]+`) \|", TABLE, flags=re.M):
        names.update(re.findall(r"`([a-z_0-9]+)`", row))
    return names


def test_the_glossary_lists_parameters():
    assert {"n_components", "eta0", "average", "max_iter", "batch_size", "n_jobs",
            "join_threshold", "average_fraction"} <= _glossary()
    assert set(GLOSSARY) <= _glossary()


@pytest.mark.parametrize("name", estimators.__all__)
def test_every_parameter_is_in_the_glossary(name):
    params = set(getattr(estimators, name)().get_params())
    assert params <= _glossary(), sorted(params - _glossary())


@pytest.mark.parametrize("name", estimators.__all__)
def test_a_glossary_name_means_the_same_in_every_class(name):
    cls = getattr(estimators, name)
    for param, constraint in cls._parameter_constraints.items():
        if param in GLOSSARY and (name, param) not in NARROWER:
            assert repr(constraint) == repr(list(GLOSSARY[param].constraint)), (name, param)


@pytest.mark.parametrize("cls, old, new", [(estimators.GoGPRegressor, "theta", "join_threshold"),
                                           (estimators.DSGGaussianProcessRegressor, "average",
                                            "average_fraction")])
def test_renamed_parameters_are_refused_by_their_new_name(cls, old, new):
    with pytest.raises(TypeError, match=f"'{old}' is now called '{new}'; pass {new}=0.5"):
        cls(**{old: 0.5})
    assert new in cls().get_params() and old not in cls().get_params()


@pytest.mark.parametrize("name", ["DSGGaussianProcessRegressor", "GoGPRegressor"])
def test_the_kernel_choice_attributes_are_in_the_glossary(name):
    """Issue 33: the GP and GoGP keep ``lengthscales_``, ``kernel_choice_`` and
    ``kernel_choice_loo_`` in their state, and the glossary names them."""
    fitted = {"lengthscales_", "kernel_choice_", "kernel_choice_loo_"}
    assert fitted <= set(getattr(estimators, name)._state_attributes)
    assert all(f"`{attribute}`" in TABLE for attribute in fitted)
