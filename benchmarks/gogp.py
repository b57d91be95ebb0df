"""GoGP on abalone (issue 7): progressive RMSE, test RMSE, model size and time against peers.

One seeded shuffle of ``../shared/data/abalone.npz``; the first 80% is the stream, the last 20%
the test set. Online learners predict each stream point before learning it (progressive RMSE,
over the stream after a warm start on its first 10%); offline peers are fitted on the stream.

Peers: exact GP (scikit-learn, ConstantKernel·RBF + White, marginal likelihood, on the first
2,000 points), GPyTorch SVGP (CPU, 128 inducing points, Adam), river KNNRegressor and
LinearRegression (standardised inputs), SGDRegressor on RBFSampler features via partial_fit,
DSGRegressor via partial_fit. Also times GoGP's update against t on the synthetic set.

    python benchmarks/gogp.py [--out benchmarks/results] [--seed 0]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

from kernelstream import DSGRegressor, GoGPRegressor
from kernelstream.datasets import synthetic_regression

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "abalone.npz"


def rmse(a, b):
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


def gogp(X, y, Xte, yte, **kw):
    start = time.perf_counter()
    model = GoGPRegressor(random_state=0, **kw).fit(X, y)
    elapsed = time.perf_counter() - start
    mean, std = model.predict(Xte, return_std=True, include_noise=True)
    size = model.n_inducing_ if model.variant == "kernel" else model.n_components
    cover = float(np.mean(np.abs(mean - yte) <= 1.96 * std))
    return model.progressive_rmse_, rmse(mean, yte), size, elapsed, f"coverage {cover:.3f}"


def online_loop(learn_one, predict_one, X, y, n_warm, epochs=3, seed=0):
    """Warm start (epochs of permuted draws over the first n_warm), then predict-then-learn."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for _ in range(epochs):
        for i in rng.permutation(n_warm):
            learn_one(X[i], y[i])
    errors = []
    for i in range(n_warm, len(X)):
        errors.append(predict_one(X[i]) - y[i])
        learn_one(X[i], y[i])
    return float(np.sqrt(np.mean(np.square(errors)))), time.perf_counter() - start


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
    start = time.perf_counter()
    model.partial_fit(X[:n_warm], y[:n_warm])
    errors = []
    for s in range(n_warm, len(X), chunk):
        errors.append(model.predict(X[s:s + chunk]) - y[s:s + chunk])
        model.partial_fit(X[s:s + chunk], y[s:s + chunk])
    prog = float(np.sqrt(np.mean(np.square(np.concatenate(errors)))))
    return prog, rmse(model.predict(Xte), yte), model.n_components_, time.perf_counter() - start, ""


def exact_gp(X, y, Xte, yte, n=2000):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    start = time.perf_counter()
    gp = GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(), normalize_y=True,
                                  random_state=0).fit(X[:n], y[:n])
    mean, std = gp.predict(Xte, return_std=True)
    cover = float(np.mean(np.abs(mean - yte) <= 1.96 * std))
    return "-", rmse(mean, yte), n, time.perf_counter() - start, f"offline, {gp.kernel_}, coverage {cover:.3f}"


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

    start = time.perf_counter()
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
        mean = model(torch.tensor(Xte)).mean.numpy() * y.std() + y.mean()
    return "-", rmse(mean, yte), m, time.perf_counter() - start, f"offline, {epochs} epochs"


def update_times(n=8192, chunk=128, **kw):
    """Seconds per update and |U| against t: partial_fit on chunks of the synthetic stream."""
    X, y, _ = synthetic_regression(n, random_state=0, dtype=np.float64)
    model = GoGPRegressor(random_state=0, **kw)
    ts, per_update, sizes = [], [], []
    for s in range(0, n, chunk):
        start = time.perf_counter()
        model.partial_fit(X[s:s + chunk], y[s:s + chunk])
        per_update.append((time.perf_counter() - start) / chunk)
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with np.load(DATA) as data:
        X, y = data["X"].astype(np.float64), data["y"].astype(np.float64)
    order = np.random.default_rng(args.seed).permutation(len(X))
    X, y = X[order], y[order]
    n_stream = int(0.8 * len(X))
    Xs, ys, Xte, yte = X[:n_stream], y[:n_stream], X[n_stream:], y[n_stream:]
    n_warm = round(0.1 * n_stream)
    rows = {
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
    lines = ["# GoGP on abalone (issue 7)", "",
             f"Command: `python benchmarks/gogp.py --seed {args.seed}` — {platform.processor() or platform.machine()}, "
             f"torch {torch.__version__}, 1 thread, Python {sys.version.split()[0]}. "
             "Machine shared (2 cores, other agents' jobs running): times are indicative.", "",
             f"Stream: first {n_stream} of a seeded shuffle (warm start on its first {n_warm}), "
             f"test: last {len(X) - n_stream}. Progressive RMSE over the stream after the warm start.", "",
             "| model | progressive RMSE | test RMSE | size (|U| / D / points) | time (s) | notes |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, run in rows.items():
        prog, test, size, elapsed, note = run()
        prog = prog if isinstance(prog, str) else f"{prog:.3f}"
        lines.append(f"| {name} | {prog} | {test:.3f} | {size} | {elapsed:.1f} | {note} |")
        print(lines[-1], flush=True)
    curves = {"theta=auto (noise std)": update_times(),
              "theta=0.02": update_times(theta=0.02)}
    plot(curves, args.out / "gogp_update_time.png")
    lines += ["", "## Time per update against t (synthetic 2-D set, 8192 points, partial_fit chunks of 128)", "",
              "![time per update](gogp_update_time.png)", "",
              "| setting | |U| at t=1024 | at 4096 | at 8192 | ms/update, t ≤ 1024 | last 1024 |",
              "| --- | --- | --- | --- | --- | --- |"]
    for label, (t, sec, size) in curves.items():
        at = lambda v: size[np.searchsorted(t, v)] if v < t[-1] else size[-1]  # noqa: E731
        lines.append(f"| {label} | {at(1024)} | {at(4096)} | {size[-1]} | "
                     f"{1e3 * sec[t <= 1024].mean():.2f} | {1e3 * sec[t > t[-1] - 1024].mean():.2f} |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gogp.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-4:]))


if __name__ == "__main__":
    main()
