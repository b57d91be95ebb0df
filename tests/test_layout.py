"""Layout: low-level ops live in ``kernelstream.ops``, kernels (feature maps) in
``kernelstream.features``, and the torch-or-Triton choice is made in one place."""

import importlib
import importlib.util
import pathlib

import torch

from kernelstream.features import make_feature_map
from kernelstream.ops import backend

from support import SRC  # noqa: E402


def test_ops_package_replaces_kernels():
    assert importlib.util.find_spec("kernelstream.kernels") is None
    for module in ("fourier", "precond", "workspace", "backend"):
        importlib.import_module(f"kernelstream.ops.{module}")
    assert (SRC / "ops" / "triton_fourier.py").exists()


def test_only_the_backend_module_reads_the_triton_switch():
    readers = [str(path.relative_to(SRC)) for path in SRC.rglob("*.py")
               if '"KERNELSTREAM_TRITON"' in path.read_text()]  # quoted: code, not prose
    assert readers == ["ops/backend.py"]


def test_triton_is_never_chosen_off_cuda(monkeypatch):
    monkeypatch.setenv("KERNELSTREAM_TRITON", "1")
    assert backend.triton_requested()
    fm = make_feature_map("rbf", 3, 1.0, 8, 0)
    X = torch.randn(5, 3)
    assert not backend.use_triton(X, fm)
    coef = torch.randn(2, 8, 1)
    monkeypatch.setenv("KERNELSTREAM_TRITON", "0")
    expected = fm.contract(X, coef)
    monkeypatch.setenv("KERNELSTREAM_TRITON", "1")
    torch.testing.assert_close(fm.contract(X, coef), expected, rtol=0, atol=0)
