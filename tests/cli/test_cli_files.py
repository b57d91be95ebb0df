"""kernelstream.data.whole_files (the CLI's reader): every format reads the same rows; bad files
are named with the line."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from kernelstream.data.whole_files import DataFileError, detect_format, read_labelled

ROWS = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0], [0.5, 0.25, 3.0], [0.0, 0.0, 0.0]])
LABELS = np.array([1.0, -1.0, 1.0, -1.0])


def _write_csv(path, header=True, label_first=False):
    columns = ["y", "a", "b", "c"] if label_first else ["a", "b", "c", "y"]
    table = np.column_stack([LABELS, ROWS] if label_first else [ROWS, LABELS])
    body = [",".join(str(float(v)) for v in r) for r in table]
    lines = ([",".join(columns)] if header else []) + body
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def libsvm(tmp_path):
    path = tmp_path / "rows.svm"
    dump_svmlight_file(ROWS, LABELS, str(path), zero_based=False)
    return path


def test_libsvm_is_read_as_csr_with_its_width(libsvm):
    data = read_labelled(libsvm, n_features=3)
    assert sp.issparse(data.X) and data.X.format == "csr"
    np.testing.assert_array_equal(data.X.toarray(), ROWS)
    np.testing.assert_array_equal(data.y, LABELS)
    assert read_labelled(libsvm).X.shape == (4, 3)            # width from the largest index
    assert read_labelled(libsvm, n_features=5).X.shape == (4, 5)


@pytest.mark.parametrize("label_first", [False, True])
def test_csv_with_a_header_finds_the_label_column_by_name(tmp_path, label_first):
    data = read_labelled(_write_csv(tmp_path / "rows.csv", label_first=label_first))
    np.testing.assert_array_equal(data.X, ROWS)
    np.testing.assert_array_equal(data.y, LABELS)
    assert data.feature_names == ["a", "b", "c"]


def test_csv_without_header_takes_the_last_column_unless_told(tmp_path):
    path = _write_csv(tmp_path / "rows.csv", header=False)
    data = read_labelled(path)
    np.testing.assert_array_equal(data.y, LABELS)
    data = read_labelled(path, label=0)
    np.testing.assert_array_equal(data.y, ROWS[:, 0])
    assert read_labelled(path, label="none").y is None


def test_a_table_as_wide_as_the_model_has_no_label(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("\n".join(",".join(str(float(v)) for v in r) for r in ROWS))
    data = read_labelled(path, n_features=3)
    assert data.y is None
    np.testing.assert_array_equal(data.X, ROWS)


def test_parquet_and_npz_read_the_same_rows(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"a": ROWS[:, 0], "b": ROWS[:, 1], "c": ROWS[:, 2], "target": LABELS})
    pq.write_table(table, tmp_path / "rows.parquet")
    np.savez(tmp_path / "rows.npz", X_test=ROWS, y_test=LABELS)
    for data in (read_labelled(tmp_path / "rows.parquet"),
                 read_labelled(tmp_path / "rows.npz", label="y_test")):
        np.testing.assert_array_equal(data.X, ROWS)
        np.testing.assert_array_equal(data.y, LABELS)


def test_a_directory_is_its_files_stacked_in_name_order(tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    dump_svmlight_file(ROWS[:2], LABELS[:2], str(folder / "a.svm"), zero_based=False)
    dump_svmlight_file(ROWS[2:], LABELS[2:], str(folder / "b.svm"), zero_based=False)
    data = read_labelled(folder, n_features=3)
    np.testing.assert_array_equal(data.X.toarray(), ROWS)
    assert [f.name for f in data.files] == ["a.svm", "b.svm"]


def test_format_from_the_first_line_when_the_suffix_says_nothing(tmp_path, libsvm):
    (tmp_path / "a9a.t").write_bytes(libsvm.read_bytes())
    assert detect_format(tmp_path / "a9a.t") == "libsvm"
    (tmp_path / "rows.data").write_text("1,2,3\n")
    assert detect_format(tmp_path / "rows.data") == "csv"


@pytest.mark.parametrize("content, fmt, match", [
    ("1 2:1 3:x\n-1 1:2\n", "libsvm", "not a readable LIBSVM"),
    ("1 1:1\n-1 banana\n", "libsvm", r"line 2: not a LIBSVM line"),
    ("1 0:1 2:1\n", "libsvm", r"line 1: feature index 0.*--zero-based"),
    ("a,b,y\n1,2,3\n4,x,6\n", "csv", r"line 3: b holds 'x', not a number"),
    ("a,b,y\n1,2,3\n4,5\n", "csv", r"line 3: 2 fields, the first line has 3"),
    ("a,b,y\n", "csv", "a header and no rows"),
])
def test_malformed_files_name_the_file_and_line(tmp_path, content, fmt, match):
    path = tmp_path / f"bad.{'svm' if fmt == 'libsvm' else 'csv'}"
    path.write_text(content)
    with pytest.raises(DataFileError, match=match) as info:
        read_labelled(path)
    assert str(path) in str(info.value)


def test_missing_files_wrong_widths_and_unknown_columns(tmp_path, libsvm):
    with pytest.raises(DataFileError, match="no such file"):
        read_labelled(tmp_path / "absent.svm")
    with pytest.raises(DataFileError, match="wider than the model"):
        read_labelled(libsvm, n_features=2)
    csv_path = _write_csv(tmp_path / "rows.csv")
    with pytest.raises(DataFileError, match="no column 'price'"):
        read_labelled(csv_path, label="price")
    with pytest.raises(DataFileError, match="the model expects 7"):
        read_labelled(csv_path, n_features=7)
    np.savez(tmp_path / "rows.npz", X_train=ROWS, y_train=LABELS)
    with pytest.raises(DataFileError, match="pass --label y_KEY"):
        read_labelled(tmp_path / "rows.npz")


def test_npz_labels_default_to_y(tmp_path):
    """Issue 30: an npz file with X and y read as unlabelled (the default label was taken
    for --label none)."""
    np.savez(tmp_path / "rows.npz", X=ROWS, y=LABELS)
    data = read_labelled(tmp_path / "rows.npz")
    np.testing.assert_array_equal(data.X, ROWS)
    np.testing.assert_array_equal(data.y, LABELS)
    assert read_labelled(tmp_path / "rows.npz", label="none").y is None
    np.savez(tmp_path / "unlabelled.npz", X=ROWS)
    assert read_labelled(tmp_path / "unlabelled.npz").y is None


@pytest.mark.parametrize("label, match", [
    ("X", r"--label names the labels; 'X' holds the rows, whose labels are 'y': pass --label y"),
    ("X_test", r"'X_test' holds the rows, whose labels are 'y_test': pass --label y_test"),
    ("rings", r"--label 'rings': the labels of an npz file are y or y_KEY .*keys: \['X', "),
    ("y_train", r"no key 'y_train' \(--label y_train reads X_train and y_train\)"),
])
def test_an_npz_label_that_is_not_a_labels_key_says_which_to_pass(tmp_path, label, match):
    np.savez(tmp_path / "rows.npz", X=ROWS, y=LABELS, X_test=ROWS, y_test=LABELS)
    with pytest.raises(DataFileError, match=match):
        read_labelled(tmp_path / "rows.npz", label=label)


@pytest.mark.parametrize("cell, what", [("nan", "a feature value"), ("inf", "a feature value"),
                                        ("", None), ("NaN", "a feature value")])
def test_nan_in_a_csv_names_the_file_and_line(tmp_path, cell, what):
    """Issue 30: NaN reached scikit-learn, whose 700-character advice replaced the file and line
    (blank lines count: line numbers are the editor's)."""
    lines = ["a,b,y", "1,2,0", "", "3,4,1", "5,6,0", "7,8,1", "9,10,0", "11,12,1", "13,14,0"]
    lines[8] = f"13,{cell},0"
    path = tmp_path / "nan.csv"
    path.write_text("\n".join(lines) + "\n")
    message = f"{what} is NaN or infinite" if what else "b holds '', not a number"
    with pytest.raises(DataFileError, match=rf"nan\.csv, line 9: {message}"):
        read_labelled(path)
    lines[8], lines[6] = "13,14,0", "9,10,nan"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFileError, match=r"nan\.csv, line 7: the label is NaN or infinite"):
        read_labelled(path)


def test_a_directory_of_mixed_formats_says_so(tmp_path):
    """Issue 30: CSV and LIBSVM files in one folder were all read as CSV ("different numbers
    of columns [0, 3]")."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    _write_csv(folder / "a.csv")
    dump_svmlight_file(ROWS, LABELS, str(folder / "b.svm"), zero_based=False)
    with pytest.raises(DataFileError, match=r"mixed formats \(a\.csv: csv, b\.svm: libsvm\)"):
        read_labelled(folder)
    with pytest.raises(DataFileError, match="mixed formats"):
        read_labelled(folder, fmt="csv")


def test_the_default_label_names_are_the_data_readers():
    """The whole-file reader takes the streaming readers' names (importing it stays fast)."""
    from kernelstream.data.base import LABEL_NAMES as DATA_LABEL_NAMES
    from kernelstream.data.whole_files import LABEL_NAMES

    assert LABEL_NAMES == DATA_LABEL_NAMES
