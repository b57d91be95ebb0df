"""Reading a ~200 MB CSV in chunks keeps the process's memory flat: the reader holds the shuffle
buffer and one byte range, never the file."""

from __future__ import annotations

import gc
import io

import numpy as np
import pytest

from kernelstream.data import open_source

psutil = pytest.importorskip("psutil")

BLOCK_ROWS = 100_000  # rows of the text block repeated to make the file
REPEATS = 22


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    """~200 MB: an 8.5 MB block of 10 numeric columns and a label, written 22 times."""
    rng = np.random.default_rng(0)
    table = np.column_stack([rng.normal(size=(BLOCK_ROWS, 10)), rng.integers(0, 2, BLOCK_ROWS)])
    text = io.StringIO()
    np.savetxt(text, table, delimiter=",", fmt="%.5f")
    block = text.getvalue().encode()
    path = tmp_path_factory.mktemp("big") / "big.csv"
    with open(path, "wb") as f:
        for _ in range(REPEATS):
            f.write(block)
    return path, len(block) * REPEATS


@pytest.mark.slow
def test_reading_a_large_csv_keeps_memory_flat(big_csv):
    path, n_bytes = big_csv
    assert n_bytes > 190e6
    source = open_source(path, label=-1, chunk_rows=4096, shuffle_buffer=32768, seed=0)
    gc.collect()
    process = psutil.Process()
    baseline = peak = process.memory_info().rss
    rows = 0
    for chunk in source.chunks(epoch=0):
        rows += len(chunk.row_ids)
        peak = max(peak, process.memory_info().rss)
    assert rows == BLOCK_ROWS * REPEATS
    # the parsed file is 2.2e6 x 11 float64 = 194 MB; a chunked read holds a few MB of it
    print(f"RSS grew by {(peak - baseline) / 1e6:.1f} MB reading {n_bytes / 1e6:.0f} MB")
    assert peak - baseline < 80e6, f"RSS grew by {(peak - baseline) / 1e6:.0f} MB"
