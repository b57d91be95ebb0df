"""MNIST ten classes with the defaults: where do the CPU seconds of ``fit`` go? (issue 32)

``DSGClassifier(random_state=0, device="cpu")`` on the 60,000 official training rows (``X/255``,
float32), one thread, with a timer around each stage of the subsample route (the library's own
methods, wrapped; nothing else changes): the subsample's selection, the narrowing check, the
Nyström basis (``K_CC`` and its factor) and the training rows' kernel columns, the least-squares
solve at the carried ``α``, the path of ``α``, the squared hinge's Newton steps. The test error
is on the official 10,000 test rows (prediction not timed). A stage inside another (the basis
inside the columns, a preconditioner inside a solve) is counted in both.

    python -m benchmarks.research.mnist10_stages --out benchmarks/results
    python -m benchmarks.research.mnist10_stages --quick          # 6,000 rows, printed
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

import numpy as np

from benchmarks.common.data import official_split
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import threads
from kernelstream import DSGClassifier
from kernelstream.estimators import _subsample
from kernelstream.solvers import engine, newton, nystroem

#: (owner, method, what it is)
STAGES = (
    (_subsample.SubsampleMixin, "_subsample_choice", "σ, α by leave-one-out on the subsample"),
    (_subsample, "narrowed", "σ/2 challenges σ (narrowing check)"),
    (nystroem.NystroemBasis, "grow", "the basis: K_CC (float64) and its Cholesky factor"),
    (nystroem.NystroemCache, "grow", "K_XC of the training rows (and the basis, inside)"),
    (engine, "grow_and_solve", "least squares at the carried α"),
    (engine, "alpha_path", "the path of α at the final size"),
    (newton, "_newton_step", "one Newton step of the squared hinge"),
    (engine, "hinge_finish", "the squared hinge (every step)"),
)


def timed_fit(n: int) -> tuple[list[list[str]], list[str]]:
    """The stages' rows (one per call, in order) and the fit's summary."""
    X, y, X_test, y_test = official_split("mnist")
    X, X_test = (X[:n] / 255.0).astype(np.float32), (X_test / 255.0).astype(np.float32)
    y = y[:n]
    rows: list[list[str]] = []
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in STAGES]
    for (owner, name, what), (_, _, original) in zip(STAGES, originals):
        setattr(owner, name, _timer(original, what, rows))
    try:
        start = time.process_time()
        model = DSGClassifier(random_state=0, device="cpu").fit(X, y)
        seconds = time.process_time() - start
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
    error = float(np.mean(model.predict(X_test) != y_test))
    summary = [f"test error {100 * error:.2f}%, {seconds:.1f} CPU s of fit; loss_ = {model.loss_!r}, "
               f"alpha_ = {model.alpha_:.3g}, sigma_ = {model.sigma_:.3g}, "
               f"{model.n_components_:,} centres, {model.n_iter_} iterations in all"]
    return rows, summary


def _timer(method, what: str, rows: list):
    @functools.wraps(method)
    def timed(*args, **kwargs):
        start = time.process_time()
        result = method(*args, **kwargs)
        seconds = time.process_time() - start
        if seconds >= 0.05:  # a grow that had nothing to add is not a stage
            rows.append([what, f"{seconds:.1f}"])
        return result
    return timed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6,000 training rows, printed")
    parser.add_argument("--out", type=Path, help="write DIR/mnist10_stages.md")
    args = parser.parse_args(argv)
    n = 6000 if args.quick else 60000
    with threads(1):
        rows, summary = timed_fit(n)
    body = [f"## The default fit on {n:,} training rows, stage by stage (a stage inside another "
            "counted in both)", "", *summary, "", *markdown_table(["stage", "CPU s"], rows)]
    if args.out and not args.quick:
        write_report(args.out / "mnist10_stages.md",
                     "MNIST ten classes with the defaults: the CPU seconds of each stage", body,
                     threads=1)
    else:
        print("\n".join(body))


if __name__ == "__main__":
    main()
