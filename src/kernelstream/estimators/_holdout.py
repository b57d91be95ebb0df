"""The held-out rows of a fit: a seeded split of row indices, by class where labels are given,
in a few int64 n-vectors (scikit-learn's stratified split builds Python lists of the indices:
about 70 bytes a row at its peak, 0.65 GiB at 10⁷ rows; record: docs/decisions/beyond-memory.md).
"""

from __future__ import annotations

import numpy as np

__all__ = ["held_out_split"]

#: up to this many classes, each class's rows are found by one comparison over the labels
FEW_CLASSES = 32


def held_out_split(n_rows: int, n_held_out: int, seed: int,
                   labels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ``(train, held_out)``: ``n_held_out`` of ``range(n_rows)`` held out at random.

    Without ``labels`` the rows are one permutation of ``RandomState(seed)``, its first
    ``n_held_out`` held out (scikit-learn's ``train_test_split`` gives the same rows). With
    ``labels`` each class holds out its share ``n_held_out·n_k/n`` rounded by largest remainders,
    at most ``n_k − 1`` (every class keeps a training row); a class of one row, or fewer rows to
    hold out than classes, falls back to the unstratified split. Both parts are in random order.
    """
    rng = np.random.RandomState(seed)
    if labels is not None:
        labels = np.asarray(labels).reshape(-1)
        classes = np.unique(labels)
        counts = np.array([np.count_nonzero(labels == c) for c in classes]) \
            if len(classes) <= FEW_CLASSES else np.bincount(np.searchsorted(classes, labels))
        if len(classes) > 1 and counts.min() >= 2 and n_held_out >= len(classes):
            return _by_class(_class_rows(labels, classes, counts), counts,
                             _shares(counts, n_held_out), rng)
    order = rng.permutation(n_rows)
    return order[n_held_out:], order[:n_held_out]


def _shares(counts: np.ndarray, total: int) -> np.ndarray:
    """``total`` split over classes in proportion to ``counts``: floors, then one more to the
    largest remainders (the larger class first on ties), each at most its count − 1."""
    quota = counts * (total / counts.sum())
    shares = np.floor(quota).astype(np.int64)
    ranked = np.lexsort((-counts, -(quota - shares)))
    shares[ranked[:total - int(shares.sum())]] += 1
    return np.minimum(shares, counts - 1)


def _class_rows(labels: np.ndarray, classes: np.ndarray, counts: np.ndarray):
    """Each class's row indices, ascending: one comparison a class for a few classes (no
    n-vector but the indices), else one stable sort of the class codes."""
    if len(classes) <= FEW_CLASSES:
        yield from (np.flatnonzero(labels == c) for c in classes)
        return
    order = np.argsort(np.searchsorted(classes, labels), kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    for k in range(len(classes)):
        yield order[bounds[k]:bounds[k + 1]]


def _by_class(class_rows, counts: np.ndarray, shares: np.ndarray,
              rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """Each class's rows shuffled, its first ``shares[k]`` held out, written into the two
    parts; both parts shuffled again across classes."""
    train = np.empty(int(counts.sum() - shares.sum()), dtype=np.int64)
    held_out = np.empty(int(shares.sum()), dtype=np.int64)
    kept_at = held_at = 0
    for rows, share in zip(class_rows, shares):
        rng.shuffle(rows)
        held_out[held_at:held_at + share] = rows[:share]
        train[kept_at:kept_at + len(rows) - share] = rows[share:]
        held_at, kept_at = held_at + share, kept_at + len(rows) - share
    rng.shuffle(train)
    rng.shuffle(held_out)
    return train, held_out
