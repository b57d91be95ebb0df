"""Collection rules for the whole repository (doctests of src/ included)."""
import importlib.util

# The fused Triton kernels import triton at module level; without it there is nothing to doctest
# (tests/test_triton.py skips itself in that case).
collect_ignore = [] if importlib.util.find_spec("triton") else ["src/kernelstream/ops/triton_fourier.py"]
# The river adapters import river at module level (an optional extra); without it there is
# nothing to doctest (tests/integrations/test_river.py skips itself in that case).
if not importlib.util.find_spec("river"):
    collect_ignore.append("src/kernelstream/integrations/river.py")

#: docstring examples that fit real models with the defaults (seconds each): in the full suite only
SLOW_DOCTESTS = ("kernelstream.estimators.classification.DSGClassifier",
                 "kernelstream.estimators.regression.DSGRegressor")


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if item.name in SLOW_DOCTESTS:
            item.add_marker(pytest.mark.slow)
