"""The ``kernelstream`` command line: ``fit``, ``predict``, ``evaluate``, ``info``, ``demo``.

A shell over the public API (:mod:`kernelstream.io`, the estimators): it parses, reads files
(:func:`kernelstream.data.read_labelled`, the only way it does), calls, and prints. No algorithm
code.

**Why click, not typer.** Typer is click underneath with the options declared as type hints;
what it adds is declaration style, and what it brings with it is rich's boxed, multi-line error
panels and pretty tracebacks, which we would have to switch off to keep the rule that every
failure is *one* line and an exit code. The CLI needs exactly click's own machinery: a group
whose ``main`` we override once to turn every failure into one line
(:class:`~kernelstream.cli.app.KernelstreamGroup`), ``default_map`` for options from a config
file, ``Choice``/``IntRange`` validation with click's messages, and ``CliRunner`` for tests. So
the dependency is click alone (small, pure Python, and already what typer would pull in), and
the options are declared where they are documented.

Layout: ``app.py`` (the group and error policy), ``fit.py``, ``predict.py`` (predict and
evaluate), ``info.py``, ``demo.py``; ``models.py`` (estimator names and parameters),
``config.py`` (TOML/YAML options), ``metrics.py``, ``output.py`` (text and ``--json``).
"""

from .app import main

__all__ = ["main"]
