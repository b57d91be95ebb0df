"""The ``kernelstream`` command group: its commands, and every failure as one line.

Exit codes: 0 success; 2 a usage or input error (unknown option, missing or malformed file,
bad parameter value, a model of another kind); 1 anything else; 130 interrupted. The message is
one line on standard error, never a traceback.
"""

from __future__ import annotations

import sys

import click

from .. import __version__
from ..data.whole_files import DataFileError
from .models import CliError

__all__ = ["KernelstreamGroup", "main"]

#: failures caused by what the user gave: exit code 2 (``kernelstream.io.ModelFileError`` is a
#: ValueError: importing it here would import torch before ``--help`` is printed)
INPUT_ERRORS = (CliError, DataFileError, ValueError, TypeError, OSError, FloatingPointError,
                MemoryError)

GROUP_EXAMPLES = """
\b
Examples:
  kernelstream fit a9a.svm --task classification -o a9a.kst
  kernelstream evaluate a9a.kst a9a.t
  kernelstream predict a9a.kst a9a.t --proba -o probabilities.csv
  kernelstream info a9a.kst
  kernelstream demo
"""


class KernelstreamGroup(click.Group):
    """A click group whose failures are one line on standard error and an exit code."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "kernelstream"
            _fail(f"{where}: {exc.format_message()} (see '{where} --help')", exc.exit_code)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except (click.Abort, KeyboardInterrupt):
            _fail("interrupted", 130)
        except INPUT_ERRORS as exc:
            _fail(str(exc) or type(exc).__name__, 2)
        except Exception as exc:  # a bug: still one line, with the exception's type
            _fail(f"{type(exc).__name__}: {exc}", 1)
        sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    """``error: message`` on one line of standard error, then exit with ``code``."""
    click.echo("error: " + " ".join(str(message).split()), err=True)
    sys.exit(code)


@click.group(cls=KernelstreamGroup, epilog=GROUP_EXAMPLES,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="kernelstream")
def main():
    """Kernel machines that scale, from the command line: fit a model on a LIBSVM, CSV,
    Parquet or npz file, predict, evaluate, inspect a model file, or run the demo."""


def _register() -> None:
    """Add the commands; each imports torch, the estimators and scikit-learn only when it runs,
    so ``--help`` and usage errors answer at once."""
    from .demo import demo
    from .fit import fit
    from .info import info
    from .predict import evaluate, predict

    for command in (fit, predict, evaluate, info, demo):
        main.add_command(command)


_register()
