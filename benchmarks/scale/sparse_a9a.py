"""a9a read as CSR from LIBSVM text files against the dense array: test error and peak memory.

The training set is written to two LIBSVM files and the test set to one. Three fits of the same
``DSGClassifier``, each in a fresh process (peak RSS: its ``VmHWM``):

- ``dense``: the files read with scikit-learn's ``load_svmlight_file``, densified, ``fit(X, y)``;
- ``csr``: the same CSR matrix, ``fit(X, y)`` (kept sparse: densified one batch at a time);
- ``stream``: ``fit(open_source("train_*.svm"))``, the files streamed in CSR chunks.

    python -m benchmarks.scale.sparse_a9a                      # defaults on all of a9a
    python -m benchmarks.scale.sparse_a9a --quick --out /tmp/b # a fixed small model (seconds)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common.data import RESULTS, ROOT, official_split
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.scale.memory import peak_rss, rss

MODES = ("dense", "csr", "stream")
#: --quick: a fixed model (no race, no growth), a few epochs, on every row
QUICK_PARAMS = dict(sigma=3.0, alpha=1e-5, n_components=512, block_size=256, max_iter=3)
N_FEATURES = 123


def write_files(folder: Path) -> None:
    """``train_0.svm``, ``train_1.svm`` (the training rows in two halves) and ``test.svm``."""
    from sklearn.datasets import dump_svmlight_file

    X, y, X_test, y_test = official_split("a9a")
    half = len(y) // 2
    for k, rows in enumerate((slice(None, half), slice(half, None))):
        dump_svmlight_file(X[rows], y[rows], str(folder / f"train_{k}.svm"), zero_based=False)
    dump_svmlight_file(X_test, y_test, str(folder / "test.svm"), zero_based=False)


def _load(paths):
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    parts = [load_svmlight_file(str(p), n_features=N_FEATURES) for p in paths]
    return sp.vstack([X for X, _ in parts], format="csr"), np.concatenate([y for _, y in parts])


def child(mode: str, folder: Path, params: dict) -> dict:
    """One fit in this (fresh) process; peak and resident memory in bytes."""
    import torch

    torch.set_num_threads(1)
    from kernelstream import DSGClassifier
    from kernelstream.data import open_source

    after_imports = rss()
    model = DSGClassifier(random_state=0, **params)
    start = time.perf_counter()
    if mode == "stream":
        data_bytes = 0
        model.fit(open_source(folder / "train_*.svm", n_features=N_FEATURES, seed=0))
    else:
        X, y = _load(sorted(folder.glob("train_*.svm")))
        X = X.toarray() if mode == "dense" else X
        data_bytes = X.nbytes if mode == "dense" else X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
        model.fit(X, y)
    seconds = time.perf_counter() - start
    X_test, y_test = _load([folder / "test.svm"])
    error = 1 - model.score(X_test.toarray() if mode == "dense" else X_test, y_test)
    return dict(mode=mode, error=error, seconds=seconds, data_bytes=data_bytes,
                peak=peak_rss(),
                after_imports=after_imports, n_components=model.n_components_,
                sigma=model.sigma_, alpha=model.alpha_)


def run_child(mode: str, folder: Path, params: dict) -> dict:
    code = (f"import json; from pathlib import Path; from benchmarks.scale.sparse_a9a import child; "
            f"print(json.dumps(child({mode!r}, Path({str(folder)!r}), {params!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the {mode} fit failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(rows: list[dict], params: dict, out: Path) -> Path:
    MB = 2**20
    table = markdown_table(
        ["mode", "test error", "fit (s)", "peak RSS (MB)", "peak − after imports (MB)",
         "data held (MB)", "features", "sigma", "alpha"],
        [(r["mode"], f"{r['error']:.4f}", f"{r['seconds']:.1f}", f"{r['peak'] / MB:.0f}",
          f"{(r['peak'] - r['after_imports']) / MB:.0f}", f"{r['data_bytes'] / MB:.1f}",
          r["n_components"], f"{r['sigma']:.4g}", f"{r['alpha']:g}") for r in rows])
    lines = [f"`DSGClassifier(random_state=0{''.join(f', {k}={v!r}' for k, v in params.items())})` "
             "on a9a (32,561 training rows in two LIBSVM files, 16,281 test rows), each fit in a "
             "fresh process, one thread. `dense` densifies the CSR matrix read by "
             "`load_svmlight_file`; `csr` fits the CSR matrix (densified one batch at a time); "
             "`stream` fits `open_source('train_*.svm')` (CSR chunks). Data held: the training "
             "matrix in memory before the fit (the stream holds none).", ""] + table
    return write_report(out / "sparse_a9a.md", "a9a as CSR from LIBSVM files against the dense "
                        "array (issue 17, item 3)", lines, command=command_line(), threads=1)


def main(argv=None) -> list[dict]:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fixed small model (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    params = QUICK_PARAMS if args.quick else {}
    with tempfile.TemporaryDirectory() as folder:
        write_files(Path(folder))
        rows = [run_child(mode, Path(folder), params) for mode in MODES]
    path = report(rows, params, args.out)
    (args.out / "sparse_a9a.json").write_text(json.dumps(rows, indent=1))
    print(path.read_text())
    return rows


if __name__ == "__main__":
    main()
