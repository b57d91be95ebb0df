"""The cost model: each stage of an engine fit as work (multiply-adds, bytes moved,
transcendentals, passes over the rows), predicted from the shapes before any data is read, and
as seconds from a machine's throughput (:func:`kernelstream.solvers.throughput.measured_throughput`,
timed once a process). Pure arithmetic: nothing here touches data or tensors.

Work is what a budget counts (:meth:`Work.units`, the same on every machine and under any
load, so that a seed gives one model everywhere); seconds are what a report predicts
(:meth:`Work.seconds`). The stages (``n`` rows, ``d`` inputs, ``D`` features, ``s`` sketch rows,
``m`` subsample rows):

- the features of ``D`` new columns: ``nDd`` multiply-adds, ``nD`` cosines, ``nD`` stored;
- a solve of ``k`` conjugate-gradient iterations: ``k`` passes over the ``nD`` stored features
  (each value widened and multiplied twice: the pass's rate is measured as such), and the
  sketch preconditioner's ``s²D + s³/3`` multiply-adds;
- the selection: per bandwidth ``m²D + 9m³`` (the Gram, its float64 eigendecomposition), the squared
  hinge ``3m³/2`` an ``α``.

Record: docs/decisions/cost-model.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Work", "exact_kernel_work", "feature_work", "growth_budget", "lengthscale_work", "predicted_narrowing",
           "predicted_selection", "selection_rows", "selection_work", "solve_work"]

#: Newton steps of the squared hinge's dual path an ``α`` (warm along the path)
HINGE_STEPS = 6


@dataclass(frozen=True)
class Work:
    """What a stage does: ``madds`` multiply-adds, ``bytes`` moved through memory,
    ``transcendentals`` (cosines, exponentials), ``passes`` over the training rows,
    ``allocated`` bytes of new memory (their first touch) and ``calls``, the small operations
    dispatched one by one (a chunk's products, a Newton step's factor): seconds, not budget
    units, as their cost is the system's and the interpreter's; ``factorised``: multiply-adds of
    float64 factorisations (eigendecompositions, Cholesky factors and inverses), one budget unit
    each as a product's, at LAPACK's rate in seconds (1.7–2.8× a float32 GEMM's time at 512–1,024
    rows: docs/decisions/cost-model.md)."""

    madds: float = 0.0
    bytes: float = 0.0
    transcendentals: float = 0.0
    passes: float = 0.0
    allocated: float = 0.0
    calls: float = 0.0
    factorised: float = 0.0

    def __add__(self, other: "Work") -> "Work":
        return Work(self.madds + other.madds, self.bytes + other.bytes,
                    self.transcendentals + other.transcendentals, self.passes + other.passes,
                    self.allocated + other.allocated, self.calls + other.calls,
                    self.factorised + other.factorised)

    def units(self, limits) -> float:
        """The work in one machine-independent number, multiply-add equivalents: a byte
        ``limits.work_byte_units``, a cosine ``limits.work_cosine_units``."""
        return (self.madds + self.factorised + limits.work_byte_units * self.bytes
                + limits.work_cosine_units * self.transcendentals)

    def seconds(self, throughput) -> float:
        """Predicted seconds on a machine of ``throughput`` (a
        :class:`~kernelstream.solvers.throughput.Throughput`: each kind of work at its rate)."""
        factorisations = throughput.factorised_madds_per_second or throughput.madds_per_second
        return (self.madds / throughput.madds_per_second
                + self.factorised / factorisations
                + self.bytes / throughput.bytes_per_second
                + self.transcendentals / throughput.transcendentals_per_second
                + throughput.allocation_seconds(self.allocated)
                + self.calls * throughput.seconds_per_call)


def feature_work(n_rows: int, n_inputs: int, new_features: int, item_bytes: int,
                 new_memory: bool = True) -> Work:
    """The features of ``new_features`` columns of ``n_rows`` rows of ``n_inputs`` inputs (a
    sparse row's: its nonzeros): ``nDd`` multiply-adds,
    ``nD`` cosines and ``nD·item`` bytes stored (in new memory, or ``new_memory=False``
    written over the cache's own)."""
    values = float(n_rows) * new_features
    return Work(values * n_inputs, values * item_bytes, values, 1.0,
                values * item_bytes if new_memory else 0.0)


def solve_work(n_rows: int, n_features: int, iterations: int, item_bytes: int,
               sketch_rows: int = 0, chunks: int = 0) -> Work:
    """A solve by ``iterations`` preconditioned conjugate-gradient iterations, each one pass
    over the ``nD·item`` bytes of stored features (its two products ``2nD`` multiply-adds
    within the pass's measured rate) in ``chunks`` chunks of rows (about 8 calls each, and 40
    an iteration for the rest); the preconditioner of ``sketch_rows`` rows ``s²D + s³/3``."""
    values = float(n_rows) * n_features
    s = float(min(sketch_rows, n_features + 1))
    return Work(s * s * n_features, iterations * values * item_bytes, 0.0,
                float(iterations), 0.0, iterations * (8.0 * chunks + 40.0), s**3 / 3)


def selection_work(rows: int, n_inputs: int, n_features: int, bandwidths: int, alphas: int,
                   hinge_bandwidths: int = 0, hinge_alphas: int = 0, exact: bool = False) -> Work:
    """The choice on ``rows`` subsample rows at ``n_features`` features: per bandwidth the
    features and their Gram ``m²D`` (``exact``: the kernel's matrix, ``m²d`` and ``m²``
    exponentials) and its float64 eigendecomposition ``9m³`` (every ``α``'s leave-one-out
    ``m²`` more), the squared hinge ``3m³/2`` an ``α`` of each of its bandwidths."""
    m = float(rows)
    gram = m * m * n_inputs if exact else m * n_features * n_inputs + m * m * n_features
    per_bandwidth = gram + alphas * m * m
    hinge = hinge_bandwidths * hinge_alphas * 1.5 * m**3
    steps = hinge_bandwidths * hinge_alphas * HINGE_STEPS  # each about 1,000 calls (line search)
    return Work(bandwidths * per_bandwidth, 0.0, bandwidths * m * (m if exact else n_features), 0.0,
                0.0, 1000.0 * steps + 50.0 * bandwidths, bandwidths * 9 * m**3 + hinge)


def exact_kernel_work(rows: int, n_inputs: int, loss: str) -> Work:
    """The exact kernel's solve on ``rows`` rows: its matrix (``n²d``, ``n²`` exponentials)
    and one Cholesky factor ``n³/3`` (the squared hinge: a factor and an inverse ``n³`` a
    Newton step on its active rows)."""
    n = float(rows)
    factor = HINGE_STEPS * n**3 if loss == "squared_hinge" else n**3 / 3
    calls = 1000.0 * HINGE_STEPS if loss == "squared_hinge" else 10.0
    return Work(n * n * n_inputs, 0.0, n * n, 0.0, 16 * n * n, calls, factor)


def growth_budget(n_rows: int, units_per_row: float, fixed: float = 0.0) -> float:
    """The work units the full-size stages may spend: ``units_per_row`` a training row and
    ``fixed`` more (the fit's time affine in the rows)."""
    return float(units_per_row) * n_rows + float(fixed)


def predicted_selection(plan, n_inputs: int, rows: int) -> Work:
    """The selection's work as ``plan`` sets it: three bandwidths of the descent (three more
    for a regressor's per-feature lengthscales, and their marginal likelihood's L-BFGS:
    :func:`lengthscale_work`), every ``α`` of ``dual_alphas``, and for two compared losses
    the squared hinge at two bandwidths and every other ``α``."""
    scales = 0 if plan.sigma_scales is None else min(3, len(plan.sigma_scales))
    per_feature = bool(plan.lengthscale_rows and plan.shape.n_classes is None and n_inputs > 1
                       and scales)
    hinge = 2 * (len(plan.dual_alphas) + 1) // 2 if len(plan.losses_compared) > 1 else 0
    work = selection_work(rows, n_inputs, plan.selection_features,
                          max(1, scales) * (2 if per_feature else 1), len(plan.dual_alphas),
                          1 if hinge else 0, hinge, exact=plan.basis == "exact")
    if per_feature:
        work = work + lengthscale_work(min(rows, plan.lengthscale_rows), n_inputs,
                                       plan.lengthscale_iterations)
    return work


def lengthscale_work(rows: int, n_inputs: int, iterations: int) -> Work:
    """Per-feature lengthscales by L-BFGS on ``rows`` rows: about ``1.2`` evaluations an
    iteration, each the Cholesky, inverse and gradient of an ``r × r`` kernel matrix (``4r³``)
    and its ``d`` lengthscales' derivatives (``4r²d``)."""
    r = float(rows)
    return Work(1.2 * iterations * 4 * r * r * n_inputs, 0.0, 1.2 * iterations * r * r, 0.0, 0.0,
                1.2 * iterations * 60.0, 1.2 * iterations * 4 * r**3)


def selection_rows(plan, n_inputs: int, least: int, most: int, budget: float,
                   step: int = 128, price=None) -> int:
    """The most subsample rows, a multiple of ``step`` in ``[least, most]``, whose predicted
    selection work (:func:`predicted_selection`) fits ``budget`` (``least`` where none does):
    the choice costs at most what the full-size stages may. ``price``: a :class:`Work`'s cost
    in the budget's unit (``None``: its work units; a budget in seconds, its seconds)."""
    price = (lambda work: work.units(plan.limits)) if price is None else price
    rows = most
    while rows > least and price(predicted_selection(plan, n_inputs, rows)) > budget:
        rows = max(least, (rows - 1) // step * step)
    return rows


def predicted_narrowing(plan, n_inputs: int, chunks: int, held_rows: int = 0) -> Work:
    """The narrowing's work: two bandwidths (the subsample's and half of it), each the
    features of ``narrow_rows`` rows at ``narrow_blocks`` blocks and a solve of
    ``predicted_iterations``, in float32, its passes in ``chunks`` chunks of rows, and the
    outputs of the ``held_rows`` held-out rows that judge it (their features, stored in
    float32, and one product: the stage's share that grows with the rows, 75,000 of them at
    10^6)."""
    features = plan.narrow_blocks * plan.block_size
    held = feature_work(held_rows, n_inputs, features, 4)
    held = held + Work(float(held_rows) * features)
    one = (feature_work(plan.narrow_rows, n_inputs, features, 4)
           + solve_work(plan.narrow_rows, features, plan.limits.predicted_iterations, 4,
                        max(plan.selection_rows, plan.limits.sketch_least_rows), chunks) + held)
    return one + one
