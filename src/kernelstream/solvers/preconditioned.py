"""Preconditioned mini-batch SGD on a fixed set of random features: the default solver.

The model is ``f(x) = φ(x)ᵀW + b`` over ``D = J·r`` features, ``φ = [ψ_1 … ψ_J]/√J`` (so
``φ(x)ᵀφ(x') ≈ k(x, x')``), and the objective is the regularised empirical risk

    F(W, b) = (1/n) Σ_i w_i ℓ(f(x_i), y_i) + α/2 ‖W‖²

whose minimiser is the random-feature approximation of the kernel machine of Dai et al.
Write ``θ = [W; b/c]`` and ``φ̃ = [φ; c]`` (``c = INTERCEPT_FEATURE``). A step on a batch of ``b`` rows is

    θ ← θ − η P ∇F_batch(θ),   P = V diag(1/(Lλ_i + α)) Vᵀ + (I − VVᵀ)/(Lλ_{k+1} + α)

with ``(λ_i, v_i)`` the top ``k`` eigenpairs of the feature covariance ``E[φ̃φ̃ᵀ]`` estimated on
``s`` sketch rows, ``L`` the loss's curvature bound (``1/step_scale``), and
``η = b/(β + b − 1)``, ``β = L max_x φ̃ᵀPφ̃`` (EigenPro 2, Ma & Belkin 2019, in feature space
rather than over kernel centres). ``k`` is the number of eigenvalues above ``4 max‖φ̃‖²/s``, the
level an ``s``-row sketch resolves: every direction above it converges in a few steps. An epoch
moves a direction of eigenvalue ``λ`` below it by about ``n·η·λ/(b·λ_{k+1})`` steps' worth, so
past the critical batch ``b = β`` larger batches only slow the tail: the solver caps the batch
at ``β`` (decision record: docs/decisions/critical-batch.md).

Why this and not the alternatives (``benchmarks/results/solver.md``: 2-D regression, 2^16 rows,
1024 features, one thread; decision record: docs/decisions/default-solver.md): the normal
equations reach the optimum and cost ``n·D²`` (11 s per 10⁶ rows at ``D = 1024``), which rules
them out for large ``D`` and for the other losses; this solver comes close to that optimum in 2
to 4 epochs, in less time than the normal equations take; the paper's algorithm revisiting
blocks needs 8 epochs to come as close; plain SGD with the same loop (``P = I/λ₁``) does as
well as this solver on that well-conditioned set. The preconditioner is
for ill-conditioned ones: the directions above the sketch's resolution converge in a few
steps whatever their eigenvalue, where plain SGD's rate has the condition number ``λ₁/λ``
(10⁴–10⁶ for a narrow kernel at small ``α``). Memory is ``D·k`` for ``V`` plus ``O(D·C)``
coefficients, independent of ``n``.

Iterates are tail-averaged over the second half of each epoch's steps (Jain et al. 2018), which
removes the mini-batch noise without slowing the geometric decay of the bias. Several
regularisation values ``α`` are trained side by side as extra output columns (one GEMM for all),
each with its own ``P`` and ``η``; early stopping keeps each column's best epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from ..features.base import FeatureMap
from ..losses import Loss
from ..ops.linalg import narrow_matmul, row_gram, symmetric_eigh, transposed_matmul
from .epochs import EpochControl, EpochState, FitResult, column_losses, record_epoch, start_state
from .feature_rows import CHUNK_FLOATS, INTERCEPT_FEATURE, PARAM_BYTES, augmented, feature_matrix, row_chunks

__all__ = ["INTERCEPT_FEATURE", "Preconditioner", "FitResult", "EpochState", "sketch_preconditioner",
           "run_epochs", "feature_matrix", "batch_sums", "reduced_gradient", "validation_sums",
           "MAX_RANK", "record_epoch"]
#: INTERCEPT_FEATURE and feature_matrix (from .feature_rows), FitResult, EpochState, EpochControl and
#: record_epoch (from .epochs) stay importable from here, where the estimators import them

#: most eigenvectors kept in the preconditioner (``(D + 1)·k`` floats)
MAX_RANK = 1024
#: eigenvalues below ``SKETCH_OVERSAMPLING/s`` (times ``max‖φ̃‖²``) of an ``s``-row sketch are
#: left in the flat tail: smaller ones are underestimated, and inverting them diverges
SKETCH_OVERSAMPLING = 4
#: a sketch's features are kept between the covariance and the projections (one evaluation
#: instead of two) when they hold at most this many floats
_KEPT_SKETCH_FLOATS = 1 << 23


@dataclass
class Preconditioner:
    """``P`` of the module docstring for each ``α`` column: ``V`` ``(D+1, k)``, ``λ`` ``(k+1,)``."""

    V: torch.Tensor
    eigenvalues: torch.Tensor  # the k kept and λ_{k+1}, float64
    curvature: float  # L
    alphas: torch.Tensor  # (A,), float64
    beta_rows: torch.Tensor  # per sketch row: ‖φ̃‖² and the squared projections, for β
    row_weights: torch.Tensor | None = None  # per sketch row: w_i/w̄ (None: all 1)

    @property
    def rank(self) -> int:
        return self.V.shape[1]

    def scales(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(1/(Lλ_i + α) − tail, tail)`` per column: ``(k, A)`` and ``(A,)``, float64."""
        L, lam = self.curvature, self.eigenvalues
        tail = 1.0 / (L * lam[-1] + self.alphas)  # (A,)
        top = 1.0 / (L * lam[:-1, None] + self.alphas[None, :])  # (k, A)
        return top - tail, tail

    def beta(self) -> torch.Tensor:
        """``β = L max_x φ̃ᵀPφ̃`` over the sketch rows, per column ``(A,)``: a row's largest
        preconditioned curvature, and the critical batch size (EigenPro 2)."""
        top, tail = self.scales()
        norms, projections = self.beta_rows  # (s,), (s, k)
        quad = norms[:, None] * tail[None, :] + projections @ top  # φ̃ᵀPφ̃, (s, A)
        if self.row_weights is not None:
            quad = quad * self.row_weights.to(quad)[:, None]
        return self.curvature * quad.max(dim=0).values

    def critical_batch(self) -> int:
        """Rows per step beyond which a larger batch no longer speeds an epoch: ``max β``."""
        return int(math.ceil(float(self.beta().max())))

    def step_sizes(self, batch_size: int) -> torch.Tensor:
        """``η = b/(β + b − 1)`` per column: about 1 for ``b ≫ β``, 1/2 at ``b = β``."""
        return batch_size / (self.beta() + batch_size - 1)

    def apply(self, grad: torch.Tensor, n_outputs: int) -> torch.Tensor:
        """``P g`` for ``g`` ``(D+1, A·C)``, column ``a·C + c`` using ``α_a``."""
        top, tail = self.column_scales(n_outputs, grad.dtype)
        return grad * tail + narrow_matmul(self.V, transposed_matmul(self.V, grad) * top)

    def apply_float64(self, r: torch.Tensor, n_outputs: int) -> torch.Tensor:
        """:meth:`apply` to a float64 ``r`` (a conjugate-gradient residual), the products in
        ``V``'s precision, the result in float64."""
        top, tail = self.column_scales(n_outputs, torch.float64)
        top, tail, V = top.to(r.device), tail.to(r.device), self.V
        return r * tail + narrow_matmul(V, (transposed_matmul(V, r.to(V.dtype)).double() * top).to(V.dtype)).double()

    def column_scales(self, n_outputs: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`scales` spread over the ``A·C`` columns, computed once (every step uses them)."""
        key = (n_outputs, dtype)
        if getattr(self, "_cached_scales", (None,))[0] != key:
            top, tail = self.scales()
            self._cached_scales = (key, top.repeat_interleave(n_outputs, dim=1).to(dtype),
                                   tail.repeat_interleave(n_outputs).to(dtype))
        return self._cached_scales[1], self._cached_scales[2]


def sketch_preconditioner(feature_map: FeatureMap, n_blocks: int, X_sketch: torch.Tensor,
                          loss: Loss, alphas, weight_scale: float = 1.0,
                          row_weights: torch.Tensor | None = None) -> Preconditioner:
    """The top eigenpairs of ``Φ̃_sᵀΦ̃_s/s`` on the sketch rows ``X_sketch`` (``s × d``: a
    tensor, or sparse rows that densify the row chunks they are asked for).

    With ``D + 1 ≤ s`` the ``(D+1)²`` covariance is accumulated over row chunks and factored,
    else the ``s × s`` Gram ``Φ̃_sΦ̃_sᵀ/s`` over block groups, with ``V = Φ̃_sᵀ U Λ^{-1/2}/√s``
    (same non-zero spectrum). Either way the ``s × D`` feature matrix is never held: memory is
    ``O(min(s, D)² + D·k)``. With sample weights the curvature is ``L·w̄`` (``weight_scale``,
    the rows drawn ``∝ w``) and each row's ``β`` term is multiplied by its ``w_i/w̄``
    (``row_weights``).
    """
    s, D = X_sketch.shape[0], n_blocks * feature_map.block_size
    kept = None  # the covariance route's feature chunks, reused for the projections when small
    if D + 1 <= s:
        kept = [] if s * (D + 1) <= _KEPT_SKETCH_FLOATS else None
        lam, V, sq_norms = _covariance_eigen(feature_map, n_blocks, X_sketch, kept)
    else:
        lam, V, sq_norms = _gram_eigen(feature_map, n_blocks, X_sketch)
    kappa = float(sq_norms.max())
    above = int((lam >= kappa * SKETCH_OVERSAMPLING / s).sum())
    k = max(1, min(above, lam.shape[0] - 1, MAX_RANK))
    V = V[:, :k].contiguous()
    chunks = kept or (augmented(feature_matrix(feature_map, X_sketch[rows], n_blocks)) for rows in row_chunks(s, D))
    V_features = V.to(X_sketch.dtype)
    projections = torch.cat([(Phi @ V_features).square().double() for Phi in chunks])  # (v_iᵀφ̃)² per sketch row
    return Preconditioner(V=V_features, eigenvalues=lam[: k + 1].clone(),
                          curvature=weight_scale / loss.step_scale,
                          alphas=torch.as_tensor(alphas, dtype=torch.float64, device=lam.device),
                          beta_rows=(sq_norms, projections), row_weights=row_weights)


def _covariance_eigen(feature_map, n_blocks, X, kept: list | None = None):
    """Descending eigenpairs of ``Φ̃ᵀΦ̃/s`` (``D + 1 ≤ s``) and the rows' ``‖φ̃‖²``; each
    chunk's ``Φ̃`` is appended to ``kept`` when given."""
    s, D = X.shape[0], n_blocks * feature_map.block_size
    cov = torch.zeros((D + 1, D + 1), dtype=torch.float64, device=X.device)
    sq_norms = torch.empty(s, dtype=torch.float64, device=X.device)
    for rows in row_chunks(s, D):
        Phi = augmented(feature_matrix(feature_map, X[rows], n_blocks))
        if kept is not None:
            kept.append(Phi)
        cov += (Phi.T @ Phi).double()  # a chunk's products in the features' precision, summed in float64
        sq_norms[rows] = Phi.square().sum(dim=1).double()
    lam, V = symmetric_eigh(cov / s)
    return lam.flip(0).clamp_min(0), V.flip(1), sq_norms


def _gram_eigen(feature_map, n_blocks, X):
    """Descending eigenpairs of ``Φ̃ᵀΦ̃/s`` through the ``s × s`` Gram (``D + 1 > s``)."""
    s, r = X.shape[0], feature_map.block_size
    if not isinstance(X, torch.Tensor):  # sparse rows: the s ≤ SKETCH_ROWS rows, dense
        X = X[0:s]
    gram = torch.full((s, s), INTERCEPT_FEATURE**2, dtype=torch.float64, device=X.device)  # c·cᵀ
    group = max(1, min(CHUNK_FLOATS // (s * r),
                       PARAM_BYTES // (feature_map.block_param_numel() * X.element_size())))
    for j in range(0, n_blocks, group):
        blocks = range(j, min(j + group, n_blocks))
        Psi = feature_map.features(X, blocks).reshape(s, -1).double() / n_blocks**0.5
        gram += row_gram(Psi)
    lam, U = symmetric_eigh(gram / s)
    lam, U = lam.flip(0).clamp_min(0), U.flip(1)
    keep = lam > lam[0] * 1e-12
    lam, U = lam[keep], U[:, keep]
    scaled = U / torch.sqrt(s * lam)  # V = Φ̃ᵀ U Λ^{-1/2} / √s, block by block
    V = torch.empty((n_blocks * r + 1, lam.shape[0]), dtype=torch.float64, device=X.device)
    for j in range(0, n_blocks, group):
        blocks = range(j, min(j + group, n_blocks))
        Psi = feature_map.features(X, blocks).reshape(s, -1).double() / n_blocks**0.5
        V[j * r:blocks.stop * r] = transposed_matmul(Psi, scaled)
    V[-1] = INTERCEPT_FEATURE * scaled.sum(dim=0)
    return lam, V, torch.diagonal(gram).clone()


def _outputs(feature_map, n_blocks, X, theta):
    """``φ̃(X)θ`` in row chunks (never more than ``CHUNK_FLOATS`` features at once)."""
    D = theta.shape[0] - 1
    out = torch.empty((X.shape[0], theta.shape[1]), dtype=theta.dtype, device=theta.device)
    for rows in row_chunks(X.shape[0], D):
        out[rows] = feature_matrix(feature_map, X[rows], n_blocks) @ theta[:D] + INTERCEPT_FEATURE * theta[D]
    return out


def batch_sums(feature_map, n_blocks, X, y, weight, theta, loss, n_alphas):
    """``Σ_i φ̃(x_i) w_i ℓ'(f(x_i), y_i)`` ``(D+1, A·C)`` and ``Σ_i w_i ℓ(f(x_i), y_i)`` per
    column ``(A,)`` over the rows of a batch: what data-parallel ranks add up."""
    D = theta.shape[0] - 1
    grad = torch.zeros_like(theta)
    total = torch.zeros(n_alphas, dtype=torch.float64, device=theta.device)
    for rows in row_chunks(X.shape[0], D):
        Phi = feature_matrix(feature_map, X[rows], n_blocks)  # (m, D)
        U = narrow_matmul(Phi, theta[:D]) + INTERCEPT_FEATURE * theta[D]
        G, value = column_losses(loss, U, y[rows], weight[rows], n_alphas)
        grad[:D] += transposed_matmul(Phi, G)
        grad[D] += INTERCEPT_FEATURE * G.sum(dim=0)
        total += value.double()
    return grad, total


def _finished_gradient(grad, total, b, theta, alphas_cols):
    """``∇F_batch = sums/b + αW`` and the mean loss from the sums of ``b`` rows."""
    D = theta.shape[0] - 1
    grad /= b
    grad[:D] += alphas_cols * theta[:D]  # α W (the intercept is not regularised)
    return grad, total / b


def batch_gradient(feature_map, n_blocks, X, y, weight, theta, loss, alphas_cols, n_alphas):
    """``∇F_batch`` ``(D+1, A·C)`` and the batch's weighted mean loss per column ``(A,)``."""
    grad, total = batch_sums(feature_map, n_blocks, X, y, weight, theta, loss, n_alphas)
    return _finished_gradient(grad, total, X.shape[0], theta, alphas_cols)


def reduced_gradient(feature_map, n_blocks, X, y, weight, theta, loss, alphas_cols, n_alphas,
                     comm=None) -> tuple[torch.Tensor, torch.Tensor, int]:
    """:func:`batch_gradient` of the global batch, and its rows: with ``comm`` (a
    :class:`kernelstream.distributed.Communicator`) the sums and rows of every rank's share are
    all-reduced first, so every rank takes the same step."""
    if comm is None:
        return (*batch_gradient(feature_map, n_blocks, X, y, weight, theta, loss, alphas_cols,
                                n_alphas), X.shape[0])
    grad, total = batch_sums(feature_map, n_blocks, X, y, weight, theta, loss, n_alphas)
    grad, total, b = comm.sum_step(grad, total, X.shape[0])
    if b == 0:
        raise ValueError("A data-parallel step had no rows on any rank; the shards are empty.")
    return (*_finished_gradient(grad, total, b, theta, alphas_cols), b)


def validation_losses(feature_map, n_blocks, X, y, weight, theta, loss, n_alphas) -> torch.Tensor:
    """Weighted mean loss of each column's model on ``(X, y)``, ``(A,)`` float64."""
    _, total = column_losses(loss, _outputs(feature_map, n_blocks, X, theta), y, weight, n_alphas)
    return total.double() / weight.sum().double()


def validation_sums(feature_map, n_blocks, X, y, weight, theta, loss, n_alphas):
    """``(Σ w ℓ per column (A,), Σ w)`` of a share of the validation rows, float64."""
    _, total = column_losses(loss, _outputs(feature_map, n_blocks, X, theta), y, weight, n_alphas)
    return total.double(), weight.sum().double()


def monitored_validation(validation, feature_map, n_blocks, theta, loss, n_alphas) -> torch.Tensor:
    """The validation loss per column: ``validation`` is ``(X, y, weight)`` tensors, or an
    object whose ``losses(feature_map, n_blocks, theta, loss, n_alphas)`` evaluates it (a
    stream, or a data-parallel shard of it)."""
    if hasattr(validation, "losses"):
        return validation.losses(feature_map, n_blocks, theta, loss, n_alphas)
    return validation_losses(feature_map, n_blocks, *validation, theta, loss, n_alphas)


def run_epochs(feature_map: FeatureMap, n_blocks: int, theta: torch.Tensor, precond: Preconditioner,
               loss: Loss, batches: Callable[[int], tuple[int, Iterator]], control: EpochControl,
               validation: tuple | None = None,
               callback: Callable[[int, float], None] | None = None,
               state: EpochState | None = None, comm=None) -> FitResult:
    """Epochs of preconditioned SGD from ``theta`` ``(D+1, A·C)`` until ``control`` stops.

    ``batches(epoch)`` returns the number of batches of the epoch and an iterator of
    ``(X, y, weight)`` tensor batches. The monitored loss is the
    validation loss when ``validation = (X, y, weight)`` (or an object with a ``losses``
    method, see :func:`monitored_validation`) is given, else the epoch's mean training
    loss. Returns each column's best tail-averaged iterate. ``state`` holds the loop's
    variables, updated in place at the end of every epoch before ``callback(epoch, loss)``: an
    empty one to read them from the callback (a checkpoint), or one saved at an epoch boundary
    to go on from there (``theta`` is then unused) exactly as the run without a break. With
    ``comm`` every step sums the batch statistics of all ranks (:func:`reduced_gradient`): each
    rank passes its share of the global batch, and every rank takes the same steps and decisions.
    """
    n_alphas = precond.alphas.shape[0]
    C = theta.shape[1] // n_alphas
    alphas_cols = precond.alphas.repeat_interleave(C).to(theta.dtype)
    state = start_state(state, theta, n_alphas)
    theta, result, eta, sums = state.theta, state.result, state.eta, state.sums
    for epoch in range(state.epoch, control.max_iter):
        if control.tol is not None and state.stale >= control.n_iter_no_change:
            break
        n_batches, epoch_batches = batches(epoch)
        epoch_sum, half_sum, n_half, rows = torch.zeros_like(theta), torch.zeros_like(theta), 0, 0
        start = n_batches // 2
        train = torch.zeros(n_alphas, dtype=torch.float64)
        for i, (X, y, weight) in enumerate(epoch_batches):
            grad, batch_loss, b = reduced_gradient(feature_map, n_blocks, X, y, weight, theta, loss,
                                                   alphas_cols, n_alphas, comm)
            if eta is None:
                eta = precond.step_sizes(b).repeat_interleave(C).to(theta.dtype)
            theta = theta - precond.apply(grad, C) * eta
            if not torch.isfinite(theta).all():
                raise FloatingPointError(f"The preconditioned solver diverged in epoch {epoch + 1} "
                                         "(non-finite coefficients); standardise X or lower batch_size.")
            train += batch_loss.cpu() * b
            rows += b
            epoch_sum += theta
            if i >= start:
                half_sum += theta
                n_half += 1
            result.n_steps += 1
        sums.append((epoch_sum, i + 1))
        average = _tail_average(sums, epoch, half_sum, n_half)
        train /= max(rows, 1)
        monitored = (train if validation is None else
                     monitored_validation(validation, feature_map, n_blocks, average, loss, n_alphas).cpu())
        state.theta, state.eta = theta, eta
        record_epoch(result, state, epoch, train, monitored, average, control, callback)
    return result


def _tail_average(sums: list, epoch: int, half_sum: torch.Tensor, n_half: int) -> torch.Tensor:
    """The average of the iterates of the last ``⌈e/2⌉`` of ``e = epoch + 1`` epochs (of the
    second half of the first epoch when ``e = 1``); drops the per-epoch sums no later average
    needs (the next one uses the last ``⌈(e+1)/2⌉``, this epoch's included)."""
    e = epoch + 1
    average = (half_sum / max(n_half, 1) if e == 1 else
               sum(t for t, _ in sums[-math.ceil(e / 2):]) / sum(n for _, n in sums[-math.ceil(e / 2):]))
    del sums[: max(0, len(sums) - (math.ceil((e + 1) / 2) - 1))]
    return average
