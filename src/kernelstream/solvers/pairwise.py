"""Online pairwise (AUC) learning with a moving average and a random past example (AOGD).

AlQuabeh, de Vazelhes & Gu, *Limited Memory Online Gradient Descent for Kernelized Pairwise
Learning with Dynamic Averaging*, Algorithm 1. For a new mapped example ``z_t`` of class ``y_t``,
with ``z̄`` the running mean and ``ẑ`` one random past example of the *opposite* class:

    d̄_t = s_t (z_t − z̄),   d̂_t = s_t (z_t − ẑ)            s_t = +1 if y_t positive else −1
    w'  = w   − η_t [ℓ'(wᵀd̄_t) d̄_t + λ w]                 (Alg. 1, line 6)
    w   = w'  − γ_t [ℓ'(w'ᵀd̂_t) d̂_t + λ w']               (Alg. 1, line 8)
    z̄_y ← mean of class y;  ẑ_y ← z_t with probability p   (Alg. 1, line 9)

with a pairwise loss ``ℓ(u)`` of the margin ``u = wᵀ(z⁺ − z⁻)``: squared ``(1 − u)²`` (the
paper's), hinge ``max(0, 1 − u)`` or logistic ``log(1 + e^{−u})``. State: ``w``, two class sums,
two counts and two random examples — ``O(D)`` numbers whatever the stream length.

**Chunks, exactly.** The pairs of a chunk do not depend on ``w`` (the means and the random
examples are functions of the stream and the coins only), so :func:`pair_directions` builds all
``K = 2m`` directions of ``m`` examples at once. Each step is ``w ← ρ_k w + β_k d_k`` with
``ρ_k = 1 − α_k λ`` and ``β_k = −α_k ℓ'(u_k)``, so inside a chunk
``w_k = P_k w_0 + Σ_{j≤k} β_j (P_k/P_j) d_j`` (``P_k = Π ρ``), and the margins satisfy

    u_k = P_{k−1} (w_0ᵀd_k) + Σ_{j<k} β_j (P_{k−1}/P_j) (d_jᵀd_k).

For the squared loss ``β_j = 2α_j (1 − u_j)`` is affine in ``u_j``: the margins solve one unit
lower-triangular system ``(I + A) u = r`` (:func:`chunk_update`), and ``w`` is one GEMM —
the per-example Python loop disappears. Other losses run the same recursion step by step.
A leading batch dimension ``G`` of ``w`` (and of the step sizes and ``λ``) runs independent
models on the same stream at once (a hyper-parameter grid).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .. import rng
from .._state import SolverState

from ..losses import get_loss

__all__ = ["PAIRWISE_LOSSES", "PairwiseState", "pair_directions", "chunk_update", "aogd_chunk",
           "pairwise_loss_derivative", "ReservoirBuffers", "reservoir_chunk", "bernoulli_coins",
           "pairwise_stream"]

#: pairwise loss name -> (pointwise loss of the margin u against target 1, factor)
PAIRWISE_LOSSES = {"squared": ("squared", 2.0), "hinge": ("hinge", 1.0), "logistic": ("logistic", 1.0)}


def pairwise_loss_derivative(name: str, u: torch.Tensor) -> torch.Tensor:
    """``ℓ'(u)`` for ``ℓ(u)`` = ``(1 − u)²``, ``max(0, 1 − u)`` or ``log(1 + e^{−u})``."""
    base, factor = PAIRWISE_LOSSES[name]
    # (1 − u)² = 2 · ½(u − 1)², so ℓ' = 2 (u − 1); hinge and logistic are the margin losses at y = 1
    return factor * get_loss(base).derivative(u, torch.ones_like(u))


def pairwise_loss_value(name: str, u: torch.Tensor) -> torch.Tensor:
    base, factor = PAIRWISE_LOSSES[name]
    return factor * get_loss(base).value(u, torch.ones_like(u))


#: Philox block of the Bernoulli(p) coins (far above any feature block index)
_COIN_BLOCK = 2**48


def bernoulli_coins(seed: int, start: int, n: int, p: float, device=None) -> torch.Tensor:
    """Coins of examples ``start .. start + n − 1``: a pure function of ``(seed, t)``, so a stream
    gives the same coins however it is cut into chunks."""
    lead = start % 4  # Philox returns words four at a time
    bits = rng.random_bits(n + lead, seed, _COIN_BLOCK, rng.Stream.AUX, device, start - lead)[lead:]
    return (bits.to(torch.float64) + 0.5) * 2.0**-32 < p



@dataclass
class PairwiseState(SolverState):
    """Per-class running sums, counts and one random past example: ``O(D)`` numbers.

    Row 0 is the negative class, row 1 the positive class.
    """

    sums: torch.Tensor     # (2, D) Σ z over each class
    counts: torch.Tensor   # (2,) int64
    random: torch.Tensor   # (2, D) the random past example of each class
    t: int = 0             # examples seen
    extra: dict = field(default_factory=dict)

    _state_fields = ("sums", "counts", "random", "t")

    @classmethod
    def empty(cls, n_components: int, dtype=torch.float64, device=None) -> "PairwiseState":
        zeros = torch.zeros(2, n_components, dtype=dtype, device=device)
        return cls(zeros, torch.zeros(2, dtype=torch.int64, device=device), zeros.clone())

    def means(self) -> torch.Tensor:
        """Class means ``(2, D)`` (zero for a class not seen yet)."""
        return self.sums / self.counts.clamp_min(1).unsqueeze(1).to(self.sums.dtype)

    def numel(self) -> int:
        return self.sums.numel() + self.counts.numel() + self.random.numel()


def _last_replacement(replace: torch.Tensor) -> torch.Tensor:
    """For each position i, the index of the last j < i with ``replace[j]``, else −1."""
    m = replace.shape[0]
    index = torch.where(replace, torch.arange(m, device=replace.device), -1)
    last = torch.cummax(index, dim=0).values
    return torch.cat([last.new_full((1,), -1), last[:-1]])


def pair_directions(Z: torch.Tensor, positive: torch.Tensor, coins: torch.Tensor,
                    state: PairwiseState) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The chunk's ``2m`` directions ``d̄_1, d̂_1, d̄_2, …`` (``z⁺ − z⁻`` paired with the opposite
    class's mean, then with its random example), in factored form ``T @ B``; updates ``state``.

    Every direction is a combination of the chunk's rows and four state vectors, so
    ``B = [Z; S_neg; S_pos; ẑ_neg; ẑ_pos]`` (``(m + 4, D)``) and ``T`` is ``(2m, m + 4)``:
    Gram matrices cost ``O(m²D)`` instead of ``O(4m²D)``.

    Parameters
    ----------
    Z : (m, D) mapped examples, in stream order.
    positive : (m,) bool, the class of each example.
    coins : (m,) bool, Bernoulli(p) draws: example t replaces its class's random example.
        The first example of a class always does (nothing to pair with before it).
    state : running statistics of the examples before the chunk.

    Returns
    -------
    T : (2m, m + 4);  B : (m + 4, D);  valid : (m,) bool, the opposite class has been seen.
    """
    m, dtype = Z.shape[0], Z.dtype
    cls = positive.long()
    opp = 1 - cls
    if Z.shape[1] <= m:  # few features: explicit directions in O(mD), not an O(m²) T
        return _explicit_directions(Z, cls, coins, state)
    same_class = cls.unsqueeze(0) == cls.unsqueeze(1)
    earlier = torch.ones(m, m, dtype=torch.bool, device=Z.device).tril(-1)
    # L[i, j] = 1 for j < i of the class opposite to i's;  n_i = examples of that class before i
    L = (earlier & ~same_class).to(dtype)
    n_before = state.counts[opp] + L.sum(1).long()
    first = (state.counts[cls] + (earlier & same_class).sum(1)) == 0
    replace = coins | first
    sign = (2.0 * positive.to(dtype) - 1.0).unsqueeze(1)                         # d = z⁺ − z⁻
    eye = torch.eye(m, dtype=dtype, device=Z.device)
    # mean: z̄_i = (S_opp + Σ_{j<i, opp} z_j) / n_i
    inv_n = 1.0 / n_before.clamp_min(1).to(dtype).unsqueeze(1)
    T_mean = torch.cat([eye - L * inv_n, -inv_n * _one_hot(opp, 4, dtype)], dim=1)
    # random: the last replacing example of the opposite class before i, else the state's
    last = torch.stack([_last_replacement(replace & (cls == c)) for c in (0, 1)], dim=1)
    last_opp = last.gather(1, opp.unsqueeze(1)).squeeze(1)                         # (m,)
    in_chunk = _one_hot(last_opp.clamp_min(0), m, dtype) * (last_opp >= 0).unsqueeze(1)
    from_state = _one_hot(2 + opp, 4, dtype) * (last_opp < 0).unsqueeze(1)
    T_rand = torch.cat([eye - in_chunk, -from_state], dim=1)
    T = (sign.unsqueeze(1) * torch.stack([T_mean, T_rand], dim=1)).reshape(2 * m, m + 4)
    B = torch.cat([Z, state.sums, state.random])  # copies: the state changes next
    for c in (0, 1):
        _update_class(state, c, Z, cls == c, replace)
    state.t += m
    return T, B, n_before > 0


def _explicit_directions(Z, cls, coins, state):
    """:func:`pair_directions` with ``T`` the ``(2m, D)`` directions themselves and ``B = I``."""
    m, dtype = Z.shape[0], Z.dtype
    opp = 1 - cls
    zbar, zhat = torch.empty_like(Z), torch.empty_like(Z)
    n_opp, replace = torch.empty_like(cls), coins.clone()
    for c in (0, 1):
        in_class = cls == c
        n_before = state.counts[c] + torch.cumsum(in_class.long(), 0) - in_class.long()
        replace |= in_class & (n_before == 0)  # a class's first example is always kept
        sums = state.sums[c] + torch.cumsum(Z * in_class.unsqueeze(1), 0) - Z * in_class.unsqueeze(1)
        rows = opp == c
        zbar[rows] = sums[rows] / n_before[rows].clamp_min(1).unsqueeze(1).to(dtype)
        last = _last_replacement(replace & in_class)
        held = torch.where((last >= 0).unsqueeze(1), Z[last.clamp_min(0)], state.random[c])
        zhat[rows], n_opp[rows] = held[rows], n_before[rows]
    sign = (2.0 * cls.to(dtype) - 1.0).unsqueeze(1)                              # d = z⁺ − z⁻
    dirs = torch.stack([sign * (Z - zbar), sign * (Z - zhat)], dim=1).reshape(2 * m, -1)
    for c in (0, 1):
        _update_class(state, c, Z, cls == c, replace)
    state.t += m
    return dirs, torch.eye(Z.shape[1], dtype=dtype, device=Z.device), n_opp > 0


def _one_hot(index: torch.Tensor, n: int, dtype) -> torch.Tensor:
    return torch.nn.functional.one_hot(index, n).to(dtype)


def _update_class(state: PairwiseState, c: int, Z, in_class, replace) -> None:
    state.sums[c] += Z[in_class].sum(dim=0)
    state.counts[c] += int(in_class.sum())
    hits = torch.nonzero(in_class & replace).flatten()
    if hits.numel():
        state.random[c] = Z[hits[-1]]


def chunk_update(w: torch.Tensor, T: torch.Tensor, B: torch.Tensor, alphas: torch.Tensor,
                 lam: torch.Tensor, loss: str = "squared", step_of_row: torch.Tensor | None = None,
                 *, iterate_weights: torch.Tensor | None = None,
                 iterate_sum: torch.Tensor | None = None) -> torch.Tensor:
    """Run the steps ``w ← (1 − α_k λ) w − α_k · mean_{rows r of step k} ℓ'(wᵀd_r) d_r``.

    Parameters
    ----------
    w : (G, D) models (a batch of independent runs).
    T, B : (R, n) and (n, D): the directions ``d_r`` (rows of ``T @ B``) in step order.
    alphas : (G, K) step size of each step (0 makes a step a no-op).
    lam : (G, 1) L2 regularisation ``λ``.
    loss : "squared" (one triangular solve), "hinge" or "logistic" (step by step).
    step_of_row : (R,) int64 step index of each row (non-decreasing); ``None`` means one row per
        step (``R = K``). Rows of one step see the same ``w`` and their gradients are averaged.
    iterate_weights, iterate_sum : (K,) or (G, K), and (G, D), or both ``None``
        Adds ``Σ_k c_k w_k`` (``w_k`` the model after step ``k``) to ``iterate_sum`` in place:
        the running sum behind an averaged iterate, at no extra pass over the directions.

    Returns
    -------
    (G, D): the models after the ``K`` steps — exactly those of the step-by-step loop.
    Cost ``O(n²D + G·n·D + G·R²)``.
    """
    G, K = alphas.shape
    R = T.shape[0]
    if (iterate_weights is None) != (iterate_sum is None):
        raise ValueError("Pass both iterate_weights and iterate_sum, or neither.")
    weights = None if iterate_weights is None else iterate_weights.to(w.dtype).expand(G, K)
    if R == 0:
        if weights is not None:
            iterate_sum += weights.sum(1, keepdim=True) * w
        return w
    if step_of_row is None:
        step_of_row = torch.arange(R, device=w.device)
    per_step = torch.bincount(step_of_row, minlength=K).clamp_min(1).to(w.dtype)
    rho = 1.0 - alphas * lam                                                   # (G, K)
    if bool((rho <= 0).any()):
        raise ValueError("eta * lambda must be below 1 (the shrinkage 1 − αλ must stay positive).")
    if loss == "squared" and B.shape[1] ** 3 < 8 * R:  # few features, long chunk
        return _compose_affine(w, T @ B, alphas, rho, per_step, step_of_row, weights, iterate_sum)
    log_P = torch.cumsum(torch.log(rho), dim=1)                                # log P_k
    row_alpha = (alphas / per_step)[:, step_of_row]                            # (G, R)
    prev = (log_P - torch.log(rho))[:, step_of_row]                            # log P_{k(r)−1}
    own = log_P[:, step_of_row]                                                # log P_{k(r)}
    if B.shape[1] < B.shape[0]:  # fewer features than basis vectors: form the directions
        T, B = T @ B, torch.eye(B.shape[1], dtype=B.dtype, device=B.device)
        M, p = T @ T.T, w @ T.T
    else:
        M = T @ (B @ B.T) @ T.T                                                # (R, R) d_rᵀ d_j
        p = (w @ B.T) @ T.T                                                    # (G, R) w_0ᵀ d_r
    earlier = (step_of_row.unsqueeze(1) > step_of_row.unsqueeze(0)).to(w.dtype)  # k(r) > k(j)
    M = M * earlier
    # C_{rj} = (P_{k(r)−1} / P_{k(j)}) d_rᵀd_j for rows j of earlier steps: a_r M_rj b_j
    a, b = torch.exp(prev), torch.exp(-own)
    rhs = a * p                                                                # P_{k−1} w_0ᵀ d_r
    if loss == "squared":
        # β_j = 2α_j (1 − u_j):  (I + A) u = rhs + A·1,  A = 2 C diag(α)  (unit lower-triangular)
        b = 2.0 * row_alpha * b
        A = a.unsqueeze(2) * M.unsqueeze(0) * b.unsqueeze(1)                   # (G, R, R)
        u = torch.linalg.solve_triangular(A, (rhs + a * (b @ M.T)).unsqueeze(2),
                                          upper=False, unitriangular=True).squeeze(2)
        beta = 2.0 * row_alpha * (1.0 - u)
    else:
        C = a.unsqueeze(2) * M.unsqueeze(0) * b.unsqueeze(1)
        beta = _sequential_betas(C, rhs, row_alpha, step_of_row, K, loss)
    final = torch.exp(log_P[:, -1:] - own) * beta                              # β_r P_K / P_k(r)
    if weights is not None:
        _add_iterate_sum(iterate_sum, w, weights, log_P, beta, step_of_row, T, B)
    return torch.exp(log_P[:, -1:]) * w + (final @ T) @ B


def _add_iterate_sum(iterate_sum, w, weights, log_P, beta, step_of_row, T, B) -> None:
    """``Σ_k c_k w_k = (Σ_k c_k P_k) w_0 + Σ_r β_r (Σ_{k ≥ k(r)} c_k P_k / P_k(r)) d_r``, added
    to ``iterate_sum`` in place (``beta`` is ``(G, R)``)."""
    K = log_P.shape[1]
    later = log_P.unsqueeze(1) - log_P.unsqueeze(2)                            # [g, j, k] log P_k/P_j
    upper = torch.ones(K, K, dtype=torch.bool, device=w.device).triu()
    ratio = torch.exp(later.masked_fill(~upper, float("-inf")))                # P_k/P_j for k ≥ j
    tail = (ratio.to(w.dtype) @ weights.unsqueeze(2)).squeeze(2)               # (G, K)
    iterate_sum += (weights * torch.exp(log_P)).sum(1, keepdim=True) * w
    iterate_sum += ((beta * tail[:, step_of_row]) @ T) @ B


def _compose_affine(w, dirs, alphas, rho, per_step, step_of_row, weights=None, iterate_sum=None
                    ) -> torch.Tensor:
    """Squared loss with few features: step k is affine, ``w ← A_k w + c_k`` with
    ``A_k = ρ_k I − (2α_k/n_k) Σ_r d_r d_rᵀ`` and ``c_k = (2α_k/n_k) Σ_r d_r``; compose the
    ``K`` maps by a pairwise tree of ``(D+1) × (D+1)`` products. ``O(K·D³)``, ``log₂ K`` calls.
    With ``weights`` the state is ``[w; s; 1]`` and ``s ← s + ω_k (A_k w + c_k)`` accumulates
    ``Σ_k ω_k w_k`` (maps of size ``2D + 1``)."""
    G, K = alphas.shape
    D = dirs.shape[1]
    scale = 2.0 * alphas / per_step                                            # (G, K)
    outer = torch.zeros(K, D, D, dtype=w.dtype, device=w.device)
    outer.index_add_(0, step_of_row, dirs.unsqueeze(2) * dirs.unsqueeze(1))   # Σ_r d_r d_rᵀ
    total = torch.zeros(K, D, dtype=w.dtype, device=w.device).index_add_(0, step_of_row, dirs)
    size = D + 1 if weights is None else 2 * D + 1
    maps = torch.zeros(G, K, size, size, dtype=w.dtype, device=w.device)
    maps[..., :D, :D] = -scale[..., None, None] * outer
    maps[..., :D, :D].diagonal(dim1=-2, dim2=-1).add_(rho.unsqueeze(2))
    maps[..., :D, -1] = scale.unsqueeze(2) * total
    maps[..., -1, -1] = 1.0
    if weights is not None:  # s ← s + ω_k (A_k w + c_k)
        maps[..., D : 2 * D, :D] = weights[..., None, None] * maps[..., :D, :D]
        maps[..., D : 2 * D, -1] = weights.unsqueeze(2) * maps[..., :D, -1]
        maps[..., D : 2 * D, D : 2 * D].diagonal(dim1=-2, dim2=-1).fill_(1.0)
    while maps.shape[1] > 1:  # later maps act on the left
        if maps.shape[1] % 2:
            eye = torch.eye(size, dtype=w.dtype, device=w.device).expand(G, 1, size, size)
            maps = torch.cat([maps, eye], dim=1)
        maps = maps[:, 1::2] @ maps[:, 0::2]
    total_map = maps[:, 0]
    if weights is not None:
        iterate_sum += (total_map[:, D : 2 * D, :D] @ w.unsqueeze(2)).squeeze(2) + total_map[:, D : 2 * D, -1]
    return (total_map[:, :D, :D] @ w.unsqueeze(2)).squeeze(2) + total_map[:, :D, -1]


def _sequential_betas(C, rhs, row_alpha, step_of_row, K, loss) -> torch.Tensor:
    """``β_r = −α_r ℓ'(u_r)`` step by step for losses whose derivative is not affine."""
    beta = torch.zeros_like(rhs)
    bounds = torch.searchsorted(step_of_row, torch.arange(K + 1, device=step_of_row.device)).tolist()
    for k in range(K):
        lo, hi = bounds[k], bounds[k + 1]
        if lo == hi:
            continue
        u = rhs[:, lo:hi] + torch.einsum("grj,gj->gr", C[:, lo:hi, :lo], beta[:, :lo])
        beta[:, lo:hi] = -row_alpha[:, lo:hi] * pairwise_loss_derivative(loss, u)
    return beta


def aogd_chunk(w: torch.Tensor, state: PairwiseState, Z: torch.Tensor, positive: torch.Tensor,
               coins: torch.Tensor, eta: torch.Tensor, gamma: torch.Tensor, lam: torch.Tensor,
               loss: str = "squared", *, example_weights: torch.Tensor | None = None,
               iterate_sum: torch.Tensor | None = None) -> torch.Tensor:
    """Algorithm 1 on a chunk of ``m`` examples: the mean step then the random step per example.

    Parameters
    ----------
    w : (G, D);  state : updated in place;  Z : (m, D);  positive, coins : (m,) bool.
    eta, gamma : (G, m) step sizes ``η_t`` and ``γ_t`` of the chunk's examples.
    lam : (G, 1).
    example_weights, iterate_sum : (m,) and (G, D), or both ``None``
        Adds ``Σ_t ω_t w_t`` to ``iterate_sum`` in place, ``w_t`` the model after example ``t``
        (both of its steps): the running sum of an averaged iterate.

    Returns
    -------
    (G, D) the models after the chunk.
    """
    T, B, valid = pair_directions(Z, positive, coins, state)
    alphas = torch.stack([eta, gamma], dim=2).reshape(w.shape[0], 2 * Z.shape[0])
    alphas = alphas * valid.repeat_interleave(2).to(alphas.dtype)  # no opposite class yet: skip
    step_weights = None
    if example_weights is not None:  # the iterate after an example is the one after its 2nd step
        step_weights = torch.stack([torch.zeros_like(example_weights), example_weights], 1).reshape(-1)
    return chunk_update(w, T, B, alphas, lam, loss, iterate_weights=step_weights,
                        iterate_sum=iterate_sum)


class ReservoirBuffers:
    """Per-class reservoirs of mapped examples for :func:`reservoir_chunk` (a baseline's state).

    Parameters
    ----------
    size : int
        Examples kept per class.
    n_components : int
        Length ``D`` of a mapped example; the state is ``2·size·D`` numbers.
    seed : int
        Seed of the reservoir's coin stream (``numpy.random.default_rng``).
    device : torch.device or None
        Where the buffers live.

    Attributes
    ----------
    rows : list of two (size, D) float64 tensors
        The kept examples of class 0 and class 1 (the first ``filled[c]`` rows are live).
    filled, seen : list of two int
        Live rows and examples seen so far, per class.
    """

    def __init__(self, size: int, n_components: int, seed: int, device=None) -> None:
        self.size = size
        self.rows = [torch.zeros(size, n_components, dtype=torch.float64, device=device) for _ in (0, 1)]
        self.filled, self.seen = [0, 0], [0, 0]
        self.rng = np.random.default_rng(seed)


def _reservoir_pairs(buffers: ReservoirBuffers, positive: torch.Tensor, m: int):
    """Walk a chunk of ``m`` examples through the reservoirs; return the pairs and the new slots.

    Rows of the basis ``[chunk; buffer 0; buffer 1]``: example ``k`` pairs with every live row of
    the opposite buffer as it is when ``k`` arrives, then enters its own class's reservoir (kept
    while the buffer fills, then with probability ``size/seen`` in a uniform slot).
    """
    s = buffers.size
    slots = [list(range(m + c * s, m + (c + 1) * s)) for c in (0, 1)]
    own, partner, signs = [], [], []
    for k in range(m):
        c = int(positive[k])
        opposite = slots[1 - c][: buffers.filled[1 - c]]
        own += [k] * len(opposite)
        partner += opposite
        signs += [1.0 if c else -1.0] * len(opposite)  # d = z⁺ − z⁻
        buffers.seen[c] += 1
        if buffers.filled[c] < s:
            slots[c][buffers.filled[c]] = k
            buffers.filled[c] += 1
        elif buffers.rng.random() < s / buffers.seen[c]:
            slots[c][buffers.rng.integers(s)] = k
    return own, partner, signs, slots


def reservoir_chunk(w: torch.Tensor, buffers: ReservoirBuffers, Z: torch.Tensor,
                    positive: torch.Tensor, steps: torch.Tensor, lam: torch.Tensor,
                    loss: str = "squared", *, weights: torch.Tensor | None = None,
                    total: torch.Tensor | None = None) -> torch.Tensor:
    """One chunk of reservoir-buffer OGD (Zhao et al. 2011; Kar et al. 2013), exact for any chunking.

    Example ``k`` takes one step on the mean pairwise gradient over the opposite class's reservoir
    as it is when ``k`` arrives, ``w ← w − η_k (mean_j ℓ'(wᵀd_j) d_j + λw)``, then enters its own
    class's reservoir (kept while it fills, then with probability ``size/seen``).

    Parameters
    ----------
    w : (G, D) models;  buffers : updated in place;  Z : (m, D) float64;  positive : (m,) bool.
    steps : (G, m) step sizes;  lam : (G, 1) L2 terms;  loss : a key of ``PAIRWISE_LOSSES``.
    weights, total : (m,) and (G, D), or both ``None``
        Adds ``Σ_k ω_k w_k`` to ``total`` in place, as ``iterate_weights``/``iterate_sum`` of
        :func:`chunk_update`.

    Returns
    -------
    (G, D) the models after the chunk.
    """
    m, s = Z.shape[0], buffers.size
    B = torch.cat([Z, buffers.rows[0], buffers.rows[1]])
    own, partner, signs, slots = _reservoir_pairs(buffers, positive, m)
    if own:
        T = torch.zeros(len(own), B.shape[0], dtype=torch.float64, device=B.device)
        rows, sign = torch.arange(len(own)), torch.tensor(signs, dtype=torch.float64, device=B.device)
        T[rows, torch.tensor(own)] = sign
        T[rows, torch.tensor(partner)] = -sign
        w = chunk_update(w, T, B, steps, lam, loss, torch.tensor(own, device=B.device),
                         iterate_weights=weights, iterate_sum=total)
    elif weights is not None:  # no pairs yet: every iterate of the chunk is w
        total += weights.sum() * w
    for c in (0, 1):
        kept = B[slots[c][: buffers.filled[c]]]
        buffers.rows[c] = torch.cat([kept, B.new_zeros(s - buffers.filled[c], B.shape[1])])
    return w


def pairwise_stream(w: torch.Tensor, chunks, update, schedule, eta0: float, gamma0: float,
                    lam: torch.Tensor, *, t: int, average_start: int = 0,
                    iterate_sum: torch.Tensor | None = None, n_averaged: int = 0,
                    on_chunk=None) -> tuple[torch.Tensor, int]:
    """Algorithm 1 over the chunks ``(Z, positive)`` of a stream that has seen ``t`` examples.

    Example ``t + k`` steps with ``η = eta0 · schedule(t + k)`` and ``γ = gamma0 · schedule(t + k)``;
    ``update(w, Z, positive, eta, gamma, lam, weights, iterate_sum)`` runs one chunk exactly
    (:func:`aogd_chunk`, or a baseline's pairing) and advances its own state. From example
    ``average_start`` (0: never) every iterate is added to ``iterate_sum`` in place. Returns the
    last iterate and the number of averaged iterates.
    """
    for Z, positive in chunks:
        m = Z.shape[0]
        index = torch.arange(t + 1, t + m + 1, dtype=torch.float64, device=Z.device)  # t of each
        steps = torch.tensor([schedule(t + k + 1) for k in range(m)], dtype=torch.float64,
                             device=Z.device).unsqueeze(0)
        weights = (index >= average_start).to(torch.float64) if average_start else None
        w = update(w, Z, positive, eta0 * steps, gamma0 * steps, lam, weights,
                   iterate_sum if average_start else None)
        n_averaged += int(weights.sum()) if average_start else 0
        t += m
        if on_chunk is not None:
            on_chunk(m)
    return w, n_averaged
