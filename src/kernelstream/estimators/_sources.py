"""What ``fit`` needs to know of a stream before any estimator reads it: whether the input is a
source, its readers and communicator, its rows read whole, a sample, and its label checks."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import is_classifier, is_regressor

from ..data import Source
from ..distributed import Communicator, ShardGroup, communicator_for
from ._first_pass import concat_chunks

__all__ = ["is_source", "check_arrays_absent", "readers_of", "share_layouts", "label_kind", "row_maxima",
           "check_labels_known", "arrays_of", "whole_source", "sample_of"]


def is_source(data) -> bool:
    """Whether ``fit`` was given a stream (a ``kernelstream.data`` source or a ShardGroup)."""
    return isinstance(data, (Source, ShardGroup))


def check_arrays_absent(y, sample_weight=None) -> None:
    """A source carries its labels and weights: refuse separate ones."""
    if y is not None or sample_weight is not None:
        raise ValueError("A source carries its labels and weights (open_source(..., label=, "
                         "weight=)); call fit(source) without y or sample_weight.")


def readers_of(data) -> tuple[list, Communicator, Source]:
    """``(sources this process reads, communicator, the whole source)``."""
    if isinstance(data, ShardGroup):
        return data.shards(), Communicator(), data.source
    return [data], communicator_for(data), data.unsharded()


def share_layouts(readers, comm: Communicator) -> None:
    """Each reader's layout found by the ranks together (:meth:`Source.share_layout`), where
    ranks read shards; an error on one rank stops every rank."""
    if comm.world_size == 1:
        return
    try:
        for reader in readers:
            reader.share_layout(comm)
    except Exception as error:  # noqa: BLE001 — every rank hears of it
        comm.fail(error)


def label_kind(estimator) -> str:
    """What the first pass reads of the labels: "classes", "values" or "none"."""
    return "classes" if is_classifier(estimator) else "values" if is_regressor(estimator) else "none"


def row_maxima(X) -> np.ndarray:
    """The largest entry of each row (zeros of a sparse row count), as a 1-D array."""
    largest = X.max(axis=1)
    return np.asarray(largest.todense() if sp.issparse(largest) else largest).ravel()


def check_labels_known(whole: Source, stats, known: np.ndarray, name: str) -> None:
    """Refuse a label of the first pass outside ``known``, naming a row that holds it."""
    unknown = np.flatnonzero(~np.isin(stats.classes, known))
    if len(unknown):
        raise ValueError(f"{whole.locate(stats.example_ids[unknown[0]])}: label "
                         f"{stats.classes[unknown[0]].item()!r} is not in {name}="
                         f"{known.tolist()}; declare every label.")


def arrays_of(data, y=None, sample_weight=None) -> tuple:
    """``(X, y, sample_weight)`` of a source read whole, in file order (CSR stays CSR), for
    the estimators whose fit needs every row at once; arrays pass through unchanged."""
    if not is_source(data):
        return data, y, sample_weight
    check_arrays_absent(y, sample_weight)
    blocks = list(whole_source(data, "This estimator").blocks())
    if not blocks:
        raise ValueError(f"{data!r} has no rows.")
    rows = concat_chunks(blocks)
    return rows.X, rows.y, rows.sample_weight


def whole_source(data, what: str) -> Source:
    """The source itself; data-parallel inputs are refused for ``what``."""
    if isinstance(data, ShardGroup) or data.world_size > 1:
        raise ValueError(f"{what} has no data-parallel fit; pass the whole source (data-parallel "
                         "fits: DSGRegressor and DSGClassifier with the default solver).")
    return data


def sample_of(data, n_rows: int = 4096):
    """``X`` of a seeded sample of a source (``take_rows``): the width and the median."""
    return whole_source(data, "This estimator").take_rows(n_rows, seed=0).X
