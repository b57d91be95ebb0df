"""Data readers: a data source as a reproducible stream of shuffled chunks.

``open_source(path_or_array, **options)`` picks the reader: LIBSVM/svmlight text (CSR chunks),
CSV, Parquet (``pyarrow``), ``.npy`` memory maps and ``.npz`` archives, or arrays in memory
(numpy, torch, scipy sparse). Every source has the same small API:

* ``source.chunks(epoch)``: chunks ``(X, y, sample_weight, row_ids)`` of ``chunk_rows`` rows,
  shuffled within a buffer of ``shuffle_buffer`` rows, the same for the same seed and epoch;
* ``source.shard(rank, world_size)``: a disjoint part for data-parallel training;
* ``source.split(validation_fraction, seed)``: ``(train, validation)`` by a hash of each row's
  stable id;
* ``source.scan()``: the first pass (rows, ``n_features``, sorted classes);
* ``source.take_rows(n, seed)``: a seeded sample of rows (for the bandwidth heuristic);
* ``source.blocks()``: the rows part by part in file order (a first pass), ``rechunked(rows)``,
  ``unsharded()`` and ``locate(row_id)`` (the file and line of a row).

Every estimator's ``fit`` takes a source (``fit(source)``); see
:mod:`kernelstream.estimators._streaming` (``StreamFitMixin``) and, for data-parallel training,
:mod:`kernelstream.distributed`.

``read_labelled(path)`` (:mod:`.whole_files`) reads a file or a directory whole into memory
instead: what the command line reads its data with.

Examples
--------
>>> import numpy as np
>>> from kernelstream.data import open_source
>>> rng = np.random.default_rng(0)
>>> X, y = rng.normal(size=(1000, 3)), rng.integers(0, 2, 1000)
>>> source = open_source(X, y, chunk_rows=256, shuffle_buffer=512, seed=0)
>>> [len(chunk.y) for chunk in source.chunks(epoch=0)]
[256, 256, 256, 232]
>>> train, validation = source.split(0.1)
>>> train.scan().n_rows + validation.scan().n_rows
1000
"""

from __future__ import annotations

from .._lazy import lazy_attributes

#: public name → the module that defines it; imported on first use (PEP 562), so that the
#: command line can read whole files (:mod:`.whole_files`) without loading every reader
_PUBLIC = {
    "open_source": ".open",
    "FORMATS": ".open",
    "Source": ".base",
    "Chunk": ".base",
    "Summary": ".base",
    "ArraySource": ".arrays",
    "CsvSource": ".delimited",
    "LibsvmSource": ".libsvm",
    "ParquetSource": ".parquet",
    "open_npy": ".numpy_files",
    "open_npz": ".numpy_files",
    "read_labelled": ".whole_files",
    "Labelled": ".whole_files",
    "DataFileError": ".whole_files",
}

__all__ = list(_PUBLIC)


__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC)
