"""scikit-learn conformance: which of scikit-learn's estimator checks an estimator fails, and why.

scikit-learn (≥ 1.6) takes expected failures as an argument of its checks, not from the
estimator's tags (the ``_xfail_checks`` tag was removed), so every kernelstream estimator
declares its own next to its tags, and this function returns them for your own runs::

    from sklearn.utils.estimator_checks import check_estimator
    from kernelstream import DSGClassifier
    from kernelstream.conformance import expected_failed_checks

    est = DSGClassifier(batch_size=64, block_size=64, max_iter=3, random_state=0)
    check_estimator(est, expected_failed_checks=expected_failed_checks(est))

The project's own conformance test (``tests/test_common.py``) uses exactly this function.
"""

from __future__ import annotations

__all__ = ["expected_failed_checks"]


def expected_failed_checks(estimator) -> dict[str, str]:
    """``{check name: reason}`` for the checks ``estimator`` (with its parameters) fails."""
    declared = getattr(estimator, "_expected_failed_checks", None)
    return dict(declared()) if declared is not None else {}
