"""The CPU generator (Philox rounds in numpy uint64 ops) gives the words of the torch-ops reference."""

import numpy as np
import pytest
import torch

from kernelstream import rng
from test_rng import KAT  # Random123 known-answer vectors


@pytest.mark.parametrize("counter, key, expected", KAT)
def test_numpy_rounds_known_answers(counter, key, expected):
    words = rng._philox4x32_numpy(np.array([counter[0]], dtype=np.int64), *counter[1:], key)
    assert tuple(int(w) for w in words[0]) == expected


def _reference_bits(n, seed, block, stream, offset=0):
    """``random_bits`` through the int64 torch rounds (the path every other device takes)."""
    index = torch.arange(offset // 4, offset // 4 + -(-n // 4), dtype=torch.int64)
    zero = torch.zeros((), dtype=torch.int64)
    words = rng.philox4x32((index, zero + (block & 0xFFFFFFFF), zero + (block >> 32), zero + stream),
                           (seed & 0xFFFFFFFF, seed >> 32))
    return torch.stack(words, dim=1).reshape(-1)[:n]


@pytest.mark.parametrize("seed", [0, 7, 12345678901234567, 2**64 - 1])
@pytest.mark.parametrize("block", [0, 3, 2**32 - 1, 2**33 + 5, 2**40 + 3])
@pytest.mark.parametrize("stream", [1, 2, 15])
def test_cpu_words_equal_torch_rounds(seed, block, stream):
    for n, offset in [(1, 0), (7, 4), (1000, 0), (70001, 2**16)]:
        got = rng.random_bits(n, seed, block, stream, offset=offset)
        assert got.dtype == torch.int64 and got.shape == (n,)
        assert torch.equal(got, _reference_bits(n, seed, block, stream, offset))
        assert torch.equal(got, rng.random_bits(n, seed, block, stream, device="cpu", offset=offset))


def test_normals_equal_torch_rounds(monkeypatch):
    """Whole draws (several pieces, odd length) are bit-identical with the torch rounds."""
    fast = rng.normal((3, 50001), seed=99, block=2**35 + 1, stream=1)
    fast_u = rng.uniform((70001,), seed=3, block=4, stream=2)
    monkeypatch.setattr(rng, "random_bits", lambda n, seed, block, stream, device=None, offset=0:
                        _reference_bits(n, seed, block, stream, offset))
    assert torch.equal(fast, rng.normal((3, 50001), seed=99, block=2**35 + 1, stream=1))
    assert torch.equal(fast_u, rng.uniform((70001,), seed=3, block=4, stream=2))
