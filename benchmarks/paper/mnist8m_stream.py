"""MNIST-8M at our scale: ten-class kernel logistic regression on a stream of deformed digits.

Dai et al. (2014, §7.3) train kernel logistic regression on MNIST-8M (Loosli et al.'s 8.1 million
deformed digits). Here the stream is generated on the fly (:mod:`benchmarks.paper.deformed_mnist`:
elastic distortion plus a small affine move of a random training digit, chunk ``c`` a pure
function of ``(seed, c)``), projected on the PCA-100 of the 60,000 original training images
(:mod:`benchmarks.paper.mnist_pca`), and learnt by ``DSGClassifier(loss="logistic")`` (softmax
over the ten classes):

1. **Originals.** ``DSGClassifier(random_state=seed)`` with its defaults (or
   ``--originals-params``) on the 60,000 original images, fitted to convergence: the comparison.
2. **Stream.** ``DSGClassifier(sigma="median", alpha=1e-7, n_components=32768,
   warm_start=True, max_iter=1, early_stopping=False, tol=None)``, ``fit`` on each block of
   ``--fit-size`` new digits in turn: the default (preconditioned) solver, one epoch per block,
   each block starting from the model the previous ones left (``partial_fit`` would run the
   paper's one-pass Algorithm 1 instead). Every digit of the stream is seen once and only the
   current block is held, so memory is flat in samples seen. ``sigma="median"`` is the library's
   median heuristic on the first block (0.5 × the median distance, 4.56 here): after 262,144
   digits it had 1.12% test error, where the bandwidth the originals' race picks (9.8) had
   1.90%, 7.0 had 1.47% and 3.5 had 1.16% (``benchmarks/results/paper/mnist8m_stream_524k.md``).

Every ``--eval-every`` samples it logs the samples seen, the training time (deformation, PCA and
fit; evaluation left out) on the wall and CPU clocks, the process RSS (psutil) and the test error
on the 10,000 untouched test images. ``--out DIR`` writes ``DIR/mnist8m_stream.md``, ``.json``
and ``.png`` (``--file-name`` renames them) (test error against samples seen and against time). The feature parameters are
cached up to ``KERNELSTREAM_CACHE_MB`` (32 by default: 32,768 features of PCA-100 inputs fit;
raise it for more features, or blocks beyond it are redrawn at every step).

    python -m benchmarks.paper.mnist8m_stream --quick --out /tmp/bench    # seconds
    python -m benchmarks.paper.mnist8m_stream --skip-originals --samples 524288  # throughput
    python -m benchmarks.paper.mnist8m_stream --threads 2 --out benchmarks/results/paper  # 2·10^6
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import psutil

from benchmarks.common.data import RESULTS
from benchmarks.common.machine import machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import Stopwatch, threads
from benchmarks.paper.deformed_mnist import Deformation, DeformedDigits
from benchmarks.paper._plots import figure
from benchmarks.paper.mnist_pca import mnist_pca
from kernelstream import DSGClassifier
from kernelstream.features.base import DEFAULT_CACHE_BYTES

HEADER = ["samples seen", "train s (wall)", "train s (CPU)", "samples/s (wall)", "RSS MiB", "test error"]


def error_rate(model, Z_test, y_test) -> float:
    return float(np.mean(model.predict(Z_test) != y_test))


def fit_originals(Z, y, Z_test, y_test, args) -> dict:
    """Step 1: the defaults (plus ``--originals-params``) on the original training images."""
    model = DSGClassifier(random_state=args.seed, **args.originals_params)
    with Stopwatch() as fit:
        model.fit(Z, y)
    return dict(test_error=error_rate(model, Z_test, y_test), fit_s=fit.wall, fit_cpu_s=fit.cpu,
                sigma=float(model.sigma_), alpha=float(model.alpha_),
                n_components=int(model.n_components_), epochs=int(model.n_iter_), rows=len(Z))


def stream_model(args) -> DSGClassifier:
    """Step 2's estimator: the default solver, one epoch per block, warm-started across blocks."""
    return DSGClassifier(loss="logistic", sigma=args.sigma, alpha=args.alpha,
                         n_components=args.n_components, warm_start=True, max_iter=1,
                         early_stopping=False, tol=None, random_state=args.seed)


def fit_batches(stream: DeformedDigits, project, n_samples: int, fit_size: int):
    """``(Z, y)`` of ``fit_size`` digits at a time (the last one shorter): the stream's chunks
    deformed and projected on arrival, so only the current ``Z`` is held."""
    parts, labels, held = [], [], 0
    for images, y in stream.chunks(n_samples):
        parts.append(project(images))
        labels.append(y)
        held += len(y)
        if held >= fit_size:
            yield np.concatenate(parts), np.concatenate(labels)
            parts, labels, held = [], [], 0
    if parts:
        yield np.concatenate(parts), np.concatenate(labels)


def run_stream(stream: DeformedDigits, project, model, Z_test, y_test, args) -> list[dict]:
    """Fit ``model`` on ``args.fit_size`` digits at a time, ``args.samples`` in all; a checkpoint
    record every ``args.eval_every`` samples (and at the end)."""
    process, clock, log, seen = psutil.Process(), Stopwatch.started(), [], 0
    for Z, y in fit_batches(stream, project, args.samples, args.fit_size):
        model.fit(Z, y)
        seen += len(y)
        if seen % args.eval_every < len(y) or seen == args.samples:
            with clock.pause():
                train_s = clock.elapsed()
                log.append(dict(samples=seen, train_s=train_s, cpu_s=clock.elapsed("cpu"),
                                samples_per_s=seen / train_s,
                                rss_mib=process.memory_info().rss / 2**20,
                                test_error=error_rate(model, Z_test, y_test)))
                print(markdown_table(HEADER, [checkpoint_row(log[-1])])[2], flush=True)
    return log


def checkpoint_row(c: dict) -> list[str]:
    return [f"{c['samples']:,}", f"{c['train_s']:.0f}", f"{c['cpu_s']:.0f}", f"{c['samples_per_s']:.0f}",
            f"{c['rss_mib']:.0f}", f"{100 * c['test_error']:.2f}%"]


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2_000_000, help="deformed digits to learn from")
    parser.add_argument("--chunk-size", type=int, default=8192, help="digits deformed at once")
    parser.add_argument("--fit-size", type=int, default=65536, help="digits per fit call (one epoch each)")
    parser.add_argument("--eval-every", type=int, default=131072, help="samples between checkpoints")
    parser.add_argument("--n-components", type=int, default=32768, help="random features of the stream model")
    parser.add_argument("--alpha", type=float, default=1e-7, help="RKHS regularisation of the stream model")
    parser.add_argument("--sigma", type=_bandwidth, default="median",
                        help="bandwidth of the stream model: a number, or 'median' (0.5 × the "
                             "median distance of the first block, the library's median heuristic)")
    parser.add_argument("--skip-originals", action="store_true",
                        help="skip step 1 (e.g. to measure the stream's throughput)")
    parser.add_argument("--originals-params", type=json.loads, default={},
                        help="JSON of DSGClassifier parameters for step 1 ('{}': defaults)")
    parser.add_argument("--deformation", type=json.loads, default={},
                        help="JSON of Deformation fields (alpha, sigma, rotation, scale, shear, translation)")
    parser.add_argument("--n-train", type=int, default=None, help="first original training digits only")
    parser.add_argument("--n-test", type=int, default=None, help="first test digits only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"write OUT/mnist8m_stream.{{md,json,png}} (committed: {RESULTS / 'paper'})")
    parser.add_argument("--file-name", default="mnist8m_stream", help="stem of the files in OUT")
    parser.add_argument("--quick", action="store_true", help="2,048 originals, 3 chunks of 1,024 (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_train, args.n_test, args.samples, args.eval_every = 2048, 1000, 3072, 2048
        args.chunk_size, args.fit_size = 512, 1024
        args.n_components, args.alpha = 1024, 1e-5
        args.originals_params = {"sigma": "median", "alpha": 1e-5, "n_components": 1024, "max_iter": 5}
    return args


def _bandwidth(text: str) -> float | str:
    return text if text == "median" else float(text)


def main(argv=None) -> dict:
    """Steps 1 and 2; returns ``{"originals": record, "stream": [checkpoints], ...}``."""
    args = parse(argv)
    print(f"# MNIST-8M stream; {machine_line(args.threads)}", flush=True)
    with threads(args.threads):
        project, images, y, Z, Z_test, y_test = mnist_pca(100, args.n_train, args.n_test,
                                                          pca_on_all=not args.quick)
        originals = None if args.skip_originals else fit_originals(Z, y, Z_test, y_test, args)
        if originals is not None:
            print(f"originals: {len(Z)} rows, test error {100 * originals['test_error']:.2f}%, "
                  f"fit {originals['fit_s']:.0f} s, sigma_ {originals['sigma']:.3g}, "
                  f"alpha_ {originals['alpha']:g}, {originals['n_components']} features", flush=True)
        stream = DeformedDigits(images, y, seed=args.seed, chunk_size=args.chunk_size,
                                deformation=Deformation(**args.deformation))
        model = stream_model(args)
        print("\n".join(markdown_table(HEADER, [])), flush=True)
        log = run_stream(stream, project, model, Z_test, y_test, args)
    result = dict(command=command_line(), machine=machine_line(args.threads), originals=originals,
                  stream=log, stream_params={**{k: v for k, v in model.get_params().items()
                                                if k in ("sigma", "alpha", "n_components", "max_iter")},
                                             "sigma_": float(model.sigma_)},
                  deformation=vars(stream.deformation), chunk_size=args.chunk_size,
                  fit_size=args.fit_size, cache_mib=DEFAULT_CACHE_BYTES >> 20)
    if args.out is not None:
        write_outputs(args.out / args.file_name, result)
    return result


def write_outputs(stem: Path, result: dict) -> None:
    """``stem.md`` (the checkpoints), ``stem.json`` (everything) and ``stem.png``."""
    o, log = result["originals"], result["stream"]
    body = ["Step 1 skipped (--skip-originals)." if o is None else
            f"Step 1, defaults on the {o['rows']:,} original images (PCA-100): test error "
            f"**{100 * o['test_error']:.2f}%**, fit {o['fit_s']:.0f} s, sigma_ {o['sigma']:.3g}, "
            f"alpha_ {o['alpha']:g}, {o['n_components']} features, {o['epochs']} epochs.", "",
            f"Step 2, the stream ({result['fit_size']:,} digits per fit, deformed "
            f"{result['chunk_size']:,} at a time; feature-parameter cache {result['cache_mib']} "
            f"MiB; model {json.dumps(result['stream_params'])}; deformation "
            f"{json.dumps(result['deformation'])}):",
            ""] + markdown_table(HEADER, [checkpoint_row(c) for c in log])
    write_report(stem.with_suffix(".md"), "MNIST-8M stream: kernel logistic regression on "
                 "deformed digits", body, command=result["command"], machine=result["machine"])
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
    plot(stem.with_suffix(".png"), o, log)
    print("wrote", stem.with_suffix(".md"))


def plot(path: Path, originals: dict, log: list[dict]) -> None:
    """Test error against samples seen and against training time, the originals' error as a line."""
    def panels(axes) -> None:
        for ax, key, label in zip(axes, ("samples", "train_s"), ("samples seen", "training time (s)")):
            ax.plot([c[key] for c in log], [100 * c["test_error"] for c in log], "o-", label="stream")
            if originals is not None:
                ax.axhline(100 * originals["test_error"], color="gray", ls="--", label="60k originals")
            ax.set(xlabel=label, ylabel="test error (%)")
            ax.legend()

    figure(2, panels)(path)


if __name__ == "__main__":
    main()
