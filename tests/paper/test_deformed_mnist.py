"""The deformed-digit stream of benchmarks/paper/deformed_mnist.py: a pure function of (seed,
chunk), images in their source's pixel range with plausible ink, the identity when every bound
is 0, and the elastic smoothing equal to scipy's Gaussian filter."""

import numpy as np
import pytest
import torch
from scipy.ndimage import gaussian_filter

from benchmarks.paper.deformed_mnist import (Deformation, DeformedDigits, chunk_generator, deform,
                                             gaussian_smooth)
from support import shared_dataset


@pytest.fixture(scope="module")
def digits():
    data = shared_dataset("mnist")
    return data["X_train"][:500].reshape(-1, 28, 28), data["y_train"][:500]


def test_chunks_are_a_pure_function_of_seed_and_index(digits):
    images, labels = digits
    stream = DeformedDigits(images, labels, seed=3, chunk_size=64)
    first, first_labels = stream.chunk(7)
    stream.chunk(2)  # another chunk in between changes nothing
    again = DeformedDigits(images, labels, seed=3, chunk_size=64).chunk(7)  # a fresh stream
    assert torch.equal(first, again[0]) and (first_labels == again[1]).all()
    assert torch.equal(first, stream.chunk(7)[0])
    listed = list(stream.chunks(64 * 8 + 10))
    assert [len(y) for _, y in listed] == [64] * 8 + [10]
    assert torch.equal(listed[7][0], first)


def test_chunks_and_seeds_differ(digits):
    images, labels = digits
    a = DeformedDigits(images, labels, seed=0, chunk_size=64)
    b = DeformedDigits(images, labels, seed=1, chunk_size=64)
    assert not torch.equal(a.chunk(0)[0], a.chunk(1)[0])
    assert not torch.equal(a.chunk(0)[0], b.chunk(0)[0])
    assert (a.chunk(0)[1] != a.chunk(1)[1]).any()  # other source digits too


def test_pixel_range_and_ink_are_plausible(digits):
    images, labels = digits
    stream = DeformedDigits(images, labels, seed=0, chunk_size=256)
    generator = chunk_generator(0, 4)
    rows = torch.randint(len(images), (256,), generator=generator)  # the chunk's source digits
    deformed, y = stream.chunk(4)
    assert (y == labels[rows.numpy()]).all()
    assert deformed.min() >= 0 and deformed.max() <= 255 + 1e-3  # convex weights, float rounding
    ratio = deformed.sum(dim=(1, 2)) / torch.as_tensor(images[rows.numpy()]).sum(dim=(1, 2))
    assert 0.9 < float(ratio.median()) < 1.1  # the ink is moved, not created or lost
    assert 0.7 < float(ratio.quantile(0.05)) and float(ratio.quantile(0.95)) < 1.4
    assert float(ratio.min()) > 0.4 and float(ratio.max()) < 2.0
    moved = (deformed - torch.as_tensor(images[rows.numpy()])).abs().mean(dim=(1, 2))
    assert float(moved.min()) > 1.0  # every digit is deformed


def test_no_deformation_is_the_identity(digits):
    images, _ = digits
    still = Deformation(alpha=0, sigma=0, rotation=0, scale=0, shear=0, translation=0)
    out = deform(torch.as_tensor(images[:20]), still, torch.Generator().manual_seed(0))
    torch.testing.assert_close(out, torch.as_tensor(images[:20]), rtol=0, atol=1e-3)


def test_smoothing_is_scipys_gaussian_filter():
    fields = torch.rand(3, 2, 28, 28, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    expected = np.stack([[gaussian_filter(f, 4.0, mode="reflect", truncate=3.0) for f in pair]
                         for pair in fields.numpy()])
    np.testing.assert_allclose(gaussian_smooth(fields, 4.0).numpy(), expected, atol=1e-12)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="scale must be < 1"):
        Deformation(scale=1.0)
    with pytest.raises(ValueError, match="rotation must be >= 0"):
        Deformation(rotation=-1)
    with pytest.raises(ValueError, match="n labels"):
        DeformedDigits(np.zeros((3, 28, 28)), np.zeros(2))
    with pytest.raises(ValueError, match="chunk must be >= 0"):
        chunk_generator(0, -1)
