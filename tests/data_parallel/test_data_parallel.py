"""Data-parallel training under ``torchrun`` (gloo, CPU, 2 ranks): every rank ends with the same
model, which equals one process reading both shards in lock step; a failed or killed rank
stops the others with an error naming it, within seconds."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kernelstream.data import open_source
from kernelstream.distributed import ShardGroup

from support import SRC

WORKER = Path(__file__).with_name("dp_worker.py")
_spec = importlib.util.spec_from_file_location("dp_worker", WORKER)
worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra) -> dict:
    path = os.pathsep.join(filter(None, [str(SRC.parent), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", **extra}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    data = tmp_path_factory.mktemp("dp_data")
    worker.write_data(data)
    rng = np.random.default_rng(1)
    np.savez(data / "test.npz", X=rng.uniform(-1.5, 2.5, (400, 2)), Z=rng.uniform(-2, 2, (400, 3)))
    return data


def _torchrun(mode: str, data: Path, out: Path, timeout: float = 240):
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
               f"--master_port={_free_port()}", str(WORKER), mode, str(data), str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_env())


def _ranks(mode: str, data: Path, out: Path) -> list[subprocess.Popen]:
    """Two ranks started by hand (no torchrun agent to stop the survivor for us)."""
    port = str(_free_port())
    return [subprocess.Popen([sys.executable, str(WORKER), mode, str(data), str(out)],
                             env=_env(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2",
                                      MASTER_ADDR="127.0.0.1", MASTER_PORT=port),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for r in range(2)]


@pytest.mark.slow
def test_two_ranks_under_torchrun_train_the_single_process_model(workspace, tmp_path):
    run = _torchrun("fit", workspace, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    rank0, rank1 = (np.load(tmp_path / f"rank{r}.npz") for r in range(2))
    for key in rank0.files:  # every rank ends with the same model, bit for bit
        np.testing.assert_array_equal(rank0[key], rank1[key], err_msg=key)
    moons = open_source(workspace / "moons.csv", label=-1, **worker.SOURCE)
    wave = open_source(workspace / "wave.csv", label=-1, **worker.SOURCE)
    clf, reg = worker.fit_models(ShardGroup(moons, 2), ShardGroup(wave, 2))
    test = np.load(workspace / "test.npz")
    single = worker.summary(clf, reg, test["X"], test["Z"])
    for key in ("clf_sigma", "clf_alpha", "reg_components", "reg_alpha", "n_iter"):
        np.testing.assert_array_equal(rank0[key], single[key], err_msg=key)
    for key in ("clf_coef", "clf_decision", "reg_coef", "reg_predict"):
        np.testing.assert_allclose(rank0[key], single[key], rtol=1e-4, atol=2e-5, err_msg=key)
    np.testing.assert_allclose(rank0["blocks_decision"], rank0["clf_decision"], atol=1e-5)
    assert clf.sigma_ != worker.CLASSIFIER.get("sigma") and reg.n_components_ > 64  # chosen


@pytest.mark.slow
def test_two_ranks_fit_the_one_process_engine_model_on_their_rows(workspace, tmp_path):
    """Defaults on shards that fit in memory: the engine (a subsample's choice, then one solve
    a feature size), each product summed over the ranks; both ranks end with the same model,
    that of one process fitting the ranks' rows in rank order (within float32 round-off), not
    the epochs of a stream."""
    run = _torchrun("engine", workspace, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    ranks = [np.load(tmp_path / f"engine{r}.npz") for r in range(2)]
    test = np.load(workspace / "test.npz")
    for name, _, kind, X_test, limits in worker.ENGINE_FITS:
        np.testing.assert_array_equal(ranks[0][f"{name}_predicted"], ranks[1][f"{name}_predicted"])
        plan, stages = str(ranks[0][f"{name}_plan"]), list(ranks[0][f"{name}_stages"])
        assert "route: subsample" in plan and "summed over ranks" in plan, plan
        assert stages[0] == "selection" and "solve" in stages, stages
        assert ("narrowing" in stages) == ("narrow_rows" in limits), stages
        X = np.concatenate([rank[f"{name}_X"] for rank in ranks])
        y = np.concatenate([rank[f"{name}_y"] for rank in ranks])
        one = worker.engine_fit(kind, X, limits, y)
        assert [s["stage"] for s in one.fit_plan_.stages] == stages, name
        expected = (one.decision_function if kind == "classifier" else one.predict)(test[X_test])
        scale = float(np.std(expected))
        np.testing.assert_allclose(ranks[0][f"{name}_predicted"], expected, atol=1e-4 * scale,
                                   err_msg=name)


@pytest.mark.slow
def test_a_killed_rank_stops_the_other_within_seconds_naming_it(workspace, tmp_path):
    ranks = _ranks("long", workspace, tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"pid{r}").exists() for r in range(2)):
            assert time.monotonic() < deadline and ranks[0].poll() is None, ranks[0].communicate()
            time.sleep(0.2)
        time.sleep(2.0)  # both are in the fit's collectives
        os.kill(ranks[1].pid, signal.SIGKILL)
        killed = time.monotonic()
        _, stderr = ranks[0].communicate(timeout=30)
        elapsed = time.monotonic() - killed
    finally:
        for rank in ranks:
            rank.kill()
    assert ranks[0].returncode != 0
    assert "rank 1 stopped" in stderr and "RankFailure" in stderr, stderr[-3000:]
    assert elapsed < 15, elapsed


@pytest.mark.slow
def test_a_bad_line_on_one_rank_stops_every_rank_naming_the_line(workspace, tmp_path):
    lines = (workspace / "moons.csv").read_text().splitlines()
    lines[2899] = "0.25,not-a-number,1"
    (workspace / "bad.csv").write_text("\n".join(lines) + "\n")
    ranks = _ranks("bad", workspace, tmp_path)
    outputs = [rank.communicate(timeout=120)[1] for rank in ranks]
    assert all(rank.returncode != 0 for rank in ranks), outputs
    assert all("bad.csv, line 2900" in output for output in outputs), outputs
    assert any("RankFailure" in output and "failed: ValueError" in output for output in outputs)


def _last_line(output: str) -> str:
    """The last line of a rank's standard error, without torch's ``[rank1]: `` prefix."""
    return re.sub(r"^\[rank\d+\]: ", "", output.rstrip().splitlines()[-1])


def _two_libsvm_parts(folder: Path, bad_line: int) -> str:
    """Moons in ``part-0.svm`` and ``part-1.svm`` (one file per rank); the second has a bad
    line ``bad_line``. Returns that file's name."""
    from sklearn.datasets import dump_svmlight_file, make_moons

    X, y = make_moons(2000, noise=0.25, random_state=0)
    for k in range(2):
        dump_svmlight_file(X[k::2], y[k::2], str(folder / f"part-{k}.svm"), zero_based=False)
    lines = (folder / "part-1.svm").read_text().splitlines()
    lines[bad_line - 1] = "1 1:0.5 2:abc"
    (folder / "part-1.svm").write_text("\n".join(lines) + "\n")
    return "part-1.svm"


@pytest.mark.slow
def test_a_bad_line_in_one_ranks_file_raises_rank_failure_naming_it_on_the_others(tmp_path):
    """README's train.py on ``part-*.svm``: every rank ran the LIBSVM layout pass over every
    file, so each raised the same ValueError before any collective. Now the rank that owns
    the file raises it (file and line) and the other a RankFailure naming that rank."""
    name = _two_libsvm_parts(tmp_path, bad_line=88)
    ranks = _ranks("badsvm", tmp_path, tmp_path)
    outputs = [rank.communicate(timeout=120)[1] for rank in ranks]
    assert [rank.returncode for rank in ranks] == [1, 1], outputs
    where = f"{name}, line 88: cannot parse"
    owner = [k for k, out in enumerate(outputs)
             if _last_line(out).startswith(f"ValueError: {tmp_path / name}, line 88")]
    assert len(owner) == 1, outputs
    other = _last_line(outputs[1 - owner[0]])
    assert other.startswith(f"kernelstream.distributed.RankFailure: rank {owner[0]} failed: "
                            "ValueError: ") and where in other, outputs


@pytest.mark.slow
def test_an_empty_glob_exits_with_its_message_not_sigabrt(tmp_path):
    """README's train.py on a glob that matches nothing, under torchrun: both ranks used to
    print the error, then die in ``terminate called without an active exception`` (SIGABRT,
    exit code -6: the process group was left to the interpreter's teardown)."""
    run = _torchrun("glob", tmp_path, tmp_path, timeout=120)
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "terminate called" not in output and "SIGABRT" not in output, output[-4000:]
    assert "FileNotFoundError: No file matches" in output, output[-4000:]
    # the agent's table: the first rank to fail exits with 1; the agent may SIGTERM the other
    codes = re.findall(r"^\s*exitcode\s*: (-?\d+)", output, re.MULTILINE)
    assert len(codes) == 2 and set(codes) <= {"1", "-15"} and codes[-1] == "1", output[-4000:]
