"""``fit`` on a stream (a ``kernelstream.data`` source): the default solver's epochs, validation
and early stopping on chunks; classes found or declared; the first pass's sample; every
estimator accepting a source; errors naming the file and line; a failed fit changes nothing;
a stream within ``stream_rows_bytes`` fitted as the arrays it holds. The tests of the stream's
own machinery set ``stream_rows_bytes=0`` (``STREAMED``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.datasets import make_moons

from kernelstream import (AOGDClassifier, DSGClassifier, DSGDensityRatio,
                          DSGGaussianProcessRegressor, DSGOneClass, DSGRegressor, GoGPRegressor,
                          RandomFeatures)
from kernelstream.data import open_source
from kernelstream.distributed import Communicator, ShardGroup
from kernelstream.estimators._first_pass import first_pass
from kernelstream.datasets import synthetic_regression
from kernelstream.planning import LIMITS

SMALL = dict(block_size=128, batch_size=256, random_state=0)
STREAM = dict(chunk_rows=256, shuffle_buffer=1024, seed=0)
#: the stream read as a stream, however few its rows
STREAMED = dataclasses.replace(LIMITS, stream_rows_bytes=0)


def _moons(n=3000):
    return make_moons(n, noise=0.2, random_state=0)


def _csv(path, X, y) -> None:
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt="%.6f")


def test_stream_fit_without_early_stopping_is_the_closed_form_ridge():
    """Every row trains in chunks; the minimiser does not depend on how the rows are batched."""
    X, y, _ = synthetic_regression(2000, random_state=0)
    X, y = X.astype(np.float64), y.astype(np.float64)
    alpha = 1e-3
    model = DSGRegressor(sigma=0.8, alpha=alpha, n_components=128, early_stopping=False,
                         tol=None, max_iter=40, dtype="float64", **SMALL)
    model.fit(open_source(X, y, **STREAM), limits=STREAMED)
    assert model.n_iter_ == 40 and model.validation_scores_ is None
    np.testing.assert_allclose(model.y_offset_, [y.mean()], rtol=1e-12)
    np.testing.assert_allclose(model.y_scale_, [y.std()], rtol=1e-12)
    Phi = model.expansion_.feature_map.transform(torch.as_tensor(X), 1).numpy()
    target = (y - model.y_offset_[0]) / model.y_scale_[0]
    A = np.column_stack([Phi, np.ones(len(y))])
    H = A.T @ A / len(y)
    H[:-1, :-1] += alpha * np.eye(Phi.shape[1])
    exact = (A @ np.linalg.solve(H, A.T @ target / len(y))) * model.y_scale_[0] + model.y_offset_[0]
    assert np.sqrt(np.mean((model.predict(X) - exact) ** 2)) < 0.02 * exact.std()


def test_stream_defaults_choose_and_stop_early_like_arrays():
    X, y = _moons(5000)
    params = dict(n_components=256, alpha=1e-4, **SMALL)  # sigma raced, early stopping
    streamed = DSGClassifier(**params).fit(open_source(X, y, **STREAM), limits=STREAMED)
    arrays = DSGClassifier(**params).fit(X, y)
    assert streamed.cv_results_ is not None and streamed.sigma_ in streamed.cv_results_["param_sigma"]
    assert len(streamed.validation_scores_) == streamed.n_iter_ < 100  # early stopping ended it
    assert streamed.best_validation_score_ == pytest.approx(max(streamed.validation_scores_))
    assert abs(streamed.score(X, y) - arrays.score(X, y)) < 0.01
    again = DSGClassifier(**params).fit(open_source(X, y, **STREAM), limits=STREAMED)
    np.testing.assert_array_equal(again.decision_function(X), streamed.decision_function(X))


def test_one_process_reading_shards_in_lock_step_trains_like_the_whole_source():
    X, y = _moons(2000)
    params = dict(sigma=0.5, alpha=1e-4, n_components=256, max_iter=6, **SMALL)
    whole = DSGClassifier(**params).fit(open_source(X, y, **STREAM), limits=STREAMED)
    group = DSGClassifier(**params).fit(ShardGroup(open_source(X, y, **STREAM), 2), limits=STREAMED)
    assert abs(whole.score(X, y) - group.score(X, y)) < 0.01
    single = DSGClassifier(**params).fit(ShardGroup(open_source(X, y, **STREAM), 1), limits=STREAMED)
    np.testing.assert_array_equal(single.decision_function(X), whole.decision_function(X))


def test_the_first_pass_sample_is_the_same_for_any_sharding():
    X, y = _moons(5000)
    source = open_source(X, y, part_rows=700, **STREAM)
    found = []
    for readers in ([source], ShardGroup(source, 2).shards(), ShardGroup(source, 3).shards()):
        stats = first_pass(readers, Communicator(), 0.1, 7, 8, (1000, 300), "classes")
        found.append(stats)
        assert stats.n_train + sum(v for _, v in stats.reader_rows) == 5000
        np.testing.assert_array_equal(stats.counts, np.bincount(y))
    for stats in found[1:]:
        for k in range(2):
            np.testing.assert_array_equal(stats.samples[k].sample().row_ids,
                                          found[0].samples[k].sample().row_ids)
    held = found[0].samples[1].sample()
    assert abs(found[0].n_train - 4500) < 100 and len(held.row_ids) == 300
    np.testing.assert_array_equal(held.X, X[held.row_ids])  # ArraySource ids are row numbers


def test_classes_are_found_or_declared_and_an_unknown_label_names_its_line(tmp_path):
    X, y = _moons(1200)
    y = np.where(X[:, 0] > 1.8, 2, y)  # a third class, rare
    path = tmp_path / "three.csv"
    _csv(path, X, y)
    source = open_source(path, label=-1, **STREAM)
    params = dict(sigma=0.5, alpha=1e-4, n_components=128, max_iter=3, **SMALL)
    assert DSGClassifier(**params).fit(source).classes_.tolist() == [0, 1, 2]
    declared = DSGClassifier(**params).fit(source, classes=[0, 1, 2, 3])
    assert declared.classes_.tolist() == [0, 1, 2, 3] and declared.predict_proba(X).shape == (1200, 4)
    line = 1 + int(np.flatnonzero(y == 2)[0])
    with pytest.raises(ValueError, match=rf"three\.csv, line {line}: label 2\.0 is not in classes"):
        DSGClassifier(**params).fit(source, classes=[0, 1])


def test_a_failed_stream_fit_names_the_line_and_leaves_the_model_as_it_was(tmp_path):
    X, y = _moons(1000)
    path = tmp_path / "bad.csv"
    _csv(path, X, y)
    lines = path.read_text().splitlines()
    lines[700] = "0.5,nan,1"
    path.write_text("\n".join(lines) + "\n")
    model = DSGClassifier(sigma=0.5, alpha=1e-4, n_components=128, **SMALL).fit(X, y)
    before = model.decision_function(X)
    with pytest.raises(ValueError, match=r"bad\.csv, line 701: a feature value is NaN"):
        model.fit(open_source(path, label=-1, **STREAM))
    np.testing.assert_array_equal(model.decision_function(X), before)
    assert model.n_features_in_ == 2


def test_a_source_carries_its_labels():
    X, y = _moons(500)
    with pytest.raises(ValueError, match="carries its labels"):
        DSGClassifier(**SMALL).fit(open_source(X, y), y)
    with pytest.raises(ValueError, match="has no labels; open it with label="):
        DSGRegressor(**SMALL).fit(open_source(X))
    with pytest.raises(ValueError, match="classes= goes with a source"):
        DSGClassifier(**SMALL).fit(X, y, classes=[0, 1])


def test_a_shard_outside_torch_distributed_is_refused():
    X, y = _moons(500)
    with pytest.raises(ValueError, match="torch.distributed is not initialised"):
        DSGClassifier(**SMALL).fit(open_source(X, y).shard(0, 2))
    with pytest.raises(ValueError, match="whole source"):
        ShardGroup(open_source(X, y).shard(0, 2), 2)


@pytest.mark.parametrize("early_stopping", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_stream_fit_tempers_its_probabilities_like_an_array_fit(early_stopping, sparse):
    """Least squares on a stream fits the temperature on its held-out batches, or without
    them on its first training rows, dense or CSR: the probabilities are usable either way."""
    import scipy.sparse as sp
    X, y = _moons(3000)
    rows = sp.csr_matrix(X) if sparse else X
    params = dict(loss="squared", sigma=0.5, alpha=1e-4, n_components=256,
                  early_stopping=early_stopping, max_iter=20, **SMALL)
    streamed = DSGClassifier(**params).fit(open_source(rows, y, **STREAM), limits=STREAMED)
    arrays = DSGClassifier(**params).fit(X, y)
    assert streamed.loss_ == "squared" and streamed.proba_temperature_ > 0
    assert streamed.proba_temperature_ == pytest.approx(arrays.proba_temperature_, rel=0.5)
    proba = streamed.predict_proba(X)
    np.testing.assert_array_equal(streamed.classes_[proba.argmax(1)], streamed.predict(X))
    log_loss = -np.mean(np.log(proba[np.arange(len(y)), y]))
    assert log_loss < 0.35  # moons at noise 0.2: ~3% error; an untempered ±1 fit is far worse


def test_balanced_class_weights_come_from_the_whole_source():
    X, y = _moons(2000)
    keep = (y == 1) | (np.arange(len(y)) % 4 == 0)  # class 0 is a quarter as frequent
    X, y = X[keep], y[keep]
    params = dict(sigma=0.5, alpha=1e-4, n_components=128, class_weight="balanced", **SMALL)
    model = DSGClassifier(**params).fit(open_source(X, y, **STREAM), limits=STREAMED)
    plain = DSGClassifier(**dict(params, class_weight=None)).fit(open_source(X, y, **STREAM), limits=STREAMED)
    recall = [np.mean(m.predict(X[y == 0]) == 0) for m in (model, plain)]
    assert recall[0] >= recall[1]
    stats = first_pass([open_source(X, y)], Communicator(), None, 0, 1, (10, 0), "classes")
    np.testing.assert_allclose(model._stream_class_weights(stats),
                               len(y) / (2 * np.bincount(y)))


@pytest.mark.parametrize("make, kind", [
    (lambda: DSGRegressor(solver="one_pass", block_size=64, batch_size=128, random_state=0), "stream"),
    (lambda: DSGClassifier(solver="one_pass", block_size=64, batch_size=128, random_state=0), "stream"),
    (lambda: DSGOneClass(random_state=0), "stream"),
    (lambda: AOGDClassifier(n_components=256, random_state=0), "stream"),
    (lambda: GoGPRegressor(random_state=0), "whole"),
    (lambda: DSGGaussianProcessRegressor(sigma=1.0, noise=0.1, n_steps=16, n_landmarks=64,
                                             block_size=256, random_state=0), "whole"),
    (lambda: RandomFeatures(random_state=0), "sample"),
])
@pytest.mark.slow
def test_every_estimator_accepts_a_source(make, kind):
    X, y = _moons(600)
    target = X[:, 1] if make().__class__.__name__ in ("DSGRegressor", "GoGPRegressor",
                                                      "DSGGaussianProcessRegressor") else y
    source = open_source(X, target, **STREAM)
    streamed, arrays = make().fit(source), make().fit(X, target)
    if kind == "sample":
        assert streamed.n_features_in_ == 2 and streamed.transform(X[:5]).shape == (5, 256)
    elif kind == "whole":  # read whole in file order: the same fit as on the arrays
        np.testing.assert_array_equal(streamed.predict(X), arrays.predict(X))
    elif isinstance(streamed, DSGOneClass):  # ν = 0.5: about half the rows inside
        assert abs(np.mean(streamed.predict(X) == 1) - 0.5) < 0.1
    else:
        assert streamed.n_features_in_ == 2
        assert abs(streamed.score(X, target) - arrays.score(X, target)) < 0.15


def test_density_ratio_accepts_two_sources():
    rng = np.random.default_rng(0)
    P, Q = rng.normal(size=(400, 2)), rng.normal(0.5, 1.0, size=(400, 2))
    streamed = DSGDensityRatio(random_state=0).fit(open_source(P), open_source(Q))
    arrays = DSGDensityRatio(random_state=0).fit(P, Q)
    np.testing.assert_array_equal(streamed.log_ratio(P), arrays.log_ratio(P))


def test_warm_start_on_a_stream_continues_and_refuses_new_labels(tmp_path):
    X, y = _moons(2000)
    params = dict(sigma=0.5, n_components=256, max_iter=2, tol=None, warm_start=True, **SMALL)
    model = DSGClassifier(**params).fit(open_source(X, y, **STREAM))
    first = (model.sigma_, model.alpha_, model.n_components_, model.best_validation_score_)
    model.fit(open_source(X, y, **STREAM))
    assert (model.sigma_, model.alpha_, model.n_components_) == first[:3]
    assert model.best_validation_score_ >= first[3] - 1e-2 * abs(first[3])
    path = tmp_path / "new.csv"
    _csv(path, X, np.where(np.arange(len(y)) == 5, 7, y))
    with pytest.raises(ValueError, match=r"new\.csv, line 6: label 7\.0 is not in classes_"):
        model.fit(open_source(path, label=-1, **STREAM))


@pytest.mark.parametrize("sparse", [False, True])
def test_a_stream_that_fits_in_memory_is_the_array_fit_on_the_engine(tmp_path, sparse):
    """Two LIBSVM shards (or a CSV) whose rows fit ``stream_rows_bytes``: one pass reads them,
    and the fit is the engine's on those arrays, bit for bit (not the epochs: ``route``)."""
    import scipy.sparse as sp
    from sklearn.datasets import dump_svmlight_file
    X, y = _moons(4000)
    if sparse:
        dump_svmlight_file(X[:2000], y[:2000], str(tmp_path / "part-0.svm"))
        dump_svmlight_file(X[2000:], y[2000:], str(tmp_path / "part-1.svm"))
        source, rows = open_source(str(tmp_path / "part-*.svm"), n_features=2), sp.csr_matrix(X)
    else:
        _csv(tmp_path / "rows.csv", X, y)
        source, rows = open_source(tmp_path / "rows.csv", label=-1), np.loadtxt(
            tmp_path / "rows.csv", delimiter=",")[:, :2]
    streamed = DSGClassifier(random_state=0).fit(source)
    arrays = DSGClassifier(random_state=0).fit(rows, y)
    assert streamed.fit_plan_.route == arrays.fit_plan_.route == "subsample"
    assert "read into memory in one pass" in streamed.fit_plan_.reasons[0]
    np.testing.assert_array_equal(streamed.decision_function(X), arrays.decision_function(X))
    epochs = DSGClassifier(random_state=0, n_components=256, max_iter=3).fit(source, limits=STREAMED)
    assert epochs.fit_plan_.route == "epochs" and epochs.fit_plan_.shape.stream
