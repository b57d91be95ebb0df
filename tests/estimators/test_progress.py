"""Progress by default: ``verbose="auto"`` shows a bar where standard error is a terminal (after a
delay, so quick fits print nothing), never elsewhere; the epochs are logged either way."""

import dataclasses
import logging

import numpy as np
import pytest

from kernelstream import DSGRegressor
from kernelstream.data import open_source
from kernelstream.planning import LIMITS
from kernelstream.estimators import _progress


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 3))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(3000)


def _fit(data, **params):
    return DSGRegressor(random_state=0, n_components=256, max_iter=3, **params).fit(*data)


def test_the_default_is_auto():
    assert DSGRegressor().verbose == "auto"


def test_auto_shows_a_bar_on_a_terminal(data, monkeypatch, capsys):
    monkeypatch.setattr(_progress, "_watched", lambda: True)
    monkeypatch.setattr(_progress, "AUTO_DELAY_S", 0.0)
    _fit(data)
    assert "DSGRegressor" in capsys.readouterr().err


def test_auto_is_silent_off_a_terminal(data, monkeypatch, capsys):
    monkeypatch.setattr(_progress, "_watched", lambda: False)
    _fit(data)
    assert capsys.readouterr().err == ""


def test_zero_is_silent_even_on_a_terminal(data, monkeypatch, capsys):
    monkeypatch.setattr(_progress, "_watched", lambda: True)
    monkeypatch.setattr(_progress, "AUTO_DELAY_S", 0.0)
    _fit(data, verbose=0)
    assert capsys.readouterr().err == ""


def test_the_epochs_are_logged(data, caplog):
    with caplog.at_level(logging.INFO, logger="kernelstream"):
        model = _fit(data, verbose=0, solver="sgd")
    epochs = [r for r in caplog.records if "epoch" in r.getMessage()]
    assert len(epochs) >= model.n_iter_ >= 1  # every epoch trained, the challengers too
    assert "monitored loss" in epochs[-1].getMessage()


def test_the_engine_logs_each_stage_as_the_plan_reports_it(data, caplog):
    """The engine's stages (selection, each feature size's cache and solve) are logged as they
    end, and the fitted plan lists the same stages with their CPU seconds."""
    with caplog.at_level(logging.INFO, logger="kernelstream"):
        model = DSGRegressor(random_state=0, verbose=0).fit(*data)
    logged = [r.getMessage() for r in caplog.records if "DSGRegressor: " in r.getMessage()]
    stages = [record["stage"] for record in model.fit_plan_.stages]
    assert stages[0] == "selection" and "solve" in stages and "features" in stages
    assert [m.split(": ")[1].split(" in ")[0] for m in logged] == stages
    assert all(record["seconds"] >= 0 for record in model.fit_plan_.stages)
    assert "stages (" in str(model.fit_plan_) and "solve: " in str(model.fit_plan_)


def test_a_stream_fit_is_logged_and_its_bar_closed(data, tmp_path, monkeypatch, caplog, capsys):
    X, y = data
    path = tmp_path / "rows.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,y", comments="")
    monkeypatch.setattr(_progress, "_watched", lambda: True)
    monkeypatch.setattr(_progress, "AUTO_DELAY_S", 0.0)
    with caplog.at_level(logging.INFO, logger="kernelstream"):
        DSGRegressor(random_state=0, n_components=256, max_iter=2).fit(
            open_source(path, label="y"), limits=dataclasses.replace(LIMITS, stream_rows_bytes=0))
    assert any("epoch" in r.getMessage() for r in caplog.records)
    assert "DSGRegressor" in capsys.readouterr().err


def test_auto_is_a_valid_value_and_others_are_refused(data):
    with pytest.raises(ValueError, match="verbose"):
        _fit(data, verbose="always")
