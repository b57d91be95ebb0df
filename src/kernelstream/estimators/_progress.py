"""Progress bars (tqdm) for ``verbose`` estimators: one per ``fit``, one across a stream.

A stream of ``partial_fit`` calls shares one bar that counts rows and shows the steps, the
features and the last batch loss. The bar lives in a :class:`StreamProgress` attribute that
pickles, copies and clones as an empty holder, so an estimator never carries a terminal handle
into a file or another process.
"""

from __future__ import annotations

__all__ = ["StreamProgress", "progress_bar"]


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
