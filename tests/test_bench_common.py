"""The shared benchmark helpers (benchmarks/common): loader errors, the timer, the report."""

import time

import numpy as np
import pytest

from benchmarks.common import data
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import Stopwatch, measure, threads


def test_missing_data_set_names_the_folder():
    with pytest.raises(FileNotFoundError, match="no data set 'nope'"):
        data.data_path("nope")


def test_random_split_is_sklearns_in_benchmark_order():
    X, y = np.arange(40.0).reshape(20, 2), np.arange(20) % 2
    X_train, y_train, X_test, y_test = data.random_split(X, y, test_size=0.25, seed=0, stratify=True)
    assert X_train.shape == (15, 2) and X_test.shape == (5, 2)
    assert (X_train[:, 0] // 2 % 2 == y_train).all()  # rows and labels stay paired


def test_measure_warms_up_then_times_each_repeat():
    calls = []
    timing = measure(lambda: calls.append(1) or len(calls), repeats=3, warmup=2)
    assert len(calls) == 5 and timing.result == 5
    assert len(timing.wall) == len(timing.cpu) == 3
    assert timing.min() <= timing.median() and timing.min("cpu") >= 0
    with pytest.raises(ValueError, match="clock"):
        timing.min("gpu")


def test_stopwatch_pause_leaves_time_out():
    with Stopwatch() as sw:
        with sw.pause():
            time.sleep(0.05)
    assert sw.wall < 0.04


def test_threads_restores_torch():
    import torch

    before = torch.get_num_threads()
    with threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_report_has_command_machine_and_table(tmp_path):
    table = markdown_table(["a", "b"], [(1, 2)])
    path = write_report(tmp_path / "sub" / "r.md", "Title", table, command="python -m x",
                        machine="m")
    assert path.read_text() == "# Title\n\nCommand: `python -m x`\n\nMachine: m\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    with pytest.raises(ValueError, match="2 columns"):
        markdown_table(["a", "b"], [(1,)])
