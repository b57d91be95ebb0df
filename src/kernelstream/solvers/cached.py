"""Random-feature ridge on a cached feature matrix: preconditioned conjugate gradients whose
iterations cost two matrix products, not a regeneration of the features.

The objective is the squared loss's of :mod:`.direct` and :mod:`.conjugate`,

    ``F(θ) = Σ_i w_i ½(φ̃_iᵀθ − y_i)²/n + (α/2)‖W‖²``  (``θ = [W; b/c]``, the intercept free),

whose minimiser solves ``Hθ = Φ̃ᵀWy/n`` with ``H = Φ̃ᵀWΦ̃/n + αI_W``. :class:`FeatureCache` keeps
``Ψ = [ψ_1 … ψ_J]`` of every row (``φ = Ψ/√J``) in memory, within a byte budget, and grows it by
new blocks only (the first ``J`` blocks of a seed are the same at every size).
:func:`ridge_pcg` runs conjugate gradients preconditioned by the Nyström preconditioner of
:func:`~.conjugate.conjugate_preconditioner` (Falkon's, in feature space): about
``√((λ_{k+1} + α)/α)`` iterations, each ``O(nD)``, whatever ``n``. This is the "solve once at
full size" of the subsample route (record: docs/decisions/subsample-route.md).
"""

from __future__ import annotations

import copy
import math

import torch

from ..features.base import FeatureMap
from ..ops.linalg import narrow_matmul, row_gram, transposed_matmul
from .feature_rows import INTERCEPT_FEATURE, PARAM_BYTES, augmented

#: a pass over the cache reads about this many floats per output column at a time (1 MB of
#: float32: a chunk stays in the processor's cache for both of a Hessian's products); 943,718
#: rows x 1,024 float16 features, one column, one thread: 0.39 s a Hessian against 0.87 s in two
#: passes of 1,024-row chunks (Intel Xeon; docs/decisions/fused-pass.md)
PASS_FLOATS = 1 << 18
#: rows per chunk, at least and at most (fewer rows leave the products' kernels idle) ...
PASS_ROWS = (64, 1024)
#: ... at least this many for several output columns (20,000 x 16,384 float32 by ten columns:
#: 0.47 s at 256 rows against 0.50 s at 160)
COLUMNS_PASS_ROWS = 256
#: floats of sketch features drawn at once for the covariance preconditioner's ``UUᵀ`` (16 MB
#: of float32: 70,000 sketch rows of 10⁷ at 1,024 features were 288 MB at once, twice over)
SKETCH_CHUNK_FLOATS = 1 << 22
#: on an accelerator, floats per chunk (64 MB of float32: few kernel launches a pass)
DEVICE_PASS_FLOATS = 1 << 24

__all__ = ["FeatureCache", "HeldOutFeatures", "SketchPreconditioner", "ColumnSketchPreconditioner", "RidgeSolve",
           "cache_bytes", "chunk_rows", "dual_ridge_coefficients", "exact_gram", "grown_gram",
           "jittered_cholesky", "normal_pass", "restricted", "ridge_dual_rows", "ridge_pcg"]


def cache_bytes(n_rows: int, n_features: int, dtype: torch.dtype) -> int:
    """Bytes of the cached features of ``n_rows`` rows at ``n_features`` features."""
    return n_rows * n_features * torch.finfo(dtype).bits // 8


def chunk_rows(n_features: int, n_columns: int, device: torch.device) -> int:
    """Rows per chunk of a pass over ``n_features`` cached columns for ``n_columns`` outputs:
    on a CPU ``PASS_FLOATS·C/D`` within :data:`PASS_ROWS` (more columns: more work per row
    read; at least :data:`COLUMNS_PASS_ROWS` for several), on an accelerator
    ``DEVICE_PASS_FLOATS/D``."""
    least, most = PASS_ROWS
    least = least if n_columns == 1 else max(least, COLUMNS_PASS_ROWS)
    if device.type != "cpu":
        return max(least, DEVICE_PASS_FLOATS // max(n_features, 1))
    return min(most, max(least, PASS_FLOATS * n_columns // max(n_features, 1)))


def normal_pass(chunks, blocks: list[torch.Tensor], intercept: torch.Tensor, weights: torch.Tensor,
                scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(AᵀWu, Σ_i w_i u_i)`` with ``u = scale·A b + intercept``, in one pass over the column
    parts ``A = [A_1 … A_P]`` (``b`` split as ``blocks``): ``chunks`` yields ``(rows, [A_p of
    those rows])``, each chunk used for both products while it is in the processor's cache
    (``rmatmul(w * matmul(θ))`` reads every row twice). ``AᵀWu`` ``(D, C)`` float64, its
    products in the parts' precision."""
    sides = [torch.zeros((len(b), intercept.shape[0]), dtype=torch.float64, device=b.device)
             for b in blocks]
    total = torch.zeros_like(intercept)
    for rows, values in chunks:
        outputs = sum(narrow_matmul(v, b) for v, b in zip(values, blocks)).double() * scale + intercept
        weighted = weights[rows] * outputs
        low = weighted.to(values[0].dtype)
        for side, v in zip(sides, values):
            side += transposed_matmul(v, low).double()
        total += weighted.sum(dim=0)
    return torch.cat(sides), total


class FeatureCache:
    """``Ψ`` of the rows ``X`` for ``feature_map``, held as column parts that only grow.

    ``matmul(θ) = Φ̃θ`` and ``rmatmul(U) = Φ̃ᵀU`` with ``φ̃ = [Ψ/√J; c]``. ``budget`` bounds the
    bytes held; :meth:`grow` refuses to pass it with a :class:`MemoryError` that says what to do.
    ``storage``: the parts' dtype (default ``X``'s); float16 halves the memory of
    :attr:`~kernelstream.features.base.FeatureMap.bounded` features (relative round-off
    ``2⁻¹¹``), and every product reads them back to ``X``'s dtype a few rows at a time.
    """

    #: :meth:`rows` reads the cached features
    reads_rows = True

    def __init__(self, feature_map: FeatureMap, X, budget: int | None = None,
                 storage: torch.dtype | None = None):
        self.feature_map, self.X, self.budget = feature_map, X, budget
        self.storage = X.dtype if storage is None else storage
        self.n_rows = X.shape[0]
        self.n_blocks = 0
        self.parts: list[torch.Tensor] = []
        self._sketch_gram: tuple | None = None  # (rows, precise, parts counted, ΨΨᵀ)
        self._passes = [0]  # products over every row, shared with the views of first_blocks

    @property
    def passes(self) -> int:
        """Products that read every row so far (this cache and its :meth:`first_blocks` views)."""
        return self._passes[0]

    @property
    def n_features(self) -> int:
        return self.n_blocks * self.feature_map.block_size

    def for_rows(self, X, once: bool = False) -> "HeldOutFeatures":
        """The features of other rows (held-out ones) for the same map, empty until grown,
        cached within this cache's budget (:class:`HeldOutFeatures`); ``once``: read by one
        product, drawn in it, never cached (a cache read once costs its bytes and saves nothing)."""
        return HeldOutFeatures(self.feature_map, X, 0 if once else self.budget)

    def fitted(self, theta: torch.Tensor, cache_bytes: int | None = None) -> tuple:
        """The model ``θ`` as ``(map, coefficients)``: this cache's map and ``θ`` itself."""
        return self.feature_map, theta

    @property
    def nbytes(self) -> int:
        return sum(part.numel() * part.element_size() for part in self.parts)

    def fits(self, n_blocks: int) -> bool:
        """Whether ``n_blocks`` blocks stay within the budget."""
        needed = cache_bytes(self.n_rows, n_blocks * self.feature_map.block_size, self.storage)
        return self.budget is None or needed <= self.budget

    def grow(self, n_blocks: int) -> None:
        """Evaluate blocks ``[J, n_blocks)`` of every row, a few blocks and rows at a time."""
        if n_blocks <= self.n_blocks:
            return
        if not self.fits(n_blocks):
            needed = cache_bytes(self.n_rows, n_blocks * self.feature_map.block_size, self.storage)
            raise MemoryError(
                f"The cached features of {self.n_rows:,} rows x {n_blocks * self.feature_map.block_size:,} "
                f"features need {needed / 2**30:.2f} GiB, over the budget of "
                f"{self.budget / 2**30:.2f} GiB; raise cache_bytes, pass fewer n_components, or "
                "set cache_bytes=0 to regenerate the features in every pass.")
        r, n = self.feature_map.block_size, self.n_rows
        part = torch.empty((n, (n_blocks - self.n_blocks) * r), dtype=self.storage, device=self.X.device)
        self._fill(part, self.n_blocks, n_blocks)
        self.parts.append(part)
        self.n_blocks = n_blocks

    def redraw(self, feature_map: FeatureMap) -> None:
        """The same blocks of every row for another map of the same block size (another
        bandwidth), written over the parts' own memory: nothing new to allocate."""
        if feature_map.block_size != self.feature_map.block_size:
            raise ValueError("redraw needs a map of the same block size")
        self.feature_map, self._sketch_gram, first = feature_map, None, 0
        for part in self.parts:
            last = first + part.shape[1] // feature_map.block_size
            self._fill(part, first, last)
            first = last

    def _fill(self, part: torch.Tensor, first: int, last: int) -> None:
        """Blocks ``[first, last)`` of every row into ``part``, a few blocks and rows at a time."""
        r, n = self.feature_map.block_size, self.n_rows
        group = max(1, PARAM_BYTES // (self.feature_map.block_param_numel() * self.X.element_size()))
        for j in range(first, last, group):
            blocks = range(j, min(j + group, last))
            columns = slice((j - first) * r, (blocks.stop - first) * r)
            step = max(1, PASS_FLOATS // (len(blocks) * r))  # rows whose features stay in cache
            for i in range(0, n, step):
                rows = slice(i, min(i + step, n))
                chunk = self.feature_map.features(self.X[rows], blocks).reshape(rows.stop - i, -1)
                if not bool(torch.isfinite(chunk.sum())):  # a sum of bounded features: finite
                    raise FloatingPointError("The random features are not finite; standardise X.")
                part[rows, columns] = chunk

    def _chunks(self, n_columns: int):
        """``(rows, [Ψ of those rows, one per part])`` over every row, :func:`chunk_rows` at a
        time in ``X``'s dtype: views of the parts stored so, else widened into reused buffers."""
        step = chunk_rows(self.n_features, n_columns, self.X.device)
        self._passes[0] += 1
        buffers = [None if part.dtype == self.X.dtype else
                   torch.empty((min(step, self.n_rows), part.shape[1]), dtype=self.X.dtype,
                               device=part.device) for part in self.parts]
        for i in range(0, self.n_rows, step):
            rows = slice(i, min(i + step, self.n_rows))
            yield rows, [part[rows] if buffer is None else buffer[:rows.stop - i].copy_(part[rows])
                         for part, buffer in zip(self.parts, buffers)]

    def _widths(self) -> list[int]:
        """The features of each part, as :meth:`_chunks` yields them."""
        return [part.shape[1] for part in self.parts]

    def _coefficient_blocks(self, theta: torch.Tensor) -> list[torch.Tensor]:
        """``θ``'s rows of each part, in ``X``'s dtype."""
        return list(torch.split(theta[:-1].to(self.X.dtype), self._widths()))

    def matmul(self, theta: torch.Tensor) -> torch.Tensor:
        """``Φ̃θ`` ``(n, C)`` in float64 for ``θ`` ``(D+1, C)``, each chunk's rows written into
        one output (kept per-chunk pieces would split the freed feature buffers: at 10⁶ drawn
        rows the resident memory grew by 0.8 GiB over one product)."""
        blocks = self._coefficient_blocks(theta)
        product = torch.empty((self.n_rows, theta.shape[1]), dtype=torch.float64, device=theta.device)
        for rows, values in self._chunks(theta.shape[1]):
            product[rows] = sum(narrow_matmul(v, b) for v, b in zip(values, blocks))
        return product.mul_(self.n_blocks**-0.5).add_(INTERCEPT_FEATURE * theta[-1].double())

    def rmatmul(self, U: torch.Tensor) -> torch.Tensor:
        """``Φ̃ᵀU`` ``(D+1, C)`` in float64 for ``U`` ``(n, C)``."""
        low = U.to(self.X.dtype)
        sides = [torch.zeros((width, U.shape[1]), dtype=torch.float64, device=U.device)
                 for width in self._widths()]
        for rows, values in self._chunks(U.shape[1]):
            for side, v in zip(sides, values):
                side += transposed_matmul(v, low[rows]).double()
        return torch.cat([torch.cat(sides) * self.n_blocks**-0.5,
                          INTERCEPT_FEATURE * U.sum(dim=0, keepdim=True, dtype=torch.float64)])

    def normal_matmul(self, theta: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """``Φ̃ᵀ(w ⊙ Φ̃θ)`` ``(D+1, C)`` float64 (``w`` ``(n, C)`` or ``(n, 1)``) in one pass
        over the cache (:func:`normal_pass`)."""
        scale = self.n_blocks**-0.5
        side, total = normal_pass(self._chunks(theta.shape[1]),
                                  self._coefficient_blocks(theta),
                                  INTERCEPT_FEATURE * theta[-1].double(), w, scale)
        return torch.cat([side * scale, INTERCEPT_FEATURE * total[None, :]])

    def psi(self, index: torch.Tensor) -> torch.Tensor:
        """``Ψ`` of the rows ``index`` ``(m, D)`` in ``X``'s dtype."""
        return torch.cat([part[index] for part in self.parts], dim=1).to(self.X.dtype)

    def rows(self, index: torch.Tensor) -> torch.Tensor:
        """``Φ = Ψ/√J`` of the rows ``index`` ``(m, D)``, in the features' precision."""
        return self.psi(index) * self.n_blocks**-0.5

    def gram(self, index: torch.Tensor, precise: bool = False) -> torch.Tensor:
        """``ΨΨᵀ`` of the rows ``index`` over every cached block ``(m, m)`` float64 (``ΦΦᵀ =
        ΨΨᵀ/J``), the products in float64 where ``precise``, else in the features' precision.
        A sum over the cache's parts, each counted once for the last ``index`` asked: a
        sketch's Gram across doubling sizes costs the final size's ``m²D``, not their sum."""
        memo = self._sketch_gram
        if (memo is None or memo[1] != precise or len(memo[0]) != len(index)
                or not torch.equal(memo[0], index)):
            empty = torch.zeros((len(index), len(index)), dtype=torch.float64, device=index.device)
            memo = (index, precise, 0, empty)
        gram = memo[3]
        for part in self.parts[memo[2]:]:
            rows = part[index].to(torch.float64 if precise else self.X.dtype)
            gram += row_gram(rows).double()
        self._sketch_gram = (index, precise, len(self.parts), gram)
        return gram

    def first_blocks(self, n_blocks: int) -> "FeatureCache":
        """This cache read at its first ``n_blocks`` blocks alone (``φ = Ψ/√n_blocks``), its
        parts shared: a size kept before the last doubling. ``n_blocks`` must end a part."""
        if n_blocks == self.n_blocks:
            return self
        sizes = [part.shape[1] // self.feature_map.block_size for part in self.parts]
        ends = [sum(sizes[:k + 1]) for k in range(len(sizes))]
        if n_blocks not in ends:
            raise ValueError(f"{n_blocks} blocks do not end a part of the cache ({ends})")
        view = copy.copy(self)
        view.parts, view.n_blocks = self.parts[:ends.index(n_blocks) + 1], n_blocks
        view._sketch_gram = None
        return view

    def extended(self, theta: torch.Tensor, n_blocks: int) -> torch.Tensor:
        """``θ`` of ``J`` blocks as a start at ``n_blocks``: the same outputs, the new blocks 0
        (``W_j`` scaled by ``√(n_blocks/J)``, as ``φ = Ψ/√J``)."""
        D, r = theta.shape[0] - 1, self.feature_map.block_size
        grown = theta.new_zeros((n_blocks * r + 1, theta.shape[1]))
        grown[:D] = theta[:D] * math.sqrt(n_blocks * r / max(D, 1))
        grown[-1] = theta[-1]
        return grown


class HeldOutFeatures(FeatureCache):
    """The features of held-out rows, read by one product a size (the held-out loss): cached
    while their blocks fit ``budget``, drawn chunk by chunk in every product once they do not
    (the cached parts let go): 10⁶ held-out rows at 1,024 features are 4 GB in float32."""

    drawing = False

    def fits(self, n_blocks: int) -> bool:
        """Always: past the budget the features are drawn."""
        return True

    def grow(self, n_blocks: int) -> None:
        if n_blocks <= self.n_blocks:
            return
        if self.drawing or not FeatureCache.fits(self, n_blocks):
            self.parts, self.drawing, self.n_blocks = [], True, n_blocks
            return
        super().grow(n_blocks)

    def _chunks(self, n_columns: int):
        if not self.drawing:
            yield from super()._chunks(n_columns)
            return
        step = chunk_rows(self.n_features, n_columns, self.X.device)
        self._passes[0] += 1
        for i in range(0, self.n_rows, step):
            rows = slice(i, min(i + step, self.n_rows))
            yield rows, [self.feature_map.features(self.X[rows], range(self.n_blocks))
                         .reshape(rows.stop - i, -1)]

    def _widths(self) -> list[int]:
        return [self.n_features] if self.drawing else super()._widths()

    def first_blocks(self, n_blocks: int) -> "HeldOutFeatures":
        if not self.drawing or n_blocks == self.n_blocks:
            return super().first_blocks(n_blocks)
        view = copy.copy(self)
        view.n_blocks = n_blocks
        return view


class SketchPreconditioner:
    """``P = (UUᵀ + αI)⁻¹`` with ``U = Φ̃_sᵀ√(c/s)`` from ``s`` sketch rows of a
    :class:`FeatureCache` (``c``: the mean weight). With ``D + 1 ≤ s`` the ``(D+1)²`` matrix
    ``UUᵀ + αI`` is factored (Cholesky, ``sD²``); else by Woodbury, ``Pr = (r − U(αI +
    UᵀU)⁻¹Uᵀr)/α``, with ``UᵀU = (c/s)(ΨΨᵀ/J + c₀²11ᵀ)`` from the cache's running Gram of the
    sketch (:meth:`FeatureCache.gram`: ``s²`` per new feature): exact on the span of the sketch
    rows' features, ``1/α`` off it (``row_weights``: each sketch row's weight relative to
    ``c``, a Newton step's curvature); in float64 where the features' relative round-off ``ε/α``
    exceeds ``max_roundoff`` (the difference is divided by ``α``: in float32 at a small ``α``
    the output is round-off). No eigendecomposition; ``O(D·min(s, D))`` per use."""

    def __init__(self, cache: FeatureCache, index: torch.Tensor, alpha: float,
                 weight_scale: float = 1.0, max_roundoff: float = 0.0,
                 row_weights: torch.Tensor | None = None):
        s, scale = len(index), weight_scale / len(index)
        self.alpha, self.covariance = float(alpha), cache.n_features + 1 <= s
        root = None if row_weights is None else row_weights.double().clamp_min(0).sqrt()
        if self.covariance:  # UUᵀ over the sketch a few rows at a time: U itself is not kept
            inner, self.U = torch.zeros((cache.n_features + 1,) * 2, dtype=torch.float64,
                                        device=index.device), None
            step = max(COLUMNS_PASS_ROWS, SKETCH_CHUNK_FLOATS // (cache.n_features + 1))
            for i in range(0, s, step):
                rows = slice(i, min(i + step, s))
                inner += row_gram(self._columns(cache, index[rows], scale, root, False, rows)).double()
        else:
            precise = torch.finfo(cache.X.dtype).eps > max_roundoff * alpha
            self.U = self._columns(cache, index, scale, root, precise, slice(None))
            inner = cache.gram(index, precise) * (scale / cache.n_blocks) + scale * INTERCEPT_FEATURE**2
            if root is not None:
                inner = inner * root[:, None] * root[None, :]
        inner.diagonal().add_(alpha)
        self.factor = jittered_cholesky(inner)

    @staticmethod
    def _columns(cache, index, scale: float, root, precise: bool, rows: slice) -> torch.Tensor:
        """``U`` of the sketch rows ``index``: ``Φ̃ᵀ√(c·r/s)`` (``r``: ``root[rows]``, squared),
        in float64 where ``precise``."""
        Psi = cache.psi(index)
        Psi = Psi.double() if precise else Psi  # Φ = Ψ/√J in the Gram's precision
        U = augmented(Psi.mul_(cache.n_blocks**-0.5)).mul_(math.sqrt(scale)).T  # Φ̃_sᵀ√(c/s)
        if root is not None:  # each sketch row at its own relative weight: Φ̃_sᵀ√(c·r/s)
            U = U * root[rows].to(U.dtype)[None, :]
        return U

    def __call__(self, r: torch.Tensor) -> torch.Tensor:
        if self.covariance:
            return torch.cholesky_solve(r.double(), self.factor)
        inner = torch.cholesky_solve(transposed_matmul(self.U, r.to(self.U.dtype)).double(), self.factor)
        return (r.double() - narrow_matmul(self.U, inner.to(self.U.dtype)).double()) / self.alpha


class ColumnSketchPreconditioner:
    """``r ↦ [P_1 r_1, …, P_C r_C]`` with ``P_c`` the :class:`SketchPreconditioner` (Woodbury)
    of the sketch rows ``inside[:, c]`` (every row where none is) at column ``c``'s mean weight
    ``c_c``: a Newton step's active rows per output. The columns share ``V = Φ̃_sᵀ`` of the whole
    sketch, ``U_c = V_{A_c}√(c_c/s_c)``: ``U_cᵀr_c`` of every column is one product ``Vᵀr`` and
    ``Σ_c U_c z_c`` one product ``Vz``, two passes over ``V`` per use whatever ``C``; columns
    with the same rows and weight share their ``s_c × s_c`` factor."""

    def __init__(self, cache: FeatureCache, index: torch.Tensor, inside: torch.Tensor, alpha: float,
                 weight_scales, max_roundoff: float = 0.0):
        self.alpha = float(alpha)
        precise = torch.finfo(cache.X.dtype).eps > max_roundoff * alpha
        Psi = cache.psi(index)
        Psi = Psi.double() if precise else Psi
        self.V = augmented(Psi.mul_(cache.n_blocks**-0.5)).T  # Φ̃_sᵀ
        gram = cache.gram(index, precise) / cache.n_blocks + INTERCEPT_FEATURE**2  # VᵀV
        self.columns, factors = [], {}
        for c, scale in enumerate(weight_scales):
            rows = torch.nonzero(inside[:, c]).reshape(-1) if bool(inside[:, c].any()) \
                else torch.arange(len(index), device=index.device)
            g2 = float(scale) / len(rows)  # U_c = V_{A_c}·g, g² = c_c/s_c
            key = (rows.cpu().numpy().tobytes(), g2)
            if key not in factors:
                inner = gram[rows][:, rows] * g2
                inner.diagonal().add_(alpha)
                factors[key] = jittered_cholesky(inner)
            self.columns.append((rows, math.sqrt(g2), factors[key]))

    def __call__(self, r: torch.Tensor) -> torch.Tensor:
        projected = transposed_matmul(self.V, r.to(self.V.dtype)).double()  # Vᵀr, (s, C)
        z = torch.zeros_like(projected)
        for c, (rows, g, factor) in enumerate(self.columns):
            z[rows, c] = g * torch.cholesky_solve(g * projected[rows, c:c + 1], factor)[:, 0]
        return (r.double() - narrow_matmul(self.V, z.to(self.V.dtype)).double()) / self.alpha


def grown_gram(memo: tuple | None, index: torch.Tensor, precise: bool, n_blocks: int,
               new_columns) -> tuple[torch.Tensor, tuple]:
    """``ΨΨᵀ`` of the rows ``index`` at ``n_blocks`` blocks, kept across feature sizes:
    ``memo`` is ``(rows, precise, blocks counted, ΨΨᵀ)`` of the last call (``None``: none) and
    ``new_columns(counted)`` the rows' ``Ψ`` from block ``counted`` on; only those are added.
    Returns the Gram and the memo to keep."""
    if (memo is None or memo[1] != precise or len(memo[0]) != len(index)
            or not torch.equal(memo[0], index)):
        memo = (index, precise, 0, torch.zeros((len(index), len(index)), dtype=torch.float64,
                                               device=index.device))
    gram, counted = memo[3], memo[2]
    if counted < n_blocks:
        new = new_columns(counted)
        gram += row_gram(new.to(torch.float64) if precise else new).double()
    return gram, (index, precise, n_blocks, gram)


def restricted(cache, index: torch.Tensor):
    """A cache of the rows ``index`` of ``cache`` alone (a :class:`FeatureCache` or a
    :class:`~.nystroem.NystroemCache`), their cached columns copied: a Newton step whose
    active rows are few reads only those in each product. For products, not to be grown; the
    products' ``1/n`` is the restricted rows', so weights scale by ``len(index)/n``. An
    operator with its own ``restricted`` (rows held by ranks) answers for itself."""
    if hasattr(cache, "restricted"):
        return cache.restricted(index)
    rows = copy.copy(cache)
    rows.parts = [part[index] for part in cache.parts]
    rows.n_rows, rows._sketch_gram = len(index), None
    return rows


def ridge_dual_rows(cache: FeatureCache, index: torch.Tensor, y: torch.Tensor,
                    weight: torch.Tensor, alpha: float, n_rows: int,
                    gram: torch.Tensor | None = None) -> torch.Tensor:
    """The exact minimiser of ``Σ_{i∈A} w_i ½(φ_iᵀW + b − y_i)²/n + (α/2)‖W‖²`` over the rows
    ``A = index`` (few), in the dual: ``W = Φ_AᵀSξ`` with ``S = diag(√w)``,
    ``M = SΦ_AΦ_AᵀS + nαI``, ``ξ = M⁻¹S(y − b)`` and ``b = sᵀM⁻¹Sy / sᵀM⁻¹s`` (``1ᵀβ = 0``:
    the intercept is free). One ``|A| × |A|`` Cholesky factor; ``θ = [W; b/c]`` in float64.
    ``gram``: ``ΦΦᵀ`` of every cached row (float64), when the caller keeps it for several
    ``A``."""
    Phi = cache.rows(index)
    inner = exact_gram(Phi) if gram is None else gram[index][:, index]
    dual, b = dual_ridge_coefficients(inner, weight.double(), y.double().reshape(len(index), -1),
                                      n_rows, alpha)
    W = transposed_matmul(Phi, dual.to(Phi.dtype)).double()
    return torch.cat([W, (b / INTERCEPT_FEATURE)[None]])


def dual_ridge_coefficients(inner: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                            n_rows: int, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Sξ (m, C), b (C,))`` of least squares in the dual of the rows' inner products
    ``inner`` (``ΦΦᵀ`` or a kernel's matrix, float64): ``M = S·inner·S + nαI``,
    ``ξ = M⁻¹S(y − b)`` and ``b = sᵀM⁻¹Sy / sᵀM⁻¹s`` (the intercept free); the model's outputs
    are ``inner·Sξ + b``. One Cholesky factor of ``M``."""
    s = weight.sqrt()[:, None]
    M = inner * s * s.T
    M.diagonal().add_(n_rows * float(alpha))
    factor = jittered_cholesky(M)
    solved = torch.cholesky_solve(torch.cat([s * targets, s], dim=1), factor)
    C = targets.shape[1]
    b = (s * solved[:, :C]).sum(dim=0) / (s * solved[:, C:]).sum()
    return s * (solved[:, :C] - solved[:, C:] * b), b  # S M⁻¹S(y − b)


def exact_gram(Phi: torch.Tensor) -> torch.Tensor:
    """``ΦΦᵀ`` of few rows, float64: products in the features' precision (its round-off, which
    may leave it not quite positive semi-definite, is what :func:`jittered_cholesky` absorbs),
    symmetrised."""
    return row_gram(Phi).double()


def jittered_cholesky(M: torch.Tensor) -> torch.Tensor:
    """The Cholesky factor of ``M``, adding ``10^k·ε·mean(diag M)`` to its diagonal (``k`` =
    0, 1, …) where round-off leaves it not quite positive definite (``α`` near 0)."""
    factor, info = torch.linalg.cholesky_ex(M)
    if int(info) != 0 and not bool(torch.isfinite(M).all()):  # checked only where it fails
        raise FloatingPointError("A preconditioner's matrix is not finite; standardise X, or pass "
                                 "a larger alpha.")
    jitter = float(M.diagonal().mean()) * torch.finfo(M.dtype).eps
    while int(info) != 0:
        jitter *= 10
        factor, info = torch.linalg.cholesky_ex(M + jitter * torch.eye(M.shape[0], dtype=M.dtype,
                                                                      device=M.device))
    return factor


class RidgeSolve:
    """The outcome of :func:`ridge_pcg`: ``theta`` ``(D+1, C)`` float64, iterations, converged."""

    def __init__(self, theta: torch.Tensor, iterations: int, converged: bool):
        self.theta, self.iterations, self.converged = theta, iterations, converged


def ridge_pcg(cache: FeatureCache, y: torch.Tensor, weight: torch.Tensor, alpha: float,
              precond, theta: torch.Tensor | None = None, *, tol: float = 1e-4,
              max_iter: int = 100, patience: int | None = None,
              rhs: torch.Tensor | None = None, start_tol: float | None = None) -> RidgeSolve:
    """Minimise ``F`` by conjugate gradients on ``Hθ = Φ̃ᵀWy/n``, preconditioned by ``precond``
    (``r ↦ Pr``), every output column with its own step; stops when each column's residual is
    below ``tol`` times its right-hand side (``converged``), or where ``start_tol`` is given
    below that times the start's residual (an inexact Newton step from a warm start, whose
    residual is its gradient: ``converged`` then says whether ``tol`` was met too).

    ``y`` ``(n, C)`` and ``weight`` ``(n,)``, or ``(n, C)`` (a weight per row and column);
    ``theta`` a start (zeros when ``None``);
    ``patience``: give up (``converged`` false) after this many iterations, for a caller that
    then builds a better preconditioner; ``rhs``: solve ``Hθ = rhs`` instead (a Newton step's
    ``−∇F``, :mod:`.newton`; ``y`` then unused).
    """
    n = cache.n_rows
    # in their own dtype: the products widen each chunk (float64 copies: 16 bytes a row more)
    targets, w = y.reshape(n, -1), weight.reshape(n, -1)
    penalty = torch.full((cache.n_features + 1, 1), float(alpha), dtype=torch.float64, device=y.device)
    penalty[-1] = 0.0  # the intercept is free

    def hessian(p: torch.Tensor) -> torch.Tensor:  # Hp = Φ̃ᵀWΦ̃p/n + αp_W
        if hasattr(cache, "normal_matmul"):  # both products in one pass over the cache
            return cache.normal_matmul(p, w) / n + penalty * p
        return cache.rmatmul(w * cache.matmul(p)) / n + penalty * p

    b = cache.rmatmul(w * targets) / n if rhs is None else rhs.double()
    if theta is None:  # from zero: the residual is the right-hand side
        theta, residual = torch.zeros_like(b), b.clone()
    else:
        theta = theta.double().clone()
        residual = b - hessian(theta)
    z = precond(residual)
    direction, rz = z.clone(), (residual * z).sum(dim=0)
    b_norm = b.norm(dim=0).clamp_min(torch.finfo(torch.float64).tiny)
    bound = tol * b_norm if start_tol is None else torch.maximum(tol * b_norm,
                                                                start_tol * residual.norm(dim=0))
    for iteration in range(max_iter):
        if iteration > 0 and bool((residual.norm(dim=0) <= bound).all()):  # a warm start moves once
            return RidgeSolve(theta, iteration, bool((residual.norm(dim=0) <= tol * b_norm).all()))
        if iteration == patience:
            return RidgeSolve(theta, iteration, False)
        Hp = hessian(direction)
        curvature = (direction * Hp).sum(dim=0)
        step = rz / torch.where(curvature > 0, curvature, torch.ones_like(curvature))
        theta = theta + direction * step
        residual = residual - Hp * step
        z = precond(residual)
        rz, rz_old = (residual * z).sum(dim=0), rz
        direction = z + direction * (rz / torch.where(rz_old > 0, rz_old, torch.ones_like(rz_old)))
        if not bool(torch.isfinite(theta).all()):
            raise FloatingPointError(f"Conjugate gradients diverged in iteration {iteration + 1}; "
                                     "standardise X and check y.")
    converged = bool((residual.norm(dim=0) <= tol * b_norm).all())
    return RidgeSolve(theta, max_iter, converged)
