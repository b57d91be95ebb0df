"""A failed call leaves a fitted model bit for bit as it was, without copying the model."""

import copy
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sklearn.datasets import make_regression

from kernelstream import DSGRegressor, GoGPRegressor
from kernelstream.estimators import _base, _rollback


def _no_deepcopy(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the model was deep-copied")

    monkeypatch.setattr(_rollback, "copy", SimpleNamespace(deepcopy=refuse))


def _state(model):
    return {k: (v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v))
            for k, v in model.expansion_.state_dict().items()}


def _assert_same(after, before, key="") -> None:
    """``after == before``, tensors exactly, in nested dicts (a kernel-columns map's config)."""
    if isinstance(before, torch.Tensor):
        assert torch.equal(after, before), key
    elif isinstance(before, dict):
        assert after.keys() == before.keys(), key
        for name, value in before.items():
            _assert_same(after[name], value, f"{key}.{name}")
    else:
        assert after == before, key


@pytest.mark.slow
@pytest.mark.parametrize("params", [dict(), dict(n_components=128, average=True),
                                    dict(n_components=128, alpha=50.0)])
def test_dsg_partial_fit_failing_midway_is_undone(monkeypatch, params):
    """Budget (revisited blocks), averaging and a lazy scale folded in (large alpha) included."""
    X, y = make_regression(1024, 3, random_state=0)
    model = DSGRegressor(batch_size=64, block_size=64, random_state=0, **params).fit(X, y)
    before, prediction, steps = _state(model), model.predict(X), model.t_
    calls = {"n": 0}
    real_step = _base.dsg_step

    def failing_step(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise FloatingPointError("injected")
        return real_step(*args, **kwargs)

    monkeypatch.setattr(_base, "dsg_step", failing_step)
    _no_deepcopy(monkeypatch)
    with pytest.raises(FloatingPointError, match="injected"):
        model.partial_fit(X, y)  # 16 steps; the 5th fails after 4 were applied
    after = _state(model)
    _assert_same(after, before)
    np.testing.assert_array_equal(model.predict(X), prediction)
    monkeypatch.setattr(_base, "dsg_step", real_step)
    model.partial_fit(X, y)  # and it still learns
    assert model.t_ == steps + 16


def test_gogp_one_row_failure_commits_nothing_and_copies_nothing(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = np.sin(X[:, 0])
    model = GoGPRegressor(random_state=0).fit(X, y)
    before = {k: (v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v))
              for k, v in model.state_.state_dict().items()}
    real_project = type(model.state_)._project  # the projection each update makes

    def nan_project(self, *args):
        d, var, same = real_project(self, *args)
        return d * float("nan"), var, same

    monkeypatch.setattr(type(model.state_), "_project", nan_project)
    _no_deepcopy(monkeypatch)
    with pytest.raises(FloatingPointError, match="non-finite"):
        model.partial_fit(X[:1] + 0.5, y[:1])
    for key, value in model.state_.state_dict().items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(value, before[key]), key
        elif isinstance(value, dict):
            assert all(torch.equal(value[n], before[key][n]) for n in value), key
        else:
            assert value == before[key], key
