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

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import is_classifier, is_regressor
from sklearn.utils import check_random_state

from .._device import resolve_device, to_tensor
from .._validation import check_magnitude
from ..data import Chunk, Source
from ..distributed import Communicator, ShardGroup, communicator_for
from ..features import kernel_class, make_feature_map
from ..planning import LIMITS, chooses
from ..rng import draw_seed
from ..solvers.selection import Problem, grow_features
from ..solvers.streams import StreamProblem, StreamValidation, rows_of
from ._first_pass import concat_chunks, first_pass, take
from ._progress import closing

__all__ = ["is_source", "fit_preconditioned_stream", "fit_one_pass_stream", "fit_aogd_stream",
           "arrays_of", "sample_of", "readers_of"]

#: rows per batch of the held-out rows
VALIDATION_BATCH_ROWS = 4096


def is_source(data) -> bool:
    """Whether ``fit`` was given a stream (a ``kernelstream.data`` source or a ShardGroup)."""
    return isinstance(data, (Source, ShardGroup))


def check_arrays_absent(y, sample_weight=None) -> None:
    """A source carries its labels and weights: refuse separate ones."""
    if y is not None or sample_weight is not None:
        raise ValueError("A source carries its labels and weights (open_source(..., label=, "
                         "weight=)); call fit(source) without y or sample_weight.")


def readers_of(data) -> tuple[list, Communicator, Source]:
    """``(sources this process reads, communicator, the whole source)``."""
    if isinstance(data, ShardGroup):
        return data.shards(), Communicator(), data.source
    return [data], communicator_for(data), data.unsharded()


def _label_kind(estimator) -> str:
    return "classes" if is_classifier(estimator) else "values" if is_regressor(estimator) else "none"


class ChunkConverter:
    """A stream's chunks as the solver's ``(X, y, weight)``: each chunk is checked (features,
    magnitude, sign for histogram kernels, labels, weights; errors name the file and line),
    its targets encoded as the estimator's and weighted by the classes' weights of the whole
    source (``class_weight``), then put on the device — densified one chunk at a time."""

    def __init__(self, estimator, class_weights: np.ndarray | None, locate):
        self.estimator, self.class_weights, self.locate = estimator, class_weights, locate
        self.labels_checked = _label_kind(estimator) == "classes"

    def arrays(self, chunk: Chunk) -> tuple:
        est = self.estimator
        X = self._checked_X(chunk)
        y = (chunk.y if self.labels_checked else  # the first pass checked every label
             est._check_targets(chunk.y, first=False))
        weight = est._validate_sample_weight(chunk.sample_weight, X)
        targets = est._targets(y, X.shape[0])
        if self.class_weights is not None:
            weight = weight * self.class_weights[est._class_index(targets)]
        return X, targets, weight

    def __call__(self, chunk: Chunk, dense: bool = True) -> tuple:
        est = self.estimator
        X, targets, weight = self.arrays(chunk)
        dtype, device = est._torch_dtype(), est.device_
        X_t = to_tensor(X, dtype, device) if dense else rows_of(X, dtype, device, to_tensor)
        return (X_t, est._target_tensor(targets, device),
                torch.as_tensor(weight, dtype=dtype, device=device))

    def _checked_X(self, chunk: Chunk):
        est, X = self.estimator, chunk.X
        if X.shape[1] != est.n_features_in_:
            raise ValueError(f"{self.locate(chunk.row_ids[0])}: the row has {X.shape[1]} "
                             f"features, but {type(est).__name__} is expecting "
                             f"{est.n_features_in_} features as input.")
        try:
            check_magnitude(X, np.float32 if est.dtype == "float32" else np.float64)
        except ValueError as exc:
            largest = _row_maxima(abs(X))
            raise ValueError(f"{self.locate(chunk.row_ids[int(np.argmax(largest))])}: {exc}") from None
        if X.shape[0] and kernel_class(est.kernel).non_negative and X.min() < 0:
            negative = int(np.argmax(_row_maxima(-X) > 0))
            raise ValueError(f"{self.locate(chunk.row_ids[negative])}: a negative value, but "
                             f"kernel={est.kernel!r} is defined on non-negative inputs "
                             "(histograms).")
        return X


def _row_maxima(X) -> np.ndarray:
    """The largest entry of each row (zeros of a sparse row count), as a 1-D array."""
    largest = X.max(axis=1)
    return np.asarray(largest.todense() if sp.issparse(largest) else largest).ravel()


def _class_weight_vector(estimator, stats) -> np.ndarray | None:
    """Weight of each of ``classes_`` over the whole source (None for other estimators)."""
    if _label_kind(estimator) != "classes" or estimator.class_weight is None:
        return None
    classes = estimator.classes_
    counts = np.zeros(len(classes))
    found = np.searchsorted(classes, stats.classes)
    counts[found] = stats.counts
    if estimator.class_weight == "balanced":  # n / (n_classes · count_c), as scikit-learn
        present = counts > 0
        weights = np.ones(len(classes))
        weights[present] = counts.sum() / (present.sum() * counts[present])
        return weights
    one_each = estimator._encode_targets(classes)
    return estimator._class_weights(one_each)[np.argsort(estimator._class_index(one_each))]


def check_labels_known(whole: Source, stats, known: np.ndarray, name: str) -> None:
    """Refuse a label of the first pass outside ``known``, naming a row that holds it."""
    unknown = np.flatnonzero(~np.isin(stats.classes, known))
    if len(unknown):
        raise ValueError(f"{whole.locate(stats.example_ids[unknown[0]])}: label "
                         f"{stats.classes[unknown[0]].item()!r} is not in {name}="
                         f"{known.tolist()}; declare every label.")


def _start_labels(estimator, whole: Source, stats, classes) -> None:
    """Fit the label set (or the target scaling) from the first pass."""
    kind = _label_kind(estimator)
    if kind == "none":
        return
    if not stats.has_labels:
        raise ValueError(f"{whole!r} has no labels; open it with label= naming the label column.")
    sample = stats.samples[0].sample()
    if kind == "values":
        estimator._check_targets(sample.y, first=True)
        estimator.y_offset_ = stats.moments.mean  # as _fit_target_scaling, over every row
        std = stats.moments.std()
        estimator.y_scale_ = np.where(std > 0, std, 1.0)
        return
    if classes is not None:
        check_labels_known(whole, stats, np.unique(np.asarray(classes)), "classes")
    estimator._check_targets(sample.y, first=True,
                             classes=stats.classes if classes is None else classes)
    estimator._check_fit_targets(stats.classes[stats.positive > 0],
                                 np.ones(int((stats.positive > 0).sum())))


def _start(estimator, whole: Source, stats, seed: int, classes) -> None:
    """Seed, device, input width and labels of a fresh fit on a stream."""
    if stats.samples[0].sample() is None:
        raise ValueError(f"{whole!r} has no rows to train on.")
    estimator.seed_, estimator.device_ = seed, resolve_device(estimator.device)
    estimator.n_features_in_ = whole.n_features
    if hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    _start_labels(estimator, whole, stats, classes)


def _plan(estimator, whole: Source, stats, warm: bool):
    """The fit plan of a stream: its rows and width, the training rows of the first pass and
    the sampled rows that choose ``σ`` and ``α``."""
    sample, held = stats.samples[0].sample(), stats.samples[1].sample()
    n_sample = 0 if sample is None else len(sample.row_ids)
    n_held = 0 if held is None else min(len(held.row_ids), LIMITS.validation_sample_rows)
    n_rows = sum(train + val for train, val in stats.reader_rows)
    X = sp.csr_matrix((0, whole.n_features)) if sample is not None and sp.issparse(sample.X) else \
        np.empty((0, whole.n_features))
    return estimator._plan(X, warm, n_rows=n_rows, stream=True, n_train=stats.n_train,
                           selection_rows=n_sample + n_held)


def _sample_problem(estimator, stats, convert: ChunkConverter) -> tuple[Problem, Problem]:
    """The sample as in-memory problems: training rows with the held-out sample as
    validation, and every sampled row (for cross-validation)."""
    train, held = stats.samples[0].sample(), stats.samples[1].sample()
    held = None if held is None else take(held, slice(0, LIMITS.validation_sample_rows))
    X, y, w = convert(train, dense=False)
    validation = None if held is None or not len(held.row_ids) else convert(held, dense=False)
    if validation is None and chooses(estimator.get_params()):
        raise ValueError(f"The stream has too few rows to hold out validation_fraction="
                         f"{estimator.validation_fraction} for the choice of sigma and alpha; "
                         "pass more rows, or numbers for sigma and alpha.")
    n = X.shape[0]
    common = dict(loss=estimator._make_loss(), n_outputs=estimator._n_outputs(),
                  batch_size=min(estimator.batch_size, n), seed=estimator.seed_ % 2**32,
                  method=estimator._inner_method())
    problem = Problem(X, y, w, validation, train_rows=torch.arange(n, device=X.device), **common)
    rows = concat_chunks([train, held]) if validation is not None else train
    X_all, y_all, w_all = convert(rows, dense=False)
    everything = Problem(X_all, y_all, w_all, None,
                         train_rows=torch.arange(X_all.shape[0], device=X.device), **common)
    return problem, everything


def _select_on_sample(estimator, stats, convert: ChunkConverter, comm: Communicator):
    """Feature map, ``α`` candidates and ``(blocks to start from, most blocks)``: the model
    selection of the in-memory fit on the sample, rank 0's choice on every rank, with the
    feature budget of the whole stream."""
    problem, everything = _sample_problem(estimator, stats, convert)
    feature_map, alphas, (J, max_blocks) = estimator._select(problem, stats.samples[0].sample().X,
                                                             everything)
    sigma, alphas, estimator.cv_results_ = comm.broadcast_object(
        (feature_map.sigma, alphas, estimator.cv_results_))
    block_size = estimator.fit_plan_.block_size
    if (sigma, block_size) != (feature_map.sigma, feature_map.block_size):
        feature_map = make_feature_map(estimator.kernel, estimator.n_features_in_, sigma,
                                       block_size, estimator.seed_,
                                       kernel_params=estimator.kernel_params)
    return feature_map, alphas, J, max_blocks


def _validation(held, convert: ChunkConverter, comm: Communicator) -> StreamValidation:
    """The held-out rows in memory, this rank's share of them (a slice), in batches."""
    share = np.array_split(np.arange(len(held.row_ids)), comm.world_size)[comm.rank]
    batches = [convert(take(held, rows), dense=False)
               for rows in np.array_split(share, max(1, -(-len(share) // VALIDATION_BATCH_ROWS)))]
    return StreamValidation(batches, comm if comm.world_size > 1 else None)


def _stream_problem(estimator, readers, holdout, split_seed, stats, convert, comm) -> StreamProblem:
    """The training stream: readers of the training rows, the held-out rows, the sample."""
    train = [r.split(holdout, split_seed)[0] for r in readers] if holdout else list(readers)
    sample, held = stats.samples[0].sample(), stats.samples[1].sample()
    if holdout and (held is None or not len(held.row_ids)):
        raise ValueError("The stream has too few rows to hold out validation_fraction="
                         f"{estimator.validation_fraction}; pass more rows, or set "
                         "early_stopping=False with numbers for sigma and alpha.")
    return StreamProblem(
        readers=train, reader_rows=[rows for rows, _ in stats.reader_rows], convert=convert,
        sample=convert(sample, dense=False)[0],
        validation=_validation(held, convert, comm) if holdout else None,
        loss=estimator._make_loss(), n_outputs=estimator._n_outputs(),
        batch_size=min(estimator.batch_size, max(1, stats.n_train)),
        seed=estimator.seed_ % 2**32,
        empty_batch=tuple(t[:0] for t in convert(take(sample, slice(0, 1)))),
        comm=comm if comm.world_size > 1 else None, method=estimator._inner_method())


def _held_out_rows(estimator, whole: Source) -> int:
    """How many held-out rows the first pass keeps: as many as ``validation_bytes`` holds
    (:class:`~kernelstream.planning.FitLimits`)."""
    row_bytes = (whole.n_features + 2) * torch.empty((), dtype=estimator._torch_dtype()).element_size()
    return max(LIMITS.validation_sample_rows, LIMITS.validation_bytes // row_bytes)


def fit_preconditioned_stream(estimator, data, classes=None):
    """The default ``fit`` on a stream (module docstring); ``estimator`` is a ConvergingMixin."""
    readers, comm, whole = readers_of(data)
    with estimator._unchanged_on_error():
        warm = (estimator.warm_start and hasattr(estimator, "expansion_")
                and hasattr(estimator, "alpha_"))
        if not warm:
            estimator._validate_params()
            estimator._check_params()
        seed = comm.broadcast_object(draw_seed(check_random_state(estimator.random_state)))
        needs_holdout = estimator.early_stopping or (chooses(estimator.get_params()) and not warm)
        holdout = estimator.validation_fraction if needs_holdout else None
        split_seed = seed % 2**31
        stats = first_pass(readers, comm, holdout, split_seed, split_seed + 1,
                           (LIMITS.sample_rows, _held_out_rows(estimator, whole)), _label_kind(estimator))
        if warm:
            if _label_kind(estimator) == "classes":
                check_labels_known(whole, stats, estimator.classes_, "classes_")
            theta, feature_map = estimator._theta(), estimator.expansion_.feature_map
            alphas, J = [estimator.alpha_], estimator.expansion_.n_blocks
            max_blocks = J
        else:
            _start(estimator, whole, stats, seed, classes)
            theta = None
        plan = _plan(estimator, whole, stats, warm)
        if not warm:
            estimator._resolve_loss(plan.loss)
            estimator._check_solver_loss()
        convert = ChunkConverter(estimator, _class_weight_vector(estimator, stats), whole.locate)
        if not warm:
            feature_map, alphas, J, max_blocks = _select_on_sample(estimator, stats, convert, comm)
        problem = _stream_problem(estimator, readers, holdout, split_seed, stats, convert, comm)
        with closing(estimator._progress()) as progress:
            result, J, history, feature_map = grow_features(
                problem, feature_map, alphas, estimator._control(), J, max_blocks, plan.growth_tol,
                theta, progress, narrow=plan.narrow)
        estimator._set_preconditioned(result, feature_map, alphas, J, history)
        estimator._calibrate(problem)
        estimator._pending = None
    return estimator


def fit_one_pass_stream(estimator, data, classes=None):
    """``fit`` of the one-pass solver (Algorithm 1) on a stream: the first pass (labels, the
    bandwidth's sample), then ``max_iter`` epochs of the source's chunks of ``batch_size``."""
    readers, comm, whole = readers_of(data)
    if comm.world_size > 1 or len(readers) > 1:
        raise ValueError("Data-parallel fits use the default solver (solver='preconditioned'); "
                         f"{type(estimator).__name__} with this solver takes the whole source.")
    source = readers[0]
    with estimator._unchanged_on_error():
        estimator._validate_params()
        estimator._check_params()
        stats = first_pass(readers, comm, None, 0, 1, (LIMITS.sample_rows, 0), _label_kind(estimator))
        rng = check_random_state(estimator.random_state)
        _start(estimator, whole, stats, 0, classes)
        expansion = estimator._start(stats.samples[0].sample().X, None, rng)
        convert = ChunkConverter(estimator, _class_weight_vector(estimator, stats), whole.locate)
        n_epochs = estimator._n_epochs(stats.n_train)
        batches = (convert.arrays(chunk) for epoch in range(n_epochs)
                   for chunk in source.rechunked(estimator.batch_size).chunks(epoch))
        for _ in estimator._run_batches(expansion, batches):
            pass
        estimator._set_fitted(expansion, n_epochs)
        estimator._pending = None
    return estimator


def arrays_of(data, y=None, sample_weight=None) -> tuple:
    """``(X, y, sample_weight)`` of a source read whole, in file order (CSR stays CSR), for
    the estimators whose fit needs every row at once; arrays pass through unchanged."""
    if not is_source(data):
        return data, y, sample_weight
    check_arrays_absent(y, sample_weight)
    blocks = list(_whole_source(data, "This estimator").blocks())
    if not blocks:
        raise ValueError(f"{data!r} has no rows.")
    rows = concat_chunks(blocks)
    return rows.X, rows.y, rows.sample_weight


def _whole_source(data, what: str) -> Source:
    """The source itself; data-parallel inputs are refused for ``what``."""
    if isinstance(data, ShardGroup) or data.world_size > 1:
        raise ValueError(f"{what} has no data-parallel fit; pass the whole source (data-parallel "
                         "fits: DSGRegressor and DSGClassifier with the default solver).")
    return data


def sample_of(data, n_rows: int = 4096):
    """``X`` of a seeded sample of a source (``take_rows``): the width and the median."""
    return _whole_source(data, "This estimator").take_rows(n_rows, seed=0).X


def fit_aogd_stream(estimator, data):
    """AOGD's ``fit`` on a stream: a first pass (labels, a sample for the bandwidth), then
    ``max_iter`` passes, each reading the source's chunks (``chunks(epoch)``) in order."""
    source = _whole_source(data, type(estimator).__name__)
    with estimator._unchanged_on_error():
        estimator._validate_params()
        stats = first_pass([source], Communicator(), None, 0, 1, (LIMITS.sample_rows, 0), "classes")
        sample = stats.samples[0].sample()
        if sample is None or not stats.has_labels:
            raise ValueError(f"{source!r} has no labelled rows; open it with label=.")
        estimator.n_features_in_ = source.n_features
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        estimator._encode(sample.y, first=True, classes=stats.classes)
        estimator._start(estimator._validate_X(sample.X, reset=False),
                         check_random_state(estimator.random_state))
        for epoch in range(estimator.max_iter):
            for chunk in source.chunks(epoch):
                X = estimator._validate_X(chunk.X, reset=False)
                estimator._run(X, estimator._encode(chunk.y, first=False))
        estimator.n_iter_ = estimator.max_iter
    return estimator
