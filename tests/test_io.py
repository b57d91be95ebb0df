"""Save and load without pickle: exact predictions, small files, clear errors on bad files."""

import json
import os

import numpy as np
import pytest
from sklearn.datasets import make_classification

from kernelstream import DSGClassifier, DSGRegressor, load
from kernelstream.datasets import synthetic_regression
from kernelstream.io import ModelFileError, _write_atomic

DATA = os.path.join(os.path.dirname(__file__), "data")

FAST = dict(batch_size=128, block_size=128, random_state=0)


@pytest.fixture
def regressor():
    X, y, _ = synthetic_regression(1024, random_state=0)
    return DSGRegressor(sigma_scale=0.1, **FAST).fit(X, y), X


@pytest.fixture
def saved(tmp_path, regressor):
    """Path of the fitted regressor saved to a file."""
    path = tmp_path / "m.kst"
    regressor[0].save(path)
    return path


def test_round_trip_predicts_identically(tmp_path, regressor):
    model, X = regressor
    path = tmp_path / "model.kst"
    model.save(path)
    loaded = load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.get_params() == {**model.get_params(), "random_state": 0}
    assert loaded.n_components_ == model.n_components_
    np.testing.assert_array_equal(loaded.sigma_, model.sigma_)  # per-feature: an array


@pytest.mark.parametrize("n_classes, loss", [(2, "hinge"), (3, "logistic"), (4, "squared_hinge")])
def test_round_trip_classifiers(tmp_path, n_classes, loss):
    X, y = make_classification(600, 6, n_informative=4, n_classes=n_classes, random_state=0)
    labels = np.array(["a", "b", "c", "d"])[y]
    model = DSGClassifier(loss=loss, class_weight="balanced", **FAST).fit(X, labels)
    model.save(tmp_path / "m.kst")
    loaded = load(tmp_path / "m.kst")
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.slow
def test_averaged_model_round_trip_and_continue(tmp_path):
    X, y, _ = synthetic_regression(2048, random_state=0)
    model = DSGRegressor(average=4, sigma_scale=0.1, **FAST).fit(X, y)
    model.save(tmp_path / "m.kst")
    loaded = load(tmp_path / "m.kst")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    loaded.partial_fit(X[:512], y[:512])  # training resumes from the saved function
    assert loaded.t_ == model.t_ + 4


def test_file_size_is_4DC_plus_a_little(tmp_path):
    """A random-feature model keeps its ``D × C`` coefficients (the features are regenerated
    from the seed): independent of ``n`` and ``d``. A Nyström model (three or more classes on many
    rows by default) also keeps its ``M × d`` centres: bounded by ``M``, not by ``n``."""
    X = np.random.default_rng(0).normal(size=(3000, 300)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 3, 3000)
    model = DSGClassifier(basis="random_features", **FAST).fit(X, y)
    model.save(tmp_path / "m.kst")
    D, C = model.n_components_, 3
    size = os.path.getsize(tmp_path / "m.kst")
    assert 4 * D * C <= size <= 1.1 * 4 * D * C + 64 * 1024  # independent of n and d
    nystroem = DSGClassifier(basis="nystroem", **FAST).fit(X, y)
    assert nystroem.fit_plan_.basis == "nystroem"
    nystroem.save(tmp_path / "n.kst")
    M, d = nystroem.n_components_, X.shape[1]
    stored = 4 * M * (d + C)  # float32 centres and coefficients
    assert stored <= os.path.getsize(tmp_path / "n.kst") <= 1.1 * stored + 64 * 1024


def test_missing_file(tmp_path):
    with pytest.raises(ModelFileError, match="No model file"):
        load(tmp_path / "nope.kst")


def test_truncated_file(saved):
    path = saved
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="truncated or corrupt"):
        load(path)


def test_edited_coefficients_are_detected(saved):
    path = saved
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF  # flip bits inside the tensor data
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="modified after saving"):
        load(path)


def test_garbage_and_foreign_files(tmp_path):
    path = tmp_path / "m.kst"
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(ModelFileError):
        load(path)
    from safetensors.numpy import save_file

    save_file({"x": np.zeros(3, dtype=np.float32)}, str(path), metadata={"kernelstream": json.dumps({"format": "other"})})
    with pytest.raises(ModelFileError, match="not a kernelstream model"):
        load(path)


def test_unknown_class_is_refused(saved):
    """Loading only instantiates whitelisted classes; the header cannot name arbitrary code."""
    path = saved
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        header = json.loads(f.metadata()["kernelstream"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    header["class"] = "os.system"
    _write_atomic(tensors, {"kernelstream": json.dumps(header)}, path)  # with a valid checksum
    with pytest.raises(ModelFileError, match="Unknown model class"):
        load(path)


@pytest.mark.parametrize("kernel, average", [("rbf", False), ("rbf", 50), ("linear", True)])
def test_aogd_round_trip_scores_identically_and_resumes_the_stream(tmp_path, kernel, average):
    from kernelstream import AOGDClassifier

    X, y = make_classification(900, 8, random_state=0)
    labels = np.array(["no", "yes"])[y]
    params = dict(kernel=kernel, n_components=128, average=average, random_state=0)
    model = AOGDClassifier(**params).partial_fit(X[:500], labels[:500], classes=["no", "yes"])
    model.save(tmp_path / "m.kst")
    loaded = load(tmp_path / "m.kst")
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.get_params() == model.get_params() and loaded.t_ == 500
    model.partial_fit(X[500:], labels[500:])  # the stream goes on in both
    loaded.partial_fit(X[500:], labels[500:])
    np.testing.assert_allclose(loaded.coef_, model.coef_, rtol=1e-12, atol=1e-14)
    assert loaded.n_averaged_ == model.n_averaged_ and loaded.score(X, labels) == model.score(X, labels) > 0.8


def test_aogd_file_size_is_O_of_D(tmp_path):
    from kernelstream import AOGDClassifier

    X, y = make_classification(2000, 50, random_state=0)
    model = AOGDClassifier(n_components=1024, random_state=0).fit(X, y)
    model.save(tmp_path / "m.kst")
    assert os.path.getsize(tmp_path / "m.kst") <= 5 * 8 * 1024 + 64 * 1024  # coef, iterate, 2+2 rows


def test_unfitted_and_unsupported_models_are_refused(tmp_path):
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LogisticRegression

    from kernelstream import AOGDClassifier
    from kernelstream.io import save_model

    with pytest.raises(NotFittedError):
        AOGDClassifier().save(tmp_path / "m.kst")
    with pytest.raises(TypeError, match="cannot save LogisticRegression"):
        save_model(LogisticRegression(), tmp_path / "m.kst")


def test_novelty_and_density_ratio_round_trip(tmp_path):
    from kernelstream import DSGDensityRatio, DSGOneClass

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    detector = DSGOneClass(nu=0.1, **FAST).fit(X)
    detector.save(tmp_path / "oc.kst")
    loaded = load(tmp_path / "oc.kst")
    np.testing.assert_array_equal(loaded.decision_function(X), detector.decision_function(X))
    assert loaded.offset_ == detector.offset_

    p, q = rng.normal(0, 1, (2000, 1)), rng.normal(0, 2, (2000, 1))
    ratio = DSGDensityRatio(batch_size=256, block_size=128, random_state=0).fit(p, q)
    ratio.save(tmp_path / "dr.kst")
    loaded = load(tmp_path / "dr.kst")
    np.testing.assert_array_equal(loaded.log_ratio(p), ratio.log_ratio(p))
    assert loaded.kl_divergence_ == ratio.kl_divergence_
    loaded.partial_fit(p[:512], q[:512])  # training resumes
    assert loaded.n_iter_ == ratio.n_iter_ + 1


@pytest.mark.parametrize("variant", ["kernel", "random_features"])
@pytest.mark.parametrize("solver", ["rls", "sgd"])
def test_gogp_round_trip_predicts_identically_and_resumes_the_stream(tmp_path, variant, solver):
    from kernelstream import GoGPRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=400)
    model = GoGPRegressor(variant=variant, solver=solver, n_components=64, random_state=0)
    model.partial_fit(X[:250], y[:250])
    model.save(tmp_path / "gp.kst")
    loaded = load(tmp_path / "gp.kst")
    for a, b in zip(loaded.predict(X, return_std=True), model.predict(X, return_std=True)):
        np.testing.assert_array_equal(a, b)
    assert loaded.get_params() == model.get_params() and loaded.t_ == model.t_ == 250
    model.partial_fit(X[250:], y[250:])
    loaded.partial_fit(X[250:], y[250:])
    for a, b in zip(loaded.predict(X, return_std=True), model.predict(X, return_std=True)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert loaded.n_inducing_ == model.n_inducing_ and loaded.progressive_rmse_ == model.progressive_rmse_


@pytest.mark.parametrize("variance_method", ["targets", "operator", "landmarks", "exact"])
def test_gp_round_trip_predicts_mean_std_and_samples_identically(tmp_path, variance_method):
    from kernelstream import DSGGaussianProcessRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(300, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    Xs = X[:20]
    exact = variance_method == "exact"  # the exact solve: the kernel's columns at the rows
    model = DSGGaussianProcessRegressor(variance_method="auto" if exact else variance_method,
                                        n_steps=8, block_size=128, n_landmarks=64,
                                        n_components=None if exact else 256, random_state=0)
    model.fit(X, y, **({"X_variance": Xs} if variance_method == "targets" else {}))
    assert model.variance_method_ == variance_method
    model.save(tmp_path / "gp.kst")
    loaded = load(tmp_path / "gp.kst")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    for a, b in zip(loaded.predict(Xs, return_std=True), model.predict(Xs, return_std=True)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(loaded.predict(Xs, return_cov=True)[1], model.predict(Xs, return_cov=True)[1])
    np.testing.assert_array_equal(loaded.sample_y(Xs, 3, random_state=1), model.sample_y(Xs, 3, random_state=1))
    assert loaded.get_params() == model.get_params() and loaded.residual_norms_ == model.residual_norms_


# -- the whole-file checksum -----------------------------------------------
def _header_length(data: bytes) -> int:
    return int.from_bytes(data[:8], "little")


def _edit_positions(data: bytes) -> list[int]:
    """Every byte of the length prefix and of the safetensors JSON header (its padding and the
    kernelstream metadata included), and 200 positions spread over the tensor data."""
    end = 8 + _header_length(data)
    assert data[end - 1 : end] == b" " or data[end - 1 : end] == b"}"
    spread = np.linspace(end, len(data) - 1, min(200, len(data) - end)).astype(int)
    return list(range(end)) + sorted(set(spread.tolist()))


def _fitted_models():
    from kernelstream import AOGDClassifier

    X, y = make_classification(300, 5, random_state=0)
    clf = DSGClassifier(**FAST).fit(X, y)
    online = AOGDClassifier(n_components=64, random_state=0).partial_fit(X, y, classes=[0, 1])
    return {"DSGClassifier": clf, "AOGDClassifier": online}


@pytest.mark.parametrize("name", ["DSGClassifier", "AOGDClassifier"])
def test_every_one_byte_edit_is_refused(tmp_path, name):
    """A single changed byte anywhere (length prefix, JSON header, its padding, the kernelstream
    metadata, the digest itself, the tensors) raises ModelFileError, never loads."""
    model = _fitted_models()[name]
    path = tmp_path / "m.kst"
    model.save(path)
    data = path.read_bytes()
    assert b'"version\\":3' in data.replace(b" ", b"")
    positions = _edit_positions(data)
    assert len(positions) > 300
    for position in positions:
        for change in (0x01, 0x80, 0x20):
            edited = bytearray(data)
            edited[position] ^= change
            path.write_bytes(bytes(edited))
            with pytest.raises(ModelFileError, match="Re-save the model") as info:
                load(path)
            assert type(info.value) is ModelFileError, (position, change)
    path.write_bytes(data)
    assert type(load(path)) is type(model)  # the unedited file still loads


def test_edited_seed_is_refused(tmp_path):
    """The issue's example: a changed feature-map seed in the header no longer loads silently."""
    model = _fitted_models()["DSGClassifier"]
    model.save(tmp_path / "m.kst")
    data = (tmp_path / "m.kst").read_bytes()
    seed = str(model.seed_).encode()
    assert data.count(seed) >= 1  # every copy is under the whole-file checksum
    (tmp_path / "m.kst").write_bytes(data.replace(seed, str(model.seed_ + 1).encode()))
    with pytest.raises(ModelFileError, match="modified after saving"):
        load(tmp_path / "m.kst")


def test_checksum_is_streamed_in_chunks(tmp_path, regressor, monkeypatch):
    import kernelstream.io as io

    model, X = regressor
    model.save(tmp_path / "m.kst")
    monkeypatch.setattr(io, "_CHUNK_BYTES", 7)  # many chunks: the digest does not depend on them
    np.testing.assert_array_equal(load(tmp_path / "m.kst").predict(X), model.predict(X))


def test_fitted_attributes_come_from_the_feature_map(tmp_path, regressor):
    model, X = regressor
    model.save(tmp_path / "m.kst")
    loaded = load(tmp_path / "m.kst")
    fm = loaded.expansion_.feature_map
    assert (loaded.seed_, loaded.n_features_in_) == (fm.seed, fm.n_features_in)
    assert loaded.seed_ == model.seed_
    np.testing.assert_array_equal(loaded.sigma_, fm.sigma)  # a number, or per-feature lengthscales
    np.testing.assert_array_equal(loaded.sigma_, model.sigma_)


# -- earlier formats -----------------------------------------------------------------------------
def test_format_version_1_is_refused_with_how_to_resave():
    """A file written before state dicts (tests/data, format version 1) is refused clearly."""
    with pytest.raises(ModelFileError, match="format version 1.*Refit the model and save it again"):
        load(os.path.join(DATA, "model_format_v1.kst"))


# -- atomic save ---------------------------------------------------------------------------------
def test_save_is_atomic(tmp_path, regressor, monkeypatch):
    """A save that fails midway leaves the previous file intact and no temporary file."""
    import safetensors.torch

    model, X = regressor
    model.save(tmp_path / "m.kst")
    before = (tmp_path / "m.kst").read_bytes()

    def fail(tensors, filename, metadata=None):
        open(filename, "wb").write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(safetensors.torch, "save_file", fail)
    with pytest.raises(OSError, match="disk full"):
        model.save(tmp_path / "m.kst")
    assert (tmp_path / "m.kst").read_bytes() == before
    assert os.listdir(tmp_path) == ["m.kst"]
