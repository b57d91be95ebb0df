"""Kernel logistic regression against a small neural net on MNIST, same inputs, same wall clock.

The paper's claim (Dai et al. 2014, §7.3) is that kernel machines trained by doubly stochastic
gradients are competitive with neural nets. At our scale: ten-class MNIST on PCA-100 inputs
(:mod:`benchmarks.paper.mnist_pca`, fitted on the 60,000 training images),

- ``DSGClassifier(random_state=seed)`` with its defaults (softmax logistic loss, Gaussian RBF,
  bandwidth and ``α`` raced, features grown, early stopping), timed;
- a PyTorch MLP ``100 → 512 → 256 → 10`` (ReLU, softmax cross-entropy, Adam at 1e-3,
  mini-batches of 128, seeded initialisation and shuffling) trained for the same wall-clock time
  as the kernel's fit, its test error measured after every epoch (evaluation time left out of
  the budget) and at the end.

Both on ``--threads`` torch threads (1 by default). Prints the two errors; ``--out DIR`` writes
``DIR/mnist_vs_mlp.md``, ``.json`` and ``.png`` (the MLP's test error against time, the kernel
as one point).

    python -m benchmarks.paper.mnist_vs_mlp --quick --out /tmp/bench    # seconds
    python -m benchmarks.paper.mnist_vs_mlp --out benchmarks/results/paper
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from torch import nn

from benchmarks.common.data import RESULTS
from benchmarks.common.machine import machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import Stopwatch, threads
from benchmarks.paper._plots import figure
from benchmarks.paper.mnist_pca import mnist_pca
from kernelstream import DSGClassifier

#: hidden widths of the MLP
HIDDEN = (512, 256)


def make_mlp(n_inputs: int, n_classes: int, seed: int) -> nn.Sequential:
    """``n_inputs → 512 → 256 → n_classes`` with ReLU, initialised from ``torch.manual_seed(seed)``."""
    torch.manual_seed(seed)
    widths = (n_inputs, *HIDDEN)
    layers: list[nn.Module] = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(widths[-1], n_classes))


def mlp_error(mlp: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((mlp(X).argmax(dim=1) != y).float().mean())


def train_mlp(Z, y, Z_test, y_test, budget_s: float, args) -> list[dict]:
    """Adam epochs until ``budget_s`` seconds of training on ``args.clock`` (checked every
    batch); the test error after each epoch and when the budget ends:
    ``[{epoch, train_s, test_error}]``."""
    X, Y = torch.as_tensor(Z), torch.as_tensor(y)
    X_test, Y_test = torch.as_tensor(Z_test), torch.as_tensor(y_test)
    mlp = make_mlp(X.shape[1], int(Y.max()) + 1, args.seed)
    optimiser = torch.optim.Adam(mlp.parameters(), lr=args.lr)
    shuffle = torch.Generator().manual_seed(args.seed)
    clock, curve, epoch = Stopwatch.started(), [], 0
    while clock.elapsed(args.clock) < budget_s:
        epoch += 1
        for rows in torch.randperm(len(X), generator=shuffle).split(args.batch_size):
            loss = nn.functional.cross_entropy(mlp(X[rows]), Y[rows])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            if clock.elapsed(args.clock) >= budget_s:
                break
        with clock.pause():
            curve.append(dict(epoch=epoch, train_s=clock.elapsed(args.clock), cpu_s=clock.elapsed("cpu"),
                              wall_s=clock.elapsed("wall"), test_error=mlp_error(mlp, X_test, Y_test)))
    return curve


def fit_kernel(Z, y, Z_test, y_test, args) -> dict:
    """The kernel machine with its defaults (plus ``--params``): error, time, what it chose."""
    model = DSGClassifier(random_state=args.seed, **args.params)
    with Stopwatch() as fit:
        model.fit(Z, y)
    return dict(test_error=float(np.mean(model.predict(Z_test) != y_test)), fit_s=fit.wall,
                fit_cpu_s=fit.cpu, sigma=float(model.sigma_), alpha=float(model.alpha_),
                n_components=int(model.n_components_), epochs=int(model.n_iter_))


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=json.loads, default={}, help="JSON of DSGClassifier parameters")
    parser.add_argument("--n-train", type=int, default=None, help="first training rows only")
    parser.add_argument("--n-test", type=int, default=None, help="first test rows only")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                        help="the clock of the shared budget: process CPU time (one thread: the "
                             "wall time of an idle machine, robust to other jobs) or wall time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"write OUT/mnist_vs_mlp.{{md,json,png}} (committed: {RESULTS / 'paper'})")
    parser.add_argument("--quick", action="store_true", help="2,048/1,000 rows, small kernel (seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_train, args.n_test = 2048, 1000
        args.params = {"sigma": "median", "alpha": 1e-5, "n_components": 1024, "max_iter": 5}
    return args


def main(argv=None) -> dict:
    """Kernel fit, then the MLP for the kernel's fit time; returns both records."""
    args = parse(argv)
    machine = machine_line(args.threads)
    print(f"# MNIST ten classes, PCA-100: kernel vs MLP; {machine}", flush=True)
    with threads(args.threads):
        _, _, y, Z, Z_test, y_test = mnist_pca(100, args.n_train, args.n_test, pca_on_all=not args.quick)
        kernel = fit_kernel(Z, y, Z_test, y_test, args)
        budget = kernel["fit_s" if args.clock == "wall" else "fit_cpu_s"]
        print(f"kernel: test error {100 * kernel['test_error']:.2f}% in {budget:.1f} s "
              f"({args.clock})", flush=True)
        curve = train_mlp(Z, y, Z_test, y_test, budget, args)
    print(f"MLP: test error {100 * curve[-1]['test_error']:.2f}% after {curve[-1]['epoch']} epochs "
          f"in {curve[-1]['train_s']:.1f} s (best epoch {100 * min(c['test_error'] for c in curve):.2f}%)")
    result = dict(command=command_line(), machine=machine, rows=(len(Z), len(Z_test)), kernel=kernel,
                  clock=args.clock,
                  mlp=dict(hidden=HIDDEN, lr=args.lr, batch_size=args.batch_size, curve=curve))
    if args.out is not None:
        write_outputs(args.out, result)
    return result


def write_outputs(out: Path, result: dict) -> None:
    k, last = result["kernel"], result["mlp"]["curve"][-1]
    best = min(c["test_error"] for c in result["mlp"]["curve"])
    rows = [["DSGClassifier defaults", f"{100 * k['test_error']:.2f}%", f"{k['fit_cpu_s']:.0f}",
             f"{k['fit_s']:.0f}", f"{k['n_components']} features, sigma_ {k['sigma']:.3g}, "
             f"alpha_ {k['alpha']:g}, {k['epochs']} epochs"],
            [f"MLP 100-{'-'.join(map(str, HIDDEN))}-10, Adam", f"{100 * last['test_error']:.2f}%",
             f"{last['cpu_s']:.0f}", f"{last['wall_s']:.0f}", f"{last['epoch']} epochs (the last cut "
             f"by the budget), best epoch {100 * best:.2f}%"]]
    body = [f"{result['rows'][0]:,} training / {result['rows'][1]:,} test rows, PCA-100 inputs; "
            f"the MLP's budget is the kernel's fit time on the {result['clock']} clock.", ""]
    body += markdown_table(["model", "test error", "CPU s", "wall s", "notes"], rows)
    write_report(out / "mnist_vs_mlp.md", "MNIST ten classes: kernel logistic regression vs an "
                 "MLP for the same training time", body, command=result["command"], machine=result["machine"])
    (out / "mnist_vs_mlp.json").write_text(json.dumps(result, indent=1))
    plot(out / "mnist_vs_mlp.png", k, result["mlp"]["curve"], result["clock"])
    print("wrote", out / "mnist_vs_mlp.md")


def plot(path: Path, kernel: dict, curve: list[dict], clock: str) -> None:
    """The MLP's test error against its training time, the kernel machine's as one point."""
    def panels(axes) -> None:
        ax = axes[0]
        ax.plot([c["train_s"] for c in curve], [100 * c["test_error"] for c in curve], "o-", label="MLP")
        ax.plot([kernel["fit_s" if clock == "wall" else "fit_cpu_s"]], [100 * kernel["test_error"]],
                "r*", ms=12, label="DSGClassifier")
        ax.set(xlabel=f"training time (s, {clock} clock)", ylabel="test error (%)")
        ax.legend()

    figure(1, panels)(path)


if __name__ == "__main__":
    main()
