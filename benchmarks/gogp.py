"""GoGP on abalone (issue 7): progressive RMSE, test RMSE, model size and time against peers.

One seeded shuffle of the shared ``abalone.npz``; the first 80% is the stream, the last 20%
the test set. Online learners predict each stream point before learning it (progressive RMSE,
over the stream after a warm start on its first 10%); offline peers are fitted on the stream.

Peers: exact GP (scikit-learn, ConstantKernel·RBF + White, marginal likelihood, on the first
2,000 points), GPyTorch SVGP (CPU, 128 inducing points, Adam), river KNNRegressor and
LinearRegression (standardised inputs), SGDRegressor on RBFSampler features via partial_fit,
DSGRegressor via partial_fit. Also times GoGP's update against t on the synthetic set.

    python -m benchmarks.gogp [--out benchmarks/results] [--seed 0]
    python -m benchmarks.gogp --quick --out /tmp/bench   # seconds: 800 rows, four models
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import numpy as np
import torch

from benchmarks.common.data import RESULTS, load
from benchmarks.common.machine import machine_line
from benchmarks.common.report import command_line, markdown_table, write_report
from benchmarks.common.timing import Stopwatch, threads
from kernelstream import DSGRegressor, GoGPRegressor
from kernelstream.datasets import synthetic_regression

#: the rows of the quick run (seconds)
QUICK = ("GoGP kernel (rls, defaults)", "GoGP random features (rls, D=512)", "river LinearRegression",
         "DSGRegressor, partial_fit chunks of 64")


def rmse(a, b):
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


def gogp(X, y, Xte, yte, **kw):
    with Stopwatch() as sw:
        model = GoGPRegressor(random_state=0, **kw).fit(X, y)
    mean, std = model.predict(Xte, return_std=True, include_noise=True)
    size = model.n_inducing_ if model.variant == "kernel" else model.n_components
    cover = float(np.mean(np.abs(mean - yte) <= 1.96 * std))
    return model.progressive_rmse_, rmse(mean, yte), size, sw.wall, f"coverage {cover:.3f}"


def online_loop(learn_one, predict_one, X, y, n_warm, epochs=3, seed=0):
    """Warm start (epochs of permuted draws over the first n_warm), then predict-then-learn."""
    rng = np.random.default_rng(seed)
    errors = []
    with Stopwatch() as sw:
        for _ in range(epochs):
            for i in rng.permutation(n_warm):
                learn_one(X[i], y[i])
        for i in range(n_warm, len(X)):
            errors.append(predict_one(X[i]) - y[i])
            learn_one(X[i], y[i])
    return float(np.sqrt(np.mean(np.square(errors)))), sw.wall


def river_peer(name, X, y, Xte, yte, n_warm):
    from river import linear_model, neighbors, optim, preprocessing

    model = preprocessing.StandardScaler() | (
        neighbors.KNNRegressor(n_neighbors=5) if name == "knn"
        else linear_model.LinearRegression(optimizer=optim.SGD(0.01)))
    as_dict = lambda x: dict(enumerate(x))  # noqa: E731
    prog, elapsed = online_loop(lambda x, t: model.learn_one(as_dict(x), t),
                                lambda x: model.predict_one(as_dict(x)), X, y, n_warm)
    pred = [model.predict_one(as_dict(x)) for x in Xte]
    return prog, rmse(pred, yte), "-", elapsed, ""


def sgd_rff(X, y, Xte, yte, n_warm):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDRegressor
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(X[:n_warm])
    rff = RBFSampler(gamma=0.1, n_components=512, random_state=0).fit(scaler.transform(X[:1]))
    sgd = SGDRegressor(learning_rate="invscaling", eta0=0.05, random_state=0)
    f = lambda x: rff.transform(scaler.transform(x[None]))  # noqa: E731
    prog, elapsed = online_loop(lambda x, t: sgd.partial_fit(f(x), [t]),
                                lambda x: float(sgd.predict(f(x))[0]) if hasattr(sgd, "coef_") else 0.0,
                                X, y, n_warm)
    return prog, rmse(sgd.predict(rff.transform(scaler.transform(Xte))), yte), 512, elapsed, ""


def dsg(X, y, Xte, yte, n_warm, chunk=64):
    """DSGRegressor by partial_fit on chunks: each chunk predicted before it is learnt."""
    model = DSGRegressor(batch_size=chunk, block_size=256, random_state=0)
    errors = []
    with Stopwatch() as sw:
        model.partial_fit(X[:n_warm], y[:n_warm])
        for s in range(n_warm, len(X), chunk):
            errors.append(model.predict(X[s:s + chunk]) - y[s:s + chunk])
            model.partial_fit(X[s:s + chunk], y[s:s + chunk])
        test = rmse(model.predict(Xte), yte)
    prog = float(np.sqrt(np.mean(np.square(np.concatenate(errors)))))
    return prog, test, model.n_components_, sw.wall, ""


def exact_gp(X, y, Xte, yte, n=2000):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    with Stopwatch() as sw:
        gp = GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(), normalize_y=True,
                                      random_state=0).fit(X[:n], y[:n])
        mean, std = gp.predict(Xte, return_std=True)
    cover = float(np.mean(np.abs(mean - yte) <= 1.96 * std))
    return "-", rmse(mean, yte), n, sw.wall, f"offline, {gp.kernel_}, coverage {cover:.3f}"


def svgp(X, y, Xte, yte, m=128, epochs=30):
    import gpytorch

    Xt, yt = torch.tensor(X), torch.tensor((y - y.mean()) / y.std())

    class Model(gpytorch.models.ApproximateGP):
        def __init__(self, Z):
            dist = gpytorch.variational.CholeskyVariationalDistribution(len(Z))
            strat = gpytorch.variational.VariationalStrategy(self, Z, dist, learn_inducing_locations=True)
            super().__init__(strat)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    with Stopwatch() as sw:
        mean = _svgp_fit(Model, Xt, yt, Xte, m, epochs) * y.std() + y.mean()
    return "-", rmse(mean, yte), m, sw.wall, f"offline, {epochs} epochs"


def _svgp_fit(Model, Xt, yt, Xte, m, epochs) -> np.ndarray:
    """Fit the SVGP by Adam on the ELBO; its test mean (standardised scale)."""
    import gpytorch

    torch.manual_seed(0)
    model, lik = Model(Xt[torch.randperm(len(Xt))[:m]].clone()), gpytorch.likelihoods.GaussianLikelihood()
    model.double(), lik.double()
    opt = torch.optim.Adam([*model.parameters(), *lik.parameters()], lr=0.02)
    mll = gpytorch.mlls.VariationalELBO(lik, model, num_data=len(Xt))
    model.train(), lik.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(Xt)).split(256):
            opt.zero_grad()
            (-mll(model(Xt[idx]), yt[idx])).backward()
            opt.step()
    model.eval(), lik.eval()
    with torch.no_grad():
        return model(torch.tensor(Xte)).mean.numpy()


def update_times(n=8192, chunk=128, **kw):
    """Seconds per update and |U| against t: partial_fit on chunks of the synthetic stream."""
    X, y, _ = synthetic_regression(n, random_state=0, dtype=np.float64)
    model = GoGPRegressor(random_state=0, **kw)
    ts, per_update, sizes = [], [], []
    for s in range(0, n, chunk):
        with Stopwatch() as sw:
            model.partial_fit(X[s:s + chunk], y[s:s + chunk])
        per_update.append(sw.wall / chunk)
        ts.append(s + chunk)
        sizes.append(model.n_inducing_)
    return np.array(ts), np.array(per_update), np.array(sizes)


def plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for label, (t, sec, size) in curves.items():
        ax1.plot(t, 1e3 * sec, label=label)
        ax2.plot(t, size, label=label)
    ax1.set_xlabel("t (points seen)"), ax1.set_ylabel("ms per update (chunks of 128)")
    ax2.set_xlabel("t (points seen)"), ax2.set_ylabel("|U|")
    ax1.set_title("GoGP time per update"), ax2.set_title("inducing set size")
    ax1.legend(), ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def models(Xs, ys, Xte, yte, n_warm) -> dict:
    """Row name -> the run giving (progressive RMSE, test RMSE, size, seconds, note)."""
    return {
        "GoGP kernel (rls, defaults)": lambda: gogp(Xs, ys, Xte, yte),
        "GoGP random features (rls, D=512)": lambda: gogp(Xs, ys, Xte, yte, variant="random_features"),
        "GoGP kernel, paper's SGD step": lambda: gogp(Xs, ys, Xte, yte, solver="sgd", average=True),
        "GoGP random features, paper's SGD step": lambda: gogp(Xs, ys, Xte, yte, variant="random_features", solver="sgd", average=True),
        "river KNNRegressor(5)": lambda: river_peer("knn", Xs, ys, Xte, yte, n_warm),
        "river LinearRegression": lambda: river_peer("linear", Xs, ys, Xte, yte, n_warm),
        "SGDRegressor on RBFSampler(512), partial_fit": lambda: sgd_rff(Xs, ys, Xte, yte, n_warm),
        "DSGRegressor, partial_fit chunks of 64": lambda: dsg(Xs, ys, Xte, yte, n_warm),
        "exact GP (sklearn, ML-II, first 2000)": lambda: exact_gp(Xs, ys, Xte, yte),
        "GPyTorch SVGP (CPU, m=128)": lambda: svgp(Xs, ys, Xte, yte),
    }


def update_section(n: int, out: Path) -> list[str]:
    """The time-per-update plot and table on the synthetic stream of ``n`` points."""
    curves = {"theta=auto (noise std)": update_times(n), "theta=0.02": update_times(n, join_threshold=0.02)}
    plot(curves, out / "gogp_update_time.png")
    lines = ["", f"## Time per update against t (synthetic 2-D set, {n} points, partial_fit chunks of 128)",
             "", "![time per update](gogp_update_time.png)", ""]
    rows = []
    for label, (t, sec, size) in curves.items():
        at = lambda v: size[np.searchsorted(t, v)] if v < t[-1] else size[-1]  # noqa: E731
        rows.append((label, at(1024), at(4096), size[-1], f"{1e3 * sec[t <= 1024].mean():.2f}",
                     f"{1e3 * sec[t > t[-1] - 1024].mean():.2f}"))
    return lines + markdown_table(["setting", "|U| at t=1024", "at 4096", f"at {n}",
                                   "ms/update, t ≤ 1024", "last 1024"], rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="800 abalone rows, four models, 1024 synthetic points (seconds)")
    args = parser.parse_args(argv)
    data = load("abalone")
    X, y = data["X"].astype(np.float64), data["y"].astype(np.float64)
    order = np.random.default_rng(args.seed).permutation(len(X))[: 800 if args.quick else None]
    X, y = X[order], y[order]
    n_stream = int(0.8 * len(X))
    Xs, ys, Xte, yte = X[:n_stream], y[:n_stream], X[n_stream:], y[n_stream:]
    n_warm = round(0.1 * n_stream)
    lines = [f"Python {platform.python_version()}. Machine shared (2 cores, other agents' jobs "
             "running): times are indicative.", "",
             f"Stream: first {n_stream} of a seeded shuffle (warm start on its first {n_warm}), "
             f"test: last {len(X) - n_stream}. Progressive RMSE over the stream after the warm start.", ""]
    header = ["model", "progressive RMSE", "test RMSE", "size (|U| / D / points)", "time (s)", "notes"]
    lines += markdown_table(header, [])
    args.out.mkdir(parents=True, exist_ok=True)
    with threads(1):
        for name, run in models(Xs, ys, Xte, yte, n_warm).items():
            if args.quick and name not in QUICK:
                continue
            prog, test, size, elapsed, note = run()
            prog = prog if isinstance(prog, str) else f"{prog:.3f}"
            lines += markdown_table(header, [(name, prog, f"{test:.3f}", size, f"{elapsed:.1f}", note)])[2:]
            print(lines[-1], flush=True)
        lines += update_section(1024 if args.quick else 8192, args.out)
    write_report(args.out / "gogp.md", "GoGP on abalone (issue 7)", lines, command=command_line(),
                 machine=machine_line(1))
    print("\n".join(lines[-4:]))


if __name__ == "__main__":
    main()
