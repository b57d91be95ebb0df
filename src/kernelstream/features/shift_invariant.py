"""Shift-invariant kernels through Bochner's theorem: Gaussian RBF, Laplace, Matérn.

``k(x − y) = E_ω[cos(ωᵀ(x − y))]`` with ω drawn from the kernel's spectral measure. A block of
``r`` features uses ``r/2`` frequencies ``W = [ω_1 … ω_{r/2}]`` in the paired form

    ψ(x) = sqrt(2/r) · [cos(Wᵀx), sin(Wᵀx)]

which is unbiased, has ``‖ψ(x)‖² = 1`` exactly, and lower variance than ``cos(Wᵀx + b)``
(Sutherland & Schneider, UAI 2015). Odd block sizes use ``sqrt(2/r) cos(Wᵀx + b)``,
``b ~ U[0, 2π)``.

Every family takes one bandwidth σ or one lengthscale per feature (ARD, ``sigma`` a ``(d,)``
array): ``k(x, y) = k₁((x − y)/ℓ)``, whose frequencies are ``W = diag(1/ℓ)·G`` with ``G`` the
unit-bandwidth draws, so the cost stays O(n·D·d).

Every family takes ``sampling`` (``kernel_params={"sampling": ...}``): ``"iid"`` (default),
``"orthogonal"`` (ORF; Gaussian and Matérn only), ``"sobol"`` or ``"halton"`` (scrambled
quasi-Monte Carlo). They keep each frequency's law and lower the variance; see
:mod:`kernelstream.features.structured`, which also holds the Fastfood map.

Sparse rows (:class:`~kernelstream.ops.sparse.CSRRows`) are projected by their non-zeros,
``O(nnz·h)`` per block, with the rows of ``W`` of the columns that occur, kept in the map's row
tables (:mod:`.param_cache`); i.i.d. draws give those rows alone (:mod:`.row_draws`), the
other samplings draw the whole block once.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import gammaincinv, ndtri

from .. import rng
from ..ops.backend import fourier_contract_auto
from ..ops.fourier import fourier_block
from ..ops.linalg import gaussian_gram
from ..ops.sparse import CSRRows, sparse_matmul
from ..ops.trig import cos_into
from .bandwidth import check_lengthscales, is_lengthscale_vector
from .base import FeatureMap
from .param_cache import RowTable, Slab
from .row_draws import cauchy_rows, normal_rows
from .structured import SAMPLINGS, paired_cos_sin, qmc_uniform, standard_normal

__all__ = ["fourier_features", "FourierMap", "GaussianRFF", "LaplaceRFF", "MaternRFF"]


def fourier_features(X: torch.Tensor, W: list[torch.Tensor]) -> torch.Tensor:
    """Fourier features of ``K`` blocks.

    Parameters
    ----------
    X : (n, d) tensor
    W : list of K tensors: (d, h) frequencies of paired blocks (``r = 2h`` features each), or
        (d + 1, r) frequencies plus a last row of phases for odd ``r``.

    Returns
    -------
    (n, K, r) tensor: ``sqrt(1/h) · [cos(X W_k), sin(X W_k)]`` for each block (paired), or
    ``sqrt(2/r) · cos(X W_k + b_k)`` (random phases).
    """
    K, (rows, h) = len(W), W[0].shape
    n, d = X.shape
    W_all = W[0] if K == 1 else torch.cat(W, dim=1)  # (d or d+1, K·h)
    phases = rows == d + 1
    Z = (X @ W_all[:d]).view(n, K, h)  # one GEMM, O(n·d·K·h)
    if phases:
        Z.add_(W_all[d].view(K, h))  # Wᵀx + b
    return fourier_of_projection(Z, paired=not phases)


def fourier_of_projection(Z: torch.Tensor, paired: bool) -> torch.Tensor:
    """Features of ``K`` blocks from their projections ``Z`` ``(n, K, h)`` (``Wᵀx``, or
    ``Wᵀx + b`` with random phases), overwritten: ``(n, K, r)``."""
    if paired:
        return paired_cos_sin(Z)  # sqrt(2/r) [cos, sin] = sqrt(1/h) [cos, sin]
    return cos_into(Z, Z).mul_((2.0 / Z.shape[-1]) ** 0.5)  # sqrt(2/r) cos(Wᵀx + b)


class FourierMap(FeatureMap):
    """The base of the Fourier families (here and :class:`~.additive.ExpChi2`): paired features
    for even block sizes; ``cos(Wᵀx + b)`` with random phases for odd ones."""

    #: frequency samplers this family supports
    samplings: tuple[str, ...] = SAMPLINGS
    unit_diagonal = True  # k(x, x) = k(0) = 1
    bounded = True  # √(2/r)·cos, or [cos, sin]/√(r/2)

    def __init__(self, n_features_in, sigma=1.0, block_size=256, seed=0, *, sampling="iid", **kw):
        if sampling not in self.samplings:
            raise ValueError(f"sampling must be one of {self.samplings} for kernel "
                             f"{self.name!r}; got {sampling!r}.")
        super().__init__(n_features_in, sigma, block_size, seed, **kw)
        self.sampling = sampling

    def extra_params(self):
        return {} if self.sampling == "iid" else {"sampling": self.sampling}

    def _normal(self, block: int, device) -> torch.Tensor:
        """Standard normal frequencies ``(d, h)`` drawn by ``self.sampling``."""
        return standard_normal(self.sampling, *self._shape(), self.seed, block, device)

    def _features(self, X: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
        return fourier_features(X, params)

    # -- the hot loop: parameters in one pinned-prefix slab, fused contraction ----------------
    def _slab(self, device: torch.device, dtype: torch.dtype) -> Slab:
        rows, h = self._param_shape()
        return self._params.slab(rows, h, device, dtype)

    def _param_shape(self) -> tuple[int, int]:
        d, h = self._shape()
        return d + (0 if self.paired else 1), h

    def draw(self, block, device=None, dtype=torch.float32):
        """Parameters of one block: a view of the cached prefix, or drawn afresh beyond it."""
        device = torch.device(device or "cpu")
        slab = self._slab(device, dtype)
        if block < slab.limit:
            self._params.extend(slab, block + 1, self._draw)
            return slab.view(block, block + 1)
        return self._draw(block, device).to(dtype)

    def _groups(self, device: torch.device, dtype: torch.dtype):
        """``groups(J, k)`` for :func:`fourier_contract`: runs of ``k`` blocks as slab views
        (cached prefix) or regenerated into a scratch buffer (beyond the budget)."""
        slab = self._slab(device, dtype)
        return lambda J, k: self._params.groups(slab, J, k, self._draw)

    def _fused(self) -> bool:
        """The fused path applies when features are plain Fourier features of ``X`` (a subclass
        that transforms ``X`` first, such as ``exp_chi2``, overrides ``_features``)."""
        return type(self)._features is FourierMap._features

    def contract(self, X, coef, out=None):
        """``Σ_j ψ_j(X) coef_j``, fused: one GEMM + cos/sin + contraction per cache-sized chunk,
        on the backend :mod:`kernelstream.ops.backend` chooses (sparse rows: by chunks of
        :meth:`features`)."""
        if isinstance(X, CSRRows) or not self._fused():
            return super().contract(X, coef, out)
        return fourier_contract_auto(X, coef, self, self._groups(X.device, X.dtype), self.paired, out)

    def block_features(self, X, block, out=None):
        if isinstance(X, CSRRows) or not self._fused():
            return super().block_features(X, block, out)
        return fourier_block(X, self.draw(block, X.device, X.dtype), self.paired, out)

    # -- sparse rows: X W by the non-zeros, with the rows of W of the columns that occur -----
    def features(self, X, blocks):
        """As :meth:`FeatureMap.features`; sparse rows are projected by their non-zeros."""
        if not (isinstance(X, CSRRows) and self._fused()):
            return super().features(X, blocks)
        blocks = list(blocks)
        Z = torch.empty((X.shape[0], len(blocks), self._shape()[1]), dtype=X.dtype, device=X.device)
        for k, block in enumerate(blocks):
            Z[:, k] = self._sparse_projection(X, block)
        return fourier_of_projection(Z, self.paired)

    def _sparse_projection(self, X: CSRRows, block: int) -> torch.Tensor:
        """``Wᵀx`` (``+ b`` for odd blocks) of block ``block`` for the rows ``X``, ``(n, h)``, in
        ``O(nnz·h)``: the rows of ``W`` come from the block's row table, each drawn the first
        time its column occurs; over the table's budget, this batch's columns are gathered
        (the rows kept) and drawn (the others) for it alone."""
        crow, col, values = X.tensors()
        table = self._params.row_table(block, self.n_features_in, self._shape()[1], X.device, X.dtype)
        if table is not None and self._fill_rows(table, block, col):
            Z = sparse_matmul(crow, table.slot[col], values, table.rows())
        else:
            columns, inverse = torch.unique(col, return_inverse=True)
            Z = sparse_matmul(crow, inverse, values, self._rows_now(table, block, columns, X.dtype))
        if not self.paired:
            Z.add_(self._phases(block, X.device).to(X.dtype)[0])  # Wᵀx + b
        return Z

    def _fill_rows(self, table: RowTable, block: int, col: torch.Tensor) -> bool:
        """Draw into ``table`` the rows of the columns in ``col`` it lacks (every row it lacks
        for draws that are not i.i.d.); False when its budget cannot hold them."""
        missing = col[table.slot[col] < 0]
        if missing.numel() == 0:
            return True
        missing = torch.unique(missing) if self._draws_rows_alone() else torch.nonzero(table.slot < 0)[:, 0]
        if not self._params.reserve_rows(table, missing.numel()):
            return False
        rows = self._draw_rows(block, missing, table.slot.device).to(table.table.dtype)
        self._params.add_rows(table, missing, rows)
        return True

    def _rows_now(self, table: RowTable | None, block: int, columns: torch.Tensor, dtype) -> torch.Tensor:
        """Rows ``columns`` of block ``block``, ``(m, h)`` in ``dtype``: those ``table`` holds
        gathered, the others drawn now."""
        if table is None:
            return self._draw_rows(block, columns, columns.device).to(dtype)
        slots = table.slot[columns]
        kept = slots >= 0
        W = table.table.new_empty((columns.shape[0], table.table.shape[1]))
        W[kept] = table.table[slots[kept]]
        if not bool(kept.all()):
            W[~kept] = self._draw_rows(block, columns[~kept], columns.device).to(dtype)
        return W

    def _draw_rows(self, block: int, columns: torch.Tensor, device) -> torch.Tensor:
        """Rows ``columns`` of block ``block``'s frequencies, float64 ``(m, h)``: the same numbers
        as those rows of :meth:`_draw`. This default draws the whole block; families whose
        i.i.d. draws give one row alone override it."""
        return self._draw(block, device)[columns.to(device)]

    def _draws_rows_alone(self) -> bool:
        """Whether :meth:`_draw_rows` draws the rows asked for alone (an override, i.i.d.
        draws); else a row table takes every row it lacks from one draw of the block."""
        return self.sampling == "iid" and type(self)._draw_rows is not FourierMap._draw_rows

    def block_param_numel(self) -> int:
        d, h = self._shape()
        return (d + (0 if self.paired else 1)) * h

    @property
    def paired(self) -> bool:
        return self.block_size % 2 == 0

    def _shape(self) -> tuple[int, int]:
        return self.n_features_in, (self.block_size // 2 if self.paired else self.block_size)

    def _with_phases(self, W: torch.Tensor, block: int) -> torch.Tensor:
        return W if self.paired else torch.cat([W, self._phases(block, W.device)])

    def _phases(self, block: int, device) -> torch.Tensor:
        """The phases ``b ~ U[0, 2π)`` of an odd block, ``(1, h)`` float64."""
        return 2 * math.pi * rng.uniform((1, self._shape()[1]), self.seed, block, rng.Stream.PHASES, device)

    def _distances(self, X: torch.Tensor, Y: torch.Tensor, p: float) -> torch.Tensor:
        return torch.cdist(X, Y, p=p)

    def _scaled(self, W: torch.Tensor, columns: torch.Tensor | None = None) -> torch.Tensor:
        """Unit-bandwidth frequencies ``W`` ``(d, h)`` at this map's bandwidth: ``W / σ``, or
        ``diag(1/ℓ)·W`` for per-feature lengthscales (``columns``: the rows of ``W`` given)."""
        if not isinstance(self.sigma, np.ndarray):
            return W / self.sigma
        ell = torch.tensor(self.sigma, dtype=W.dtype, device=W.device)
        return W / (ell if columns is None else ell[columns.to(W.device)])[:, None]


def _without_autograd(X: torch.Tensor, Y: torch.Tensor, sigma) -> bool:
    """Whether ``k_σ(X, Y)`` needs no gradient: dense rows and a plain number ``σ``."""
    return (not isinstance(sigma, torch.Tensor) and not X.requires_grad and not Y.requires_grad
            and X.layout == torch.strided and Y.layout == torch.strided)


def unit_bandwidth(X: torch.Tensor, Y: torch.Tensor, sigma) -> tuple:
    """``(X, Y, σ)`` unchanged for one bandwidth; ``(X/ℓ, Y/ℓ, 1.0)`` for per-feature
    lengthscales ``ℓ`` (an array or a 1-D tensor, autograd flowing through it), as
    ``k_ℓ(x, y) = k₁((x − y)/ℓ)``."""
    if not is_lengthscale_vector(sigma):
        return X, Y, sigma
    ell = sigma if isinstance(sigma, torch.Tensor) else torch.tensor(np.asarray(sigma, dtype=np.float64))
    ell = ell.to(dtype=X.dtype, device=X.device)
    if ell.shape != (X.shape[1],):
        check_lengthscales(ell, X.shape[1])  # raises: the wrong length
    return X / ell, Y / ell, 1.0


class GaussianRFF(FourierMap):
    """Gaussian RBF kernel ``exp(−‖x − y‖² / (2σ²))``; frequencies ``ω ~ N(0, σ⁻² I)``."""

    name = "rbf"
    per_feature_lengthscales = True

    def kernel_at(self, X, Y, sigma):
        X, Y, sigma = unit_bandwidth(X, Y, sigma)
        if _without_autograd(X, Y, sigma):
            return gaussian_gram(X, Y, float(sigma))
        return torch.exp(-self._distances(X, Y, 2.0).square() / (2 * sigma**2))

    def kernel_into(self, X, Y, out):
        X, Y, sigma = unit_bandwidth(X, Y, self.sigma)
        return gaussian_gram(X, Y, float(sigma), out=out)

    def _draw(self, block, device):
        return self._with_phases(self._scaled(self._normal(block, device)), block)  # ω ~ N(0, σ⁻² I)

    def _draw_rows(self, block, columns, device):
        if self.sampling != "iid":
            return super()._draw_rows(block, columns, device)
        h = self._shape()[1]
        return self._scaled(normal_rows(columns, h, self.seed, block, rng.Stream.WEIGHTS, device), columns)

    @property
    def gaussian_iid_paired(self) -> bool:
        """Whether this is the plain Gaussian map (this class, not a subclass) with i.i.d.
        frequencies in paired blocks: the blocks the fused kernels of
        :mod:`kernelstream.ops.triton_fourier` draw themselves (they read this, so that ops
        need not import the feature maps)."""
        return (type(self) is GaussianRFF and self.sampling == "iid" and self.paired
                and not isinstance(self.sigma, np.ndarray))


class LaplaceRFF(FourierMap):
    """Laplace (L1) kernel ``exp(−‖x − y‖₁ / σ)``; frequencies i.i.d. ``Cauchy(0, 1/σ)``."""

    name = "laplace"
    distance = "cityblock"
    samplings = ("iid", "sobol", "halton")  # not radial: no orthogonal draws
    per_feature_lengthscales = True

    def kernel_at(self, X, Y, sigma):
        X, Y, sigma = unit_bandwidth(X, Y, sigma)
        return torch.exp(-self._distances(X, Y, 1.0) / sigma)

    def _draw(self, block, device):
        if self.sampling == "iid":
            W = rng.cauchy(self._shape(), self.seed, block, rng.Stream.WEIGHTS, device)
        else:
            d, h = self._shape()
            u = qmc_uniform(h, d, self.seed, block, self.sampling).T
            W = torch.as_tensor(np.tan(np.pi * (u - 0.5)), device=device)  # Cauchy quantile
        return self._with_phases(self._scaled(W), block)

    def _draw_rows(self, block, columns, device):
        if self.sampling != "iid":
            return super()._draw_rows(block, columns, device)
        h = self._shape()[1]
        return self._scaled(cauchy_rows(columns, h, self.seed, block, rng.Stream.WEIGHTS, device), columns)


class MaternRFF(FourierMap):
    """Matérn kernel of smoothness ``nu`` (a positive half-integer) and length-scale ``σ``.

    ``k(ρ) = 2^{1−ν}/Γ(ν) · (√(2ν) ρ/σ)^ν K_ν(√(2ν) ρ/σ)``; its spectral measure is a multivariate
    Student t: ``ω = g · sqrt(2ν/u) / σ`` with ``g ~ N(0, I)`` and ``u ~ χ²(2ν)`` per frequency.
    """

    name = "matern"
    per_feature_lengthscales = True

    def __init__(self, n_features_in, sigma=1.0, block_size=256, seed=0, *, nu=1.5, **kw):
        if not (nu > 0 and float(2 * nu).is_integer()):
            raise ValueError(
                f"Matérn nu must be a positive half-integer (0.5, 1.5, 2.5, ...); got {nu!r}."
            )
        super().__init__(n_features_in, sigma, block_size, seed, **kw)
        self.nu = float(nu)

    def extra_params(self):
        return {"nu": self.nu, **super().extra_params()}

    def kernel_at(self, X, Y, sigma):
        X, Y, sigma = unit_bandwidth(X, Y, sigma)
        s = math.sqrt(2 * self.nu) * self._distances(X, Y, 2.0) / sigma  # √(2ν) ρ/σ
        if self.nu == 0.5:
            return torch.exp(-s)
        if self.nu == 1.5:
            return (1 + s) * torch.exp(-s)
        if self.nu == 2.5:
            return (1 + s + s.square() / 3) * torch.exp(-s)
        from scipy.special import gamma, kv

        z = s.detach().cpu().double().numpy()
        with np.errstate(invalid="ignore"):
            k = 2 ** (1 - self.nu) / gamma(self.nu) * z**self.nu * kv(self.nu, z)
        k[z == 0] = 1.0
        return torch.as_tensor(k, dtype=X.dtype, device=X.device)

    def _draw(self, block, device):
        d, h = self._shape()
        if self.sampling in ("iid", "orthogonal"):
            g = self._normal(block, device)
            u = rng.chi_square((h,), int(2 * self.nu), self.seed, block, rng.Stream.CHI2, device)
        else:  # one (d+1)-dimensional QMC point per frequency: d normals and the χ² radius
            points = qmc_uniform(h, d + 1, self.seed, block, self.sampling)
            g = torch.as_tensor(ndtri(points[:, :d]).T.copy(), device=device)
            u = torch.as_tensor(2 * gammaincinv(self.nu, points[:, d]), device=device)  # χ²(2ν)
        return self._with_phases(self._scaled(g * torch.sqrt(2 * self.nu / u)), block)

    def _draw_rows(self, block, columns, device):
        if self.sampling != "iid":
            return super()._draw_rows(block, columns, device)
        h = self._shape()[1]
        g = normal_rows(columns, h, self.seed, block, rng.Stream.WEIGHTS, device)
        u = rng.chi_square((h,), int(2 * self.nu), self.seed, block, rng.Stream.CHI2, device)
        return self._scaled(g * torch.sqrt(2 * self.nu / u), columns)
