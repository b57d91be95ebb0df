"""The exact kernel's model where the rows are few: every training row a centre,
``f(x) = Σ_i k(x, x_i)β_i + b``, the optimum of the random-feature objective's limit.

With ``K`` the exact kernel matrix of the rows of positive weight in place of ``ΦΦᵀ``, the dual
solvers of :mod:`.dual` and :mod:`.dual_hinge` are unchanged: least squares is one Cholesky
factorisation of ``SKS + nαI`` (``S = diag(√w)``, the intercept free), the squared hinge Newton
on its active set. ``K`` costs ``n²d`` multiply-adds and ``n²`` exponentials, the factor
``n³/3``: at 1,347 rows of 64 inputs 0.1 and 0.8 GFlop, where 4,096 random features' ``ΦΦᵀ``
is 7.4. The model is a :class:`~kernelstream.features.kernel_columns.KernelColumns` map over the
rows, in float64 (``β`` at a small ``α`` cancels). Record: docs/decisions/exact-kernel-route.md.
"""

from __future__ import annotations

import math

import torch

from ..features.kernel_columns import KernelColumns
from .cached import dual_ridge_coefficients
from .dual import DualSolution, GramRows, feature_gram
from .dual_hinge import dual_squared_hinge
from .feature_rows import INTERCEPT_FEATURE

__all__ = ["EXACT_KERNELS", "exact_kernel_model", "exact_kernel_solution", "random_feature_theta"]

#: the kernels whose exact matrix the route evaluates (closed forms in one or per-feature
#: lengthscales)
EXACT_KERNELS = ("rbf", "laplace", "matern")


def exact_kernel_solution(rows: GramRows, alpha: float, loss: str) -> DualSolution:
    """The objective's exact optimum at ``alpha`` on ``rows`` (:func:`~.dual.gram_rows` with ``exact``):
    ``loss`` "squared_hinge" by Newton on its active set, else least squares,
    ``β = S(SKS + nαI)⁻¹S(y − b)`` with ``b`` the free intercept's
    (``1ᵀS⁻¹β = 0``). Its ``leave_one_out`` is ``None`` for least squares."""
    if loss == "squared_hinge":
        return dual_squared_hinge(rows, [alpha]).solution(alpha)
    dual, b = dual_ridge_coefficients(rows.gram, rows.weight, rows.y, rows.n_rows, alpha)
    outputs = rows.gram @ dual + b
    fit = float((rows.weight * 0.5 * (outputs - rows.y).square().sum(dim=1)).sum()) / rows.n_rows
    penalty = 0.5 * float(alpha) * float((dual * (outputs - b)).sum())  # (α/2)βᵀKβ
    return DualSolution(rows.feature_map, rows.n_blocks, rows.X, dual, b, fit + penalty, None)


def exact_kernel_model(solution: DualSolution, block_size: int, cache_bytes: int | None = None
                       ) -> tuple[KernelColumns, torch.Tensor]:
    """The solution as ``(map, θ)`` in the expansion's convention ``f = Σ_j ψ_j(x)ᵀθ_j/√J + c·θ_b``:
    the kernel's columns at the rows in ``J = ⌈n/block_size⌉`` equal blocks (the last padded
    with the first row at coefficient 0: fewer than ``J`` centres) and ``[√J·β; b/c]``, float64."""
    X, dual = solution.X, solution.dual.double()
    blocks = -(-X.shape[0] // block_size)
    r = -(-X.shape[0] // blocks)
    pad = blocks * r - X.shape[0]
    centres = torch.cat([X, X[:1].expand(pad, -1)]) if pad else X
    beta = torch.cat([dual, dual.new_zeros((pad, dual.shape[1]))]) if pad else dual
    kwargs = {} if cache_bytes is None else {"cache_bytes": cache_bytes}
    feature_map = KernelColumns(solution.feature_map, centres.double(), r, **kwargs)
    intercept = (solution.intercept.double() / INTERCEPT_FEATURE).reshape(1, -1)
    return feature_map, torch.cat([beta * math.sqrt(blocks), intercept])


def random_feature_theta(feature_map: KernelColumns, beta: torch.Tensor, intercept: torch.Tensor,
                         n_blocks: int, alpha: float) -> torch.Tensor:
    """The model ``f = Σ_i k(x, c_i)β_i + b`` on ``feature_map``'s centres in its kernel's random
    features at ``n_blocks`` blocks, the expansion that steps continue: least squares of the
    features to ``f`` at the centres, at ``alpha`` (one Cholesky factor of the centres' features'
    Gram; ``Φᵀβ`` itself errs by ``|β|/√D``, far beyond ``f`` where ``α`` is small).
    ``θ = [W; b/c]`` ``(D+1, C)`` float64."""
    C = beta.shape[-1]
    centres, beta = feature_map.centres.double(), beta.reshape(-1, C).double()
    fitted = feature_map.kernel_map.kernel(centres, centres) @ beta + intercept.double()
    weight = torch.ones(len(centres), dtype=torch.float64)
    rows = GramRows(feature_map.kernel_map, n_blocks, centres, fitted, weight, len(centres),
                    feature_gram(feature_map.kernel_map, centres, n_blocks))
    return exact_kernel_solution(rows, alpha, "squared").theta()
