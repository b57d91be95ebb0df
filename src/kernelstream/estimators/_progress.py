"""Progress bars (tqdm) and log records for ``verbose`` estimators: one per ``fit``, one across
a stream.

``verbose="auto"`` (the default) shows a bar only where someone watches — standard error is a
terminal — and only once the work has run ``AUTO_DELAY_S`` seconds, so quick fits print nothing
(and erases it when the work ends); a stream of ``partial_fit`` calls shows its bar only with a
true ``verbose`` (the caller's loop owns the stream);
``verbose=0`` never shows one, ``verbose>=1`` always. Whatever ``verbose`` says, the epochs of
the default ``fit`` are also logged at ``INFO`` to the ``"kernelstream"`` logger (silent unless
the application configures logging, e.g. ``logging.basicConfig(level=logging.INFO)``).

The preconditioned ``fit`` counts epochs (:class:`EpochProgress`), or the fit engine's stages
(:meth:`EpochProgress.stage`: the selection, each feature size, each solve): their number is
decided as the fit goes, so that bar shows the rate, the elapsed time and the monitored loss or
the stage, but no ETA;
the fits whose work is known in advance (one-pass steps, GoGP and AOGD points) show an ETA.

A stream of ``partial_fit`` calls shares one bar that counts rows and shows the steps, the
features and the last batch loss. The bar lives in a :class:`StreamProgress` attribute that
pickles, copies and clones as an empty holder, so an estimator never carries a terminal handle
into a file or another process.
"""

from __future__ import annotations

import contextlib
import logging
import sys


__all__ = ["AUTO_DELAY_S", "EpochProgress", "StreamProgress", "closing",
           "progress_bar"]

#: ``verbose="auto"``: a bar appears once the work has run this long (seconds)
AUTO_DELAY_S = 2.0

logger = logging.getLogger("kernelstream")


def progress_bar(verbose, *, total: int | None, desc: str, unit: str):
    """A tqdm bar: with ``verbose="auto"`` on a terminal (shown after ``AUTO_DELAY_S`` seconds),
    with a true ``verbose`` always; else ``None``."""
    if verbose == "auto":
        if not _watched():
            return None
        delay, leave = AUTO_DELAY_S, False
    elif not verbose:
        return None
    else:
        delay, leave = 0.0, True
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, delay=delay, leave=leave)


def _watched() -> bool:
    """Whether standard error is a terminal (someone sees a bar)."""
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


class StreamProgress:
    """One bar across the ``partial_fit`` calls of a stream (rows seen, open-ended)."""

    def __init__(self, desc: str):
        self.desc = desc
        self._bar = None

    def update(self, verbose, rows: int, **postfix) -> None:
        """Advance by ``rows`` and show ``postfix`` (e.g. steps, features, loss); only with a
        true ``verbose``: under "auto" the caller's loop owns the stream, and shows what it likes."""
        if not verbose or verbose == "auto":
            return
        if self._bar is None:
            self._bar = progress_bar(verbose, total=None, desc=self.desc, unit="row")
        self._bar.update(rows)
        if postfix:
            self._bar.set_postfix(postfix, refresh=False)

    def __getstate__(self):
        return {"desc": self.desc, "_bar": None}

    def __deepcopy__(self, memo):
        return StreamProgress(self.desc)


class EpochProgress:
    """The epochs of the preconditioned ``fit``, as a bar (see :func:`progress_bar`) and as log
    records; called as ``progress(epoch, loss)`` after each epoch with the monitored
    (validation, else training) loss."""

    def __init__(self, desc: str, verbose="auto"):
        self.desc = desc
        self._bar = progress_bar(verbose, total=None, desc=desc, unit="epoch")
        if self._bar is not None:
            self._bar.set_postfix_str("choosing sigma and alpha", refresh=False)
        self._best = float("inf")
        self._epochs = 0

    def __call__(self, epoch: int, loss: float) -> None:
        self._best = min(self._best, loss)
        self._epochs += 1
        logger.info("%s: epoch %d, monitored loss %.4g (best %.4g)", self.desc, self._epochs,
                    loss, self._best)
        if self._bar is not None:
            self._bar.set_postfix(loss=f"{loss:.4g}", best=f"{self._best:.4g}", refresh=False)
            self._bar.update(1)

    def stage(self, record: dict) -> None:
        """An engine stage that ended (:class:`~kernelstream.solvers.stages.StageLog`): one
        log record and one step of the bar, its name and facts as the bar's postfix."""
        facts = ", ".join(f"{k} {_fact(v)}" for k, v in record.items() if k not in ("stage", "seconds"))
        logger.info("%s: %s in %.2f s%s", self.desc, record["stage"], record["seconds"],
                    f" ({facts})" if facts else "")
        if self._bar is not None:
            self._bar.unit = "stage"
            self._bar.set_postfix_str(f"{record['stage']}: {facts}", refresh=False)
            self._bar.update(1)

    def close(self, failed: bool = False) -> None:
        """Close the bar; a failed fit's bar is erased (on a terminal): its error stands alone."""
        if self._bar is None:
            return
        if failed:
            self._bar.leave = False
        self._bar.close()

    def __enter__(self) -> "EpochProgress":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.close(failed=exc_type is not None)


def _fact(value) -> str:
    """A stage's fact in a few characters: numbers to four digits, per-feature σ by its size."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if hasattr(value, "__len__") and not isinstance(value, str):
        return f"({len(value)} values)"
    return str(value)


def closing(progress):
    """A context that closes ``progress`` when the fit ends; ``None`` or a plain callback (e.g.
    a benchmark's timer) has nothing to close and is passed through."""
    return progress if hasattr(progress, "__exit__") else contextlib.nullcontext(progress)
