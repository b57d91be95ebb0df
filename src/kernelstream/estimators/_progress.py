"""Progress bars (tqdm) for ``verbose`` estimators: one per ``fit``, one across a stream.

The preconditioned ``fit`` counts epochs (:class:`EpochProgress`): their number is decided by
early stopping, so that bar shows the rate, the elapsed time and the monitored loss, but no ETA;
the fits whose work is known in advance (one-pass steps, GoGP and AOGD points) show an ETA.

A stream of ``partial_fit`` calls shares one bar that counts rows and shows the steps, the
features and the last batch loss. The bar lives in a :class:`StreamProgress` attribute that
pickles, copies and clones as an empty holder, so an estimator never carries a terminal handle
into a file or another process.
"""

from __future__ import annotations

import contextlib

__all__ = ["EpochProgress", "StreamProgress", "closing", "progress_bar"]


def progress_bar(verbose, *, total: int | None, desc: str, unit: str):
    """A tqdm bar when ``verbose``, else ``None``."""
    if not verbose:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True)


class StreamProgress:
    """One bar across the ``partial_fit`` calls of a stream (rows seen, open-ended)."""

    def __init__(self, desc: str):
        self.desc = desc
        self._bar = None

    def update(self, verbose, rows: int, **postfix) -> None:
        """Advance by ``rows`` and show ``postfix`` (e.g. steps, features, loss)."""
        if not verbose:
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
    """A bar over the epochs of the preconditioned ``fit``; called as ``progress(epoch, loss)``
    after each epoch with the monitored (validation, else training) loss."""

    def __init__(self, desc: str):
        self._bar = progress_bar(True, total=None, desc=desc, unit="epoch")
        self._bar.set_postfix_str("choosing sigma and alpha")  # until the first epoch ends
        self._best = float("inf")

    def __call__(self, epoch: int, loss: float) -> None:
        self._best = min(self._best, loss)
        self._bar.set_postfix(loss=f"{loss:.4g}", best=f"{self._best:.4g}", refresh=False)
        self._bar.update(1)

    def close(self, failed: bool = False) -> None:
        """Close the bar; a failed fit's bar is erased (on a terminal): its error stands alone."""
        if failed:
            self._bar.leave = False
        self._bar.close()

    def __enter__(self) -> "EpochProgress":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.close(failed=exc_type is not None)


def closing(progress):
    """A context that closes ``progress`` (``None``: nothing to close) when the fit ends."""
    return contextlib.nullcontext() if progress is None else progress
