"""The shared benchmark helpers (benchmarks/common): loader errors, the timer, the report; and
``python -m benchmarks``: every script registered, every results file with an origin."""

import importlib.util
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks import registry
from benchmarks.__main__ import main as benchmarks_main
from benchmarks.__main__ import run_arguments
from benchmarks.common import data
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import Stopwatch, measure, threads

ROOT = registry.RESULTS.parents[1]


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


# -- python -m benchmarks: the registry of scripts and result files ------------------------------

def _committed_results() -> list[str]:
    return sorted(p.relative_to(registry.RESULTS).as_posix()
                  for p in registry.RESULTS.rglob("*") if p.is_file())


def test_every_registered_script_exists():
    names = [b.name for b in registry.BENCHMARKS]
    assert len(names) == len(set(names))
    for bench in registry.BENCHMARKS:
        spec = importlib.util.find_spec(bench.module)
        assert spec is not None and Path(spec.origin).is_file(), bench.module
        assert bench.out in ("dir", "file", None)


def test_every_benchmark_script_is_registered():
    """A script with a command line (``__main__``) is in the registry, so ``python -m benchmarks``
    lists it."""
    folder = ROOT / "benchmarks"
    scripts = {p.relative_to(folder).with_suffix("").as_posix().replace("/", ".")
               for p in folder.rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py", "registry.py")
               and 'if __name__ == "__main__"' in p.read_text()}
    assert scripts <= {b.name for b in registry.BENCHMARKS}, scripts - {b.name for b in registry.BENCHMARKS}


def test_every_committed_result_has_an_origin_and_every_listed_one_exists():
    files = _committed_results()
    assert [f for f in files if not registry.origin(f)] == [], "add it to benchmarks/registry.py"
    for bench in registry.BENCHMARKS:
        for pattern in bench.results:
            assert any(bench.writes(f) for f in files), f"{bench.name}: nothing matches {pattern}"
    for name, where in registry.ARCHIVED.items():
        assert name in files, name
        records = [w for w in where.split() if w.startswith("docs/decisions/")]
        assert all((ROOT / r.rstrip(";,.")).is_file() for r in records), where


def test_the_results_readme_names_every_top_level_result():
    table = (registry.RESULTS / "README.md").read_text()
    top = [f for f in _committed_results() if "/" not in f and f != "README.md"]
    assert [f for f in top if f"`{f}`" not in table] == []


def test_retired_scripts_have_decision_records():
    """A result file whose script was removed names its decision record, and the record names
    the file and the commit to restore the script from."""
    for name, where in registry.ARCHIVED.items():
        for record in (w.rstrip(";,.") for w in where.split() if w.startswith("docs/decisions/")):
            text = (ROOT / record).read_text()
            assert name in text and "git " in text, (record, name)


def test_listing_and_quick_arguments(capsys, tmp_path):
    benchmarks_main([])
    listing = capsys.readouterr().out
    assert all(b.name in listing for b in registry.BENCHMARKS)
    module, argv = run_arguments("gp", ["--quick"])
    assert module == "benchmarks.gp" and argv[0] == "--quick" and argv[1] == "--out"
    assert Path(argv[2]).is_dir() and not Path(argv[2]).is_relative_to(ROOT)
    assert run_arguments("shared_defaults", ["--quick", "--out", str(tmp_path)])[1] == [
        "--quick", "--out", str(tmp_path)]
    assert run_arguments("perf.fit_cost", ["--quick"])[1][:2] == ["--sizes", "1000"]
    assert run_arguments("gp", ["--threads", "1"]) == ("benchmarks.gp", ["--threads", "1"])
    with pytest.raises(KeyError, match="not a benchmark"):
        run_arguments("nope", [])


def test_run_executes_the_module_as_main(tmp_path, capsys):
    benchmarks_main(["run", "perf.precond_step", "--quick"])
    assert "preconditioner" in capsys.readouterr().out
