"""Readers: every row exactly once per epoch (across shards too), equal to what the file holds,
the same chunks for the same seed and epoch, CSR kept CSR, the validation split and the first
pass."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from kernelstream.data import ArraySource, CsvSource, LibsvmSource, open_source
from kernelstream.data.base import MAX_CLASSES

from support import shared_dataset

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def gather(chunks):
    """All rows of an iterable of chunks, sorted by row id: (X dense, y, weight, ids, sizes)."""
    chunks = list(chunks)
    ids = np.concatenate([chunk.row_ids for chunk in chunks])
    order = np.argsort(ids, kind="stable")
    X = [chunk.X.toarray() if sp.issparse(chunk.X) else chunk.X for chunk in chunks]
    y = None if chunks[0].y is None else np.concatenate([chunk.y for chunk in chunks])[order]
    weight = (None if chunks[0].sample_weight is None
              else np.concatenate([chunk.sample_weight for chunk in chunks])[order])
    sizes = [len(chunk.row_ids) for chunk in chunks]
    return np.concatenate(X)[order], y, weight, ids[order], sizes


def assert_same_chunks(first, second):
    first, second = list(first), list(second)
    assert len(first) == len(second)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.row_ids, b.row_ids)
        Xa, Xb = (c.X.toarray() if sp.issparse(c.X) else c.X for c in (a, b))
        np.testing.assert_array_equal(Xa, Xb)
        np.testing.assert_array_equal(a.y, b.y)


@pytest.fixture(scope="module")
def a9a_test():
    data = shared_dataset("a9a")
    return data["X_test"][:6000].astype(np.float64), data["y_test"][:6000].astype(np.float64)


@pytest.fixture
def a9a_file(tmp_path, a9a_test):
    X, y = a9a_test
    path = tmp_path / "a9a.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)  # LIBSVM's one-based indices
    return path


@pytest.fixture
def table(tmp_path):
    """A labelled, weighted data set and the same rows in CSV, Parquet, npy and npz files."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)).round(6)
    y = rng.integers(0, 3, 3000).astype(np.float64)
    weight = rng.uniform(0.5, 2, 3000).round(6)
    columns = {f"x{i}": X[:, i] for i in range(4)} | {"label": y, "w": weight}
    with open(tmp_path / "t.csv", "w") as f:
        f.write("x0,x1,x2,x3,label,w\n")
        np.savetxt(f, np.column_stack([X, y, weight]), delimiter=",", fmt="%.6f")
    pq.write_table(pa.table(columns), tmp_path / "t.parquet", row_group_size=700)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "w.npy", weight)
    np.savez(tmp_path / "t.npz", X=X, y=y, w=weight)
    return tmp_path, X, y, weight


def open_each(folder, **options):
    """The table through every reader, all with label and weight."""
    return {
        "csv": open_source(folder / "t.csv", label="label", weight="w", part_bytes=20000,
                           **options),
        "parquet": open_source(folder / "t.parquet", label="label", weight="w",
                               batch_size=300, **options),
        "npy": open_source(folder / "X.npy", label=folder / "y.npy", weight=folder / "w.npy",
                           part_rows=400, **options),
        "npz": open_source(folder / "t.npz", label="y", weight="w", part_rows=400, **options),
    }


def test_libsvm_a9a_reads_back_as_csr_equal_to_the_dense_array(a9a_file, a9a_test):
    X, y = a9a_test
    source = open_source(a9a_file, n_features=123, chunk_rows=500, shuffle_buffer=1500,
                         part_bytes=50000, seed=3)
    assert len(source._plan(1)) > 5  # many byte ranges
    chunks = list(source.chunks(epoch=0))
    assert all(isinstance(chunk.X, sp.csr_matrix) for chunk in chunks)
    X_read, y_read, weight, ids, sizes = gather(chunks)
    np.testing.assert_array_equal(X_read, X)
    np.testing.assert_array_equal(y_read, y)
    assert weight is None and len(np.unique(ids)) == len(y)
    assert sizes[:-1] == [500] * (len(sizes) - 1)


def test_libsvm_discovers_n_features_and_zero_base_like_sklearn(a9a_file):
    expected_X, expected_y = load_svmlight_file(a9a_file)  # zero_based="auto"
    source = open_source(a9a_file, format="libsvm", shuffle=False, part_bytes=30000)
    assert source.n_features == expected_X.shape[1] and not source.zero_based
    X, y, *_ = gather(source.chunks())
    np.testing.assert_array_equal(X, expected_X.toarray())
    np.testing.assert_array_equal(y, expected_y)


def test_libsvm_zero_base_is_decided_over_the_whole_file(tmp_path):
    """Index 0 appears only in the last byte range: every range is read as zero-based."""
    lines = [f"{i % 2} {1 + i % 5}:1.5 7:{i}" for i in range(400)] + ["1 0:2.5 3:1"]
    path = tmp_path / "z.svm"
    path.write_text("\n".join(lines) + "\n")
    expected, _ = load_svmlight_file(path)
    source = LibsvmSource([path], part_bytes=500, shuffle=False)
    assert source.zero_based and source.n_features == expected.shape[1] == 8
    np.testing.assert_array_equal(gather(source.chunks())[0], expected.toarray())


def test_libsvm_dense_on_request_and_comments_and_blank_lines(tmp_path):
    path = tmp_path / "c.svm"
    path.write_text("# a comment\n1 1:2 # trailing\n\n   \n-1 qid:3 2:4\n  # indented\n1 3:1")
    source = open_source(path, dense=True, shuffle=False, part_bytes=7)
    chunk, = source.chunks()
    assert isinstance(chunk.X, np.ndarray)
    np.testing.assert_array_equal(chunk.X, [[2, 0, 0], [0, 4, 0], [0, 0, 1]])
    np.testing.assert_array_equal(chunk.y, [1, -1, 1])


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_every_row_once_per_epoch_across_shards(table, world_size):
    folder, X, y, weight = table
    for name, source in open_each(folder, chunk_rows=128, shuffle_buffer=512).items():
        for epoch in (0, 1):
            shards = [list(source.shard(rank, world_size).chunks(epoch))
                      for rank in range(world_size)]
            X_read, y_read, w_read, ids, _ = gather([c for shard in shards for c in shard])
            assert len(np.unique(ids)) == len(ids) == len(y), name
            np.testing.assert_allclose(X_read, X, rtol=0, atol=1e-12, err_msg=name)
            np.testing.assert_array_equal(y_read, y, err_msg=name)
            np.testing.assert_allclose(w_read, weight, rtol=0, atol=1e-12, err_msg=name)
            counts = [sum(len(c.row_ids) for c in shard) for shard in shards]
            assert min(counts) > 0, (name, counts)


def test_libsvm_shards_hold_every_row_once(a9a_file):
    source = open_source(a9a_file, n_features=123, chunk_rows=1000, part_bytes=40000)
    ids = [c.row_ids for rank in range(3) for c in source.shard(rank, 3).chunks(epoch=2)]
    whole = np.concatenate([c.row_ids for c in source.chunks()])
    assert sorted(np.concatenate(ids)) == sorted(whole) and len(np.unique(whole)) == 6000


def test_same_seed_and_epoch_same_chunks_other_epoch_other_order(table):
    folder, *_ = table
    for name, source in open_each(folder, chunk_rows=200, shuffle_buffer=800, seed=5).items():
        again = open_each(folder, chunk_rows=200, shuffle_buffer=800, seed=5)[name]
        assert_same_chunks(source.chunks(epoch=1), again.chunks(epoch=1))
        first = np.concatenate([c.row_ids for c in source.chunks(epoch=0)])
        second = np.concatenate([c.row_ids for c in source.chunks(epoch=1)])
        other_seed = open_each(folder, chunk_rows=200, shuffle_buffer=800, seed=6)[name]
        third = np.concatenate([c.row_ids for c in other_seed.chunks(epoch=0)])
        assert not np.array_equal(first, second) and not np.array_equal(first, third), name
        assert sorted(first) == sorted(second) == sorted(third)


def test_shuffling_mixes_parts_and_no_shuffle_keeps_file_order(table):
    folder, X, *_ = table
    source = open_source(folder / "t.csv", label="label", part_bytes=20000, chunk_rows=100,
                         shuffle_buffer=1000, seed=0)
    first = next(iter(source.chunks(0))).row_ids
    assert np.any(np.diff(first) < 0)  # not a run of the file
    parts = source._plan(1)
    assert len({next(p for p in parts if p.start <= i < p.stop) for i in first}) > 1
    ordered = list(open_source(folder / "t.csv", label="label", weight="w", part_bytes=20000,
                               chunk_rows=100, shuffle=False).chunks(7))
    np.testing.assert_allclose(np.concatenate([c.X for c in ordered]), X, atol=1e-12)
    assert all(np.all(np.diff(c.row_ids) > 0) for c in ordered)


def test_csv_label_by_index_without_header_and_tsv(tmp_path):
    rng = np.random.default_rng(1)
    data = rng.normal(size=(50, 3)).round(4)
    np.savetxt(tmp_path / "n.csv", data, delimiter=",", fmt="%.4f")  # no header
    np.savetxt(tmp_path / "n.tsv", data, delimiter="\t", fmt="%.4f")
    for path in (tmp_path / "n.csv", tmp_path / "n.tsv"):
        source = open_source(path, label=-1, shuffle=False)
        assert source.feature_names is None and source.n_features == 2
        chunk, = source.chunks()
        np.testing.assert_array_equal(chunk.X, data[:, :2])
        np.testing.assert_array_equal(chunk.y, data[:, 2])
    unlabelled, = CsvSource([tmp_path / "n.csv"], shuffle=False).chunks()
    assert unlabelled.y is None and unlabelled.X.shape == (50, 3)


def test_csv_crlf_blank_lines_quotes_and_byte_order_mark(tmp_path):
    path = tmp_path / "w.csv"
    path.write_bytes(b'\xef\xbb\xbfa,b,y\r\n1,"2",0\r\n\r\n  \r\n3,4,1\r\n')
    source = open_source(path, label="y", shuffle=False, part_bytes=4)
    assert source.feature_names == ["a", "b"]
    X, y, *_ = gather(source.chunks())
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(y, [0, 1])


def test_a_glob_or_directory_of_files_is_one_source(tmp_path):
    rng = np.random.default_rng(2)
    parts = [rng.normal(size=(n, 3)).round(5) for n in (40, 0, 75)]
    for i, part in enumerate(parts):
        np.savetxt(tmp_path / f"p{i}.csv", part, delimiter=",", fmt="%.5f", header="a,b,y",
                   comments="")
    for data in (tmp_path / "p*.csv", tmp_path, [tmp_path / "p0.csv", tmp_path / "p2.csv"]):
        source = open_source(data, label="y", chunk_rows=16, shuffle_buffer=32)
        X, y, _, ids, _ = gather(source.chunks(epoch=4))
        np.testing.assert_allclose(np.column_stack([X, y]), np.concatenate(parts), atol=1e-12)
        assert len(np.unique(ids >> 40)) == 2


def test_parquet_selects_columns_and_splits_row_groups_for_many_ranks(tmp_path):
    X = np.arange(60.0).reshape(20, 3)
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2],
                             "y": np.arange(20) % 2}), tmp_path / "one.parquet")
    source = open_source(tmp_path / "one.parquet", label="y", features=["c", "a"], chunk_rows=3)
    assert source.n_features == 2
    shards = [gather(source.shard(rank, 4).chunks()) for rank in range(4)]
    assert all(len(shard[3]) == 5 for shard in shards)  # one row group cut in four
    X_read = np.concatenate([shard[0] for shard in shards])[np.argsort(
        np.concatenate([shard[3] for shard in shards]))]
    np.testing.assert_array_equal(X_read, X[:, [2, 0]])
    assert source.scan().classes.tolist() == [0, 1]


def test_npz_members_are_memory_mapped_when_stored_and_loaded_when_compressed(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    np.savez(tmp_path / "s.npz", X=X, y=np.arange(4))
    np.savez_compressed(tmp_path / "c.npz", X=X, y=np.arange(4))
    stored, compressed = open_source(tmp_path / "s.npz"), open_source(tmp_path / "c.npz")
    assert isinstance(stored._members[0].X, np.memmap)
    assert not isinstance(compressed._members[0].X, np.memmap)
    for source in (stored, compressed):
        np.testing.assert_array_equal(gather(source.chunks())[0], X)


def test_sparse_and_torch_inputs(table):
    _, X, y, _ = table
    sparse = sp.random(500, 30, density=0.1, format="csr", random_state=0)
    chunks = list(ArraySource(sparse, y[:500], chunk_rows=64, shuffle_buffer=128).chunks(1))
    assert all(isinstance(chunk.X, sp.csr_matrix) for chunk in chunks)
    np.testing.assert_array_equal(gather(chunks)[0], sparse.toarray())
    source = open_source(torch.from_numpy(X), torch.from_numpy(y), dtype="float32")
    X_read, y_read, *_ = gather(source.chunks())
    assert X_read.dtype == np.float32
    np.testing.assert_array_equal(X_read, X.astype(np.float32))
    np.testing.assert_array_equal(y_read, y)


def test_validation_split_is_the_same_for_any_sharding_and_part_size(table):
    folder, X, y, _ = table
    ids_of = lambda source: np.sort(np.concatenate([c.row_ids for c in source.chunks(3)]))
    for part_bytes in (7000, 50000):
        source = open_source(folder / "t.csv", label="label", part_bytes=part_bytes, seed=1)
        train, validation = source.split(0.2, seed=9)
        train_ids, validation_ids = ids_of(train), ids_of(validation)
        assert len(np.intersect1d(train_ids, validation_ids)) == 0
        np.testing.assert_array_equal(np.union1d(train_ids, validation_ids), ids_of(source))
        assert abs(len(validation_ids) / len(y) - 0.2) < 0.03
        sharded = [source.shard(rank, 3).split(0.2, seed=9)[1] for rank in range(3)]
        np.testing.assert_array_equal(np.sort(np.concatenate([ids_of(s) for s in sharded])),
                                      validation_ids)
        if part_bytes == 7000:
            first = validation_ids
    np.testing.assert_array_equal(first, validation_ids)
    assert not np.array_equal(ids_of(source.split(0.2, seed=10)[1]), validation_ids)


def test_scan_finds_rows_features_and_classes(table, a9a_file):
    folder, X, y, _ = table
    for name, source in open_each(folder).items():
        summary = source.scan()
        assert (summary.n_rows, summary.n_features) == (3000, 4), name
        np.testing.assert_array_equal(summary.classes, [0, 1, 2])
        train, validation = source.split(0.25)
        assert train.scan().n_rows + validation.scan().n_rows == 3000
        assert sum(source.shard(r, 2).scan().n_rows for r in range(2)) == 3000
    a9a = open_source(a9a_file).scan()  # column 123 is empty in a9a's test rows
    assert (a9a.n_rows, a9a.n_features, a9a.classes.tolist()) == (6000, 122, [-1, 1])
    assert open_source(a9a_file, n_features=123, zero_based=False).scan().n_features == 123
    continuous = open_source(np.zeros((MAX_CLASSES + 1, 1)), np.arange(MAX_CLASSES + 1.0))
    assert continuous.scan().classes is None


def test_take_rows_is_a_seeded_sample_of_real_rows(table):
    folder, X, y, _ = table
    for name, source in open_each(folder).items():
        sample = source.take_rows(100, seed=4)
        assert sample.X.shape == (100, 4) and len(np.unique(sample.row_ids)) == 100
        np.testing.assert_array_equal(sample.row_ids, source.take_rows(100, seed=4).row_ids)
        assert not np.array_equal(sample.row_ids, source.take_rows(100, seed=5).row_ids)
        rows = {int(i): index for index, i in enumerate(gather(source.chunks())[3])}
        np.testing.assert_allclose(sample.X, X[[rows[int(i)] for i in sample.row_ids]],
                                   atol=1e-12)
    assert len(open_each(folder)["npy"].take_rows(10**6).row_ids) == 3000


def test_sources_pickle_and_give_the_same_chunks(table, a9a_file):
    folder, *_ = table
    for source in [*open_each(folder).values(), open_source(a9a_file, part_bytes=30000)]:
        assert_same_chunks(source.chunks(2), pickle.loads(pickle.dumps(source)).chunks(2))


def test_a_column_named_y_label_or_target_is_the_label_by_default_as_on_the_command_line(
        tmp_path):
    """Issue 30: ``open_source("big.csv")`` read a trailing ``y`` column as a feature (the CLI
    took it as the label); ``partial_fit`` then failed with no hint about ``label=``."""
    from kernelstream.data.whole_files import read_labelled

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).round(4)
    y = (X[:, 0] > 0).astype(float)
    np.savetxt(tmp_path / "big.csv", np.column_stack([X, y]), delimiter=",", fmt="%.4f",
               header="a,b,c,y", comments="")
    source = open_source(tmp_path / "big.csv", shuffle=False)
    chunk, = source.chunks()
    np.testing.assert_array_equal(chunk.X, X)
    np.testing.assert_array_equal(chunk.y, y)
    assert source.feature_names == ["a", "b", "c"]
    np.testing.assert_array_equal(read_labelled(tmp_path / "big.csv").y, chunk.y)  # CLI agrees
    unlabelled, = open_source(tmp_path / "big.csv", label=None, shuffle=False).chunks()
    assert unlabelled.y is None and unlabelled.X.shape == (40, 4)
    weighted = open_source(tmp_path / "big.csv", weight="y", shuffle=False)  # the weight, not both
    assert next(iter(weighted.chunks())).y is None and weighted.n_features == 3
    pq.write_table(pa.table({"a": X[:, 0], "Target": y, "b": X[:, 1]}), tmp_path / "t.parquet")
    chunk, = open_source(tmp_path / "t.parquet", shuffle=False).chunks()
    np.testing.assert_array_equal(chunk.y, y)
    np.testing.assert_array_equal(chunk.X, X[:, :2])


def test_libsvm_layout_pass_parses_each_part_once_for_the_read_that_follows(tmp_path, monkeypatch):
    """The first pass that discovers ``n_features`` keeps the parts it parsed for their first
    read: two files read in full are parsed twice, not four times, and read the same rows; a
    shard keeps only its own parts."""
    import kernelstream.data.libsvm as libsvm
    rng = np.random.default_rng(0)
    X, y = sp.random(200, 9, density=0.3, random_state=0, format="csr"), rng.integers(0, 2, 200)
    for k in range(2):
        dump_svmlight_file(X[100 * k:100 * (k + 1)], y[100 * k:100 * (k + 1)],
                           str(tmp_path / f"part-{k}.svm"), zero_based=True)
    loads, load = [], libsvm._load
    monkeypatch.setattr(libsvm, "_load", lambda data, dtype: loads.append(1) or load(data, dtype))
    source = open_source(str(tmp_path / "part-*.svm"), shuffle=False)
    read = [block for block in source.blocks()]
    assert len(loads) == 2 and not source._cache["parsed"]
    got = sp.vstack([block.X for block in read]).toarray()
    np.testing.assert_allclose(np.sort(got, axis=0), np.sort(X.toarray(), axis=0), rtol=1e-15)  # as written
    shard = open_source(str(tmp_path / "part-*.svm"), shuffle=False).shard(0, 2)
    list(shard.blocks())
    assert not shard._cache["parsed"]  # the other rank's part is not held


class _ThreadRanks:
    """``gather_objects`` of ranks played by threads of one process (a barrier a call)."""

    def __init__(self, world_size: int):
        import threading
        self.world_size, self.box = world_size, [None] * world_size
        self.barrier = threading.Barrier(world_size)

    def of(self, rank: int):
        ranks = self

        class Rank:
            def gather_objects(self, value):
                ranks.box[rank] = value
                ranks.barrier.wait()
                gathered = list(ranks.box)
                ranks.barrier.wait()
                return gathered
        return Rank()


def test_libsvm_shards_find_the_layout_together_each_parsing_only_its_own_parts(tmp_path, monkeypatch):
    """``share_layout`` under two ranks: each shard parses its own parts once (the layout pass
    and the read that follows), yet both find the whole source's columns and base: index 0
    appears only in the second rank's file, so both read zero-based, as one process does."""
    import threading

    import kernelstream.data.libsvm as libsvm
    rng = np.random.default_rng(0)
    dense = sp.random(300, 9, density=0.3, random_state=0).toarray()
    dense[:200, 0] = 0  # the first file never names column 0
    X = sp.csr_matrix(dense)
    y = rng.integers(0, 2, 300)
    for k, rows in enumerate((slice(0, 200), slice(200, None))):
        dump_svmlight_file(X[rows], y[rows], str(tmp_path / f"part-{k}.svm"), zero_based=True)
    loads, load = {}, libsvm._load
    monkeypatch.setattr(libsvm, "_load", lambda data, dtype: loads.setdefault(
        threading.current_thread().name, []).append(1) or load(data, dtype))
    pattern = str(tmp_path / "part-*.svm")
    whole = open_source(pattern, shuffle=False)
    expected = (whole.n_features, whole.zero_based)
    ranks, read = _ThreadRanks(2), {}

    def rank(k: int) -> None:
        shard = open_source(pattern, shuffle=False, part_bytes=2000).shard(k, 2)
        shard.share_layout(ranks.of(k))
        read[k] = (shard.n_features, shard.zero_based, list(shard.blocks()), len(shard._my_parts()))

    threads = [threading.Thread(target=rank, args=(k,), name=f"rank{k}") for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert expected == (9, True)
    for k in range(2):
        n_features, zero_based, blocks, parts = read[k]
        assert (n_features, zero_based) == expected
        assert parts > 1 and len(loads[f"rank{k}"]) == parts  # its own parts, each once
    got = sp.vstack([b.X for k in range(2) for b in read[k][2]]).toarray()
    np.testing.assert_allclose(np.sort(got, axis=0), np.sort(X.toarray(), axis=0), rtol=1e-15)
