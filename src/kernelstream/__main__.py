"""``python -m kernelstream``: the ``kernelstream`` command line (:mod:`kernelstream.cli`)."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="kernelstream")
