"""Bad sources fail at once with a message naming the file and the line (or row) and the fault."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kernelstream.data import open_source

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def read_all(source):
    return [chunk for epoch in (0,) for chunk in source.chunks(epoch)]


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def good_libsvm_lines(n):
    return [f"{(-1) ** i} 1:{i} 3:0.5" for i in range(n)]


@pytest.mark.parametrize("name,options", [
    ("gone.svm", {}), ("gone.csv", {"label": 0}), ("gone.parquet", {}), ("gone.npy", {}),
    ("gone.npz", {}),
])
def test_a_missing_file_is_named(tmp_path, name, options):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / name))):
        open_source(tmp_path / name, **options)


def test_missing_label_file_glob_and_directory(tmp_path):
    np.save(tmp_path / "X.npy", np.ones((3, 2)))
    with pytest.raises(FileNotFoundError, match="nope.npy"):
        open_source(tmp_path / "X.npy", label=tmp_path / "nope.npy")
    with pytest.raises(FileNotFoundError, match=r"No file matches .*\*\.svm"):
        open_source(tmp_path / "*.svm")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no file"):
        open_source(tmp_path / "empty")


@pytest.mark.parametrize("bad,message", [
    ("1 1:2 3:x", r"cannot parse b'1 1:2 3:x'"),
    ("yes 1:2", r"the label 'yes' is not a number"),
    ("1 3:2 1:1", r"sorted and unique"),
    ("1 -4:2", r"Invalid index -4"),
])
def test_libsvm_unreadable_line_names_file_and_line(tmp_path, bad, message):
    lines = good_libsvm_lines(300)
    lines[236] = bad
    path = write_lines(tmp_path / "bad.svm", lines)
    source = open_source(path, part_bytes=600, n_features=3, zero_based=False)
    with pytest.raises(ValueError, match=rf"bad\.svm, line 237: .*{message}"):
        read_all(source)


def test_libsvm_index_errors(tmp_path):
    lines = good_libsvm_lines(50)
    lines[40] = "1 1:1 9:2"
    path = write_lines(tmp_path / "i.svm", lines)
    with pytest.raises(ValueError, match=r"i\.svm, line 41: feature index 9 is beyond "
                                         r"n_features=3"):
        read_all(open_source(path, n_features=3, zero_based=False))
    lines[40] = "1 0:1"
    with pytest.raises(ValueError, match=r"line 41: feature index 0 in a file read as one-based"):
        read_all(open_source(write_lines(path, lines), n_features=9, zero_based=False))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_values_name_the_line(tmp_path, value):
    lines = good_libsvm_lines(100)
    lines[70] = f"1 2:{value}"
    path = write_lines(tmp_path / "n.svm", lines)
    with pytest.raises(ValueError, match=r"n\.svm, line 71: a feature value is NaN or infinite"):
        read_all(open_source(path, part_bytes=300))
    csv_lines = ["a,b,y"] + [f"{i},{i + 1},{i % 2}" for i in range(100)]
    csv_lines[55] = f"1,2,{value}"
    with pytest.raises(ValueError, match=r"n\.csv, line 56: the label is NaN or infinite"):
        read_all(open_source(write_lines(tmp_path / "n.csv", csv_lines), label="y"))


@pytest.mark.parametrize("bad,message", [
    ("1,2", r"2 columns, but 3 in the header of .*c\.csv"),
    ("1,2,3,4", r"4 columns, but 3"),
    ("1,2,yes", r"the label 'yes' is not a number"),
    ("1,abc,0", r"column 1 \('b'\) holds 'abc', which is not a number"),
    ("1,,0", r"column 1 \('b'\) holds '', which is not a number"),
])
def test_csv_bad_line_names_file_and_line(tmp_path, bad, message):
    lines = ["a,b,y"] + [f"{i},{i / 7:.4f},{i % 2}" for i in range(400)]
    lines[333] = bad
    path = write_lines(tmp_path / "c.csv", lines)
    with pytest.raises(ValueError, match=rf"c\.csv, line 334: {message}"):
        read_all(open_source(path, label="y", part_bytes=1000, chunk_rows=64))


def test_csv_whole_part_with_a_wrong_column_count_is_caught(tmp_path):
    """Every line of one byte range has 2 columns: loadtxt parses it, the shape check objects."""
    lines = ["1,2,3"] * 20 + ["1,2"] * 20
    path = write_lines(tmp_path / "p.csv", lines)
    with pytest.raises(ValueError, match=r"p\.csv, line 21: 2 columns, but 3 in the first line"):
        read_all(open_source(path, label=0, part_bytes=40, shuffle=False))


def test_csv_label_column_that_does_not_exist(tmp_path):
    path = write_lines(tmp_path / "h.csv", ["a,b,y", "1,2,3"])
    with pytest.raises(ValueError, match=r"label column 'target' is not in the header of .*"
                                         r"h\.csv; its columns are \['a', 'b', 'y'\]"):
        open_source(path, label="target")
    with pytest.raises(ValueError, match=r"label column 3 does not exist: .*h\.csv has 3 columns"):
        open_source(path, label=3)
    plain = write_lines(tmp_path / "plain.csv", ["1,2,3"])
    with pytest.raises(ValueError, match=r"label='y' names a column, but .*plain\.csv has no "
                                         "header"):
        open_source(plain, label="y")
    with pytest.raises(ValueError, match="same column"):
        open_source(path, label="y", weight=-1)


def test_csv_files_of_one_source_must_share_columns(tmp_path):
    write_lines(tmp_path / "a.csv", ["a,b,y", "1,2,3"])
    write_lines(tmp_path / "b.csv", ["a,c,y", "1,2,3"])
    with pytest.raises(ValueError, match="must share their columns"):
        open_source(tmp_path / "*.csv", label="y")
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(ValueError, match=r"e\.csv is empty"):
        open_source(tmp_path / "e.csv")


def test_parquet_errors(tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0, None, 4.0], "s": ["x", "y", "z", "w"],
                             "y": [0, 1, 0, 1]}), path, row_group_size=2)
    with pytest.raises(ValueError, match=r"label column 'target' is not in .*p\.parquet"):
        open_source(path, label="target", features=["a"])
    with pytest.raises(ValueError, match=r"column 's' .* has type string"):
        open_source(path, label="y")
    with pytest.raises(ValueError, match=r"column 's' .* has type string"):
        open_source(path, label="s", features=["a"])
    with pytest.raises(ValueError, match=r"p\.parquet, row 2: column 'a' is missing \(null\)"):
        read_all(open_source(path, label="y", features=["a"], shuffle=False))
    pq.write_table(pa.table({"a": [1.0, np.inf]}), tmp_path / "q.parquet")
    with pytest.raises(ValueError, match=r"q\.parquet, row 1: a feature value is NaN"):
        read_all(open_source(tmp_path / "q.parquet"))


def test_array_and_npy_errors(tmp_path):
    X = np.ones((5, 2))
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"arrays, row 3: a feature value is NaN or infinite"):
        read_all(open_source(X, np.arange(5)))
    np.save(tmp_path / "X.npy", X)
    with pytest.raises(ValueError, match=r"X\.npy, row 3: a feature value"):
        read_all(open_source(tmp_path / "X.npy"))
    with pytest.raises(ValueError, match=r"y has shape \(4,\), but X has 5 rows"):
        open_source(np.ones((5, 2)), np.arange(4))
    with pytest.raises(ValueError, match="X must be 2-D"):
        open_source(np.ones(5))
    np.savez(tmp_path / "d.npz", X_train=np.ones((5, 2)))
    with pytest.raises(ValueError, match=r"d\.npz has no array 'y'; its arrays are \['X_train'\]"):
        open_source(tmp_path / "d.npz", features="X_train")


def test_bad_options_and_formats(tmp_path):
    X = np.ones((5, 2))
    for options, message in [({"chunk_rows": 0}, "chunk_rows must be an integer >= 1"),
                             ({"seed": -1}, "seed must be"), ({"dtype": "int8"}, "float32 or")]:
        with pytest.raises(ValueError, match=message):
            open_source(X, **options)
    source = open_source(X)
    with pytest.raises(ValueError, match=r"rank must be in \[0, world_size\)"):
        source.shard(2, 2)
    with pytest.raises(ValueError, match="already a shard"):
        source.shard(0, 2).shard(0, 2)
    with pytest.raises(ValueError, match=r"validation_fraction must be in \(0, 1\)"):
        source.split(1.5)
    with pytest.raises(ValueError, match="epoch must be"):
        next(source.chunks(epoch=-1))
    path = write_lines(tmp_path / "data.txt", ["1 1:1"])
    with pytest.raises(ValueError, match=r"Cannot tell the format of .*data\.txt.*format="):
        open_source(path)
    assert open_source(path, format="libsvm").n_features == 1
    write_lines(tmp_path / "b.csv", ["1,2"])
    write_lines(tmp_path / "c.svm", ["1 1:1"])
    with pytest.raises(ValueError, match=r"mix formats \['csv', 'libsvm'\]"):
        open_source([tmp_path / "c.svm", tmp_path / "b.csv"])
    with pytest.raises(ValueError, match="y and sample_weight go with in-memory arrays"):
        open_source(path, np.ones(1))


def test_a_bad_libsvm_line_is_raised_by_the_shard_that_reads_it(tmp_path):
    """Issue 30: the layout pass (``n_features``, ``zero_based="auto"``) reads every file on
    every rank, and raised there: every rank of a data-parallel fit raised the same ValueError
    instead of the rank owning the file raising it and the others a RankFailure naming it."""
    write_lines(tmp_path / "part-0.svm", good_libsvm_lines(100))
    lines = good_libsvm_lines(120)
    lines[86] = "1 1:2 3:x"
    write_lines(tmp_path / "part-1.svm", lines)
    source = open_source(tmp_path / "part-*.svm")
    assert source.n_features == 3 and not source.zero_based  # the good lines decide the layout
    shards = [source.shard(rank, 2) for rank in range(2)]
    failing = [rank for rank, shard in enumerate(shards)
               if any(part.file == 1 for part in shard._my_parts())]
    assert len(failing) == 1
    assert sum(len(chunk.y) for chunk in shards[1 - failing[0]].chunks()) == 100
    with pytest.raises(ValueError, match=r"part-1\.svm, line 87: cannot parse b'1 1:2 3:x'"):
        read_all(shards[failing[0]])
    with pytest.raises(ValueError, match=r"part-1\.svm, line 87"):
        source.scan()  # no summary was memoised from a pass that skipped a line
