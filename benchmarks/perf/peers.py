"""Peers, same run: time to a fixed test error, and prediction throughput.

- a9a (15.5% test error) and MNIST 8 vs 6 (1.0%): ``DSGClassifier`` against scikit-learn
  ``LinearSVC`` on raw features, ``RBFSampler+SGDClassifier``, ``Nystroem+LinearSVC`` and
  libsvm ``SVC`` (full training set). Each method runs a ladder of model sizes from cheap to
  expensive; its time is the fit time of the first rung that reaches the target (the fastest
  size that does), test-set evaluation excluded.
- 2-D synthetic regression, 2^20 training points: time for ``DSGRegressor`` (streamed with
  ``partial_fit`` in chunks, test MSE checked between chunks, untimed) and GPyTorch SVGP to reach
  the test MSE (against the noise-free f) of ``RBFSampler(1024)+Ridge`` fitted on all points.
- Prediction throughput (rows/s) of a ``DSGRegressor`` with 2^16 features on 54-dimensional
  input against ``RBFSampler(65536)`` + ``Ridge.predict`` on the same rows, and against the
  roofline bound ``1/(t_matmul + t_cos)`` of the same shapes.

All methods run with ``--threads`` threads (torch and BLAS/OpenMP through threadpoolctl).

    python benchmarks/perf/peers.py [--threads 1] [--skip-svc]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.features import median_distance, sigma_to_gamma

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from machine import cpu_model  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
RESULTS = Path(__file__).resolve().parents[1] / "results" / "peers.md"


#: wall clock, or CPU time of this process (every method runs --threads threads, so with one
#: thread CPU time is the wall time of a quiet machine; set by --clock)
CLOCK = time.perf_counter


def stopwatch(fn):
    start = CLOCK()
    out = fn()
    return out, CLOCK() - start


# -- classification ------------------------------------------------------------------------
def classification_ladders(gamma: float, skip_svc: bool):
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, LinearSVC

    ours = [(f"DSGClassifier(batch_size=1024, block_size={r})",
             lambda r=r: DSGClassifier(batch_size=1024, block_size=r, random_state=0, device="cpu"))
            for r in (128, 256, 512, 1024)]
    ours.append(("DSGClassifier()", lambda: DSGClassifier(random_state=0, device="cpu")))
    ladders = {
        "DSGClassifier (ours)": ours,
        "LinearSVC (raw)": [("LinearSVC()", lambda: LinearSVC())],
        "RBFSampler+SGDClassifier": [
            (f"RBFSampler({D})+SGD", lambda D=D: make_pipeline(
                RBFSampler(gamma=gamma, n_components=D, random_state=0),
                SGDClassifier(alpha=1e-5, random_state=0))) for D in (256, 1024, 4096)],
        "Nystroem+LinearSVC": [
            (f"Nystroem({D})+LinearSVC", lambda D=D: make_pipeline(
                Nystroem(gamma=gamma, n_components=D, random_state=0), LinearSVC()))
            for D in (64, 128, 256, 512, 1024, 2048)],
    }
    if not skip_svc:
        ladders["SVC (libsvm, full training set)"] = [("SVC(gamma=γ)", lambda: SVC(gamma=gamma))]
    return ladders


def time_to_error(ladder, X, y, X_test, y_test, target: float):
    """(time, error, rung) of the first rung reaching ``target``; else the best rung, time None."""
    best = None
    for label, make in ladder:
        model, seconds = stopwatch(lambda: make().fit(X, y))
        error = 1.0 - model.score(X_test, y_test)
        print(f"    {label}: {seconds:.2f} s, error {error:.4f}", flush=True)
        if error <= target:
            return seconds, error, label
        if best is None or error < best[1]:
            best = (None, error, label)
    return best


def classification(name, X, y, X_test, y_test, target, skip_svc):
    sigma = 0.5 * median_distance(X, seed=0)  # the estimator's default: 0.5 x median
    ladders = classification_ladders(sigma_to_gamma(sigma), skip_svc)
    rows = []
    for method, ladder in ladders.items():
        print(f"  {name}: {method}", flush=True)
        rows.append((method, *time_to_error(ladder, X, y, X_test, y_test, target)))
    return rows


def a9a():
    data = np.load(DATA / "a9a.npz")
    return data["X_train"], data["y_train"], data["X_test"], data["y_test"]


def mnist_8v6():
    data = np.load(DATA / "mnist.npz")
    out = []
    for split in ("train", "test"):
        X, y = data[f"X_{split}"], data[f"y_{split}"]
        keep = (y == 8) | (y == 6)
        out += [X[keep] / np.float32(255), (y[keep] == 8).astype(int)]
    return out


# -- synthetic regression ------------------------------------------------------------------
def synthetic(n: int, svgp_seconds: float):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import Ridge

    X, y, _ = synthetic_regression(n, random_state=0)
    X_test, _, f_test = synthetic_regression(2**14, random_state=1)
    sigma = 0.1 * median_distance(X, seed=0)  # the paper's 0.1 x median on this set
    mse = lambda pred: float(np.mean((pred - f_test) ** 2))  # noqa: E731

    def peer():
        sampler = RBFSampler(gamma=sigma_to_gamma(sigma), n_components=1024, random_state=0)
        return sampler, Ridge(alpha=1e-6 * n).fit(sampler.fit_transform(X), y)

    (sampler, ridge), t_peer = stopwatch(peer)
    target = mse(ridge.predict(sampler.transform(X_test)))
    print(f"  RBFSampler(1024)+Ridge: {t_peer:.1f} s, MSE {target:.3e}", flush=True)
    rows = [("RBFSampler(1024)+Ridge", t_peer, target, f"all {n} points")]
    rows.append(("DSGRegressor (ours)", *ours_to_mse(X, y, X_test, mse, sigma, target)))
    rows.append(("GPyTorch SVGP", *svgp_to_mse(X, y, X_test, mse, target, svgp_seconds)))
    return rows, target


def ours_to_mse(X, y, X_test, mse, sigma, target, chunk=2**14, budget_s=300.0):
    model = DSGRegressor(sigma=sigma, random_state=0, device="cpu")
    elapsed, error, seen = 0.0, None, 0
    for start in range(0, X.shape[0], chunk):
        if elapsed > budget_s:
            break
        _, seconds = stopwatch(lambda: model.partial_fit(X[start : start + chunk], y[start : start + chunk]))
        elapsed, seen = elapsed + seconds, min(X.shape[0], start + chunk)
        error = mse(model.predict(X_test))
        if error <= target:
            return elapsed, error, f"{seen} points, {model.n_components_} features"
    stop = f"{budget_s:.0f} s budget" if seen < X.shape[0] else "all points"
    return None, error, f"{seen} of {X.shape[0]} points in {elapsed:.0f} s ({stop}), {model.n_components_} features"


def svgp_to_mse(X, y, X_test, mse, target, budget_s, m=256, batch=1024, check_every=50):
    import gpytorch

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self, Z):
            dist = gpytorch.variational.CholeskyVariationalDistribution(Z.shape[0])
            strategy = gpytorch.variational.VariationalStrategy(self, Z, dist, learn_inducing_locations=True)
            super().__init__(strategy)
            self.mean = gpytorch.means.ConstantMean()
            self.cov = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean(x), self.cov(x))

    g = torch.Generator().manual_seed(0)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    model = SVGP(Xt[torch.randperm(len(Xt), generator=g)[:m]].clone())
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    params = list(model.parameters()) + list(likelihood.parameters())
    optimizer = torch.optim.Adam(params, lr=0.01)
    elbo = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=len(Xt))
    elapsed, step, error = 0.0, 0, None
    Xq = torch.as_tensor(X_test)
    while elapsed < budget_s:
        start = CLOCK()
        model.train(), likelihood.train()
        for _ in range(check_every):
            rows = torch.randint(len(Xt), (batch,), generator=g)
            optimizer.zero_grad()
            loss = -elbo(model(Xt[rows]), yt[rows])
            loss.backward()
            optimizer.step()
        step += check_every
        elapsed += CLOCK() - start
        model.eval()
        with torch.no_grad():
            error = mse(model(Xq).mean.numpy())
        if error <= target:
            return elapsed, error, f"{step} Adam steps (m={m}, batch={batch})"
    return None, error, f"{step} Adam steps in {budget_s:.0f} s (m={m}, batch={batch})"


# -- prediction throughput -----------------------------------------------------------------
def throughput(n_rows=2**14, d=54, D=2**16, repeats=3):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2**16, d), dtype=np.float32)
    y = np.tanh(X[:, :3].sum(axis=1)).astype(np.float32)
    block = 1024
    model = DSGRegressor(batch_size=1024, block_size=block, max_iter=1, random_state=0,
                         device="cpu").fit(X[: 1024 * (D // block)], y[: 1024 * (D // block)])
    assert model.n_components_ == D, model.n_components_
    X_pred = rng.standard_normal((n_rows, d), dtype=np.float32)
    ours = min(stopwatch(lambda: model.predict(X_pred))[1] for _ in range(repeats + 1))

    sampler = RBFSampler(gamma=sigma_to_gamma(model.sigma_), n_components=D, random_state=0).fit(X[:10])
    ridge = Ridge(alpha=1.0).fit(sampler.transform(X[:2048]), y[:2048])
    chunk = 512  # the n×65536 feature matrix in pieces of 512 rows (128 MiB float32)

    def peer():
        return np.concatenate([ridge.predict(sampler.transform(X_pred[i : i + chunk]))
                               for i in range(0, n_rows, chunk)])

    theirs = min(stopwatch(peer)[1] for _ in range(repeats))
    Xb, W = torch.randn(2048, d), torch.randn(d, block)
    Z, out = torch.randn(2048, block), torch.empty(2048, block)
    t_mm = min(stopwatch(lambda: torch.matmul(Xb, W, out=out))[1] for _ in range(10))
    t_cos = min(stopwatch(lambda: torch.cos(Z, out=out))[1] for _ in range(10))
    bound_rows = 2048 / (t_mm + t_cos) * block / D  # rows/s of the bound at D features
    return n_rows / ours, n_rows / theirs, bound_rows


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def fmt_time(t):
    return "not reached" if t is None else f"{t:.2f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-svc", action="store_true", help="leave out libsvm SVC (minutes)")
    parser.add_argument("--synthetic-n", type=int, default=2**20)
    parser.add_argument("--svgp-seconds", type=float, default=120.0)
    parser.add_argument("--only", nargs="+", default=["a9a", "mnist", "synthetic", "throughput"])
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: process CPU time (use with --threads 1 on a shared machine)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    load_before = uptime()
    sections = []
    with threadpool_limits(args.threads):
        for name, loader, target in (("a9a", a9a, 0.155), ("mnist", mnist_8v6, 0.010)):
            if name not in args.only:
                continue
            rows = classification(name, *loader(), target, args.skip_svc)
            table = ["| method | time to target (s) | test error | fastest rung reaching it (or best) |",
                     "|---|---|---|---|"]
            table += [f"| {m} | {fmt_time(t)} | {e:.4f} | {rung} |" for m, t, e, rung in rows]
            title = {"a9a": "a9a, 15.5% test error", "mnist": "MNIST 8 vs 6, 1.0% test error"}[name]
            sections.append(f"## {title}\n\n" + "\n".join(table) + f"\n\nLoad after: `{uptime()}`")
        if "synthetic" in args.only:
            rows, target = synthetic(args.synthetic_n, args.svgp_seconds)
            table = ["| method | time to target (s) | test MSE | at |", "|---|---|---|---|"]
            table += [f"| {m} | {fmt_time(t)} | {e:.3e} | {at} |" for m, t, e, at in rows]
            sections.append(f"## Synthetic regression, n = {args.synthetic_n}: time to the MSE of "
                            f"RBFSampler(1024)+Ridge ({target:.3e})\n\n" + "\n".join(table)
                            + f"\n\nLoad after: `{uptime()}`")
        if "throughput" in args.only:
            ours, theirs, bound = throughput()
            print(f"  throughput: ours {ours:.0f} rows/s, peer {theirs:.0f}, bound {bound:.0f}", flush=True)
            sections.append(
                "## Prediction throughput, 2^16 features, d = 54, 2^14 rows\n\n"
                "| method | rows/s | fraction of the roofline bound |\n|---|---|---|\n"
                f"| DSGRegressor.predict (ours) | {ours:.0f} | {ours / bound:.2f} |\n"
                f"| RBFSampler(65536) + Ridge.predict (512-row chunks) | {theirs:.0f} | {theirs / bound:.2f} |\n"
                f"| bound 1/(t_matmul + t_cos) at b = 2048, r = 1024 | {bound:.0f} | 1.00 |\n\n"
                f"Load after: `{uptime()}`")
    machine = (f"{platform.machine()} {cpu_model()}, {os.cpu_count()} cores, torch "
               f"{torch.__version__}, {args.threads} thread(s) for every method")
    command = "python benchmarks/perf/peers.py " + " ".join(argv if argv is not None else os.sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("# Peers: time to target and prediction throughput\n\n"
                        f"Command: `{command.strip()}`\n\nMachine: {machine}\n\n"
                        f"Clock: {args.clock} ({'process CPU time' if args.clock == 'cpu' else 'wall clock'}).\n\n"
                        f"Load before: `{load_before}`  \nLoad after: `{uptime()}`\n\n"
                        + "\n\n".join(sections) + "\n")


if __name__ == "__main__":
    main()
