"""The quick modes of the Section-7 scripts qm7, mnist8m_stream and mnist_vs_mlp run in-process
(``main(["--quick", "--out", tmp])``), write their result files and learn something: far
better than the trivial predictor in seconds."""

import json

import numpy as np
import pytest

from benchmarks.paper import mnist8m_stream, mnist_vs_mlp, qm7
from support import shared_dataset


def test_qm7_quick(tmp_path):
    shared_dataset("qm7")
    records = qm7.main(["--quick", "--out", str(tmp_path)])
    fold = records[0]
    assert fold["train_rows"] == 2 * 1100 and fold["test_rows"] == 2 * 275
    assert fold["mae"] < fold["mae_mean_predictor"] / 4  # against 221 kcal/mol
    assert fold["mae"] <= fold["mae_one_draw"] + 1.0  # averaging draws does not hurt
    saved = json.loads((tmp_path / "qm7.json").read_text())
    assert saved["folds"]["0"]["mae"] == fold["mae"] and "Machine:" in (tmp_path / "qm7.md").read_text()


@pytest.mark.slow
def test_mnist8m_stream_quick(tmp_path):
    shared_dataset("mnist")
    result = mnist8m_stream.main(["--quick", "--out", str(tmp_path)])
    log = result["stream"]
    assert [c["samples"] for c in log] == [2048, 3072]
    assert all(c["rss_mib"] > 0 and c["samples_per_s"] > 0 for c in log)
    assert log[-1]["test_error"] < 0.3 and result["originals"]["test_error"] < 0.3  # chance: 0.9
    for suffix in ("md", "json", "png"):
        assert (tmp_path / f"mnist8m_stream.{suffix}").stat().st_size > 0


@pytest.mark.slow
def test_mnist_vs_mlp_quick(tmp_path):
    shared_dataset("mnist")
    result = mnist_vs_mlp.main(["--quick", "--out", str(tmp_path)])
    curve = result["mlp"]["curve"]
    assert result["kernel"]["test_error"] < 0.3 and curve[-1]["test_error"] < 0.3
    assert np.isclose(curve[-1]["cpu_s"], result["kernel"]["fit_cpu_s"], rtol=0.5, atol=0.5)  # same budget
    assert (tmp_path / "mnist_vs_mlp.png").stat().st_size > 0


def test_qm7_quick_on_principal_axes(tmp_path):
    shared_dataset("qm7")
    records = qm7.main(["--quick", "--pca", "64", "--out", str(tmp_path)])
    assert records[0]["n_inputs"] == 64 and records[0]["mae"] < records[0]["mae_mean_predictor"] / 4
    assert "(PCA-64)" in (tmp_path / "qm7.md").read_text()
