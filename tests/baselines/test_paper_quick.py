"""The Section-7 scripts (benchmarks/paper) in their --quick mode, in process: they run, write
their three files and record what the full runs are read for."""

import json
import math

import pytest

from benchmarks.baselines import BASELINES

from support import SHARED_DATA, require_shared


def run(module, tmp_path, name):
    module.main(["--quick", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / f"{name}.json").read_text())
    report = (tmp_path / f"{name}.md").read_text()
    assert f"Command: `python -m benchmarks.paper.{name} --quick --out {tmp_path}`" in report
    assert "1 thread(s)" in report and (tmp_path / f"{name}.png").stat().st_size > 10_000
    return payload, report


def test_synthetic_krr(tmp_path):
    from benchmarks.paper import synthetic_krr

    payload, report = run(synthetic_krr, tmp_path, "synthetic_krr")
    runs = payload["runs"]
    assert len(runs) == 8 and set(BASELINES) <= set(runs)
    for label, result in runs.items():
        assert all(math.isfinite(row["test_mse"]) and row["seconds"] >= 0 for row in result["trace"])
        assert f"| {label} |" in report
    one_pass = runs["DSGRegressor(solver='one_pass'), paper mode (ours)"]["trace"]
    assert one_pass[-1]["epochs"] == 1 and one_pass[-1]["test_mse"] < one_pass[0]["test_mse"]
    assert runs["k-SDCA"]["rows"] == 2**10 and runs["NORMA"]["trace"][-1]["step"] == 16  # 2 passes of 8
    averaged = payload["convergence"]["curves"]["averaged"]
    assert len(averaged) == 8 and averaged[-1] < averaged[0]


@pytest.mark.slow
def test_svm(tmp_path):
    require_shared(SHARED_DATA / "a9a.npz")
    from benchmarks.paper import svm

    payload, report = run(svm, tmp_path, "svm")
    result = payload["results"]["a9a"]
    assert result["n_train"] == 2048 and result["batch_size"] == 64
    for name in BASELINES:
        sc1, sc2 = svm.criteria(result["runs"][name], is_ours=False)
        assert sc1["epochs"] == 1 and sc2 is not None  # both stopping criteria reached
        assert sc2["seconds"] - (0 if name[0] != "n" else sc2["setup_seconds"]) >= result["budget_s"]
    ours = result["runs"][svm.ONE_PASS]["trace"][-1]
    assert ours["epochs"] == 1 and ours["test_error"] < 0.3  # all -1 would be 0.24, all +1 0.76
    assert "SC1 test error" in report


def test_gp_vs_norma(tmp_path):
    from benchmarks.paper import gp_vs_norma

    payload, _ = run(gp_vs_norma, tmp_path, "gp_vs_norma")
    runs = payload["results"]["synthetic"]["runs"]
    dsg, norma = runs[gp_vs_norma.DSG]["trace"], runs["NORMA (full kernel)"]["trace"]
    assert [row["step"] for row in dsg] == [4, 8]
    assert dsg[1]["mean_error"] < dsg[0]["mean_error"]  # more steps, closer to eq. (9)
    assert norma[-1]["epochs"] == 3 and norma[-1]["mean_error"] < norma[0]["mean_error"]
