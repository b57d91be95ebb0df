"""``kernelstream demo``: the same run as ``python -m kernelstream.demo`` (``make demo``)."""

from __future__ import annotations

import click

from .. import demo as demo_module

__all__ = ["demo"]


@click.command(short_help="The main job on a built-in data set (make demo).")
@click.option("--n", "n_rows", type=click.IntRange(min=256), default=demo_module.DEFAULT_ROWS,
              show_default=True, help="Training rows of the synthetic regression.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Where to save the learning-curve plot (default: a file in the temp dir).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def demo(n_rows, plot, quiet):
    """Fit the default DSGRegressor on the paper's 2-D synthetic regression, with a
    scikit-learn peer, the model file's size and a learning-curve plot."""
    demo_module.run(n_rows, plot_path=plot, verbose=0 if quiet else 1)
