"""Checkpoint and resume: an interrupted fit resumed from its checkpoint ends with the model of
the uninterrupted fit, bit for bit; damaged or foreign checkpoints are refused clearly."""

import os
import shutil

import numpy as np
import pytest
import torch
from safetensors import safe_open
from sklearn.datasets import make_classification

import kernelstream.estimators._checkpointing as checkpointing
from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.estimators._checkpointing import parse_every
from kernelstream.io import CheckpointError, ModelFileError, load, load_checkpoint, save_checkpoint
from kernelstream.solvers.selection import STAGE_EPOCHS

from support import kill_after_writes

SMALL = dict(block_size=64, batch_size=256, random_state=0, solver="sgd")  # the epochs resume


def _regression(n, seed=0):
    X, y, _ = synthetic_regression(n, random_state=seed)
    return X.astype(np.float64), y.astype(np.float64)


def _same(a, b, where="state"):
    """Recursive bit-for-bit equality of state dicts, arrays, lists and numbers."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, np.ndarray) and a.dtype == object:  # per-feature sigma among numbers
        assert isinstance(b, np.ndarray) and a.shape == b.shape, where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b or (a != a and b != b), (where, a, b)


def epochs_run(model) -> int:
    """Epochs a fit ran: every growth stage's and narrower challenger's, and the final
    training's beyond the stage it continued (the entry with its size and bandwidth)."""
    *stages, last = model.feature_growth_
    continued = [g for g in stages if (g["n_components"], g["sigma"]) == (last["n_components"], last["sigma"])]
    return sum(g["epochs"] for g in model.feature_growth_) - (continued[-1]["epochs"] if continued else 0)


def assert_same_fit(a, b, X):
    """The same model: its state bit for bit but the plan's report of the run (the stages'
    seconds, and a resumed fit skips the stages its checkpoint held), the same predictions."""
    _same(*({k: v for k, v in m.state_dict().items() if k != "fit_plan_"} for m in (a, b)))
    assert str(a.fit_plan_).split("  stages")[0] == str(b.fit_plan_).split("  stages")[0]
    for name in ("cv_results_", "feature_growth_"):
        _same(getattr(a, name, None), getattr(b, name, None), name)
    assert np.array_equal(a.predict(X), b.predict(X))


@pytest.fixture
def snapshots(monkeypatch, tmp_path):
    """Every checkpoint a fit writes, copied aside as it is written (a kill right after a
    write, or anywhere before the next one, leaves exactly that file)."""
    copies = []
    save = checkpointing.save_checkpoint

    def save_and_copy(header, state, path):
        save(header, state, path)
        copies.append(tmp_path / f"copy{len(copies)}.ckpt")
        shutil.copy(path, copies[-1])

    monkeypatch.setattr(checkpointing, "save_checkpoint", save_and_copy)
    return copies


def test_resume_from_any_checkpoint_ends_with_the_uninterrupted_model(tmp_path, snapshots):
    """Bandwidth race (6,000 rows), feature growth, σ/2 challenging the size kept, the final
    epochs of the size kept: resumed after the race, in the first stage, at its last epoch, in
    the second stage, during the challenge, in the final epochs and at the end."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (6000, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(6000)
    params = dict(SMALL, block_size=32, max_iter=11, tol=None)
    whole = DSGRegressor(**params).fit(X, y)
    DSGRegressor(**params, checkpoint=tmp_path / "fit.ckpt").fit(X, y)
    *stages, final = whole.feature_growth_
    assert whole.cv_results_ is not None and len(stages) >= 2 and final["epochs"] > STAGE_EPOCHS
    assert len(snapshots) == 1 + epochs_run(whole)
    first, written = stages[0]["epochs"], list(snapshots)
    narrower = next(i for i, g in enumerate(stages) if g["sigma"] < stages[0]["sigma"])
    challenged = sum(g["epochs"] for g in stages[:narrower]) + 2  # σ/2 in its third epoch
    for k in (0, 2, first, first + 2, challenged, len(written) - 2, len(written) - 1):
        before = len(snapshots)
        resumed = DSGRegressor(**params, checkpoint=tmp_path / "resumed.ckpt").fit(X, y, resume=written[k])
        assert len(snapshots) - before == len(written) - 1 - k  # only the epochs after k ran
        assert_same_fit(resumed, whole, X)


def test_early_stopping_resumes_mid_count(tmp_path, snapshots):
    """A fit that stops early: resumed from every epoch, the epochs without improvement counted
    before the break still count, and the fit stops at the same epoch."""
    X, y = _regression(1500)
    params = dict(SMALL, sigma=0.5, alpha=1e-4, n_components=128, tol=0.02, n_iter_no_change=3,
                  max_iter=100)  # an explicit max_iter: epochs, not the exact dual route
    whole = DSGRegressor(**params).fit(X, y)
    DSGRegressor(**params, checkpoint=tmp_path / "fit.ckpt").fit(X, y)
    written = list(snapshots)
    assert 4 <= whole.n_iter_ == len(written) - 1 < 100
    for path in written[1:]:
        assert_same_fit(DSGRegressor(**params).fit(X, y, resume=path), whole, X)


def test_a_classifier_interrupted_by_an_exception_resumes_exactly(tmp_path, monkeypatch):
    """Ctrl-C in the fourth epoch: the estimator is left as it was, the checkpoint of the third
    epoch is on disk, and resuming gives the uninterrupted model (3 classes, weights)."""
    X, y = make_classification(2000, n_features=6, n_informative=4, n_classes=3, random_state=0)
    weight = np.random.default_rng(0).uniform(0.5, 2, len(y))
    params = dict(SMALL, class_weight="balanced", n_components=256, max_iter=8)
    whole = DSGClassifier(**params).fit(X, y, sample_weight=weight)
    write = checkpointing.FitCheckpoint.write
    calls = []

    def write_then_interrupt(self):
        write(self)
        calls.append(1)
        if len(calls) == 4:  # the selection's checkpoint and three epochs'
            raise KeyboardInterrupt

    monkeypatch.setattr(checkpointing.FitCheckpoint, "write", write_then_interrupt)
    model = DSGClassifier(**params, checkpoint=str(tmp_path / "fit.ckpt"))
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y, sample_weight=weight)
    assert not hasattr(model, "expansion_")
    model.fit(X, y, sample_weight=weight, resume=tmp_path / "fit.ckpt")
    assert len(calls) == 4 + epochs_run(whole) - 3  # the resumed fit ran the epochs after the third
    assert_same_fit(model, whole, X)


def test_a_warm_start_resumes_from_the_model_it_started_from(tmp_path, snapshots):
    X, y = _regression(2000)
    params = dict(SMALL, sigma=0.5, alpha=1e-5, n_components=128, warm_start=True, max_iter=6, tol=None)
    start = DSGRegressor(**params).fit(X, y)
    state = start.state_dict()
    whole = DSGRegressor(**params).load_state_dict(state).fit(X, y)
    DSGRegressor(**params, checkpoint=tmp_path / "w.ckpt").load_state_dict(state).fit(X, y)
    resumed = DSGRegressor(**params).load_state_dict(state).fit(X, y, resume=snapshots[2])
    assert_same_fit(resumed, whole, X)
    with pytest.raises(CheckpointError, match="other values of the warm-start model"):
        DSGRegressor(**params).fit(X, y).fit(X[::-1], y[::-1]).fit(X, y, resume=snapshots[2])


def test_random_state_none_resumes_the_interrupted_fit(tmp_path, snapshots):
    """The random stream the fit began with is in the checkpoint."""
    X, y = _regression(2000)
    params = dict(SMALL, random_state=None, max_iter=5, n_components=128)
    global_state = np.random.get_state()
    whole = DSGRegressor(**params).fit(X, y)
    np.random.set_state(global_state)
    DSGRegressor(**params, checkpoint=tmp_path / "n.ckpt").fit(X, y)
    np.random.seed(12345)  # another stream now
    assert_same_fit(DSGRegressor(**params).fit(X, y, resume=snapshots[2]), whole, X)


_KILLED_FIT = """
import sys
import numpy as np
from kernelstream import DSGRegressor
from kernelstream.datasets import synthetic_regression
X, y, _ = synthetic_regression(20000, random_state=1)
DSGRegressor(**{params}, checkpoint=sys.argv[1]).fit(X.astype(np.float64), y.astype(np.float64))
"""


@pytest.mark.slow
def test_sigkill_mid_fit_then_resume_gives_the_uninterrupted_model(tmp_path, snapshots):
    """A real process killed with SIGKILL in the middle of an epoch; its checkpoint resumes here."""
    params = dict(block_size=128, batch_size=512, random_state=0, n_components=512, max_iter=16, solver="sgd",
                  tol=None)
    path = tmp_path / "killed.ckpt"
    kill_after_writes(_KILLED_FIT.format(params=params), path, 4)  # the race's, epochs 1 to 3
    X, y, _ = synthetic_regression(20000, random_state=1)
    X, y = X.astype(np.float64), y.astype(np.float64)
    resumed = DSGRegressor(**params, checkpoint=tmp_path / "resumed.ckpt").fit(X, y, resume=path)
    whole = DSGRegressor(**params).fit(X, y)
    assert len(snapshots) == epochs_run(whole) - 3  # it went on after the third epoch
    assert_same_fit(resumed, whole, X)


_KILLED_ENGINE_FIT = """
import sys
import numpy as np
from kernelstream import DSGRegressor
rng = np.random.default_rng(1)
X = rng.uniform(-3, 3, (20000, 2))
y = np.sin(3 * X[:, 0]) * np.cos(3 * X[:, 1]) + 0.05 * rng.standard_normal(20000)
DSGRegressor(random_state=0, block_size=256, checkpoint=sys.argv[1]).fit(X, y)
"""


@pytest.mark.slow
def test_sigkill_of_an_engine_fit_then_resume_gives_the_fit_without_a_checkpoint(tmp_path):
    """The fit engine's defaults in a real process killed with SIGKILL after its first
    checkpoint (the choice of sigma and alpha), in its feature sizes: resumed here it skips the
    choice and ends with the model of the same fit without a checkpoint, bit for bit."""
    path = tmp_path / "killed.ckpt"
    kill_after_writes(_KILLED_ENGINE_FIT, path, 1)
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, (20000, 2))
    y = np.sin(3 * X[:, 0]) * np.cos(3 * X[:, 1]) + 0.05 * rng.standard_normal(20000)
    resumed = DSGRegressor(random_state=0, block_size=256).fit(X, y, resume=path)
    whole = DSGRegressor(random_state=0, block_size=256).fit(X, y)
    assert resumed.fit_plan_.stages[0]["stage"] == "features"  # the choice was read back
    assert_same_fit(resumed, whole, X)


# -- refused checkpoints ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A small fit's checkpoint, its data and its parameters."""
    path = tmp_path_factory.mktemp("ckpt") / "fit.ckpt"
    X, y = _regression(1500)
    params = dict(SMALL, sigma=0.5, alpha="auto", max_iter=3, n_components=128)
    DSGRegressor(**params, checkpoint=path).fit(X, y)
    return path, X, y, params


def test_a_truncated_checkpoint_is_refused_naming_the_file(written, tmp_path):
    path, X, y, params = written
    data = path.read_bytes()
    for size in (len(data) // 2, len(data) - 1, 5):
        (tmp_path / "cut.ckpt").write_bytes(data[:size])
        with pytest.raises(CheckpointError, match="cut.ckpt.*truncated or corrupt"):
            DSGRegressor(**params).fit(X, y, resume=tmp_path / "cut.ckpt")


def test_an_edited_checkpoint_is_refused(written, tmp_path):
    path, X, y, params = written
    model = DSGRegressor(**params).fit(X, y)
    before = model.state_dict()
    for position in (20, len(path.read_bytes()) // 2, len(path.read_bytes()) - 3):
        data = bytearray(path.read_bytes())
        data[position] ^= 0x01
        (tmp_path / "edited.ckpt").write_bytes(bytes(data))
        with pytest.raises(CheckpointError, match="edited.ckpt"):
            model.fit(X, y, resume=tmp_path / "edited.ckpt")
    _same(model.state_dict(), before)  # a failed fit leaves the model as it was


def test_other_data_parameters_or_estimators_are_refused(written, tmp_path):
    path, X, y, params = written
    with pytest.raises(CheckpointError, match=r"other data: X has shape \(1499, 2\) here, \(1500, 2\)"):
        DSGRegressor(**params).fit(X[:-1], y[:-1], resume=path)
    with pytest.raises(CheckpointError, match="other data: other values of y"):
        DSGRegressor(**params).fit(X, y + 1e-9, resume=path)
    with pytest.raises(CheckpointError, match="other values of X"):
        DSGRegressor(**params).fit(X + 1e-9, y, resume=path)
    with pytest.raises(CheckpointError, match="other values of sample_weight"):
        DSGRegressor(**params).fit(X, y, sample_weight=np.full(len(y), 2.0), resume=path)
    with pytest.raises(CheckpointError, match=r"other parameters \(alpha='auto' there, 0.001 here\)"):
        DSGRegressor(**dict(params, alpha=1e-3)).fit(X, y, resume=path)
    with pytest.raises(CheckpointError, match="written by DSGRegressor, not by DSGClassifier"):
        DSGClassifier(**params).fit(X, y > 0, resume=path)
    with pytest.raises(CheckpointError, match="No checkpoint at"):
        DSGRegressor(**params).fit(X, y, resume=tmp_path / "missing.ckpt")
    DSGRegressor(**params).fit(X, y).save(tmp_path / "model.kst")
    with pytest.raises(CheckpointError, match="not a kernelstream checkpoint.*kernelstream.load"):
        DSGRegressor(**params).fit(X, y, resume=tmp_path / "model.kst")
    with pytest.raises(ModelFileError, match="not a kernelstream model"):
        load(path)
    with pytest.raises(ValueError, match="for solver='preconditioned'"):
        DSGRegressor(**dict(params, solver="one_pass")).fit(X, y, resume=path)


def test_operational_parameters_may_change_on_resume(written, tmp_path):
    path, X, y, params = written
    whole = DSGRegressor(**params).fit(X, y)
    resumed = DSGRegressor(**params, verbose=0, n_jobs=1, checkpoint=tmp_path / "again.ckpt",
                           checkpoint_every="1h").fit(X, y, resume=path)
    assert_same_fit(resumed, whole, X)
    resumed.save(tmp_path / "m.kst")  # a path-like checkpoint parameter is saved as a string
    assert load(tmp_path / "m.kst").checkpoint == str(tmp_path / "again.ckpt")


def test_another_thread_count_resumes_with_a_warning(written, tmp_path):
    path, X, y, params = written
    header, state = load_checkpoint(path)
    save_checkpoint(dict(header, threads=7), state, tmp_path / "threads.ckpt")
    with pytest.warns(UserWarning, match="with 7 thread.*not bit for bit"):
        resumed = DSGRegressor(**params).fit(X, y, resume=tmp_path / "threads.ckpt")
    assert_same_fit(resumed, DSGRegressor(**params).fit(X, y), X)


def test_bad_checkpoint_settings_fail_before_fitting(tmp_path):
    X, y = _regression(500)
    with pytest.raises(ValueError, match="its directory does not exist"):
        DSGRegressor(**SMALL, checkpoint=tmp_path / "no" / "fit.ckpt").fit(X, y)
    with pytest.raises(ValueError, match="checkpoint_every='10 days' is neither"):
        DSGRegressor(**SMALL, checkpoint_every="10 days").fit(X, y)


def test_the_checkpoint_does_not_grow_with_the_rows(tmp_path):
    """Same parameters, 4× the rows: the same tensors (bytes), the same header but for numbers."""
    params = dict(SMALL, sigma=0.5, alpha=1e-4, n_components=256, max_iter=3, tol=None)
    sizes = {}
    for n in (2000, 8000):
        X, y = _regression(n)
        DSGRegressor(**params, checkpoint=tmp_path / f"{n}.ckpt").fit(X, y)
        with safe_open(str(tmp_path / f"{n}.ckpt"), framework="pt") as f:
            tensor_bytes = sum(f.get_tensor(k).numel() * f.get_tensor(k).element_size() for k in f.keys())
        sizes[n] = tensor_bytes, os.path.getsize(tmp_path / f"{n}.ckpt")
    assert sizes[2000][0] == sizes[8000][0] > 4 * 4 * 257  # θ, best θ, 2 sums: (D+1) floats each
    assert abs(sizes[2000][1] - sizes[8000][1]) < 1024


def test_checkpoint_every_counts_epochs_or_time(tmp_path, snapshots):
    X, y = _regression(1500)
    params = dict(SMALL, sigma=0.5, alpha=1e-4, n_components=128, max_iter=7, tol=None)
    DSGRegressor(**params, checkpoint=tmp_path / "a.ckpt", checkpoint_every=3).fit(X, y)
    assert len(snapshots) == 1 + 7 // 3  # after the selection, then epochs 3 and 6
    DSGRegressor(**params, checkpoint=tmp_path / "b.ckpt", checkpoint_every="0s").fit(X, y)
    assert len(snapshots) == 3 + 1 + 7
    assert parse_every(5) == (5, None) and parse_every("10min") == (None, 600.0)
    assert parse_every("1.5h") == (None, 5400.0)
    for bad in ("10", "5 days", 0, True):
        with pytest.raises(ValueError, match="checkpoint_every"):
            parse_every(bad)


def test_conjugate_gradients_resume_with_their_direction(tmp_path, snapshots):
    """``solver="cg"``: the iterate and the next search direction are in every checkpoint, so a
    fit resumed from any of them ends with the uninterrupted model."""
    X, y = _regression(1500)
    params = dict(SMALL, solver="cg", sigma=0.5, alpha=1e-6, n_components=128, max_iter=8, tol=None,
                  cache_bytes=0)  # conjugate-gradient epochs, regenerating the features
    whole = DSGRegressor(**params).fit(X, y)
    DSGRegressor(**params, checkpoint=tmp_path / "fit.ckpt").fit(X, y)
    written = list(snapshots)
    assert whole.n_iter_ == 8 == len(written) - 1
    for path in written[1:]:
        assert_same_fit(DSGRegressor(**params).fit(X, y, resume=path), whole, X)


@pytest.mark.parametrize("estimator, loss", [
    (DSGRegressor, "squared"), pytest.param(DSGClassifier, "logistic", marks=pytest.mark.slow)])
def test_the_engine_checkpoints_its_choice_and_each_size_and_resumes_each(tmp_path, snapshots,
                                                                         estimator, loss):
    """The fit engine (no ``solver`` given): a checkpointed fit is the model of the same fit
    without one; a checkpoint after the selection and one after each feature size that paid;
    a fit resumed from any of them skips what it holds and ends with that model, bit for bit."""
    from sklearn.datasets import make_classification

    if estimator is DSGRegressor:
        rng = np.random.default_rng(0)
        X = rng.uniform(-3, 3, (6000, 2))
        y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.standard_normal(6000)
    else:
        X, y = make_classification(6000, 8, n_informative=6, flip_y=0.01, random_state=0)
    params = dict(block_size=256, random_state=0, loss=loss)
    whole = estimator(**params).fit(X, y)
    assert whole.fit_plan_.route == "subsample" and len(whole.fit_plan_.stages) > 3
    checkpointed = estimator(**params, checkpoint=tmp_path / "fit.ckpt").fit(X, y)
    assert_same_fit(checkpointed, whole, X)
    sizes = sum(record["stage"] == "solve" for record in whole.fit_plan_.stages)
    assert len(snapshots) == sizes  # the choice, then each size that was followed by another
    for path in list(snapshots):
        resumed = estimator(**params).fit(X, y, resume=path)
        assert_same_fit(resumed, whole, X)
        assert resumed.fit_plan_.stages[0]["stage"] != "selection"  # the choice was read back
