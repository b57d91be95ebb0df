"""Figures of the Section-7 scripts: metric-versus-time curves, one per method."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["figure", "plot_curves", "plotted_seconds"]


def plotted_seconds(row: dict, count_setup: bool) -> float:
    """Training seconds of a checkpoint; the paper leaves Nyström's preprocessing out."""
    return row["seconds"] - (0.0 if count_setup else row["setup_seconds"])


def plot_curves(ax, runs: dict, key: str, *, ylabel: str, title: str, logy: bool = True) -> None:
    """``key`` against training seconds for every run (``{"trace": [...], "count_setup": bool}``);
    one-point runs are drawn as markers."""
    for label, run in runs.items():
        trace = [row for row in run["trace"] if row.get(key) is not None]
        if not trace:
            continue
        x = [max(plotted_seconds(row, run["count_setup"]), 1e-3) for row in trace]
        y = [row[key] for row in trace]
        ax.plot(x, y, "o" if len(trace) == 1 else ".-", markersize=7 if len(trace) == 1 else 3,
                label=label)
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("training seconds (evaluation excluded)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6)


def figure(n_panels: int, draw: Callable, width: float = 5.0, height: float = 4.0):
    """A function of a path that draws ``n_panels`` side by side with ``draw(axes)`` and saves
    them there (matplotlib's Agg backend)."""
    def save(path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, n_panels, figsize=(width * n_panels, height), squeeze=False)
        draw(list(axes[0]))
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return save
