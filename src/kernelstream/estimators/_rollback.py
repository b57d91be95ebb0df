"""A failed call leaves a fitted estimator as it was."""
from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Iterable


@contextmanager
def unchanged_on_error(estimator, mutable: Iterable[str] = ()):
    """Restore ``estimator.__dict__`` if the body raises.

    Attributes are restored by reference, so those the body changes in place (a solver state, an
    expansion's coefficients) are named in ``mutable`` and deep-copied beforehand.
    """
    saved = dict(estimator.__dict__)
    snapshots = {name: copy.deepcopy(saved[name]) for name in mutable if name in saved}
    try:
        yield
    except BaseException:
        estimator.__dict__.clear()
        estimator.__dict__.update(saved, **snapshots)
        raise
