"""Collection rules for the whole repository (doctests of src/ included)."""
import importlib.util

# The fused Triton kernels import triton at module level; without it there is nothing to doctest
# (tests/test_triton.py skips itself in that case).
collect_ignore = [] if importlib.util.find_spec("triton") else ["src/kernelstream/ops/triton_fourier.py"]
