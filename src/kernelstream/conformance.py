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

__all__ = ["CUDA_SUBSET_INVARIANCE", "expected_failed_checks"]

#: why ``check_methods_subset_invariance`` may fail where an estimator computes on CUDA
CUDA_SUBSET_INVARIANCE = (
    "on CUDA a float32 GEMM's rounding follows the batch's shape (an H100: differences of a few "
    "float32 eps, up to 2.4e-7 absolute), so a row's score depends in its last bits on the rows "
    "beside it; on the CPU the estimators predict in calls of exactly 64 rows, and a row comes "
    "out in the same bits in any batch")


def expected_failed_checks(estimator) -> dict[str, str]:
    """``{check name: reason}`` for the checks ``estimator`` (with its parameters) fails; where
    its device resolves to CUDA, also scikit-learn's subset invariance (bit-identical rows
    across batch shapes, :data:`CUDA_SUBSET_INVARIANCE`)."""
    declared = getattr(estimator, "_expected_failed_checks", None)
    failures = dict(declared()) if declared is not None else {}
    if _on_cuda(estimator):
        failures.setdefault("check_methods_subset_invariance", CUDA_SUBSET_INVARIANCE)
    return failures


def _on_cuda(estimator) -> bool:
    """Whether ``estimator`` computes on CUDA (``device="auto"``: where CUDA is available)."""
    resolve = getattr(estimator, "_resolve_device", None)
    try:
        return resolve is not None and resolve().type == "cuda"
    except ValueError:  # device="cuda" without CUDA: its fit says so
        return False
