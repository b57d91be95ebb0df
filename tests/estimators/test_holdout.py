"""The held-out split: every row once, each class in proportion, scikit-learn's rows without
labels."""

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from kernelstream.estimators._holdout import FEW_CLASSES, held_out_split


def test_without_labels_the_rows_are_scikit_learns():
    train, held = held_out_split(1000, 137, seed=7)
    expected_train, expected_held = train_test_split(np.arange(1000), test_size=137, random_state=7)
    np.testing.assert_array_equal(train, expected_train)
    np.testing.assert_array_equal(held, expected_held)


@pytest.mark.parametrize("n_classes", [2, 3, FEW_CLASSES + 8])
def test_each_class_holds_out_its_share(n_classes):
    rng = np.random.RandomState(0)
    labels = rng.choice(n_classes, size=5000, p=np.arange(1, n_classes + 1) / np.arange(1, n_classes + 1).sum())
    labels = np.where(labels == 0, "zero", labels.astype(str))  # not integers: any labels
    train, held = held_out_split(len(labels), 500, seed=3, labels=labels)
    assert len(held) == 500 and len(train) == 4500
    np.testing.assert_array_equal(np.sort(np.concatenate([train, held])), np.arange(5000))
    classes, counts = np.unique(labels, return_counts=True)
    held_counts = np.array([np.count_nonzero(labels[held] == c) for c in classes])
    assert np.abs(held_counts - counts * 0.1).max() < 1.0  # floors plus the largest remainders
    assert not np.array_equal(held, np.sort(held))  # in random order, not by class


def test_the_split_is_seeded():
    labels = np.repeat([0, 1], [300, 700])
    first = held_out_split(1000, 100, seed=5, labels=labels)
    again = held_out_split(1000, 100, seed=5, labels=labels)
    other = held_out_split(1000, 100, seed=6, labels=labels)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[1], other[1])


def test_every_class_keeps_a_training_row():
    labels = np.repeat([0, 1, 2], [2, 2, 96])
    train, held = held_out_split(100, 60, seed=0, labels=labels)
    assert set(labels[train]) == {0, 1, 2}


@pytest.mark.parametrize("labels, n_held", [(np.repeat([0, 1], [99, 1]), 10),  # one row
                                            (np.repeat([0, 1, 2], [40, 30, 30]), 2)])  # < classes
def test_unstratifiable_labels_fall_back_to_one_permutation(labels, n_held):
    train, held = held_out_split(len(labels), n_held, seed=1, labels=labels)
    unstratified = held_out_split(len(labels), n_held, seed=1)
    np.testing.assert_array_equal(train, unstratified[0])
    np.testing.assert_array_equal(held, unstratified[1])
