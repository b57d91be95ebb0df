"""The doubly stochastic expansion ``f(x) = s · Σ_j ψ_j(x)ᵀ c_j + b``, evaluated by regeneration.

Only coefficients are stored: ``c_j ∈ R^{r×C}`` per block, one float64 scale ``s`` and an
intercept ``b``. Blocks' random parameters are regenerated from ``(seed, j)`` by the feature map.

*Lazy decay.* The regulariser shrinks every old block by ``1/(1 + γ_t ν)`` at each step; instead
``s ← s / (1 + γ_t ν)`` and new increments are stored divided by ``s``. When ``s`` falls below
``1e-8`` it is folded into the coefficients (a rare O(D·C) pass).

*Lazy averaging* (Dai et al., Fig. 1(2); Polyak–Ruppert). With ``S_t = Σ_{τ ≤ t} s_τ`` over the
``N`` averaged steps, an increment ``δ`` stored at step ``t`` contributes ``δ (S_T − S_{t−1})/N``
to the averaged iterate, so each block keeps ``c_j = Σ δ`` and ``e_j = Σ δ S_{t−1}`` (float64):
``c̄_j = (c_j S_T − e_j) / N``. Nothing touches every block per step.

*Budget.* With ``max_blocks = J``, step ``t`` reuses block ``t mod J``: SGD on a fixed
random-feature model, constant cost per step.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from .features.base import FeatureMap

__all__ = ["Expansion"]

_RENORMALISE_BELOW = 1e-8


class Expansion:
    """Coefficients of a random-feature expansion, grown one block at a time.

    Parameters
    ----------
    feature_map : FeatureMap
    n_outputs : int
        Number of outputs ``C``.
    dtype, device : torch dtype and device of the coefficients and the computation.
    max_blocks : int or None
        Feature budget in blocks; ``None`` grows without bound.
    average_start : int or None
        Step from which iterates are averaged; ``None`` disables averaging.
    """

    def __init__(self, feature_map: FeatureMap, n_outputs: int, *, dtype=torch.float32,
                 device="cpu", max_blocks: int | None = None, average_start: int | None = None):
        self.feature_map = feature_map
        self.n_outputs = int(n_outputs)
        self.dtype = dtype
        self.device = torch.device(device)
        self.max_blocks = max_blocks
        self.average_start = average_start
        r = feature_map.block_size
        self._coef = torch.zeros((4, r, n_outputs), dtype=dtype, device=self.device)
        self._avg_e = None if average_start is None else torch.zeros_like(self._coef, dtype=torch.float64)
        self.n_blocks = 0  # live blocks
        self.step = 0  # steps taken
        self.scale = 1.0  # s
        self.intercept = torch.zeros(n_outputs, dtype=torch.float64, device=self.device)
        self.avg_scale_sum = 0.0  # S_T
        self.avg_count = 0  # N
        self.avg_intercept_sum = torch.zeros_like(self.intercept)
        self._prediction = None  # cached (coef, intercept) used by predict and save
        self._journal = None  # inside transaction(): what a rollback restores

    # -- state -------------------------------------------------------------------------
    @property
    def n_features(self) -> int:
        """Number of live random features ``n_blocks · r``."""
        return self.n_blocks * self.feature_map.block_size

    @property
    def coef(self) -> torch.Tensor:
        """Stored coefficients ``c_j`` of the live blocks, ``(n_blocks, r, C)``."""
        return self._coef[: self.n_blocks]

    def next_block(self) -> int:
        """Index of the block that step ``step + 1`` writes: a new one, or ``t mod J`` past the budget."""
        if self.max_blocks is not None and self.n_blocks >= self.max_blocks:
            return self.step % self.max_blocks
        return self.n_blocks

    def _grow(self, n_blocks: int) -> None:
        capacity = self._coef.shape[0]
        if n_blocks <= capacity:
            return
        new_capacity = max(n_blocks, 2 * capacity)  # doubling: amortised O(1) per block
        self._coef = _resized(self._coef, new_capacity)
        if self._avg_e is not None:
            self._avg_e = _resized(self._avg_e, new_capacity)

    # -- the update (Algorithm 1, lines 4-6) ----------------------------------------------
    def apply_step(self, block: int, delta: torch.Tensor, decay: float, intercept_delta) -> None:
        """One step: ``a_j ← a_j/(1 + γν)`` for all blocks, then ``a_block += delta``.

        ``decay`` is ``1/(1 + γ_t ν)`` (in (0, 1]); ``delta`` is ``(r, C)``; ``intercept_delta`` is ``(C,)``.
        """
        self.step += 1
        self._prediction = None
        self.scale *= decay  # lazy decay of every old block
        if self.scale < _RENORMALISE_BELOW:
            self._renormalise()
        if block >= self.n_blocks:
            self._grow(block + 1)
            self.n_blocks = block + 1
        elif self._journal is not None:
            self._journal.remember(self, block)
        stored = delta / self.scale  # a_t / s
        self._coef[block] += stored.to(self.dtype)
        self.intercept += intercept_delta.to(torch.float64)
        if self.average_start is not None and self.step >= self.average_start:
            self._avg_e[block] += stored.to(torch.float64) * self.avg_scale_sum  # δ S_{t−1}
            self.avg_scale_sum += self.scale  # S_t
            self.avg_count += 1
            self.avg_intercept_sum += self.intercept

    def _renormalise(self) -> None:
        # c ← c s, S ← S / s, s ← 1 keeps both c s and (c S − e) unchanged.
        if self._journal is not None:
            self._journal.remember_all(self)
        self._coef[: self.n_blocks] *= self.scale
        self.avg_scale_sum /= self.scale
        self.scale = 1.0

    # -- rollback -----------------------------------------------------------------------
    @contextmanager
    def transaction(self):
        """Undo every step taken in the body if it raises, bit for bit.

        Costs the scalars plus one copy of each *revisited* block (a budget reuses blocks; new
        blocks are simply dropped) — the work of the steps, never a copy of the model — and one
        copy of the live coefficients if the lazy scale is folded in meanwhile (rare).
        """
        if self._journal is not None:  # nested: the outer transaction restores
            yield
            return
        self._journal = _Journal(self)
        try:
            yield
        except BaseException:
            self._journal.restore(self)
            raise
        finally:
            self._journal = None

    # -- state dict -------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything a later step or prediction needs: the feature map's configuration, the
        live coefficients (and averaging sums), the scale, the intercept and the counters."""
        return {"feature_map": self.feature_map.config(), "n_outputs": self.n_outputs,
                "dtype": str(self.dtype).removeprefix("torch."), "max_blocks": self.max_blocks,
                "average_start": self.average_start, "step": self.step, "scale": self.scale,
                "coef": self.coef, "intercept": self.intercept,
                "avg_e": None if self._avg_e is None else self._avg_e[: self.n_blocks],
                "avg_scale_sum": self.avg_scale_sum, "avg_count": self.avg_count,
                "avg_intercept_sum": self.avg_intercept_sum}

    @classmethod
    def from_state_dict(cls, state: dict, device="cpu") -> "Expansion":
        """The expansion of :meth:`state_dict` (copies on ``device``); it continues exactly."""
        from ._state import feature_map_from_config

        expansion = cls(feature_map_from_config(state["feature_map"]), state["n_outputs"],
                        dtype=getattr(torch, state["dtype"]), device=device,
                        max_blocks=state["max_blocks"], average_start=state["average_start"])
        coef = torch.as_tensor(state["coef"])
        expansion.n_blocks, expansion.step = coef.shape[0], int(state["step"])
        expansion._coef = coef.to(expansion.device, expansion.dtype).clone()
        if expansion._avg_e is not None:
            expansion._avg_e = torch.as_tensor(state["avg_e"]).to(expansion.device).clone()
        expansion.scale = float(state["scale"])
        expansion.intercept = torch.as_tensor(state["intercept"]).to(expansion.device).clone()
        expansion.avg_scale_sum, expansion.avg_count = float(state["avg_scale_sum"]), int(state["avg_count"])
        expansion.avg_intercept_sum = torch.as_tensor(state["avg_intercept_sum"]).to(expansion.device).clone()
        return expansion

    def load_prediction_state(self, coef: torch.Tensor, intercept: torch.Tensor, step: int) -> None:
        """Restart from saved prediction coefficients (scale 1, averaging restarted)."""
        self.n_blocks = coef.shape[0]
        self._coef = coef.to(self.device, self.dtype).clone()
        if self._avg_e is not None:
            self._avg_e = torch.zeros_like(self._coef, dtype=torch.float64)
        self.intercept = intercept.to(self.device, torch.float64).clone()
        self.step, self.scale = int(step), 1.0
        self.avg_scale_sum, self.avg_count = 0.0, 0
        self.avg_intercept_sum = torch.zeros_like(self.intercept)
        self._prediction = None

    # -- evaluation --------------------------------------------------------------------
    def prediction_parameters(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Coefficients and intercept used by :meth:`predict`: the averaged iterate when
        averaging has started, else ``s · c``. Cached until the next step."""
        if self._prediction is None:
            if self.avg_count > 0:
                c = self.coef.to(torch.float64)
                coef = (c * self.avg_scale_sum - self._avg_e[: self.n_blocks]) / self.avg_count
                intercept = self.avg_intercept_sum / self.avg_count
            else:
                coef, intercept = self.coef.to(torch.float64) * self.scale, self.intercept
            self._prediction = (coef.to(self.dtype), intercept.to(self.dtype))
        return self._prediction

    def decision(self, X: torch.Tensor) -> torch.Tensor:
        """Current iterate ``f_t(X) = s Σ_j ψ_j(X)ᵀ c_j + b``, ``(n, C)``, as training uses it."""
        return self._contract(X, self.coef) * self.scale + self.intercept.to(self.dtype)

    def predict(self, X: torch.Tensor) -> torch.Tensor:
        """The model's output (averaged iterate when averaging), ``(n, C)``."""
        coef, intercept = self.prediction_parameters()
        return self._contract(X, coef) + intercept

    def _contract(self, X: torch.Tensor, coef: torch.Tensor) -> torch.Tensor:
        """``Σ_j ψ_j(X)ᵀ coef_j`` over all live blocks. O(n·J·r·d), the hot loop.

        The feature map evaluates it in cache-sized chunks (fused GEMM, cos/sin and
        contraction for the Fourier families), never holding the ``n × D`` feature matrix.
        """
        out = torch.zeros((X.shape[0], self.n_outputs), dtype=self.dtype, device=self.device)
        if self.n_blocks == 0 or X.shape[0] == 0:
            return out
        return self.feature_map.contract(X, coef[: self.n_blocks], out)

    def block_features(self, X: torch.Tensor, block: int, out: torch.Tensor | None = None) -> torch.Tensor:
        """``ψ_block(X)``, ``(n, r)``; written into ``out`` (a reusable buffer) when given."""
        return self.feature_map.block_features(X, block, out)


def _resized(tensor: torch.Tensor, capacity: int) -> torch.Tensor:
    out = torch.zeros((capacity, *tensor.shape[1:]), dtype=tensor.dtype, device=tensor.device)
    out[: tensor.shape[0]] = tensor
    return out


class _Journal:
    """What :meth:`Expansion.transaction` restores: the scalars at its start and each block
    (coefficients and averaging sums) before the body first changed it."""

    def __init__(self, expansion: Expansion):
        e = expansion
        self.n_blocks, self.step, self.scale = e.n_blocks, e.step, e.scale
        self.max_blocks = e.max_blocks
        self.avg_scale_sum, self.avg_count = e.avg_scale_sum, e.avg_count
        self.intercept, self.avg_intercept_sum = e.intercept.clone(), e.avg_intercept_sum.clone()
        self.blocks: dict[int, tuple] = {}
        self.all_blocks = None  # every live block, once the scale was folded in

    def remember(self, e: Expansion, block: int) -> None:
        if self.all_blocks is None and block < self.n_blocks and block not in self.blocks:
            avg = None if e._avg_e is None else e._avg_e[block].clone()
            self.blocks[block] = (e._coef[block].clone(), avg)

    def remember_all(self, e: Expansion) -> None:
        if self.all_blocks is None:
            self.all_blocks = e._coef[: self.n_blocks].clone()

    def restore(self, e: Expansion) -> None:
        if self.all_blocks is not None:
            e._coef[: self.n_blocks] = self.all_blocks
        for block, (coef, avg) in self.blocks.items():
            e._coef[block] = coef
            if avg is not None:
                e._avg_e[block] = avg
        e._coef[self.n_blocks : e.n_blocks] = 0  # blocks the body added
        if e._avg_e is not None:
            e._avg_e[self.n_blocks : e.n_blocks] = 0
        e.n_blocks, e.step, e.scale = self.n_blocks, self.step, self.scale
        e.max_blocks = self.max_blocks
        e.avg_scale_sum, e.avg_count = self.avg_scale_sum, self.avg_count
        e.intercept, e.avg_intercept_sum = self.intercept, self.avg_intercept_sum
        e._prediction = None
