"""The counter-based generator: known answers, purity, distribution, cross-process identity."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from scipy import stats

from kernelstream import rng
from support import cuda_mark

# Random123 known-answer vectors for Philox-4x32-10: (counter, key) -> output.
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter, key, expected", KAT)
def test_philox_known_answers(counter, key, expected):
    words = rng.philox4x32(tuple(torch.tensor([c], dtype=torch.int64) for c in counter), key)
    assert tuple(int(w) for w in words) == expected


def test_draws_are_pure_functions_of_seed_block_stream():
    a = rng.normal((64, 32), seed=5, block=7, stream=1)
    rng.normal((10,), seed=5, block=3, stream=1)  # other draws in between change nothing
    torch.manual_seed(123)  # nor does global RNG state
    b = rng.normal((64, 32), seed=5, block=7, stream=1)
    assert torch.equal(a, b)
    assert not torch.equal(a, rng.normal((64, 32), seed=5, block=8, stream=1))
    assert not torch.equal(a, rng.normal((64, 32), seed=6, block=7, stream=1))
    assert not torch.equal(a, rng.normal((64, 32), seed=5, block=7, stream=2))


def test_prefix_property():
    """Element i of a draw does not depend on how many elements are drawn."""
    long = rng.uniform((1000,), seed=1, block=2, stream=1)
    short = rng.uniform((333,), seed=1, block=2, stream=1)
    assert torch.equal(long[:333], short)


def test_large_seeds_and_blocks():
    a = rng.uniform((8,), seed=2**64 - 1, block=2**40 + 3, stream=1)
    assert ((a > 0) & (a < 1)).all()
    with pytest.raises(ValueError, match="seed"):
        rng.uniform((8,), seed=2**64, block=0, stream=1)


def test_uniform_and_normal_distributions():
    u = rng.uniform((200_000,), seed=11, block=0, stream=1).numpy()
    assert 0 < u.min() and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    z = rng.normal((200_000,), seed=11, block=1, stream=1).numpy()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(stats.skew(z)) < 0.02 and abs(stats.kurtosis(z)) < 0.05
    # consecutive pairs are uncorrelated
    assert abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 0.01


def test_cauchy_and_chi_square():
    c = rng.cauchy((100_000,), seed=3, block=0, stream=1).numpy()
    assert stats.kstest(c, "cauchy").pvalue > 1e-3
    q = rng.chi_square((50_000,), 3, seed=3, block=0, stream=2).numpy()
    assert stats.kstest(q, "chi2", args=(3,)).pvalue > 1e-3


def test_block_1000_identical_in_a_fresh_process():
    here = rng.normal((123, 64), seed=2024, block=1000, stream=rng.Stream.WEIGHTS).numpy()
    code = (
        "import sys, numpy as np; from kernelstream import rng\n"
        "x = rng.normal((123, 64), seed=2024, block=1000, stream=rng.Stream.WEIGHTS).numpy()\n"
        "sys.stdout.write(x.tobytes().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    there = np.frombuffer(bytes.fromhex(out.stdout), dtype=np.float64).reshape(123, 64)
    assert np.array_equal(here, there)


@cuda_mark
def test_cpu_and_cuda_draws_agree():
    bits_cpu = rng.random_bits(10_000, seed=9, block=1000, stream=1)
    bits_gpu = rng.random_bits(10_000, seed=9, block=1000, stream=1, device="cuda")
    assert torch.equal(bits_cpu, bits_gpu.cpu())  # integers: bit for bit
    z_cpu = rng.normal((10_000,), seed=9, block=1000, stream=1)
    z_gpu = rng.normal((10_000,), seed=9, block=1000, stream=1, device="cuda").cpu()
    torch.testing.assert_close(z_cpu, z_gpu, rtol=1e-12, atol=1e-12)
