"""A seeded stream of deformed MNIST digits: the MNIST-8M construction at any length.

Loosli, Canu and Bottou (2007) made MNIST-8M by deforming each of the 60,000 training digits
many times. Here every chunk of the stream is a pure function of ``(seed, chunk index)``: chunk
``c`` draws its source digits and its deformations from a ``torch.Generator`` seeded with
``SeedSequence([seed, c])``, so any chunk can be regenerated alone, in any order, and the
stream needs no storage. A digit ``I`` becomes ``I(A p + t + u(p))`` (bilinear, zero outside),
with, for output pixel ``p`` (coordinates centred on the image):

- ``u = α · (G_σe * U)``, ``U`` two fields of i.i.d. ``Uniform(−1, 1)`` displacements per pixel
  smoothed by a normalised Gaussian of width ``σ_e`` pixels (reflecting borders): Simard, Steinkraus
  and Platt (2003)'s elastic distortion;
- ``A = R(θ) · [[s, h], [0, s]]`` a small affine move (rotation ``θ``, scale ``s``, shear ``h``)
  and ``t`` a translation, each uniform in ``±`` its bound.

Images stay in the pixel range of their source (bilinear weights are convex, out-of-image
pixels are 0). Implemented with ``torch.nn.functional.grid_sample`` on the CPU, in float32.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["Deformation", "DeformedDigits", "chunk_generator", "deform", "gaussian_smooth"]


@dataclass(frozen=True)
class Deformation:
    """Bounds of the random deformation (pixels and degrees).

    Simard et al. use ``σ_e = 4``, ``α = 34`` for a convolutional net; the default ``α = 20`` is
    milder (the 5–95% range of a digit's ink, deformed over original, is 0.79–1.29 with the
    affine move, against 0.71–1.40 at ``α = 34``), the affine bounds are those of common MNIST
    augmentation, and the translation is small because MNIST digits are centred by mass.
    """

    alpha: float = 20.0  #: elastic scale α (pixels per unit of smoothed field)
    sigma: float = 4.0  #: elastic smoothing width σ_e (pixels)
    rotation: float = 10.0  #: degrees, θ ~ U(−rotation, rotation)
    scale: float = 0.1  #: s ~ U(1 − scale, 1 + scale)
    shear: float = 0.15  #: h ~ U(−shear, shear)
    translation: float = 1.0  #: pixels, t ~ U(−translation, translation)²

    def __post_init__(self):
        for name in ("alpha", "sigma", "rotation", "scale", "shear", "translation"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"Deformation.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.scale >= 1:
            raise ValueError(f"Deformation.scale must be < 1 (s = 1 ± scale > 0), got {self.scale}")


def chunk_generator(seed: int, chunk: int) -> torch.Generator:
    """The generator of chunk ``chunk`` of stream ``seed``: ``SeedSequence([seed, chunk])``."""
    if seed < 0 or chunk < 0:
        raise ValueError(f"seed and chunk must be >= 0, got {seed} and {chunk}")
    state = np.random.SeedSequence([seed, chunk]).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 31 ^ int(state[1]))


def smoothing_matrix(size: int, sigma: float) -> torch.Tensor:
    """``S`` ``(size, size)``: ``S @ v`` is ``v`` convolved with a normalised Gaussian of width
    ``sigma`` (radius ``3σ``, at most ``size − 1``) with reflecting borders (scipy's
    ``gaussian_filter`` default, ``mode="reflect"``: ``… v1 v0 | v0 v1 …``)."""
    if sigma == 0:
        return torch.eye(size, dtype=torch.float64)
    radius = min(int(math.ceil(3 * sigma)), size - 1)
    offsets = torch.arange(-radius, radius + 1)
    taps = torch.exp(-0.5 * (offsets.double() / sigma) ** 2)
    taps /= taps.sum()
    source = torch.arange(size)[:, None] + offsets[None, :]  # (size, taps) positions read
    source = torch.where(source < 0, -source - 1, source)  # reflect at the left border
    source = torch.where(source >= size, 2 * size - 1 - source, source)  # and at the right
    S = torch.zeros(size, size, dtype=torch.float64)
    S.index_put_((torch.arange(size)[:, None].expand_as(source), source), taps.expand_as(source),
                 accumulate=True)
    return S


def gaussian_smooth(fields: torch.Tensor, sigma: float) -> torch.Tensor:
    """``G_σ * fields`` for ``(…, h, w)`` fields: ``S_h F S_wᵀ`` (:func:`smoothing_matrix`)."""
    S_h = smoothing_matrix(fields.shape[-2], sigma).to(fields.dtype)
    S_w = smoothing_matrix(fields.shape[-1], sigma).to(fields.dtype)
    return S_h @ fields @ S_w.T


def _affine(n: int, spec: Deformation, size: int, generator: torch.Generator) -> torch.Tensor:
    """``(n, 2, 3)`` matrices ``[A | t]`` in grid_sample's normalised coordinates."""
    u = torch.rand(n, 5, generator=generator) * 2 - 1  # U(−1, 1): rotation, scale, shear, tx, ty
    angle = torch.deg2rad(u[:, 0] * spec.rotation)
    s, h = 1 + u[:, 1] * spec.scale, u[:, 2] * spec.shear
    cos, sin = torch.cos(angle), torch.sin(angle)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0], theta[:, 0, 1] = cos * s, cos * h - sin * s  # R(θ)·[[s, h], [0, s]]
    theta[:, 1, 0], theta[:, 1, 1] = sin * s, sin * h + cos * s
    theta[:, :, 2] = u[:, 3:5] * spec.translation * 2 / size  # pixels → normalised units
    return theta


def deform(images: torch.Tensor, spec: Deformation, generator: torch.Generator) -> torch.Tensor:
    """Random deformations of ``(n, h, w)`` images (``h = w``), one per image, float32."""
    images = torch.as_tensor(images, dtype=torch.float32)
    n, h, w = images.shape
    if h != w:
        raise ValueError(f"images must be square, got {h}x{w}")
    centres = (2 * torch.arange(w, dtype=torch.float32) + 1) / w - 1  # pixel centres in (−1, 1)
    pixels = torch.stack([centres.repeat(h), centres.repeat_interleave(w), torch.ones(h * w)], 1)
    grid = (pixels @ _affine(n, spec, w, generator).transpose(1, 2)).view(n, h, w, 2)  # A p + t
    noise = torch.rand(n, 2, h, w, generator=generator) * 2 - 1  # U(−1, 1) per pixel and axis
    displacement = gaussian_smooth(noise, spec.sigma).mul_(spec.alpha * 2 / w)  # u(p), normalised
    grid += displacement.permute(0, 2, 3, 1)
    out = F.grid_sample(images[:, None], grid, mode="bilinear", padding_mode="zeros",
                        align_corners=False)
    return out[:, 0]


class DeformedDigits:
    """The stream: chunk ``c`` is ``chunk_size`` deformed digits drawn (with replacement) from
    ``images`` ``(n, h, w)`` with their ``labels``, a pure function of ``(seed, c)``.

    Examples
    --------
    >>> import numpy as np
    >>> digits = np.zeros((3, 28, 28), np.float32); digits[:, 10:18, 12:16] = 255
    >>> stream = DeformedDigits(digits, np.arange(3), seed=0, chunk_size=4)
    >>> X, y = stream.chunk(5)
    >>> X.shape, bool((stream.chunk(5)[0] == X).all())
    ((4, 28, 28), True)
    """

    def __init__(self, images, labels, *, seed: int = 0, chunk_size: int = 4096,
                 deformation: Deformation = Deformation()):
        images = torch.as_tensor(np.asarray(images), dtype=torch.float32)
        labels = np.asarray(labels)
        if images.ndim != 3 or images.shape[0] != labels.shape[0] or images.shape[0] == 0:
            raise ValueError(f"need images (n, h, w) and n labels, n > 0; got {tuple(images.shape)} "
                             f"and {labels.shape}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        self.images, self.labels = images, labels
        self.seed, self.chunk_size, self.deformation = seed, chunk_size, deformation

    def chunk(self, index: int) -> tuple[torch.Tensor, np.ndarray]:
        """Deformed images ``(chunk_size, h, w)`` float32 and their labels ``(chunk_size,)``."""
        generator = chunk_generator(self.seed, index)
        rows = torch.randint(self.images.shape[0], (self.chunk_size,), generator=generator)
        return deform(self.images[rows], self.deformation, generator), self.labels[rows.numpy()]

    def chunks(self, n_samples: int, start: int = 0) -> Iterator[tuple[torch.Tensor, np.ndarray]]:
        """Chunks ``start, start + 1, …`` until ``n_samples`` digits (the last one cut short)."""
        for offset in range(0, n_samples, self.chunk_size):
            X, y = self.chunk(start + offset // self.chunk_size)
            keep = min(self.chunk_size, n_samples - offset)
            yield X[:keep], y[:keep]
