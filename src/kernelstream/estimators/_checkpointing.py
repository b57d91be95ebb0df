"""Checkpoints of the preconditioned ``fit``: when to write one, what it must match, where to resume.

A checkpoint (``checkpoint=PATH``) is rewritten atomically (:func:`kernelstream.io.save_checkpoint`)
after the choice of ``sigma`` and ``alpha`` and then at the end of every ``checkpoint_every``
epochs (or the first epoch end ``checkpoint_every`` of time after the last one). It holds

- the fit's fingerprint: the class; the parameters that shape the model (all but
  :data:`OPERATIONAL`); the data (shape, SHA-256 of the encoded targets, of the weights and of
  :data:`FINGERPRINT_ROWS` evenly spaced rows of ``X``); a warm start's starting model;
- the random stream the fit began with (so ``random_state=None`` resumes too);
- the selection: feature map, ``α`` candidates, blocks, and the fitted attributes the selection
  sets (:data:`SELECTED_ATTRIBUTES`);
- the growth and epoch loops' state at an epoch boundary (:mod:`kernelstream.solvers.checkpoint`);
- on the fit engine (the dual and subsample routes), its choice (``σ``, ``α``, the loss) after
  the selection and its growth between feature sizes (:class:`~kernelstream.solvers.engine.Growth`):
  ``checkpoint_every`` then counts sizes.

``fit(X, y, resume=PATH)`` checks the fingerprint (a clear :class:`~kernelstream.io.CheckpointError`
otherwise), skips what the checkpoint has done and continues from its epoch boundary, ending
with the model of the uninterrupted run, bit for bit on the same device and thread count (a
warning says when those differ: the fit then continues, equal up to rounding). A kill during the
selection redoes it: its cost is bounded (at most two rungs of at most 16,384 rows).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import warnings

import numpy as np
import scipy.sparse as sp
import torch

from .._state import feature_map_from_config
from ..io import CheckpointError, from_json, jsonable, load_checkpoint, save_checkpoint
from ..solvers.checkpoint import growth_state_dict, growth_state_from_dict
from ..solvers.selection import GrowthState

__all__ = ["FitCheckpoint", "parse_every", "refuse_checkpoints", "OPERATIONAL", "SELECTED_ATTRIBUTES"]

#: parameters that do not shape the model: they may differ between a fit and its resumption
OPERATIONAL = ("checkpoint", "checkpoint_every", "verbose", "n_jobs", "device")
#: rows of ``X`` hashed into the data fingerprint (evenly spaced, the first and last included)
FINGERPRINT_ROWS = 64
#: fitted attributes the selection (``ConvergingMixin._select``) sets, saved with its result
SELECTED_ATTRIBUTES = ("cv_results_",)
_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}


def parse_every(every) -> tuple[int | None, float | None]:
    """``checkpoint_every`` as ``(epochs, seconds)``: an int ≥ 1 counts epochs, a string such
    as ``"30s"``, ``"10min"`` or ``"2h"`` is a time."""
    if isinstance(every, (int, np.integer)) and not isinstance(every, bool) and every >= 1:
        return int(every), None
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(s|min|h)\s*", every) if isinstance(every, str) else None
    if match is None:
        raise ValueError(f"checkpoint_every={every!r} is neither a number of epochs (an int ≥ 1) "
                         "nor a time such as '30s', '10min' or '2h'.")
    return None, float(match.group(1)) * _UNITS[match.group(2)]


def refuse_checkpoints(estimator, resume, what: str = "the one-pass solver") -> None:
    """A clear error for ``checkpoint`` or ``resume`` where the fit has none: the one-pass
    solver (its ``partial_fit`` stream is checkpointed by ``save`` and
    :func:`kernelstream.load`) and a fit on a stream source."""
    if resume is not None or estimator.checkpoint is not None:
        raise ValueError(f"checkpoint and resume are for solver='preconditioned' on arrays; "
                         f"{what} has no checkpoints (a partial_fit stream resumes exactly from "
                         "model.save(path) and kernelstream.load(path)).")


def _sha256(*arrays) -> str:
    """SHA-256 of the arrays' values (as C-ordered float64, int64 or bytes of their kind)."""
    h = hashlib.sha256()
    for array in arrays:
        array = np.asarray(array)
        kind = np.float64 if array.dtype.kind == "f" else np.int64 if array.dtype.kind in "biu" else None
        if kind is None:
            array = np.asarray(array, dtype=str)
        h.update(np.ascontiguousarray(array.astype(kind) if kind else array).tobytes())
    return h.hexdigest()


def data_fingerprint(X, targets, weight, start: torch.Tensor | None) -> dict:
    """Shape and SHA-256 digests of what the fit learns from (``O(n + 64·d)`` work)."""
    n = X.shape[0]
    rows = np.unique(np.linspace(0, n - 1, min(n, FINGERPRINT_ROWS)).round().astype(np.int64))
    sample = X[rows].toarray() if sp.issparse(X) else X[rows]
    return {"shape": [int(n), int(X.shape[1])], "X": _sha256(sample), "y": _sha256(targets),
            "sample_weight": _sha256(weight),
            "warm_start_model": None if start is None else _sha256(start.detach().cpu().double().numpy())}


def model_parameters(estimator) -> dict:
    """The parameters that shape the model, as they read back from JSON (a ``RandomState`` is
    named, not dumped: the stream it was in is saved with the checkpoint)."""
    params = estimator.get_params(deep=False)
    if not isinstance(params["random_state"], (int, np.integer, type(None))):
        params["random_state"] = type(params["random_state"]).__name__
    return {k: from_json(json.loads(json.dumps(jsonable(v)))) for k, v in params.items()
            if k not in OPERATIONAL}


def _differences(saved: dict, current: dict) -> list[str]:
    """``name=value there, value here`` for each key whose values differ."""
    return [f"{k}={saved.get(k)!r} there, {current.get(k)!r} here"
            for k in sorted(set(saved) | set(current)) if saved.get(k) != current.get(k)]


def _data_differences(saved: dict, current: dict) -> str:
    """What differs between two data fingerprints, in words."""
    if saved.get("shape") != current.get("shape"):
        return f"X has shape {tuple(current['shape'])} here, {tuple(saved.get('shape', ()))} there"
    names = {"X": f"X (its {FINGERPRINT_ROWS} evenly spaced rows)", "y": "y",
             "sample_weight": "sample_weight (times the class weights)",
             "warm_start_model": "the warm-start model"}
    return "other values of " + ", ".join(names[k] for k in names if saved.get(k) != current.get(k))


def _rng_state(rng: np.random.RandomState) -> dict:
    name, keys, position, has_gauss, cached = rng.get_state()
    return dict(keys=keys.astype(np.int64), position=int(position), has_gauss=int(has_gauss),
                cached_gaussian=float(cached))


def _rng_from_state(state: dict) -> np.random.RandomState:
    rng = np.random.RandomState()
    rng.set_state(("MT19937", np.asarray(state["keys"]).astype(np.uint32), state["position"],
                   state["has_gauss"], state["cached_gaussian"]))
    return rng


class FitCheckpoint:
    """The checkpoints of one preconditioned ``fit``: reads ``resume``, writes ``checkpoint``.

    Without either, every method passes its argument through and nothing is hashed or written.
    """

    def __init__(self, estimator, resume=None):
        self.path, self.resume = estimator.checkpoint, resume
        self.epochs, self.seconds = parse_every(estimator.checkpoint_every)
        if self.path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(self.path))):
            raise ValueError(f"checkpoint={str(self.path)!r}: its directory does not exist; "
                             "create it or choose another path.")
        self.header = {"class": type(estimator).__name__, "params": model_parameters(estimator)}
        self.saved_header, self.saved = {}, {}
        self.state = {"random_state": None, "selection": None, "engine": None}
        self.growth_state: GrowthState | None = None
        self._since, self._last = 0, time.monotonic()
        if resume is not None:
            self.saved_header, self.saved = load_checkpoint(resume)
            self._check_estimator()

    @property
    def active(self) -> bool:
        """Whether this fit reads or writes a checkpoint."""
        return self.path is not None or self.resume is not None

    def _check_estimator(self) -> None:
        """Refuse a checkpoint of another class or other parameters."""
        saved, here = self.saved_header, self.header
        if saved.get("class") != here["class"]:
            raise CheckpointError(f"Checkpoint {str(self.resume)!r} was written by {saved.get('class')}, "
                                  f"not by {here['class']}; resume with the estimator that wrote it.")
        changed = _differences(saved.get("params", {}), here["params"])
        if changed:
            raise CheckpointError(
                f"Checkpoint {str(self.resume)!r} was written by a fit with other parameters ("
                + "; ".join(changed) + "). Resume with the same parameters (only "
                + ", ".join(OPERATIONAL) + " may change).")

    def random_state(self, rng: np.random.RandomState) -> np.random.RandomState:
        """The random stream to draw the seed and the split from: the checkpoint's when resuming
        (the same as ``rng`` for an integer ``random_state``), else ``rng``, recorded."""
        if self.resume is not None:
            rng = _rng_from_state(self.saved["random_state"])
        if self.active:
            self.state["random_state"] = _rng_state(rng)
        return rng

    def check_data(self, X, targets, weight, start, device) -> None:
        """Fingerprint the data (and a warm start's model); when resuming, refuse other data and
        warn when the device or the thread count differ from the checkpoint's."""
        if not self.active:
            return
        self.header.update(data=data_fingerprint(X, targets, weight, start), device=str(device),
                           threads=torch.get_num_threads())
        if self.resume is None:
            return
        saved, here = self.saved_header, self.header
        if saved.get("data") != here["data"]:
            raise CheckpointError(f"Checkpoint {str(self.resume)!r} was written for other data: "
                                  f"{_data_differences(saved.get('data', {}), here['data'])}. Resume "
                                  "with the rows, targets and sample_weight of the interrupted fit.")
        if (saved.get("device"), saved.get("threads")) != (here["device"], here["threads"]):
            warnings.warn(f"Checkpoint {str(self.resume)!r} was written on {saved.get('device')} with "
                          f"{saved.get('threads')} thread(s), this fit runs on {here['device']} with "
                          f"{here['threads']}: it continues, equal to an uninterrupted run up to "
                          "rounding, not bit for bit.", UserWarning, stacklevel=4)

    def selection(self, estimator, select):
        """``select()``'s ``(feature_map, alphas, (blocks, max_blocks))`` and the attributes it
        sets: from the checkpoint when it has them, else computed and checkpointed."""
        saved = self.saved.get("selection")
        if saved is not None:
            for name, value in saved["attributes"].items():
                setattr(estimator, name, value)
            chosen = (feature_map_from_config(saved["feature_map"]),
                      [float(a) for a in saved["alphas"]],
                      (int(saved["n_blocks"]), int(saved["max_blocks"])))
        else:
            chosen = select()
        feature_map, alphas, (blocks, max_blocks) = chosen
        self.state["selection"] = dict(feature_map=feature_map.config(), alphas=list(alphas),
                                       n_blocks=blocks, max_blocks=max_blocks,
                                       attributes={name: getattr(estimator, name, None)
                                                   for name in SELECTED_ATTRIBUTES})
        if saved is None and self.path is not None:
            self.write()
        return chosen

    def growth(self, start_blocks: int, device) -> GrowthState:
        """The growth loop's state: the checkpoint's, or a new one from ``start_blocks``."""
        saved = self.saved.get("growth")
        self.growth_state = (GrowthState(start_blocks) if saved is None
                             else growth_state_from_dict(saved, device))
        return self.growth_state

    def callback(self, progress):
        """``progress`` (``None`` or ``progress(epoch, loss)``), then a checkpoint when one is due."""
        if self.path is None:
            return progress

        def at_epoch_end(epoch: int, loss: float) -> None:
            if progress is not None:
                progress(epoch, loss)
            self._since += 1
            if (self._since >= self.epochs if self.epochs is not None
                    else time.monotonic() - self._last >= self.seconds):
                self.write()

        return at_epoch_end

    def engine_chosen(self, choice: dict) -> None:
        """The fit engine's choice (:meth:`~._subsample.SubsampleMixin._engine_choice`), kept
        in every checkpoint from now on and written at once where none held it."""
        fresh = self.state.get("engine") is None and not self.saved.get("engine")
        self.state["engine"] = {**(self.saved.get("engine") or {}), "chosen": choice}
        if fresh and self.path is not None:
            self.write()

    def engine_growth(self, growth: dict) -> None:
        """The engine's growth between two sizes (:meth:`~kernelstream.solvers.engine.Growth.
        state_dict`): written every ``checkpoint_every`` sizes (or the first size end that long
        after the last write)."""
        self.state["engine"] = {**self.state["engine"], "growth": growth}
        self._since += 1
        if (self._since >= self.epochs if self.epochs is not None
                else time.monotonic() - self._last >= self.seconds):
            self.write()

    def write(self) -> None:
        """Write the checkpoint now (atomically: a reader sees the previous one or this one)."""
        growth = None if self.growth_state is None else growth_state_dict(self.growth_state)
        save_checkpoint(self.header, {**self.state, "growth": growth}, self.path)
        self._since, self._last = 0, time.monotonic()
