"""Kernel ridge regression on the paper's 2-D synthetic set: error versus time for seven methods
(Dai et al. 2014, Figure 4(3)) and the 1/t convergence of the averaged iterate (Figure 4(2)).

Data (Section 7.1; ``kernelstream.datasets.synthetic_regression``): ``x ~ U[-5, 5]²``,
``y = cos(0.5π‖x‖) exp(-0.1π‖x‖) + 0.1 e``, ``n = 2^20`` training points; the error is the MSE
against the noise-free function on ``2^12`` fresh points. The paper's settings: Gaussian RBF with
``σ = 0.1 ×`` the median pairwise distance, ``ν = 1e-6``, batch ``2^10`` (and our feature block
``2^10``), rank / number of features ``2^8`` for SDCA and Pegasos.

Methods: ``DSGRegressor()`` with its defaults (one point: its fit time and error);
``DSGRegressor(solver="one_pass")`` in the paper's mode (a new block per step, streamed through
``partial_fit``); NORMA; k-SDCA on the first ``--ksdca-n`` rows (a pass is O(n²)); r-SDCA,
r-Pegasos (``RandomFeatures``); n-SDCA, n-Pegasos (Nyström). Every run is on one thread and
evaluated at checkpoints with the clock paused; a baseline stops after ``--epochs`` passes or
``--budget`` seconds, our one pass runs to its end (``--limit`` caps it). The Nyström
preprocessing is left out of the curves, as in the paper (listed in the table). Figure 4(2): the
same one-pass algorithm with and without averaging on ``--convergence-n`` points, the error of
every step, and the slope of log error on log t.

    python -m benchmarks.paper.synthetic_krr            # the full run (about 1.5 hours)
    python -m benchmarks.paper.synthetic_krr --quick --out /tmp/paper   # seconds
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.baselines import BASELINES, make_baseline
from benchmarks.common.report import markdown_table
from benchmarks.common.timing import threads
from kernelstream import DSGRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.features import median_distance

from ._common import parse_with_quick, write_paper_outputs
from ._plots import figure, plot_curves, plotted_seconds
from ._runs import Limits, dsg_stream, run_trace, setup_seconds, single_fit

NAME = "synthetic_krr"
#: the paper's ν, bandwidth multiplier and rank of the r-/n- methods
ALPHA, SIGMA_SCALE, RANK = 1e-6, 0.1, 2**8
#: --quick: sizes for seconds in all
QUICK = dict(n=2**11, test_n=2**9, ksdca_n=2**10, convergence_n=2**11, batch_size=2**8,
             epochs=2, budget=3.0, limit=10.0)


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2**20, help="training points")
    parser.add_argument("--test-n", type=int, default=2**12)
    parser.add_argument("--ksdca-n", type=int, default=2**16, help="rows k-SDCA trains on")
    parser.add_argument("--convergence-n", type=int, default=2**17, help="points of Figure 4(2)")
    parser.add_argument("--batch-size", type=int, default=2**10)
    parser.add_argument("--epochs", type=float, default=5, help="most passes of a baseline")
    parser.add_argument("--budget", type=float, default=900.0,
                        help="most training seconds of a baseline")
    parser.add_argument("--limit", type=float, default=3600.0,
                        help="most training seconds of our one pass (its whole pass is the point)")
    args = parse_with_quick(parser, argv, QUICK)
    if min(args.n, args.convergence_n) < 2 * args.batch_size:
        parser.error(f"--n and --convergence-n must be at least two batches of {args.batch_size}")
    return args


def one_pass_model(sigma: float, n: int, batch_size: int, average: bool = False) -> DSGRegressor:
    """The paper's mode: ``b = r = batch_size``, a new block per step for the whole pass."""
    return DSGRegressor(solver="one_pass", sigma=sigma, alpha=ALPHA, batch_size=batch_size,
                        block_size=batch_size, n_components=max(1, n // batch_size) * batch_size,
                        average=average, random_state=0, device="cpu")


def ours(args, X, y, evaluate, sigma) -> dict:
    # --quick: a stand-in for the defaults (their bandwidth race alone takes 20 s on 2^11 rows)
    params = dict(sigma=sigma, alpha=ALPHA, n_components=256, max_iter=2) if args.quick else {}
    label = ("DSGRegressor() defaults (ours)" if not params else "DSGRegressor("
             + ", ".join(f"{k}={v:.3g}" for k, v in params.items()) + ") (ours, --quick stand-in)")
    model = DSGRegressor(random_state=0, device="cpu", **params)
    runs = {label: dict(trace=single_fit("defaults", model, X, y, evaluate, clock=args.clock),
                        count_setup=True,
                        rows=len(X), max_epochs=None)}
    model = one_pass_model(sigma, len(X), args.batch_size)
    trace = run_trace("one pass", dsg_stream(model, X, y, batch_size=args.batch_size),
                      lambda: evaluate(model), Limits(max_epochs=1, limit_s=args.limit),
                      clock=args.clock)
    runs["DSGRegressor(solver='one_pass'), paper mode (ours)"] = dict(
        trace=trace, count_setup=True, rows=len(X), max_epochs=1)
    return runs


def baselines(args, X, y, evaluate, sigma) -> dict:
    runs = {}
    for name in BASELINES:
        rows = min(args.ksdca_n, len(X)) if name == "k-SDCA" else len(X)
        model = make_baseline(name, loss="squared", sigma=sigma, alpha=ALPHA,
                              batch_size=args.batch_size, n_components=RANK, dtype="float32")
        count_setup = not name.startswith("n-")  # the paper leaves Nyström's preprocessing out
        trace = run_trace(name, model.steps(X[:rows], y[:rows]), lambda m=model: evaluate(m),
                          Limits(max_epochs=args.epochs, limit_s=args.budget),
                          setup_seconds(model, args.clock), count_setup, args.clock)
        runs[name] = dict(trace=trace, count_setup=count_setup, rows=rows, max_epochs=args.epochs)
    return runs


def convergence(args, sigma, X_test, f_test) -> dict:
    """Figure 4(2): the error of every step of one pass, averaged iterate and current one."""
    X, y, _ = synthetic_regression(args.convergence_n, random_state=2)
    curves = {}
    for average in (True, False):
        model = one_pass_model(sigma, len(X), args.batch_size, average=average)
        curves["averaged" if average else "current"] = [
            float(np.mean((model.predict(X_test) - f_test) ** 2))
            for _ in dsg_stream(model, X, y, batch_size=args.batch_size)]
    errors = np.array(curves["averaged"])
    tail = np.arange(len(errors)) >= len(errors) // 4
    t = np.arange(1, len(errors) + 1)
    slope = float(np.polyfit(np.log(t[tail]), np.log(errors[tail]), 1)[0]) if tail.sum() > 1 else None
    return dict(curves=curves, slope=slope, n=len(X))


def model_numbers(model) -> int:
    """The numbers a model stores: NORMA and k-SDCA ``(d + 1)`` per support vector (a row and its
    coefficient), a seeded-block model its coefficients (its features are regenerated from a
    seed), a 2^8-feature baseline its coefficients and, for Nyström, its landmarks."""
    if hasattr(model, "n_support_"):
        return int(model.n_support_ * (model.support_vectors_.shape[1] + 1))
    if hasattr(model, "n_components_"):
        return int(model.n_components_)
    if getattr(model, "coef_", None) is None:  # k-SDCA: its nonzero duals' rows
        return int((model.dual_coef_ != 0).sum()) * (model._X.shape[1] + 1)
    landmarks = getattr(model.features_, "landmarks_", None)
    return int(model.coef_.numel()) + (0 if landmarks is None else int(landmarks.numel()))


def at_equal_time(runs: dict, label: str) -> list[tuple]:
    """Every method's last checkpoint within the training time of ``runs[label]``'s end."""
    budget = plotted_seconds(runs[label]["trace"][-1], runs[label]["count_setup"])
    rows = []
    for name, run in runs.items():
        within = [row for row in run["trace"] if plotted_seconds(row, run["count_setup"]) <= budget]
        row = within[-1] if within else None
        rows.append((name, "not started" if row is None else f"{row['test_mse']:.3e}",
                     "-" if row is None else f"{plotted_seconds(row, run['count_setup']):.2f}",
                     "-" if row is None else f"{row['model_numbers']:,}"))
    return rows


def summary_rows(runs: dict, args) -> list[tuple]:
    rows = []
    for label, run in runs.items():
        last = run["trace"][-1]
        stop = ("its fit" if run["max_epochs"] is None else
                f"{run['max_epochs']:g} passes" if last["epochs"] >= run["max_epochs"] - 1e-9 else
                "time limit")
        rows.append((label, run["rows"], f"{last['test_mse']:.3e}",
                     f"{plotted_seconds(last, run['count_setup']):.2f}",
                     f"{last['setup_seconds']:.2f}", last["step"], f"{last['epochs']:.2f}", stop,
                     f"{last['model_numbers']:,}"))
    return rows


def draw(runs: dict, conv: dict, batch_size: int):
    def panels(axes) -> None:
        for label, errors in conv["curves"].items():
            t = np.arange(1, len(errors) + 1)
            axes[0].loglog(t, errors, ".-", label=f"{label} iterate")
        errors = conv["curves"]["averaged"]
        t = np.arange(1, len(errors) + 1)
        axes[0].loglog(t, errors[0] / t, "k--", lw=1, label="1/t")
        axes[0].set_xlabel(f"step t (batches of {batch_size})")
        axes[0].set_ylabel("test MSE against the noise-free f")
        axes[0].set_title(f"Figure 4(2): one pass over {conv['n']} points", fontsize=9)
        axes[0].legend(fontsize=7)
        plot_curves(axes[1], runs, "test_mse", ylabel="test MSE against the noise-free f",
                    title="Figure 4(3): kernel ridge regression, error vs time")
    return figure(2, panels)


def report_body(args, sigma, runs, conv) -> list[str]:
    table = markdown_table(["method", "training rows", "test MSE", "training s", "setup s",
                            "steps", "passes", "stopped by", "model numbers"],
                           summary_rows(runs, args))
    mark = next(label for label in runs if "defaults" in label or "stand-in" in label)
    equal = markdown_table(["method", "test MSE", "at training s", "model numbers"],
                           at_equal_time(runs, mark))
    slope = "n/a" if conv["slope"] is None else f"{conv['slope']:.2f}"
    return [f"n = {args.n}, {args.test_n} test points; σ = {SIGMA_SCALE} × median = {sigma:.4f}, "
            f"ν = {ALPHA:g}, batch {args.batch_size}; r-/n- methods on {RANK} features; "
            f"at most {args.epochs:g} passes or {args.budget:.0f} s per baseline (our one pass: "
            f"{args.limit:.0f} s), {args.threads} thread(s), {args.clock} clock. "
            "Training seconds exclude evaluation, and for n-SDCA / n-Pegasos the Nyström "
            "preprocessing (the setup column), as in the paper.", "", *table, "",
            f"Figure 4(2), one pass over {conv['n']} points: slope of log MSE on log t over the "
            f"last three quarters of the averaged iterate's steps: {slope} (1/t is -1).", "",
            f"At equal training time: every method's last checkpoint within the training time of "
            f"{mark} (checkpoints at steps 2^(k/2) and at the end of each pass; model numbers: "
            "what the model stores, see `model_numbers`).", "", *equal]


def main(argv=None) -> None:
    args = parse(argv)
    with threads(args.threads):
        X, y, _ = synthetic_regression(args.n, random_state=0)
        X_test, _, f_test = synthetic_regression(args.test_n, random_state=1)
        sigma = SIGMA_SCALE * median_distance(X, seed=0)

        def evaluate(model) -> dict:
            return {"test_mse": float(np.mean((model.predict(X_test) - f_test) ** 2)),
                    "model_numbers": model_numbers(model)}

        runs = {**ours(args, X, y, evaluate, sigma), **baselines(args, X, y, evaluate, sigma)}
        conv = convergence(args, sigma, X_test, f_test)
        write_paper_outputs(args, argv, NAME, "Kernel ridge regression on the 2-D synthetic set "
                            "(Dai et al. 2014, Figure 4)", report_body(args, sigma, runs, conv),
                            draw(runs, conv, args.batch_size), sigma=sigma, runs=runs,
                            convergence=conv)


if __name__ == "__main__":
    main()
