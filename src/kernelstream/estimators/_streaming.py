"""``fit`` on a stream: an estimator given a ``kernelstream.data`` source instead of arrays.

**Default solver** (:func:`fit_preconditioned_stream`, ``DSGRegressor``/``DSGClassifier``):

1. a first pass (:mod:`._first_pass`): rows, classes (or the ones declared with ``classes=``)
   and target moments, a seeded sample of ``sample_rows`` training rows, and the held-out rows
   (all of them when they fit in ``validation_bytes``, else the seeded uniform sample of them
   that does), kept in memory;
2. the model selection of the in-memory fit (bandwidth race or cross-validation) on that sample,
   in memory;
3. feature growth and the epochs of preconditioned SGD reading the stream: each epoch reads the
   training rows in chunks of one batch; the held-out rows (by the hash of each row's id, the
   rule of ``Source.split``) score each epoch from memory.

Memory is the sample, a batch, the shuffle buffer and the model, not the data. With a shard of
a source (``source.shard(rank, world_size)``, under ``torch.distributed``) the same fit is
data-parallel (:mod:`kernelstream.distributed`); with a :class:`ShardGroup` one process takes
the global batches of that data-parallel fit.

**One-pass solver** (``solver="one_pass"``, ``DSGOneClass``): the first pass, then the epochs
of Algorithm 1 on the stream's chunks. **AOGD**: its passes read the stream's chunks. The
estimators whose fit needs every row at once (the GP, GoGP, the density ratio) read the
source into arrays (:func:`arrays_of`).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils import check_random_state

from .._device import resolve_device, to_tensor
from .._validation import check_magnitude
from ..data import Chunk, Source
from ..distributed import Communicator
from ..features import kernel_class, make_feature_map
from ..planning import chooses
from ..rng import draw_seed
from ..solvers.selection import Problem, grow_features
from ..solvers.sharded import ShardedRows
from ..solvers.streams import StreamProblem, StreamValidation, rows_of
from ._first_pass import RowBuffer, concat_chunks, first_pass, take
from ._progress import closing
from ._sources import (check_arrays_absent, check_labels_known, label_kind, readers_of, row_maxima,
                       share_layouts)

__all__ = ["StreamFitMixin", "ChunkConverter"]

#: rows per batch of the held-out rows
VALIDATION_BATCH_ROWS = 4096


class ChunkConverter:
    """A stream's chunks as the solver's ``(X, y, weight)``: ``arrays(chunk)`` as numpy,
    ``converter(chunk, dense)`` as tensors on the device (:meth:`StreamFitMixin._chunk_arrays`)."""

    def __init__(self, arrays, tensors):
        self.arrays, self._tensors = arrays, tensors

    def __call__(self, chunk: Chunk, dense: bool = True) -> tuple:
        return self._tensors(chunk, dense=dense)


class StreamFitMixin:
    """``fit`` on a stream, as methods of the estimator (the doubly stochastic estimators)."""

    def _fit_source(self, data, y=None, sample_weight=None, classes=None, limits=None):
        """``fit`` on a stream (a ``kernelstream.data`` source, a shard of one under
        ``torch.distributed``, or a ShardGroup); ``limits`` the planner's table (``None``:
        the default, :data:`~kernelstream.planning.LIMITS`)."""
        check_arrays_absent(y, sample_weight)
        readers, comm, _ = readers_of(data)
        share_layouts(readers, comm)
        if getattr(self, "solver", "one_pass") != "one_pass":
            return self._fit_preconditioned_stream(data, classes, limits)
        return self._fit_one_pass_stream(data, classes, limits)

    # -- chunks ------------------------------------------------------------------------------
    def _chunk_converter(self, stats, locate) -> ChunkConverter:
        """The converter of this fit's chunks, with the classes' weights of the whole source."""
        class_weights = self._stream_class_weights(stats)
        return ChunkConverter(functools.partial(self._chunk_arrays, class_weights, locate),
                              functools.partial(self._chunk_tensors, class_weights, locate))

    def _chunk_arrays(self, class_weights, locate, chunk: Chunk) -> tuple:
        """A chunk checked (features, magnitude, sign for histogram kernels, labels, weights;
        errors name the file and line), its targets encoded and weighted by ``class_weights``."""
        X = self._checked_chunk_X(chunk, locate)
        y = (chunk.y if label_kind(self) == "classes" else  # the first pass checked every label
             self._check_targets(chunk.y, first=False))
        weight = self._validate_sample_weight(chunk.sample_weight, X)
        targets = self._targets(y, X.shape[0])
        if class_weights is not None:
            weight = weight * class_weights[self._class_index(targets)]
        return X, targets, weight

    def _chunk_tensors(self, class_weights, locate, chunk: Chunk, dense: bool = True) -> tuple:
        """:meth:`_chunk_arrays` on the device, densified one chunk at a time (``dense``)."""
        X, targets, weight = self._chunk_arrays(class_weights, locate, chunk)
        dtype, device = self._torch_dtype(), self.device_
        X_t = to_tensor(X, dtype, device) if dense else rows_of(X, dtype, device, to_tensor)
        return (X_t, self._target_tensor(targets, device),
                torch.as_tensor(weight, dtype=dtype, device=device))

    def _checked_chunk_X(self, chunk: Chunk, locate, width: int | None = None):
        """``chunk.X`` checked: ``width`` features (default ``n_features_in_``), finite and
        within the dtype's range, non-negative for histogram kernels; errors name the row."""
        X, width = chunk.X, self.n_features_in_ if width is None else width
        if X.shape[1] != width:
            raise ValueError(f"{locate(chunk.row_ids[0])}: the row has {X.shape[1]} "
                             f"features, but {type(self).__name__} is expecting "
                             f"{width} features as input.")
        try:
            check_magnitude(X, np.float32 if self.dtype == "float32" else np.float64)
        except ValueError as exc:
            largest = row_maxima(abs(X))
            raise ValueError(f"{locate(chunk.row_ids[int(np.argmax(largest))])}: {exc}") from None
        if X.shape[0] and kernel_class(self.kernel).non_negative and X.min() < 0:
            negative = int(np.argmax(row_maxima(-X) > 0))
            raise ValueError(f"{locate(chunk.row_ids[negative])}: a negative value, but "
                             f"kernel={self.kernel!r} is defined on non-negative inputs "
                             "(histograms).")
        return X

    # -- the first pass's findings --------------------------------------------------------------
    def _stream_class_weights(self, stats) -> np.ndarray | None:
        """Weight of each of ``classes_`` over the whole source (None for other estimators)."""
        if label_kind(self) != "classes" or self.class_weight is None:
            return None
        classes = self.classes_
        counts = np.zeros(len(classes))
        found = np.searchsorted(classes, stats.classes)
        counts[found] = stats.counts
        if self.class_weight == "balanced":  # n / (n_classes · count_c), as scikit-learn
            present = counts > 0
            weights = np.ones(len(classes))
            weights[present] = counts.sum() / (present.sum() * counts[present])
            return weights
        one_each = self._encode_targets(classes)
        return self._class_weights(one_each)[np.argsort(self._class_index(one_each))]

    def _stream_start_labels(self, whole: Source, stats, classes) -> None:
        """Fit the label set (or the target scaling) from the first pass."""
        kind = label_kind(self)
        if kind == "none":
            return
        if not stats.has_labels:
            raise ValueError(f"{whole!r} has no labels; open it with label= naming the label column.")
        sample = stats.samples[0].sample()
        if kind == "values":
            self._check_targets(sample.y, first=True)
            self.y_offset_ = stats.moments.mean  # as _fit_target_scaling, over every row
            std = stats.moments.std()
            self.y_scale_ = np.where(std > 0, std, 1.0)
            return
        if classes is not None:
            check_labels_known(whole, stats, np.unique(np.asarray(classes)), "classes")
        self._check_targets(sample.y, first=True,
                            classes=stats.classes if classes is None else classes)
        self._check_fit_targets(stats.classes[stats.positive > 0],
                                np.ones(int((stats.positive > 0).sum())))

    def _stream_start(self, whole: Source, stats, seed: int, classes) -> None:
        """Seed, device, input width and labels of a fresh fit on a stream."""
        if stats.samples[0].sample() is None:
            raise ValueError(f"{whole!r} has no rows to train on.")
        self.seed_, self.device_ = seed, resolve_device(self.device)
        self.n_features_in_ = whole.n_features
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self._stream_start_labels(whole, stats, classes)

    def _stream_plan(self, whole: Source, stats, warm: bool):
        """The fit plan of a stream: its rows and width, the training rows of the first pass and
        the sampled rows that choose ``σ`` and ``α``."""
        sample, held = stats.samples[0].sample(), stats.samples[1].sample()
        n_sample = 0 if sample is None else len(sample.row_ids)
        n_held = 0 if held is None else min(len(held.row_ids), self._limits().validation_sample_rows)
        n_rows = sum(train + val for train, val in stats.reader_rows)
        X = sp.csr_matrix((0, whole.n_features)) if sample is not None and sp.issparse(sample.X) else \
            np.empty((0, whole.n_features))
        return self._plan(X, warm, self._limits(), n_rows=n_rows, stream=True, n_train=stats.n_train,
                               selection_rows=n_sample + n_held)

    def _sample_problems(self, stats, convert: ChunkConverter) -> tuple[Problem, Problem]:
        """The sample as in-memory problems: training rows with the held-out sample as
        validation, and every sampled row (for cross-validation)."""
        train, held = stats.samples[0].sample(), stats.samples[1].sample()
        held = None if held is None else take(held, slice(0, self._limits().validation_sample_rows))
        X, y, w = convert(train, dense=False)
        validation = None if held is None or not len(held.row_ids) else convert(held, dense=False)
        if validation is None and chooses(self.get_params()):
            raise ValueError(f"The stream has too few rows to hold out validation_fraction="
                             f"{self.validation_fraction} for the choice of sigma and alpha; "
                             "pass more rows, or numbers for sigma and alpha.")
        n = X.shape[0]
        common = dict(loss=self._make_loss(), n_outputs=self._n_outputs(),
                      batch_size=min(self.batch_size, n), seed=self.seed_ % 2**32,
                      method=self._inner_method())
        problem = Problem(X, y, w, validation, train_rows=torch.arange(n, device=X.device), **common)
        rows = concat_chunks([train, held]) if validation is not None else train
        X_all, y_all, w_all = convert(rows, dense=False)
        everything = Problem(X_all, y_all, w_all, None,
                             train_rows=torch.arange(X_all.shape[0], device=X.device), **common)
        return problem, everything

    def _select_on_sample(self, stats, convert: ChunkConverter, comm: Communicator):
        """Feature map, ``α`` candidates and ``(blocks to start from, most blocks)``: the model
        selection of the in-memory fit on the sample, rank 0's choice on every rank, with the
        feature budget of the whole stream."""
        problem, everything = self._sample_problems(stats, convert)
        feature_map, alphas, (J, max_blocks) = self._select(problem, stats.samples[0].sample().X,
                                                            everything)
        sigma, alphas, self.cv_results_ = comm.broadcast_object(
            (feature_map.sigma, alphas, self.cv_results_))
        block_size = self.fit_plan_.block_size
        if (sigma, block_size) != (feature_map.sigma, feature_map.block_size):
            feature_map = make_feature_map(self.kernel, self.n_features_in_, sigma,
                                           block_size, self.seed_,
                                           kernel_params=self.kernel_params)
        return feature_map, alphas, J, max_blocks

    def _stream_problem(self, readers, holdout, split_seed, stats, convert, comm) -> StreamProblem:
        """The training stream: readers of the training rows, the held-out rows, the sample."""
        train = [r.split(holdout, split_seed)[0] for r in readers] if holdout else list(readers)
        sample, held = stats.samples[0].sample(), stats.samples[1].sample()
        if holdout and (held is None or not len(held.row_ids)):
            raise ValueError("The stream has too few rows to hold out validation_fraction="
                             f"{self.validation_fraction}; pass more rows, or set "
                             "early_stopping=False with numbers for sigma and alpha.")
        return StreamProblem(
            readers=train, reader_rows=[rows for rows, _ in stats.reader_rows], convert=convert,
            sample=convert(sample, dense=False)[0],
            validation=_validation(held, convert, comm) if holdout else None,
            loss=self._make_loss(), n_outputs=self._n_outputs(),
            batch_size=min(self.batch_size, max(1, stats.n_train)),
            seed=self.seed_ % 2**32,
            empty_batch=tuple(t[:0] for t in convert(take(sample, slice(0, 1)))),
            comm=comm if comm.world_size > 1 else None, method=self._inner_method())

    def _held_out_rows(self, whole: Source) -> int:
        """How many held-out rows the first pass keeps: as many as ``validation_bytes`` holds
        (:class:`~kernelstream.planning.FitLimits`)."""
        row_bytes = (whole.n_features + 2) * torch.empty((), dtype=self._torch_dtype()).element_size()
        limits = self._limits()
        return max(limits.validation_sample_rows, limits.validation_bytes // row_bytes)

    def _rows_in_memory(self, readers, whole: Source, budget: int) -> Chunk | None:
        """Every row of ``readers`` read in one pass and checked (errors name the file and
        line), or ``None`` once they pass ``budget`` bytes (then the stream is fitted as a
        stream). Dense rows are kept in the fit's dtype (float32 halves a CSV's float64), each
        block copied into one buffer as it is read (:class:`~._first_pass.RowBuffer`)."""
        buffer, held = None, 0
        dtype = np.float32 if self._torch_dtype() == torch.float32 else np.float64
        for reader in readers:
            for block in reader.blocks():
                self._checked_chunk_X(block, whole.locate, whole.n_features)
                if not sp.issparse(block.X) and block.X.dtype != dtype:
                    block = block._replace(X=block.X.astype(dtype))
                X = block.X
                held += (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sp.issparse(X)
                         else X.nbytes)
                if held > budget:
                    return None
                if buffer is None:  # the most rows whose X the budget holds
                    row = X.indptr.itemsize if sp.issparse(X) else X.itemsize * X.shape[1]
                    buffer = RowBuffer(budget // max(row, 1))
                buffer.append(block._replace(row_ids=None))  # the rows are checked: ids not kept
        return None if buffer is None else buffer.rows()

    def _fit_stream_in_memory(self, data, classes, limits) -> bool:
        """The fit of a stream whose rows fit ``stream_rows_bytes`` (a fresh fit by the engine's
        solver), as arrays: the in-memory fit's model, its plan saying so. Under ranks each
        holds its shard's rows (:class:`~kernelstream.solvers.sharded.ShardedRows`: the
        engine's products summed over ranks), the model of one process on the shards' rows in
        rank order. False where the stream is fitted as a stream (too many bytes on a rank, a
        warm start, classes declared beyond the labels, no labels)."""
        readers, comm, whole = readers_of(data)
        warm = self.warm_start and hasattr(self, "expansion_") and hasattr(self, "alpha_")
        if warm or self.solver not in ("preconditioned", "cg"):
            return False
        try:
            rows = self._rows_in_memory(readers, whole, limits.stream_rows_bytes)
        except Exception as error:  # noqa: BLE001 — a bad line on one rank: every rank hears of it
            comm.fail(error)
        held = rows is not None and rows.y is not None
        if not all(comm.gather_objects(held)):  # every rank holds its rows, or none fits so
            return False
        X, y, weight = rows.X, rows.y, rows.sample_weight
        if comm.world_size > 1:
            shares = comm.gather_objects((y, weight))
            y = np.concatenate([share[0] for share in shares])
            weight = (None if all(share[1] is None for share in shares) else np.concatenate(
                [np.ones(len(s[0])) if s[1] is None else s[1] for s in shares]))
            X = ShardedRows.of_shards(X, comm)
        if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), np.unique(y)):
            return False
        self._fit_preconditioned(X, y, weight, limits=limits)
        where = (f"the source's {X.shape[0]:,} rows" if comm.world_size == 1 else
                 f"each rank's shard of the {X.shape[0]:,} rows ({comm.world_size} ranks)")
        read = (f"{where} fit stream_rows_bytes={limits.stream_rows_bytes:,}: read into memory "
                "in one pass and fitted as arrays" + (", each product summed over ranks"
                                                      if comm.world_size > 1 else ""))
        self.fit_plan_ = dataclasses.replace(self.fit_plan_, reasons=(read, *self.fit_plan_.reasons))
        return True

    def _fit_preconditioned_stream(self, data, classes=None, limits=None):
        """The default ``fit`` on a stream (module docstring); ``self`` is a ConvergingMixin.
        A stream whose rows fit in memory is fitted as arrays (:meth:`_fit_stream_in_memory`)."""
        with self._unchanged_on_error():
            if not self.warm_start:
                self._validate_params()
            if self._fit_stream_in_memory(data, classes, self._use_limits(limits)):
                return self
        readers, comm, whole = readers_of(data)
        with self._unchanged_on_error():
            limits = self._use_limits(limits)
            warm = (self.warm_start and hasattr(self, "expansion_")
                    and hasattr(self, "alpha_"))
            if not warm:
                self._validate_params()
                self._check_params()
            seed = comm.broadcast_object(draw_seed(check_random_state(self.random_state)))
            needs_holdout = self.early_stopping or (chooses(self.get_params()) and not warm)
            holdout = self.validation_fraction if needs_holdout else None
            split_seed = seed % 2**31
            stats = first_pass(readers, comm, holdout, split_seed, split_seed + 1,
                               (limits.sample_rows, self._held_out_rows(whole)), label_kind(self))
            if warm:
                if label_kind(self) == "classes":
                    check_labels_known(whole, stats, self.classes_, "classes_")
                theta, feature_map = self._theta(), self.expansion_.feature_map
                alphas, J = [self.alpha_], self.expansion_.n_blocks
                max_blocks = J
            else:
                self._stream_start(whole, stats, seed, classes)
                theta = None
            plan = self._stream_plan(whole, stats, warm)
            if not warm:
                self._resolve_loss(plan.loss)
                self._check_solver_loss()
            convert = self._chunk_converter(stats, whole.locate)
            if not warm:
                feature_map, alphas, J, max_blocks = self._select_on_sample(stats, convert, comm)
            problem = self._stream_problem(readers, holdout, split_seed, stats, convert, comm)
            with closing(self._progress()) as progress:
                result, J, history, feature_map = grow_features(
                    problem, feature_map, alphas, self._control(), J, max_blocks, plan.growth_tol,
                    theta, progress, narrow=plan.narrow)
            self._set_preconditioned(result, feature_map, alphas, J, history)
            self._calibrate(problem)
            self._pending = None
        return self

    def _fit_one_pass_stream(self, data, classes=None, limits=None):
        """``fit`` of the one-pass solver (Algorithm 1) on a stream: the first pass (labels, the
        bandwidth's sample), then ``max_iter`` epochs of the source's chunks of ``batch_size``."""
        readers, comm, whole = readers_of(data)
        if comm.world_size > 1 or len(readers) > 1:
            raise ValueError("Data-parallel fits use the default solver (solver='preconditioned'); "
                             f"{type(self).__name__} with this solver takes the whole source.")
        source = readers[0]
        with self._unchanged_on_error():
            self._validate_params()
            self._check_params()
            limits = self._use_limits(limits)
            stats = first_pass(readers, comm, None, 0, 1, (limits.sample_rows, 0), label_kind(self))
            rng = check_random_state(self.random_state)
            self._stream_start(whole, stats, 0, classes)
            expansion = self._start(stats.samples[0].sample().X, None, rng)
            convert = self._chunk_converter(stats, whole.locate)
            n_epochs = self._n_epochs(stats.n_train)
            batches = (convert.arrays(chunk) for epoch in range(n_epochs)
                       for chunk in source.rechunked(self.batch_size).chunks(epoch))
            for _ in self._run_batches(expansion, batches):
                pass
            self._set_fitted(expansion, n_epochs)
            self._pending = None
        return self


def _validation(held, convert: ChunkConverter, comm: Communicator) -> StreamValidation:
    """The held-out rows in memory, this rank's share of them (a slice), in batches."""
    share = np.array_split(np.arange(len(held.row_ids)), comm.world_size)[comm.rank]
    batches = [convert(take(held, rows), dense=False)
               for rows in np.array_split(share, max(1, -(-len(share) // VALIDATION_BATCH_ROWS)))]
    return StreamValidation(batches, comm if comm.world_size > 1 else None)
