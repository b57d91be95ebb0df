"""A Nyström basis of training rows, cached for the solvers of :mod:`.cached`.

``M`` centres ``C`` (training rows in a seeded order) define the whitened features

    ``φ(x) = L⁻¹k_C(x)``,  ``LLᵀ = K_CC + εI``,

whose inner products are the Nyström approximation ``φ(x)ᵀφ(y) = k_C(x)ᵀ(K_CC + εI)⁻¹k_C(y)``
of the kernel (Williams & Seeger 2001); a model ``f = φᵀW + b`` is ``k_C(x)ᵀβ + b`` with
``β = L⁻ᵀW``. :class:`NystroemCache` keeps ``K_XC``, not ``Φ``: whitening every row costs
``nM²``, a product through the triangular factor ``M²C``. Centres come in blocks and only grow;
the factor of the first ``M`` centres is the leading block of any larger one (block Cholesky),
so a grown basis leaves the earlier features unchanged and a solution at ``M`` starts the next
size as it is. At ``d = 784`` the basis reaches a random-feature basis's error with a quarter
of its size (record: docs/decisions/research-mnist10-basis.md).

:class:`NystroemCache` offers what :func:`~.cached.ridge_pcg` and
:class:`~.cached.SketchPreconditioner` use of a :class:`~.cached.FeatureCache` (products,
sketch rows and their Gram), with the same convention ``Φ = Ψ/√J`` over ``J`` blocks.
"""

from __future__ import annotations

import math

import torch

from ..features.base import FeatureMap
from ..ops.linalg import narrow_matmul, row_gram, transposed_matmul
from .cached import cache_bytes, chunk_rows, jittered_cholesky, normal_pass
from .feature_rows import INTERCEPT_FEATURE

__all__ = ["NystroemBasis", "NystroemCache"]

#: ``ε`` of ``K_CC + εI``, relative to the mean of ``K_CC``'s diagonal
DEFAULT_JITTER = 1e-6


class NystroemBasis:
    """Centres in blocks of ``block_size`` rows of ``candidates`` (in order) and the Cholesky
    factor ``L`` (float64, lower) of ``K_CC + εI`` of the first :attr:`n_centres`.

    Parameters
    ----------
    kernel_map : FeatureMap
        Whose exact :meth:`~kernelstream.features.base.FeatureMap.kernel` is ``k``.
    candidates : torch.Tensor of shape (m, d)
        The rows that become centres, first to last.
    block_size : int
        Centres added at a time.
    jitter : float, default=1e-6
        ``ε`` relative to the mean of ``K_CC``'s diagonal (more where round-off needs it).
    """

    def __init__(self, kernel_map: FeatureMap, candidates: torch.Tensor, block_size: int,
                 jitter: float = DEFAULT_JITTER):
        if block_size < 1:
            raise ValueError(f"block_size must be positive; got {block_size}.")
        if not jitter >= 0:
            raise ValueError(f"jitter must be non-negative; got {jitter!r}.")
        self.kernel_map, self.block_size, self.jitter = kernel_map, int(block_size), float(jitter)
        self.candidates = candidates
        self._scale = 1.0  # the mean of K_CC's diagonal, fixed by the first block
        self.factor = torch.zeros((0, 0), dtype=torch.float64, device=candidates.device)

    @property
    def n_centres(self) -> int:
        return self.factor.shape[0]

    @property
    def n_blocks(self) -> int:
        return self.n_centres // self.block_size

    @property
    def epsilon(self) -> float:
        """``ε`` of ``K_CC + εI``: ``jitter`` times the mean of ``K_CC``'s diagonal."""
        return self.jitter * self._scale

    @property
    def max_blocks(self) -> int:
        """Blocks the candidates hold."""
        return self.candidates.shape[0] // self.block_size

    @property
    def centres(self) -> torch.Tensor:
        return self.candidates[:self.n_centres]

    def kernel(self, X: torch.Tensor, first: int, last: int,
               out: torch.Tensor | None = None) -> torch.Tensor:
        """``k(X, C[first:last])`` in ``X``'s dtype into one tensor (``out``, where given)."""
        C = self.candidates[first:last].to(X.dtype)
        if out is None:
            out = torch.empty((X.shape[0], last - first), dtype=X.dtype, device=X.device)
        return self.kernel_map.kernel_into(X, C, out)

    def grow(self, n_blocks: int) -> None:
        """Extend ``L`` to ``n_blocks`` blocks: ``B = L⁻¹K_C,new``, ``L_new = chol(K_new,new +
        εI − BᵀB)``, ``L ← [[L, 0], [Bᵀ, L_new]]``."""
        if n_blocks > self.max_blocks:
            raise ValueError(f"A Nystrom basis of {n_blocks} blocks of {self.block_size} centres "
                             f"needs {n_blocks * self.block_size:,} candidate rows; it has "
                             f"{self.candidates.shape[0]:,}. Pass fewer n_components.")
        old, new = self.n_centres, n_blocks * self.block_size
        if new <= old:
            return
        centres = self.candidates[:new].double()
        fresh = self.kernel_map.kernel(centres[old:], centres[old:]).double()
        if old == 0:
            self._scale = float(fresh.diagonal().mean())
        fresh.diagonal().add_(self.epsilon)
        if old:
            B = torch.linalg.solve_triangular(
                self.factor, self.kernel_map.kernel(centres[:old], centres[old:]).double(), upper=False)
            fresh -= B.T @ B
        corner = jittered_cholesky(fresh)  # its lower triangle alone is read
        factor = self.factor.new_zeros((new, new))
        factor[:old, :old] = self.factor
        if old:
            factor[old:, :old] = B.T
        factor[old:, old:] = corner
        self.factor = factor

    def whiten(self, K_rows: torch.Tensor, factor: torch.Tensor | None = None) -> torch.Tensor:
        """``Φ = (L⁻¹Kᵀ)ᵀ`` float64 of rows' ``K = k(x, C)`` ``(m, M)`` (``M ≤`` :attr:`n_centres`),
        solved in ``factor``'s dtype (a copy of ``L``'s leading block; ``L`` itself by default)."""
        M = K_rows.shape[1]
        factor = self.factor[:M, :M] if factor is None else factor[:M, :M]
        return torch.linalg.solve_triangular(factor, K_rows.to(factor.dtype).T, upper=False).T.double()

    def coefficients(self, W: torch.Tensor) -> torch.Tensor:
        """``β = L⁻ᵀW`` ``(M, C)`` float64: ``φ(x)ᵀW = k_C(x)ᵀβ``."""
        M = W.shape[0]
        return torch.linalg.solve_triangular(self.factor[:M, :M].T, W.double(), upper=True)


class NystroemCache:
    """``K_XC`` of the rows ``X`` for a :class:`NystroemBasis`, held as column parts that only
    grow; ``matmul(θ) = Φ̃θ`` and ``rmatmul(U) = Φ̃ᵀU`` with ``φ̃ = [L⁻¹k_C; c]``, each a pass
    over ``K_XC`` and a triangular solve. ``budget`` bounds the bytes held, as
    :class:`~.cached.FeatureCache`'s. ``factor_dtype``: the triangular factor's in the
    products (float64 by default; float32 halves its memory traffic, within float32 round-off
    of float64 on float32 rows). The columns stay in ``X``'s dtype: float16 columns, whitened by
    ``L⁻¹``, put 2.6% relative error in the products of a test basis whose factor has condition
    number 800.
    """

    #: :meth:`rows` solves for the features (``M²`` a row), not reads them
    reads_rows = False

    def __init__(self, basis: NystroemBasis, X: torch.Tensor, budget: int | None = None,
                 factor_dtype: torch.dtype = torch.float64, centre_rows: torch.Tensor | None = None):
        self.basis, self.X, self.budget = basis, X, budget
        self.centre_rows = centre_rows  # the rows of X that are the centres, in order
        self.feature_map = basis.kernel_map  # whose exact kernel the basis uses
        self.storage = X.dtype
        self.factor_dtype = factor_dtype
        self._narrow_factor: torch.Tensor | None = None
        self.n_rows, self.n_blocks = X.shape[0], 0
        self.parts: list[torch.Tensor] = []
        # (Ψ of the sketch rows, ΨΨᵀ, their positions, whether Ψ holds rows of L)
        self._sketch_gram: tuple | None = None

    @property
    def n_features(self) -> int:
        return self.n_blocks * self.basis.block_size

    @property
    def nbytes(self) -> int:
        return sum(part.numel() * part.element_size() for part in self.parts)

    def fits(self, n_blocks: int) -> bool:
        needed = cache_bytes(self.n_rows, n_blocks * self.basis.block_size, self.storage)
        return n_blocks <= self.basis.max_blocks and (self.budget is None or needed <= self.budget)

    def grow(self, n_blocks: int) -> None:
        """The basis to ``n_blocks`` blocks (where it has fewer) and ``k(X, C)`` of its new
        centres."""
        if n_blocks <= self.n_blocks:
            return
        if not self.fits(n_blocks) and n_blocks <= self.basis.max_blocks:
            needed = cache_bytes(self.n_rows, n_blocks * self.basis.block_size, self.storage)
            raise MemoryError(
                f"The kernel columns of {self.n_rows:,} rows x {n_blocks * self.basis.block_size:,} "
                f"centres need {needed / 2**30:.2f} GiB, over the budget of "
                f"{self.budget / 2**30:.2f} GiB; raise cache_bytes or pass fewer n_components.")
        self.basis.grow(n_blocks)
        r = self.basis.block_size
        self.parts.append(self.basis.kernel(self.X, self.n_blocks * r, n_blocks * r))
        self.n_blocks, self._sketch_gram, self._narrow_factor = n_blocks, None, None

    def redraw(self, kernel_map: FeatureMap) -> None:
        """The same centres under another kernel map (another bandwidth): a new basis of as
        many blocks, its kernel columns written over the parts' own memory."""
        basis = NystroemBasis(kernel_map, self.basis.candidates, self.basis.block_size,
                              self.basis.jitter)
        basis.grow(self.n_blocks)
        self.basis, self.feature_map = basis, kernel_map
        self._sketch_gram, self._narrow_factor, first = None, None, 0
        for part in self.parts:
            basis.kernel(self.X, first, first + part.shape[1], out=part)
            first += part.shape[1]

    def _factor(self) -> torch.Tensor:
        """``L`` of the cached centres in :attr:`factor_dtype` (a narrower copy kept)."""
        factor = self.basis.factor[:self.n_features, :self.n_features]
        if self.factor_dtype == factor.dtype:
            return factor
        if self._narrow_factor is None:
            self._narrow_factor = factor.to(self.factor_dtype)
        return self._narrow_factor

    def matmul(self, theta: torch.Tensor) -> torch.Tensor:
        """``Φ̃θ`` ``(n, C)`` float64 for ``θ`` ``(M+1, C)``."""
        factor = self._factor()
        beta = torch.linalg.solve_triangular(factor.T, theta[:-1].to(factor.dtype), upper=True)
        beta, out, start = beta.to(self.X.dtype), None, 0
        for part in self.parts:
            product = narrow_matmul(part, beta[start:start + part.shape[1]])
            out = product if out is None else out + product
            start += part.shape[1]
        return out.double() + INTERCEPT_FEATURE * theta[-1].double()

    def rmatmul(self, U: torch.Tensor) -> torch.Tensor:
        """``Φ̃ᵀU`` ``(M+1, C)`` float64 for ``U`` ``(n, C)``."""
        low, factor = U.to(self.X.dtype), self._factor()
        kernel_side = torch.cat([transposed_matmul(part, low).to(factor.dtype) for part in self.parts])
        whitened = torch.linalg.solve_triangular(factor, kernel_side, upper=False).double()
        return torch.cat([whitened, INTERCEPT_FEATURE * U.double().sum(dim=0, keepdim=True)])

    def normal_matmul(self, theta: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """``Φ̃ᵀ(w ⊙ Φ̃θ)`` ``(M+1, C)`` float64 (``w`` ``(n, C)`` or ``(n, 1)``) in one pass over
        ``K_XC``: each few rows' columns are read once for both products while they are in
        the processor's cache (``rmatmul(w * matmul(θ))`` reads them twice; 54,000 × 16,384
        float32 columns are 3.5 GB)."""
        factor = self._factor()
        beta = torch.linalg.solve_triangular(factor.T, theta[:-1].to(factor.dtype), upper=True)
        beta, intercept = beta.to(self.X.dtype), INTERCEPT_FEATURE * theta[-1].double()
        betas = list(torch.split(beta, [part.shape[1] for part in self.parts]))
        step = chunk_rows(self.n_features, theta.shape[1], self.X.device)
        chunks = ((slice(i, i + step), [part[i:i + step] for part in self.parts])
                  for i in range(0, self.n_rows, step))
        kernel_side, total = normal_pass(chunks, betas, intercept, w)
        whitened = torch.linalg.solve_triangular(factor, kernel_side.to(factor.dtype),
                                                 upper=False).double()
        return torch.cat([whitened, INTERCEPT_FEATURE * total[None, :]])

    def rows(self, index: torch.Tensor) -> torch.Tensor:
        """``Φ`` of the rows ``index`` ``(m, M)`` in ``X``'s dtype, solved (an exact solve's,
        never the sketch's rows of ``L``)."""
        return (self._whitened(index, exact=True) * self.n_blocks**-0.5).to(self.X.dtype)

    def psi(self, index: torch.Tensor) -> torch.Tensor:
        """``Ψ = √J·Φ`` of the rows ``index`` in ``X``'s dtype (the convention ``Φ = Ψ/√J`` of
        :class:`~.cached.FeatureCache`)."""
        return self._whitened(index).to(self.X.dtype)

    def gram(self, index: torch.Tensor, precise: bool = False) -> torch.Tensor:
        """``ΨΨᵀ`` of the rows ``index`` ``(m, m)`` float64. The sketch's rows are whitened once
        (``mM²``) and kept: the Gram of any subset of them (a Newton step's active sketch rows)
        is read from theirs."""
        positions = self._kept(index)
        if positions is None:
            Psi = self._whitened(index)
            centres = self._are_centres(index)
            gram = self._centres_gram(index) if centres else row_gram(Psi)
            where = torch.full((self.n_rows,), -1, dtype=torch.long, device=index.device)
            where[index] = torch.arange(len(index), device=index.device)
            self._sketch_gram = (Psi, (gram + gram.T) / 2, where, centres)
            positions = torch.arange(len(index), device=index.device)
        return self._sketch_gram[1][positions][:, positions]

    def _kept(self, index: torch.Tensor) -> torch.Tensor | None:
        """Positions of ``index`` among the kept sketch rows, ``None`` unless all are kept."""
        if self._sketch_gram is None:
            return None
        positions = self._sketch_gram[2][index]
        return None if bool((positions < 0).any()) else positions

    def _whitened(self, index: torch.Tensor, exact: bool = False) -> torch.Tensor:
        """``Ψ = √J·L⁻¹k_C`` float64 of the rows ``index``: the kept sketch rows' or anew;
        rows of ``L`` for the first centres unless ``exact``."""
        positions = self._kept(index)
        if positions is not None and not (exact and self._sketch_gram[3]):  # kept, and exact enough
            return self._sketch_gram[0][positions]
        if not exact and self._are_centres(index):  # ψ(c_i) = Lᵀe_i − εL⁻¹e_i: row i of L
            return self.basis.factor[:len(index), :self.n_features] * math.sqrt(self.n_blocks)
        K_rows = torch.cat([part[index] for part in self.parts], dim=1)
        return self.basis.whiten(K_rows, self._factor()) * math.sqrt(self.n_blocks)

    def _centres_gram(self, index: torch.Tensor) -> torch.Tensor:
        """``ΨΨᵀ = J·L_sL_sᵀ = J·(K_CC + εI)`` of the first ``s`` centres (float64), read from
        their cached columns (``2s³`` saved: 22 s for 8,192 centres, one thread)."""
        s = len(index)
        K_rows = torch.cat([part[index] for part in self.parts], dim=1)[:, :s].double()
        K_rows.diagonal().add_(self.basis.epsilon)
        return K_rows * self.n_blocks

    def _are_centres(self, index: torch.Tensor) -> bool:
        """Whether the rows ``index`` are the first centres, in order: their whitened features
        are then the rows of ``L`` (up to the jitter's ``εL⁻¹e_i``, ``‖·‖ ≤ √ε``; a
        preconditioner's sketch needs no more), read, not solved (``sM²`` saved: 17 s for
        4,096 of 16,384 centres, one thread), and zero beyond column ``s``."""
        return (self.centre_rows is not None and len(index) <= self.n_features
                and bool(torch.equal(index, self.centre_rows[:len(index)].to(index.device))))

    def for_rows(self, X: torch.Tensor, once: bool = False) -> "NystroemCache":
        """A cache of other rows (held-out ones) on the same basis, empty until grown (its
        columns are cached either way: ``once`` is the interface's)."""
        return NystroemCache(self.basis, X.to(self.X.dtype), factor_dtype=self.factor_dtype)

    def fitted(self, theta: torch.Tensor, cache_bytes: int | None = None) -> tuple:
        """The model ``θ`` ``(M+1, C)`` as ``(map, coefficients)`` in the expansion's convention
        ``f = Σ_j ψ_j(x)ᵀθ_j/√J + c·θ_b``: the kernel's columns at the centres
        (:class:`~kernelstream.features.kernel_columns.KernelColumns`) and ``[√J·L⁻ᵀθ; θ_b]``."""
        from ..features.kernel_columns import KernelColumns

        beta = self.basis.coefficients(theta[:-1]) * math.sqrt(self.n_blocks)
        kwargs = {} if cache_bytes is None else {"cache_bytes": cache_bytes}
        feature_map = KernelColumns(self.basis.kernel_map, self.basis.centres, self.basis.block_size,
                                    **kwargs)
        return feature_map, torch.cat([beta, theta[-1:].double()])

    def first_blocks(self, n_blocks: int) -> "NystroemCache":
        """This cache at its own size (a Nyström fit solves one size: nothing is dropped)."""
        if n_blocks != self.n_blocks:
            raise ValueError(f"a Nystrom cache holds {self.n_blocks} blocks, not {n_blocks}")
        return self

    def extended(self, theta: torch.Tensor, n_blocks: int) -> torch.Tensor:
        """``θ`` of ``J`` blocks as a start at ``n_blocks``: the earlier centres' features do not
        change as the basis grows, so the new coefficients are 0 and the rest stay."""
        grown = theta.new_zeros((n_blocks * self.basis.block_size + 1, theta.shape[1]))
        grown[:theta.shape[0] - 1] = theta[:-1]
        grown[-1] = theta[-1]
        return grown
