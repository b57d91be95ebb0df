"""river adapters: the online estimators as river models (``learn_one``, ``predict_one``, ...).

``RiverGoGPRegressor``, ``RiverAOGDClassifier``, and ``RiverDSGRegressor`` /
``RiverDSGClassifier`` (the paper's streaming algorithm: ``partial_fit``, ``solver="one_pass"``)
wrap the scikit-learn estimators of :mod:`kernelstream` behind river's interface
(``river.base.MiniBatchRegressor`` / ``MiniBatchClassifier``). Every keyword argument other than
the adapter's own (``features``, ``init_rows``, ``classes``, ``scale``) is the wrapped
estimator's parameter, so ``RiverGoGPRegressor(join_threshold=0.1, random_state=0)`` is
``GoGPRegressor(join_threshold=0.1, random_state=0)`` fed one row at a time; river's ``clone`` and
``repr`` see them.

**Features.** A dict becomes a row in a fixed order: ``features`` when declared, else the sorted
keys of the first dict learnt from (sorted, so the order of a dict's keys never matters). A
feature absent from a dict counts as 0 (river's convention); a key outside the order is ignored
(a kernel model's input width is fixed once it has learnt). Values must be numbers.

**Scaling.** The DSG adapters standardise each feature by its running mean and standard
deviation (``scale=True``): a row to learn from updates them, then is scaled; a row to predict
is scaled by them as they stand (a feature of no variance yet becomes 0). That is river's
``preprocessing.StandardScaler() | model``, applied row by row in ``learn_many`` too. Their
kernel has one bandwidth for every feature (a median distance), so among raw features of
unequal units (a date next to percentages in ``TrumpApproval``) the widest would decide it.
``scale=False`` feeds the rows as they come. GoGP and AOGD take the rows as they come.

**The start of a stream.** ``partial_fit``'s first call fixes the hyper-parameters (GoGP's
bandwidth, amplitude and noise by marginal likelihood; AOGD's median bandwidth and step scale;
DSG's bandwidth and target scaling) from the rows it gets. One row is too few, so GoGP and AOGD
buffer their first ``init_rows`` rows and learn them as one first call (each predicted before it
is learnt, as every later row); a DSG model steps on full batches of ``batch_size`` rows, 32 by
default for the adapters (the estimators' 2048 is for arrays: a stream of 1,000 rows would never
take a step), with blocks of ``block_size=256`` random features (1024 for the estimators). Until
its first step, a regressor predicts the mean of the targets seen and a classifier the
frequencies of the labels seen. After that, ``learn_one`` is ``partial_fit`` on one row and
``learn_many`` on the frame's rows in order: the model is the same either way (DSG and AOGD
results do not depend on chunking; GoGP learns row by row). A DSG adapter keeps the rows until,
with those its estimator holds, they fill a batch (one ``partial_fit`` a batch, the same steps),
and the adapters predict a row without the estimators' validation of it (they made it: finite
numbers in the fitted order).

**Labels.** A model's outputs are fixed at its first call. ``RiverDSGClassifier`` learns its
labels from the stream by default (``classes=None``): it starts at the second label and refits a
new model on the rows learnt so far (at most ``replay_rows``) when a new label comes, the model of
those rows with the labels declared; ``classes=(0, 1, 2)`` declares them up front instead.
``RiverAOGDClassifier`` is binary: ``classes`` defaults to ``(False, True)``, river's
convention. AOGD ranks (AUC) and has no class probabilities: its
``predict_proba_one`` gives the positive class the ranking score ``1/(1 + e^{-4d})`` of the
decision function ``d`` (and the other class the rest), so that river's ``metrics.ROCAUC()`` can
rank it. The score orders rows as ``d`` does, but it is not a calibrated probability (the factor
4 maps the pairwise margin of 1, ``d = ±1/2``, to 0.12 and 0.88, spread over ROCAUC's
thresholds on ``[0, 1]``). ``predict_one`` gives AOGD's label.

Importing this module needs river (``pip install 'kernelstream[river]'``); it is named
``kernelstream.integrations.river`` and imports the top-level ``river`` package absolutely.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import expit

try:
    from river import base
except ImportError as error:  # the extra is not installed
    raise ImportError("kernelstream.integrations.river needs river: pip install "
                      "'kernelstream[river]'") from error
from sklearn.exceptions import NotFittedError

from .. import estimators

__all__ = ["RiverGoGPRegressor", "RiverAOGDClassifier", "RiverDSGRegressor", "RiverDSGClassifier"]


class _Adapter:
    """Features, the start-of-stream buffer and the wrapped estimator, shared by the adapters."""

    _wrapped: str = ""           # class name in kernelstream.estimators
    _defaults: dict = {}         # parameters the adapter sets unless given

    def _setup(self, features, init_rows: int, params: dict, scale: bool = False) -> None:
        self.features = features
        self.init_rows = init_rows
        self.params = params     # river's clone and repr read **params back from here
        self.scale = scale
        self._moments = None     # (count, mean, variance) per feature, while scale is on
        self.estimator_ = getattr(estimators, self._wrapped)(**{**self._defaults, **params})
        self.estimator_._validate_params()
        self._order = None if features is None else list(features)
        self._buffer_X: list[np.ndarray] = []
        self._buffer_y: list = []
        self._started = False
        self._sum, self._n = 0.0, 0  # targets seen (regressors' prior mean)

    # -- rows -------------------------------------------------------------------------------
    def _row(self, x: dict) -> np.ndarray:
        """``x`` in the fixed feature order (absent features 0, unknown keys ignored)."""
        if self._order is None:
            self._order = sorted(x, key=lambda key: (type(key).__name__, str(key)))
        row = np.zeros(len(self._order))
        for j, name in enumerate(self._order):
            value = x.get(name, 0.0)
            if not isinstance(value, numbers.Real):
                raise TypeError(f"feature {name!r} is {value!r} ({type(value).__name__}); "
                                f"{type(self).__name__} needs numbers (one-hot encode strings, "
                                "e.g. river.preprocessing.OneHotEncoder)")
            row[j] = value
        if not np.isfinite(row).all():
            name = self._order[int(np.argmin(np.isfinite(row)))]
            raise ValueError(f"feature {name!r} is {x.get(name)!r}; {type(self).__name__} needs "
                             "finite numbers (impute missing values first)")
        return row

    def _rows(self, X) -> np.ndarray:
        """The rows of a pandas frame in the feature order (absent columns 0)."""
        if self._order is None:
            self._order = sorted(X.columns, key=lambda key: (type(key).__name__, str(key)))
        rows = X.reindex(columns=self._order, fill_value=0.0).to_numpy(dtype=np.float64)
        if not np.isfinite(rows).all():
            name = self._order[int(np.argmin(np.isfinite(rows).all(axis=0)))]
            raise ValueError(f"feature {name!r} has values that are not finite; "
                             f"{type(self).__name__} needs finite numbers (impute missing values first)")
        return rows

    # -- scaling ----------------------------------------------------------------------------
    def _scaled(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` standardised by the running moments as they stand (as given without scale)."""
        if not self.scale:
            return rows
        if self._moments is None:
            return np.zeros_like(rows)
        _, mean, var = self._moments
        return _standardise(rows, mean, var)

    def _learnt_scaled(self, rows: np.ndarray) -> tuple[np.ndarray, tuple | None]:
        """``rows`` each standardised after it updates the moments (river's StandardScaler, one
        row at a time), and the moments after the last; nothing is stored."""
        if not self.scale:
            return rows, None
        count, mean, var = self._moments or (0, np.zeros(rows.shape[1]), np.zeros(rows.shape[1]))
        scaled = np.empty_like(rows)
        for i, row in enumerate(rows):
            count += 1
            new_mean = mean + (row - mean) / count
            var = var + ((row - mean) * (row - new_mean) - var) / count
            mean = new_mean
            scaled[i] = _standardise(row, mean, var)
        return scaled, (count, mean, var)

    def _learn_rows(self, rows: np.ndarray, targets: list) -> None:
        """Scale ``rows`` (when ``scale``) and learn them; the moments change only on success."""
        self._check_targets(targets)
        scaled, moments = self._learnt_scaled(rows)
        self._learn(scaled, targets)
        if self.scale:
            self._moments = moments

    # -- learning ---------------------------------------------------------------------------
    def _learn(self, rows: np.ndarray, targets: list) -> None:
        """Buffer until ``init_rows`` rows, then ``partial_fit`` (the buffer as the first call).
        A call that fails leaves the adapter as it was (the estimator restores itself)."""
        targets = list(targets)
        if self._started:
            self._partial_fit(rows, np.asarray(targets))
            self._count(targets)
            return
        need = max(1, self.init_rows) - len(self._buffer_X)
        if len(rows) < need:
            self._buffer_X.extend(rows)
            self._buffer_y.extend(targets)
            return
        first = np.concatenate([np.reshape(self._buffer_X, (-1, rows.shape[1])), rows[:need]])
        self._partial_fit(first, np.asarray(self._buffer_y + targets[:need]))  # exactly init_rows
        self._count(self._buffer_y + targets[:need])
        self._buffer_X, self._buffer_y, self._started = [], [], True
        if len(rows) > need:
            self._learn(rows[need:], targets[need:])

    def _check_targets(self, targets: list) -> None:
        """Refuse targets the model cannot learn, before anything is buffered."""

    def _partial_fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.estimator_.partial_fit(X, y)

    def _predicted(self, rows: np.ndarray, how=None):
        """``how`` (default ``_predict``) of the scaled ``rows``, or ``None`` while the model
        cannot predict yet."""
        if not self._started:
            return None
        try:
            return (how or self._predict)(self._scaled(rows))
        except NotFittedError:     # a DSG model before its first full batch
            return None


def _standardise(rows: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """``(rows - mean) / √var`` per feature; 0 where the variance is 0."""
    std = np.sqrt(var)
    return np.divide(rows - mean, std, out=np.zeros(np.shape(rows)), where=std > 0)


class _Regressor(_Adapter, base.MiniBatchRegressor):
    """``learn_one``/``predict_one`` and their mini-batch forms for a regressor."""

    def _check_targets(self, targets: list) -> None:
        if not np.isfinite(np.asarray(targets, dtype=np.float64)).all():
            raise ValueError(f"target {next(t for t in targets if not np.isfinite(t))!r} is not "
                             f"finite; {type(self).__name__} learns finite numbers")

    def _count(self, targets) -> None:
        self._sum += float(np.sum(targets))
        self._n += len(targets)

    def _prior(self) -> float:
        """Mean of the targets seen (the buffer's included); 0 before any."""
        count = self._n + len(self._buffer_y)
        return (self._sum + float(np.sum(self._buffer_y))) / count if count else 0.0

    def _predict(self, rows: np.ndarray) -> np.ndarray:
        return self.estimator_.predict(rows)

    def learn_one(self, x: dict, y) -> None:
        self._learn_rows(self._row(x)[None], [float(y)])

    def predict_one(self, x: dict) -> float:
        predicted = self._predicted(self._row(x)[None])
        return self._prior() if predicted is None else float(predicted[0])

    def learn_many(self, X, y) -> None:
        self._learn_rows(self._rows(X), [float(v) for v in y])

    def predict_many(self, X):
        import pandas as pd

        predicted = self._predicted(self._rows(X))
        values = np.full(len(X), self._prior()) if predicted is None else predicted
        return pd.Series(values, index=X.index, dtype=np.float64)


class _Classifier(_Adapter, base.MiniBatchClassifier):
    """``learn_one``/``predict_one``/``predict_proba_one`` and mini-batch forms of a classifier."""

    def _setup_labels(self, classes) -> None:
        self.classes = classes
        self._counts = {} if classes is None else {label: 0 for label in classes}
        self._labels = None if classes is None else tuple(classes)  # the model's labels

    @property
    def _multiclass(self) -> bool:
        return self.classes is None or len(self.classes) > 2

    def _check_targets(self, targets: list) -> None:
        if self.classes is None:
            return
        unknown = set(targets) - set(self.classes)
        if unknown:
            raise ValueError(f"label {sorted(unknown, key=str)[0]!r} is not in classes="
                             f"{self.classes!r}; declare every label of the stream in classes")

    def _partial_fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.estimator_.partial_fit(X, y, classes=np.array(self._labels))

    def _count(self, targets) -> None:
        for label in targets:
            self._counts[label] = self._counts.get(label, 0) + 1

    def _prior(self) -> dict:
        """Frequencies of the labels seen (buffer included); uniform before any."""
        counts = dict(self._counts)
        for label in self._buffer_y:
            counts[label] = counts.get(label, 0) + 1
        total = sum(counts.values())
        return {label: (n / total if total else 1 / len(counts)) for label, n in counts.items()}

    def _predict(self, rows: np.ndarray):
        """Class probabilities ``(n, K)``, or labels ``(n,)`` when the model has none."""
        if hasattr(self.estimator_, "predict_proba"):
            return self.estimator_.predict_proba(rows)
        return self.estimator_.predict(rows)

    def _probabilities(self, rows: np.ndarray) -> np.ndarray:
        """What ``predict_proba_one`` gives per class, ``(n, K)`` in ``classes_`` order."""
        return self.estimator_.predict_proba(rows)

    def _proba(self, predicted) -> dict:
        return {_plain(c): float(p) for c, p in zip(self.estimator_.classes_, predicted)}

    def learn_one(self, x: dict, y) -> None:
        self._learn_rows(self._row(x)[None], [y])

    def predict_proba_one(self, x: dict) -> dict:
        predicted = self._predicted(self._row(x)[None], self._probabilities)
        return self._prior() if predicted is None else self._proba(predicted[0])

    def predict_one(self, x: dict):
        predicted = self._predicted(self._row(x)[None])
        return self._label(predicted, 0)

    def _label(self, predicted, i: int):
        if predicted is None:
            prior = self._prior()
            return max(prior, key=prior.get) if prior else None  # no label seen yet
        if predicted.ndim == 2:
            return _plain(self.estimator_.classes_[int(np.argmax(predicted[i]))])
        return _plain(predicted[i])

    def learn_many(self, X, y) -> None:
        self._learn_rows(self._rows(X), list(y))

    def predict_proba_many(self, X):
        import pandas as pd

        predicted = self._predicted(self._rows(X), self._probabilities)
        rows = ([self._prior()] * len(X) if predicted is None else
                [self._proba(p) for p in predicted])
        return pd.DataFrame(rows, index=X.index)

    def predict_many(self, X):
        import pandas as pd

        predicted = self._predicted(self._rows(X))
        return pd.Series([self._label(predicted, i) for i in range(len(X))], index=X.index)


def _plain(value):
    """A numpy scalar label as the Python value river compares with (``np.True_`` → ``True``)."""
    return value.item() if isinstance(value, np.generic) else value


class RiverGoGPRegressor(_Regressor):
    """:class:`kernelstream.GoGPRegressor` as a river regressor (online GP regression).

    Parameters
    ----------
    features : tuple or None, default=None
        Feature order; None: the sorted keys of the first dict.
    init_rows : int, default=100
        Rows buffered for the first ``partial_fit`` (the hyper-parameters are fitted on them).
    **params
        :class:`~kernelstream.GoGPRegressor` parameters.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics
    >>> from kernelstream.integrations.river import RiverGoGPRegressor
    >>> model = RiverGoGPRegressor(random_state=0)   # the first 100 rows fit the GP's scales
    >>> score = evaluate.progressive_val_score(datasets.TrumpApproval().take(300), model,
    ...                                        metrics.MAE())
    >>> round(score.get(), 2)
    0.77
    """

    _wrapped = "GoGPRegressor"

    def _partial_fit(self, X: np.ndarray, y: np.ndarray) -> None:
        """After the first call, one row per call, as ``learn_one`` does (the paper's ``N``
        of ``solver="sgd"`` then counts the same rows either way), without the estimator's
        validation (the adapter made the rows: finite numbers, the fitted width)."""
        if not self._started:
            return self.estimator_.partial_fit(X, y)
        for i in range(X.shape[0]):
            with self.estimator_._unchanged_on_error(()):
                self.estimator_._learn_checked(X[i : i + 1], y[i : i + 1])

    def _predict(self, rows: np.ndarray) -> np.ndarray:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self.estimator_, "state_")
        mean, _ = self.estimator_._predicted(rows)
        if not np.isfinite(mean).all():  # as the estimator's predict says it
            return self.estimator_.predict(rows)
        return mean

    def __init__(self, features: tuple | None = None, init_rows: int = 100, **params):
        self._setup(features, init_rows, params)

    @classmethod
    def _unit_test_params(cls):
        yield {"init_rows": 20, "random_state": 0, "max_inducing": 64}


class RiverAOGDClassifier(_Classifier):
    """:class:`kernelstream.AOGDClassifier` as a river binary classifier (online AUC).

    ``predict_one`` is the estimator's label (``decision_function > 0``); ``predict_proba_one``
    gives the positive class the ranking score ``1/(1 + e^{-4d})`` of the decision function
    ``d``, for river's ``metrics.ROCAUC()``: it orders rows as ``d`` does, but it is not a
    calibrated probability.

    Parameters
    ----------
    features : tuple or None, default=None
    init_rows : int, default=100
        Rows buffered for the first ``partial_fit`` (median bandwidth, step scale).
    classes : tuple, default=(False, True)
        The two labels; the second is the positive class.
    **params
        :class:`~kernelstream.AOGDClassifier` parameters.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics
    >>> from kernelstream.integrations.river import RiverAOGDClassifier
    >>> model = RiverAOGDClassifier(random_state=0, n_components=256)  # ranked from row 101
    >>> score = evaluate.progressive_val_score(datasets.Phishing().take(400), model,
    ...                                        metrics.ROCAUC())
    >>> round(float(score.get()), 2)                # a scaled logistic regression: 0.92
    0.88
    """

    _wrapped = "AOGDClassifier"

    #: the decision function's factor in the ranking score: a pairwise margin of 1 puts a
    #: positive row at about d = 1/2 and a negative one at -1/2, so they score 0.88 and 0.12
    SCORE_SLOPE = 4.0

    def __init__(self, features: tuple | None = None, init_rows: int = 100,
                 classes: tuple = (False, True), **params):
        self._setup(features, init_rows, params)
        self._setup_labels(classes)

    def _probabilities(self, rows: np.ndarray) -> np.ndarray:
        """``(1 - s, s)`` per row, ``s = 1/(1 + e^{-4d})`` of the decision function ``d``: a
        score to rank by, not a calibrated probability."""
        score = expit(self.SCORE_SLOPE * self.estimator_.decision_function(rows))
        return np.column_stack([1.0 - score, score])

    @classmethod
    def _unit_test_params(cls):
        yield {"init_rows": 20, "random_state": 0, "n_components": 64}


#: the DSG adapters' defaults for a river stream (the estimators' are for arrays): a step per 32
#: rows, so a stream learns from its first rows, and 256 features a step, so that the feature
#: budget (4,096 at first) fills over 16 steps of a short stream instead of 4
_DSG_DEFAULTS = {"solver": "one_pass", "batch_size": 32, "block_size": 256}


class _DSGAdapter:
    """The DSG adapters' learning and prediction. Rows wait in the adapter until, with the rows
    the estimator holds, they fill a batch of ``batch_size``, and go to ``partial_fit`` at once:
    the estimator steps on the same batches as when fed row by row (it steps only on full
    batches), with one call a batch instead of one a row. A row is predicted from the outputs
    of the model as it stands, without the estimator's validation (the adapter made the row:
    finite numbers, the fitted width) and alone, not padded to the estimator's 64 rows a float32
    call (its outputs then differ from the estimator's by the float32 products' rounding)."""

    def _learn(self, rows: np.ndarray, targets: list) -> None:
        if not self._started:
            return super()._learn(rows, targets)
        waiting = getattr(self, "_waiting", None) or ([], [])
        held = getattr(self.estimator_, "_pending", None)
        held = 0 if held is None else held[0].shape[0]
        if held + sum(map(len, waiting[0])) + len(rows) < self.estimator_.batch_size:
            self._waiting = (waiting[0] + [rows], waiting[1] + list(targets))
            self._count(targets)
            return
        X = np.concatenate(waiting[0] + [rows])
        self._partial_fit(X, np.asarray(waiting[1] + list(targets)))  # a failure keeps the waiting rows
        self._count(targets)
        self._waiting = None

    def _outputs(self, rows: np.ndarray) -> np.ndarray:
        self.estimator_._check_has_stepped()  # one row unpadded: 64 times fewer cosines
        return self.estimator_._outputs(rows, row_invariant=False)


class RiverDSGRegressor(_DSGAdapter, _Regressor):
    """:class:`kernelstream.DSGRegressor` in its streaming mode (``solver="one_pass"``, the
    paper's Algorithm 1) as a river regressor; steps wait for full batches of ``batch_size``.

    Parameters
    ----------
    features : tuple or None, default=None
    init_rows : int, default=0
        Extra rows to buffer before the first ``partial_fit`` (the first batch already fixes
        the bandwidth and the target scaling).
    scale : bool, default=True
        Standardise each feature by its running mean and standard deviation (module docstring,
        "Scaling"); False feeds the rows as they come.
    **params
        :class:`~kernelstream.DSGRegressor` parameters; the adapter's defaults differ for a
        stream of rows: ``solver="one_pass"``, ``batch_size=32``, ``block_size=256``.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics
    >>> from kernelstream.integrations.river import RiverDSGRegressor
    >>> model = RiverDSGRegressor(random_state=0)   # a step per 32 rows, from the first 32
    >>> score = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.RMSE())
    >>> round(score.get(), 2)                       # the running mean: 2.20
    1.68
    """

    _wrapped = "DSGRegressor"
    _defaults = _DSG_DEFAULTS

    def _predict(self, rows: np.ndarray) -> np.ndarray:
        return self.estimator_._targets_of(self._outputs(rows))

    def __init__(self, features: tuple | None = None, init_rows: int = 0, scale: bool = True,
                 **params):
        self._setup(features, init_rows, params, scale)

    @classmethod
    def _unit_test_params(cls):
        yield {"random_state": 0, "batch_size": 16, "block_size": 32}


class RiverDSGClassifier(_DSGAdapter, _Classifier):
    """:class:`kernelstream.DSGClassifier` in its streaming mode (``solver="one_pass"``) as a
    river classifier; ``predict_proba_one`` with the default logistic loss.

    Parameters
    ----------
    features : tuple or None, default=None
    init_rows : int, default=0
    classes : tuple or None, default=None
        Every label of the stream; ``None`` learns them from it: the model starts once two
        labels are seen, and a label seen later refits a new model on the rows learnt so far
        (the model of those rows with the labels declared), so long as they are at most
        ``replay_rows``.
    scale : bool, default=True
        Standardise each feature by its running mean and standard deviation (module docstring,
        "Scaling"); False feeds the rows as they come.
    replay_rows : int, default=10_000
        With ``classes=None``, the rows kept for such a refit; a new label after more rows
        than this is refused (declare ``classes``).
    **params
        :class:`~kernelstream.DSGClassifier` parameters; the adapter's defaults differ for a
        stream of rows: ``solver="one_pass"``, ``batch_size=32``, ``block_size=256``.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics
    >>> from kernelstream.integrations.river import RiverDSGClassifier
    >>> model = RiverDSGClassifier(random_state=0)
    >>> score = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    >>> round(score.get(), 3)                       # river's scaled logistic regression: 0.893
    0.89
    """

    _wrapped = "DSGClassifier"
    _defaults = _DSG_DEFAULTS

    def _predict(self, rows: np.ndarray):
        """Class probabilities ``(n, K)``, or labels ``(n,)`` when the loss has none."""
        margins = self.estimator_._margins(self._outputs(rows))
        if hasattr(self.estimator_, "predict_proba"):
            return self.estimator_._proba_of(margins)
        return self.estimator_._labels_of(margins)

    def _probabilities(self, rows: np.ndarray) -> np.ndarray:
        return self.estimator_._proba_of(self.estimator_._margins(self._outputs(rows)))

    def __init__(self, features: tuple | None = None, init_rows: int = 0,
                 classes: tuple | None = None, scale: bool = True, replay_rows: int = 10_000,
                 **params):
        self.replay_rows = replay_rows
        self._setup(features, init_rows, params, scale)
        self._setup_labels(classes)
        self._kept = ([], [])  # the rows learnt, for a refit when a new label comes

    def _learn(self, rows: np.ndarray, targets: list) -> None:
        """With ``classes=None``: the rows learnt are kept (at most ``replay_rows``); the model
        starts once two labels are seen, and a new label after that refits a new model on the
        rows kept, as if its labels had been declared from the first row."""
        if self.classes is not None or getattr(self, "_replaying", False):
            return super()._learn(rows, targets)
        seen = set() if self._labels is None else set(self._labels)
        labels = sorted(seen | set(self._counts) | set(targets), key=lambda v: (type(v).__name__, v))
        kept = self._kept
        if kept is not None and len(kept[1]) + len(targets) > self.replay_rows:
            kept = None
        if len(labels) < 2:  # no model of one class: the prior until a second label
            self._count(targets)
            self._keep(kept, rows, targets)
            return
        if self._labels is not None and set(labels) == seen:
            super()._learn(rows, targets)
        else:  # a new label: a new model on every row kept
            if kept is None:
                raise ValueError(f"label {sorted(set(labels) - seen, key=str)[0]!r} first seen "
                                 f"after more than replay_rows={self.replay_rows} rows; declare "
                                 "every label of the stream in classes")
            before = dict(self.__dict__)
            try:
                self.estimator_ = getattr(estimators, self._wrapped)(**{**self._defaults,
                                                                        **self.params})
                self._labels, self._counts, self._waiting = tuple(labels), {}, None
                self._buffer_X, self._buffer_y, self._started = [], [], False
                self._replaying = True  # the rows kept go in as they came, not kept again
                super()._learn(np.concatenate(kept[0] + [rows]) if kept[0] else rows,
                               kept[1] + list(targets))
            except BaseException:
                self.__dict__.clear()
                self.__dict__.update(before)
                raise
            finally:
                self.__dict__.pop("_replaying", None)
        self._keep(kept, rows, targets)

    def _keep(self, kept, rows: np.ndarray, targets: list) -> None:
        """The rows learnt joined to those kept (``kept`` ``None``: past ``replay_rows``)."""
        if kept is not None:
            kept[0].append(rows)
            kept[1].extend(targets)
        self._kept = kept

    @classmethod
    def _unit_test_params(cls):
        yield {"random_state": 0, "batch_size": 16, "block_size": 32}


#: river's checks that do not run on the adapters, and why (tests/integrations/test_river.py)
NOT_RUN = {
    "check_seeding_is_idempotent": (
        "river runs it for models with a `seed` parameter left None; the adapters take "
        "scikit-learn's `random_state` (passed to the estimator), so river does not select it; "
        "the tests check that two adapters with the same random_state agree instead"),
}
