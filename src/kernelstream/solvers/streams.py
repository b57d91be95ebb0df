"""Training rows that are not one dense tensor: CSR rows in memory and streams of chunks.

The solver (:func:`kernelstream.solvers.selection.train`) asks a problem for a sketch of rows,
for the batches of an epoch and for the validation loss. :class:`~.selection.Problem` answers
from tensors in memory; this module answers

- from **CSR rows** (:class:`SparseRows`): the data stays sparse and a batch is densified when
  it is used, so a fit holds the CSR matrix plus one dense batch (``b × d``), never ``n × d``;
- from a **stream** (:class:`StreamProblem`): every epoch reads the chunks of one or more
  sources (``kernelstream.data``), one chunk per source per step. With data parallelism each
  rank reads its shard and a communicator sums the step's statistics over ranks; one process
  reading every shard in lock step takes the same global batches (the reference a
  data-parallel fit is compared with). The held-out rows are in memory
  (:class:`StreamValidation`), their losses summed over ranks.

The solvers stay free of scikit-learn: a stream's chunks become tensors through a ``convert``
function the estimator supplies (label encoding, weights, device).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp
import torch

from ..losses import Loss
from .epochs import FitResult
from .preconditioned import Preconditioner, validation_sums

__all__ = ["SparseRows", "StreamProblem", "StreamValidation", "rows_of", "subset"]



class SparseRows:
    """Rows of a CSR matrix that hand out **dense** tensors of the rows asked for.

    Indexing (a slice, an integer tensor or array) densifies only those rows:
    ``rows[index] = torch.as_tensor(X[index].toarray())`` on ``device`` in ``dtype``, the same
    values a dense copy of ``X`` would give. :meth:`subset` keeps a subset sparse.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> rows = SparseRows(sp.random(5, 3, density=0.5, format="csr", random_state=0),
    ...                   torch.float32, torch.device("cpu"))
    >>> rows[torch.tensor([4, 0])].shape, rows.subset([1, 2]).shape
    (torch.Size([2, 3]), (2, 3))
    """

    def __init__(self, matrix, dtype: torch.dtype, device: torch.device):
        self.matrix = sp.csr_matrix(matrix)
        self.dtype, self.device = dtype, torch.device(device)

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape

    def __len__(self) -> int:
        return self.matrix.shape[0]

    def __getitem__(self, index) -> torch.Tensor:
        if isinstance(index, torch.Tensor):
            index = index.cpu().numpy()
        dense = self.matrix[index].toarray()  # only these rows: O(rows·d)
        return torch.from_numpy(dense).to(device=self.device, dtype=self.dtype)

    def subset(self, index) -> "SparseRows":
        """The rows ``index``, still sparse."""
        if isinstance(index, torch.Tensor):
            index = index.cpu().numpy()
        return SparseRows(self.matrix[index], self.dtype, self.device)

    def new_zeros(self, shape) -> torch.Tensor:
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def element_size(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()


def rows_of(X, dtype: torch.dtype, device: torch.device, to_tensor: Callable):
    """``X`` for the solver: :class:`SparseRows` for a sparse matrix, else ``to_tensor(X, dtype,
    device)`` (a dense tensor)."""
    return SparseRows(X, dtype, device) if sp.issparse(X) else to_tensor(X, dtype, device)


def subset(X, index):
    """Rows ``index`` of ``X``: kept sparse for :class:`SparseRows`, else ``X[index]``."""
    return X.subset(index) if isinstance(X, SparseRows) else X[index]


def _cat(batches: list[tuple]) -> tuple:
    """One batch from the batches of several readers (the union of a lock-step step)."""
    if len(batches) == 1:
        return batches[0]
    return tuple(torch.cat(parts) for parts in zip(*batches))


@dataclass
class StreamValidation:
    """The validation loss of held-out rows kept in memory in batches (this rank's share of
    them): sums of ``w·ℓ`` and ``w`` over the batches and, with ``comm``, over ranks, so every
    rank gets the loss of all the rows.

    Parameters
    ----------
    batches : list of tuple
        ``(X, y, weight)``: ``X`` a tensor or :class:`SparseRows` (densified a batch at a time).
    comm : Communicator or None
    """

    batches: list
    comm: object | None = None

    def effective_rows(self) -> float:
        """Kish's effective number of held-out rows over all ranks, ``(Σw)² / Σw²``."""
        sums = torch.zeros(2, dtype=torch.float64)
        for _, _, w in self.batches:
            w = w.detach().double().cpu()
            sums += torch.stack([w.sum(), (w * w).sum()])
        if self.comm is not None:
            (sums,) = self.comm.checked_sum(sums)
        return float(sums[0] ** 2 / sums[1]) if sums[1] > 0 else 0.0

    def losses(self, feature_map, n_blocks: int, theta: torch.Tensor, loss: Loss,
               n_alphas: int) -> torch.Tensor:
        """Weighted mean validation loss per column ``(A,)``, float64, the same on every rank."""
        total = torch.zeros(n_alphas, dtype=torch.float64, device=theta.device)
        weight = torch.zeros(1, dtype=torch.float64, device=theta.device)
        for X, y, w in self.batches:
            part, part_weight = validation_sums(feature_map, n_blocks, X, y, w, theta, loss, n_alphas)
            total += part
            weight += part_weight
        if self.comm is not None:
            total, weight = self.comm.checked_sum(total, weight)
        if not float(weight) > 0:
            raise ValueError("The validation rows of the stream all have sample_weight 0, so "
                             "they cannot score the model; give them weight, or set "
                             "early_stopping=False with numbers for sigma and alpha.")
        return total / weight


@dataclass
class StreamProblem:
    """A training problem read from streams: the interface of :class:`~.selection.Problem`
    that :func:`~.selection.train` uses (``sketch``, ``batches``, ``validation``, ``agree``).

    Parameters
    ----------
    readers : sequence of Source
        The training sources this process reads in lock step (one shard per rank, or every
        shard of an emulated group); step ``t`` takes the ``t``-th chunk of each.
    reader_rows : sequence of int
        Rows of every reader of the whole group (all ranks), in rank order: they give the
        number of steps of an epoch, the most over readers.
    convert : callable
        ``Chunk -> (X, y, weight)`` tensors on the training device.
    sample : tensor or SparseRows
        Training rows in memory (the same on every rank) for the preconditioner's sketch.
    validation : StreamValidation or None
    loss, n_outputs, batch_size, seed
        As :class:`~.selection.Problem`; ``batch_size`` is the global batch.
    empty_batch : tuple
        ``(X, y, weight)`` of zero rows with the shapes and dtypes of a batch.
    comm : Communicator or None
        Sums over ranks; None in one process.
    """

    readers: Sequence
    reader_rows: Sequence[int]
    convert: Callable
    sample: object
    validation: StreamValidation | None
    loss: Loss
    n_outputs: int
    batch_size: int
    seed: int
    empty_batch: tuple
    comm: object | None = None
    method: str = "sgd"

    @property
    def n_train(self) -> int:
        return int(sum(self.reader_rows))

    def sketch(self, n_rows: int) -> tuple:
        """``n_rows`` (at most the sample's) rows of the in-memory sample, unweighted (as
        :meth:`~.selection.Problem.sketch`; sample weights of a stream do not shape its
        preconditioner)."""
        n = self.sample.shape[0]
        chosen = np.random.default_rng((self.seed, 2**31)).choice(n, min(n_rows, n), replace=False)
        return subset(self.sample, torch.from_numpy(chosen).to(self.sample.device)), 1.0, None

    def batches(self, batch_size: int) -> Callable:
        """``batches(epoch) -> (steps, iterator)``: each reader hands out chunks of
        ``⌈batch_size / readers of the group⌉`` rows; a step is the union of one chunk per
        reader (an exhausted reader gives none; a rank with none left passes zero rows)."""
        per_reader = max(1, math.ceil(batch_size / len(self.reader_rows)))
        steps = max(1, max(math.ceil(rows / per_reader) for rows in self.reader_rows))
        readers = [reader.rechunked(per_reader) for reader in self.readers]

        def batches(epoch: int):
            lockstep = itertools.zip_longest(*(reader.chunks(epoch) for reader in readers))
            stream = (_cat([self.convert(c) for c in step if c is not None]) for step in lockstep)
            padded = itertools.chain(stream, itertools.repeat(None))
            out = (batch if batch is not None else self._empty() for batch in
                   itertools.islice(padded, steps))
            return steps, out if self.comm is None else self.comm.guarded(out)

        return batches

    def _empty(self) -> tuple:
        """A batch of zero rows (a rank whose shard is exhausted still joins the step)."""
        return self.empty_batch

    def agree(self, value):
        """``value`` as rank 0 computed it, on every rank (one process: unchanged). The
        preconditioner and each result are shared this way, so every rank takes the same
        decisions (batch size, stopping, feature growth) and ends with the same model."""
        if self.comm is None or self.comm.world_size == 1:
            return value
        device = self.sample.device
        return _moved(self.comm.broadcast_object(_moved(value, torch.device("cpu"))), device)


def _moved(value, device: torch.device):
    """A :class:`Preconditioner` or :class:`FitResult` with its tensors on ``device``."""
    if not isinstance(value, (Preconditioner, FitResult)):
        return value
    changes = {}
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        if isinstance(item, torch.Tensor):
            changes[field.name] = item.to(device)
        elif isinstance(item, tuple) and all(isinstance(t, torch.Tensor) for t in item):
            changes[field.name] = tuple(t.to(device) for t in item)
    return dataclasses.replace(value, **changes)
