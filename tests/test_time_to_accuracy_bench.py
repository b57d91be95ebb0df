"""``python -m benchmarks.time_to_accuracy --quick``: every row, ours and the peers, the targets'
PASS/FAIL, and the raw seconds in the JSON (issue 32)."""

import json

import pytest

from benchmarks import registry
from benchmarks.__main__ import run_arguments
from benchmarks.time_to_accuracy import NAME, SPECS, Row, main, parse


def test_registered_and_quick_goes_to_a_temporary_folder():
    assert registry.find(NAME).module == "benchmarks.time_to_accuracy"
    module, argv = run_arguments(NAME, ["--quick"])
    assert argv[0] == "--quick" and argv[1] == "--out"
    assert not parse(["--quick"]).out.is_relative_to(registry.RESULTS.parents[1])
    assert parse([]).rows == [row for row in Row if row is not Row.MNIST10]
    assert parse(["--all"]).rows == list(Row) and parse(["--rows", "mnist10"]).rows == [Row.MNIST10]


@pytest.mark.slow
def test_quick_run_has_every_row_ours_the_peers_and_the_verdicts(tmp_path):
    path = main(["--quick", "--all", "--out", str(tmp_path)])
    text = path.read_text()
    assert text.startswith("# Time to accuracy") and "Command: `" in text and "Machine: " in text
    assert "Library: kernelstream " in text and "One thread for everything" in text
    table = [line for line in text.splitlines() if line.startswith("| ")]
    header = next(line for line in table if "CPU s ours/peer" in line)
    assert "PASS/FAIL" in header and "error ours/peer" in header
    for row, spec in SPECS.items():
        lines = [line for line in table if line.startswith(f"| {row.value} |")]
        methods = [adapter.name for adapter in spec.methods()]
        for name in methods:
            assert any(f"| {name} |" in line for line in lines), (row, name)
        ours = next(line for line in lines if f"| {methods[0]} |" in line)
        assert "(ours)" in ours and ("**PASS**" in ours or "**FAIL**" in ours), ours

    raw = json.loads(path.with_suffix(".json").read_text())
    assert raw["quick"] is True and raw["threads"] == 1 and raw["command"] and raw["machine"]
    assert [s["row"] for s in raw["sets"]] == [row.value for row in Row]
    for entry in raw["sets"]:
        assert entry["methods"][0]["ours"] and len(entry["methods"]) == len(SPECS[Row(entry["row"])].methods())
        assert isinstance(entry["passed"], bool)
        for method in entry["methods"]:
            assert len(method["cpu_s"]) == 1 and method["cpu_min"] >= 0 and method["score"] >= 0
