"""Class labels of the classifiers: validated, fitted on the first call, checked on the next."""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._validation import check_labels_for_loss


def fit_or_check_labels(estimator, y, *, first: bool, classes, loss: str,
                        max_classes: int | None = None, reason: str = "") -> np.ndarray:
    """Validated 1-D labels ``y``.

    The first call sets ``estimator.classes_`` (from ``classes`` when given, else from ``y``)
    and checks that ``loss`` can take that many (at most ``max_classes``, with ``reason`` in
    the error); later calls refuse labels outside ``classes_``.
    """
    if y is None:
        raise ValueError("requires y to be passed, but the target y is None.")
    y = column_or_1d(y, warn=True)
    check_classification_targets(y)
    if first:
        labels = np.unique(y) if classes is None else np.unique(np.asarray(classes))
        check_labels_for_loss(len(labels), loss)
        if max_classes is not None and len(labels) > max_classes:
            raise ValueError(f"Only binary classification is supported ({reason}); y has "
                             f"{len(labels)} classes {labels.tolist()}. Binarise y first.")
        where = f"classes={labels.tolist()}; pass every label in classes."
    else:
        check_is_fitted(estimator, "classes_")
        labels = estimator.classes_
        if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), labels):
            raise ValueError(f"classes={np.unique(np.asarray(classes)).tolist()} is not the same "
                             f"as on the first partial_fit call (classes_={labels.tolist()}); "
                             "pass the same classes, or call fit to start a new model.")
        where = (f"classes_={labels.tolist()}, not seen in the first call; pass every label in "
                 "classes= on the first partial_fit call.")
    unseen = np.setdiff1d(np.unique(y), labels)
    if unseen.size:
        raise ValueError(f"y contains labels {unseen.tolist()} that are not in {where}")
    estimator.classes_ = labels
    return y
