"""Data-parallel training on ``torch.distributed`` (gloo on CPU, NCCL on GPU).

Each rank reads its shard of a source (``source.shard(rank, world_size)``); every step of the
solver sums, over ranks, the step's statistics — ``Σ φ̃ w ℓ'`` ``(D+1, A·C)``, the loss sums and
the rows — so every rank takes the step of the global batch (the union of one chunk per rank).
Decisions that come from data (the sample for the bandwidth race, the preconditioner, each
stage's result) are rank 0's, broadcast, so every rank ends with the same model. The result
equals one process reading the shards in lock step (:class:`ShardGroup`) to float tolerance.

**Failures.** Every collective of kernelstream starts with a small status all-reduce: a rank
whose data fails (a bad line, a missing file) says so there, and every rank stops with an error
naming it and its message. A rank that dies (killed, out of memory) breaks the collective on
the others; they then name the rank that stopped beating — each rank adds to a counter in the
rendezvous store every ``HEARTBEAT_S`` seconds — and raise :class:`RankFailure`. A rank that
hangs is caught by the process group's ``timeout`` (:func:`init`), never waited on forever.

Launch with ``torchrun`` (docs/user_guide/streaming.md, "Data-parallel training")::

    torchrun --nproc_per_node=2 train.py

    # train.py
    from kernelstream import DSGClassifier, distributed
    from kernelstream.data import open_source
    distributed.init()                                   # gloo on CPU, NCCL with CUDA
    source = distributed.shard_for_this_rank(open_source("data/*.svm"))
    model = DSGClassifier(random_state=0).fit(source)    # the same model on every rank
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from datetime import timedelta
from typing import Iterable, Iterator

import torch
import torch.distributed as dist

__all__ = ["init", "shutdown", "Communicator", "TorchCommunicator", "RankFailure", "ShardGroup",
           "shard_for_this_rank", "communicator_for", "predict_by_blocks", "HEARTBEAT_S"]

#: seconds between two heartbeats of a rank
HEARTBEAT_S = 0.5
#: a rank whose heartbeat did not move for this long is named as stopped
STALL_S = 2.5
#: default timeout of every collective (``init(timeout=...)``)
DEFAULT_TIMEOUT_S = 300.0
_PREFIX = "kernelstream/heartbeat"


class RankFailure(RuntimeError):
    """Another rank failed or stopped: the data-parallel fit cannot go on."""


class Communicator:
    """One process: sums over ranks are the values themselves (the interface the solver and
    the estimators use; :class:`TorchCommunicator` is the data-parallel one)."""

    rank, world_size = 0, 1

    def checked_sum(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Each tensor summed over ranks, in place."""
        return tensors

    def sum_step(self, grad: torch.Tensor, total: torch.Tensor, rows: int):
        """A solver step's ``(Σ gradient, Σ loss, rows)`` summed over ranks."""
        return grad, total, rows

    def broadcast_object(self, value):
        """Rank 0's ``value`` on every rank."""
        return value

    def gather_objects(self, value) -> list:
        """Every rank's ``value``, in rank order."""
        return [value]

    def guarded(self, iterable: Iterable) -> Iterable:
        """``iterable``; with ranks, an error raised while iterating is announced to all."""
        return iterable

    def fail(self, error: BaseException):
        """Stop: tell the other ranks (if any) and raise ``error``."""
        raise error


class TorchCommunicator(Communicator):
    """Sums and broadcasts over the default ``torch.distributed`` process group, each preceded
    by a status all-reduce through which a failed rank stops all (module docstring)."""

    def __init__(self):
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialised; call "
                               "kernelstream.distributed.init() (under torchrun) first.")
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        nccl = dist.get_backend() == "nccl"
        self.device = torch.device("cuda", torch.cuda.current_device()) if nccl else torch.device("cpu")
        self._heartbeat = _Heartbeat.start(self.rank, self.world_size)

    def checked_sum(self, *tensors):
        self._status(failed=False)
        for tensor in tensors:
            self._all_reduce(tensor, "a sum over ranks")
        return tensors

    def sum_step(self, grad, total, rows):
        status = self._status(failed=False, rows=rows)
        self._all_reduce(grad, "the step's gradient all-reduce")
        self._all_reduce(total, "the step's loss all-reduce")
        return grad, total, int(status[1])

    def broadcast_object(self, value):
        self._status(failed=False)
        box = [value if self.rank == 0 else None]
        self._call("a broadcast from rank 0", dist.broadcast_object_list, box, 0)
        return box[0]

    def gather_objects(self, value) -> list:
        self._status(failed=False)
        box = [None] * self.world_size
        self._call("an all-gather", dist.all_gather_object, box, value)
        return box

    def guarded(self, iterable) -> Iterator:
        iterator = iter(iterable)
        while True:
            try:
                item = next(iterator)
            except StopIteration:
                return
            except Exception as error:  # noqa: BLE001 — announced to every rank, then re-raised
                self.fail(error)
            yield item

    def fail(self, error):
        self._status(failed=True)
        box = [None] * self.world_size
        self._call("telling the other ranks of an error", dist.all_gather_object, box,
                   f"{type(error).__name__}: {error}")
        raise error

    # -- the protocol ----------------------------------------------------------------------
    def _status(self, failed: bool, rows: int = 0) -> torch.Tensor:
        """``[failed ranks, rows]`` summed over ranks; raises if another rank failed."""
        status = torch.tensor([float(failed), float(rows)], dtype=torch.float64, device=self.device)
        self._call("the status all-reduce", dist.all_reduce, status)
        if not failed and status[0] > 0:
            box = [None] * self.world_size
            self._call("hearing another rank's error", dist.all_gather_object, box, None)
            messages = "; ".join(f"rank {k} failed: {m}" for k, m in enumerate(box) if m)
            raise RankFailure(f"{messages} (rank {self.rank} of {self.world_size} stops too).")
        return status

    def _all_reduce(self, tensor: torch.Tensor, what: str) -> None:
        if tensor.device == self.device:
            self._call(what, dist.all_reduce, tensor)
            return
        moved = tensor.to(self.device)
        self._call(what, dist.all_reduce, moved)
        tensor.copy_(moved)

    def _call(self, what: str, function, *args):
        try:
            return function(*args)
        except RuntimeError as exc:  # DistBackendError, gloo/NCCL errors, timeouts
            raise RankFailure(self._diagnosis(what, exc)) from exc

    def _diagnosis(self, what: str, exc: BaseException) -> str:
        here = f"rank {self.rank} of {self.world_size}"
        stopped = self._heartbeat.stopped_ranks() if self._heartbeat else None
        if stopped is None and self.world_size == 2:
            stopped = [1 - self.rank]
        if stopped == "store":
            who = "rank 0, whose process hosts the rendezvous store, is unreachable"
        elif stopped:
            names = ", ".join(f"rank {k}" for k in stopped)
            who = f"{names} stopped (no heartbeat for {STALL_S:g} s: died, killed or hung)"
        else:
            who = "another rank stopped or timed out"
        return (f"{here}: {what} failed: {who}. The data-parallel fit stops on every rank. "
                f"({type(exc).__name__}: {str(exc).strip()[:300]})")


class _Heartbeat:
    """A daemon thread that adds 1 to ``kernelstream/heartbeat/<rank>`` in the rendezvous
    store every ``HEARTBEAT_S``; :meth:`stopped_ranks` names the ranks whose count stalls."""

    _running: "_Heartbeat | None" = None

    def __init__(self, rank: int, world_size: int):
        self.rank, self.world_size = rank, world_size
        self.stop = threading.Event()
        threading.Thread(target=self._beat, name="kernelstream-heartbeat", daemon=True).start()

    @classmethod
    def start(cls, rank: int, world_size: int) -> "_Heartbeat | None":
        running = cls._running
        if running is not None and (running.rank, running.world_size) == (rank, world_size):
            return running
        if running is not None:
            running.stop.set()
        cls._running = cls(rank, world_size) if _store_address() else None
        return cls._running

    def _beat(self) -> None:
        try:
            store = _store_client()
            while not self.stop.is_set():
                store.add(f"{_PREFIX}/{self.rank}", 1)
                self.stop.wait(HEARTBEAT_S)
        except Exception:  # noqa: BLE001 — the store is gone: the diagnosis will say so
            return

    def stopped_ranks(self):
        """Ranks whose heartbeat did not move in ``STALL_S`` seconds; "store" when the store
        cannot be reached; None when the check itself failed."""
        try:
            store = _store_client()
            keys = [f"{_PREFIX}/{k}" for k in range(self.world_size)]
            before = [store.add(key, 0) for key in keys]
            time.sleep(STALL_S)
            after = [store.add(key, 0) for key in keys]
        except Exception:  # noqa: BLE001
            return "store"
        return [k for k in range(self.world_size) if k != self.rank and after[k] == before[k]]


def _store_address() -> tuple[str, int] | None:
    host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    return (host, int(port)) if host and port else None


def _store_client():
    host, port = _store_address()
    return dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=5),
                         wait_for_workers=False)


def init(backend: str = "auto", timeout: float = DEFAULT_TIMEOUT_S) -> TorchCommunicator:
    """Initialise the default process group from torchrun's environment (``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``) unless it is already, and start the
    heartbeat. A group initialised here is shut down at exit if the script does not call
    :func:`shutdown` (an exception), so a failing rank exits with its traceback and code 1.

    Parameters
    ----------
    backend : {"auto", "gloo", "nccl"}, default="auto"
        "auto": NCCL when CUDA is available (each rank on ``cuda:LOCAL_RANK``), else gloo.
    timeout : float, default=300
        Seconds any collective may wait for the other ranks before it fails.

    Returns
    -------
    TorchCommunicator
    """
    if not dist.is_initialized():
        if backend == "auto":
            backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout))
        atexit.unregister(_shutdown_at_exit)  # once, however often init runs
        atexit.register(_shutdown_at_exit)
    return TorchCommunicator()


def _shutdown_at_exit() -> None:
    """:func:`shutdown` at interpreter exit when the script did not call it (it raised: an empty
    glob, a bad line, a ``RankFailure``). A process group left to the interpreter's teardown
    ends the process in ``terminate called without an active exception`` (SIGABRT, exit
    code -6) after the traceback; shut down first, the exit code is Python's (1)."""
    if dist.is_initialized() or _Heartbeat._running is not None:
        shutdown()


def shutdown() -> None:
    """Stop the heartbeat and destroy the default process group."""
    if _Heartbeat._running is not None:
        _Heartbeat._running.stop.set()
        _Heartbeat._running = None
    if dist.is_initialized():
        dist.destroy_process_group()


class ShardGroup:
    """The ``world_size`` shards of ``source`` read in lock step by one process.

    ``fit(ShardGroup(source, 2))`` takes the global batches of a 2-rank data-parallel fit — step
    ``t`` is the union of the ``t``-th chunk of every shard — so it reproduces, in one process,
    the model that ``torchrun --nproc_per_node=2`` trains (to float tolerance: the sums are
    added in another order).
    """

    def __init__(self, source, world_size: int):
        if getattr(source, "world_size", 1) != 1:
            raise ValueError("ShardGroup takes the whole source, not a shard of it.")
        if not isinstance(world_size, int) or world_size < 1:
            raise ValueError(f"world_size must be a positive integer; got {world_size!r}.")
        self.source, self.world_size = source, world_size

    def shards(self) -> list:
        return [self.source.shard(k, self.world_size) for k in range(self.world_size)]

    def __repr__(self) -> str:
        return f"ShardGroup({self.source!r}, world_size={self.world_size})"


def shard_for_this_rank(source):
    """``source.shard(rank, world_size)`` of this process in the default process group."""
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialised; call "
                           "kernelstream.distributed.init() first.")
    return source.shard(dist.get_rank(), dist.get_world_size())


def communicator_for(source) -> Communicator:
    """The communicator a fit on ``source`` uses: a :class:`TorchCommunicator` for a shard
    (``source.world_size > 1``), which must match the process group, else one process."""
    world_size = getattr(source, "world_size", 1)
    if world_size == 1:
        return Communicator()
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError(f"{source!r} is shard {source.rank} of {world_size}, but "
                         "torch.distributed is not initialised: launch with torchrun and call "
                         "kernelstream.distributed.init(), or fit on the whole source.")
    if (dist.get_rank(), dist.get_world_size()) != (source.rank, world_size):
        raise ValueError(f"{source!r} is shard {source.rank} of {world_size}, but this process "
                         f"is rank {dist.get_rank()} of {dist.get_world_size()}; shard with "
                         "kernelstream.distributed.shard_for_this_rank(source).")
    return TorchCommunicator()


def predict_by_blocks(estimator, X, method: str = "predict"):
    """``getattr(estimator, method)(X)`` with the model's blocks split over the ranks: rank
    ``k`` evaluates blocks ``[kJ/W, (k+1)J/W)`` and the partial sums ``Σ_j ψ_j(X) c_j`` are
    all-reduced (for models too large for one rank's time). Every rank gets the result."""
    comm = TorchCommunicator()
    expansion = estimator.expansion_

    def split_predict(X_t: torch.Tensor) -> torch.Tensor:
        coef, intercept = expansion.prediction_parameters()
        J, W, k = expansion.n_blocks, comm.world_size, comm.rank
        out = torch.zeros((X_t.shape[0], expansion.n_outputs), dtype=coef.dtype, device=X_t.device)
        for j in range(J * k // W, J * (k + 1) // W):
            out += expansion.block_features(X_t, j) @ coef[j]  # ψ_j(X) c_j
        comm.checked_sum(out)
        return out + intercept

    expansion.predict = split_predict
    try:
        return getattr(estimator, method)(X)
    finally:
        del expansion.predict
