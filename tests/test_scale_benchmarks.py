"""benchmarks/scale in their --quick mode: a9a as CSR from LIBSVM files against the dense array
(same test error, less memory) and streaming a generated file (throughput with 1 and 2
processes, peak RSS under the issue's bound)."""

from __future__ import annotations

import json

import pytest

from support import SHARED_DATA, require_shared


@pytest.mark.slow
def test_a9a_from_libsvm_files_as_csr_matches_the_dense_fit_in_less_memory(tmp_path):
    require_shared(SHARED_DATA / "a9a.npz")
    from benchmarks.scale import sparse_a9a

    rows = {r["mode"]: r for r in sparse_a9a.main(["--quick", "--out", str(tmp_path)])}
    dense, csr, stream = rows["dense"], rows["csr"], rows["stream"]
    assert abs(csr["error"] - dense["error"]) <= 0.001  # ± 0.1 point (in fact the same model)
    assert abs(stream["error"] - dense["error"]) <= 0.005
    assert csr["peak"] < dense["peak"] and csr["data_bytes"] < dense["data_bytes"] / 4
    assert 0.13 < dense["error"] < 0.17
    assert "| csr |" in (tmp_path / "sparse_a9a.md").read_text()


@pytest.mark.slow
def test_streaming_a_generated_file_with_one_and_two_processes(tmp_path):
    from benchmarks.scale import stream

    results = stream.main(["--quick", "--out", str(tmp_path)])
    for processes in (1, 2):
        throughput = results[f"throughput_{processes}"]
        assert throughput["rows_per_second"] > 0 and len(throughput["epoch_ends"]) == 2
    memory = results["memory"]
    assert memory["timeline"] and memory["max_rss"] <= memory["peak"] < stream.RSS_LIMIT
    assert json.loads((tmp_path / "stream.json").read_text())["memory"]["peak"] == memory["peak"]
    assert (tmp_path / "stream_memory.png").stat().st_size > 5_000
