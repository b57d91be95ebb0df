"""cos and sin into an output: NumPy's loops on one CPU thread in float32, torch elsewhere, the
same values to float32 round-off, into strided outputs as the paired features write them."""

import numpy as np
import pytest
import torch

from kernelstream.ops import trig
from kernelstream.ops.trig import cos_into, sin_into


@pytest.mark.parametrize("dtype, threads, numpy_loops", [
    (torch.float32, 1, True), (torch.float32, 2, False), (torch.float64, 1, False)])
def test_cos_and_sin_take_the_faster_loop_and_agree(monkeypatch, dtype, threads, numpy_loops):
    called, numpy_cos = [], np.cos
    monkeypatch.setattr(trig.np, "cos", lambda z, out: (called.append("cos"), numpy_cos(z, out=out)))
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        Z = torch.randn(300, 2, 40, dtype=dtype, generator=torch.Generator().manual_seed(0)) * 10
        out = torch.empty(300, 2, 2, 40, dtype=dtype)
        cos_into(Z, out[..., 0, :])
        sin_into(Z, out[..., 1, :])
    finally:
        torch.set_num_threads(previous)
    assert (called == ["cos"]) is numpy_loops
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(out[..., 0, :], torch.cos(Z), rtol=0, atol=tol)
    torch.testing.assert_close(out[..., 1, :], torch.sin(Z), rtol=0, atol=tol)
    same = Z.clone()
    torch.testing.assert_close(cos_into(same, same), torch.cos(Z), rtol=0, atol=tol)  # in place
