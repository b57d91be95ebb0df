"""``make demo`` (also ``kernelstream demo``): the main job, as a user would run it.

The default ``DSGRegressor`` (bandwidth raced, ``alpha`` chosen, features grown while the
validation loss improves, early stopping: docs/how_it_works.md) on the paper's 2-D synthetic
regression (Dai et al. 2014, Section 7.1; generated in code, :mod:`kernelstream.datasets`), with
its progress bar; then, on the same rows in the same run, scikit-learn's
``RBFSampler(1024) + Ridge`` at the bandwidth and regularisation the default fit chose (the
peer gets our tuning for free). Prints the test MSE of both against the noise-free function,
their fit times, the saved model file's size (and that the reloaded model predicts
identically), and saves a learning-curve plot (``loss_curve_``, ``validation_scores_``,
``feature_growth_``) to a path it prints.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

__all__ = ["run", "main", "epochs_run", "DEFAULT_ROWS"]

DEFAULT_ROWS = 2**16
TEST_ROWS = 10_000
#: random features of the scikit-learn peer (RBFSampler + Ridge)
PEER_COMPONENTS = 1024
PLOT_NAME = "kernelstream-demo-learning-curve.png"


def run(n_rows: int = DEFAULT_ROWS, *, plot_path=None, verbose: int = 1) -> dict:
    """Fit, compare, save, plot and print; returns the numbers printed."""
    from . import DSGRegressor  # torch: imported when the demo runs, not for its --help
    from .datasets import synthetic_regression

    X, y, _ = synthetic_regression(n_rows, random_state=0)
    X_test, _, f_test = synthetic_regression(TEST_ROWS, random_state=1)
    print(f"synthetic regression (Dai et al. 2014, 7.1): {n_rows} training rows, {TEST_ROWS} test "
          "rows; MSE below is against the noise-free function (noise variance 0.01)", flush=True)
    model = DSGRegressor(random_state=0, verbose=verbose)
    start = time.perf_counter()
    model.fit(X, y)
    result = {"fit_seconds": time.perf_counter() - start,
              "mse": float(np.mean((model.predict(X_test) - f_test) ** 2)),
              "n_components": model.n_components_, "sigma": model.sigma_, "alpha": model.alpha_,
              "epochs": model.n_iter_, "epochs_run": epochs_run(model)}
    result.update(_peer(X, y, X_test, f_test, model.sigma_, model.alpha_))
    result.update(_saved(model, X_test))
    result["plot"] = _plot(model, plot_path or os.path.join(tempfile.gettempdir(), PLOT_NAME))
    _report(result)
    return result


def epochs_run(model) -> int:
    """Epochs of every stage of the fit (each feature size, each bandwidth that challenged the
    size kept): what its progress bar counts. ``n_iter_`` counts those of the model kept."""
    stages = getattr(model, "feature_growth_", None) or []
    return sum(int(stage["epochs"]) for stage in stages) or model.n_iter_


def _peer(X, y, X_test, f_test, sigma: float, alpha: float) -> dict:
    """``RBFSampler(PEER_COMPONENTS) + Ridge`` at ``sigma`` and ``alpha``: Ridge's alpha is
    ``n·alpha`` (ours minimises the mean loss plus ``alpha/2·‖f‖²``, Ridge the summed loss)."""
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import Ridge

    from .features import sigma_to_gamma

    lengthscales = np.asarray(sigma, dtype=float)
    if lengthscales.ndim:  # per-feature lengthscales: the same kernel is σ = 1 on X/ℓ
        X, X_test, sigma = X / lengthscales, X_test / lengthscales, 1.0
    start = time.perf_counter()
    sampler = RBFSampler(gamma=sigma_to_gamma(sigma), n_components=PEER_COMPONENTS, random_state=0)
    ridge = Ridge(alpha=alpha * X.shape[0]).fit(sampler.fit_transform(X), y)
    seconds = time.perf_counter() - start
    mse = float(np.mean((ridge.predict(sampler.transform(X_test)) - f_test) ** 2))
    return {"peer_seconds": seconds, "peer_mse": mse}


def _saved(model, X_test) -> dict:
    """Size of the saved model file, and whether the reloaded model predicts identically."""
    from . import load

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.kst")
        model.save(path)
        same = bool(np.array_equal(load(path).predict(X_test), model.predict(X_test)))
        return {"file_bytes": os.path.getsize(path), "reload_identical": same}


def _plot(model, path: str) -> str | None:
    """Three panels: the bandwidth race, the feature growth and the epochs of the size kept;
    ``None`` (and a note) without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'kernelstream[plot]')")
        return None
    figure = Figure(figsize=(14, 4), layout="constrained")
    race, growth, epochs = figure.subplots(1, 3)
    _plot_race(race, model.cv_results_)
    _plot_growth(growth, model.feature_growth_)
    x = np.arange(1, len(model.loss_curve_) + 1)
    epochs.plot(x, model.loss_curve_, marker="o", label="training")
    if model.validation_scores_ is not None:
        epochs.plot(x, -np.asarray(model.validation_scores_), marker="s", label="validation")
    epochs.set(xlabel="epoch", ylabel="loss (standardised y)", xticks=x,
               title=f"3. epochs at {model.n_components_} features")
    epochs.legend()
    figure.suptitle("DSGRegressor().fit: the learning curve of the default fit")
    FigureCanvasAgg(figure).print_png(path)
    return path


def _key(sigma) -> tuple:
    """``sigma`` (a number or per-feature lengthscales) as a hashable, sortable key."""
    return tuple(np.ravel(sigma).tolist())


def _words(sigma) -> str:
    """``sigma`` to three digits: a number, or per-feature lengthscales."""
    values = np.ravel(sigma)
    return f"{values[0]:.3g}" if values.size == 1 else np.array2string(values, precision=3)


def _plot_growth(axes, stages: list[dict]) -> None:
    """Best validation loss of each feature size at the race's bandwidth, and of each narrower
    bandwidth that challenged the size kept."""
    for sigma in sorted({_key(stage["sigma"]) for stage in stages}, reverse=True):
        at = [stage for stage in stages if _key(stage["sigma"]) == sigma]
        axes.plot([s["n_components"] for s in at], [s["loss"] for s in at], marker="o",
                  label=f"sigma {_words(np.array(sigma))}")
    sizes = sorted({stage["n_components"] for stage in stages})
    axes.set(xscale="log", xticks=sizes, xticklabels=[str(s) for s in sizes],
             xlabel="random features", ylabel="best validation loss",
             title="2. features doubled, then narrower sigmas")
    axes.minorticks_off()
    axes.legend()


def _plot_race(axes, cv_results: dict | None) -> None:
    """Validation loss of each bandwidth (best over ``alpha``) at each rung of the race."""
    axes.set(xscale="log", yscale="log", xlabel="sigma", ylabel="validation loss (best alpha)",
             title="1. bandwidth race (successive halving)")
    if not cv_results:
        return
    scalar = np.array([np.ndim(v) == 0 for v in cv_results["param_sigma"]])  # one bandwidth
    cv_results = {k: np.asarray(v)[scalar] if len(v) == len(scalar) else v
                  for k, v in cv_results.items() if k != "params"}
    rungs, sigmas = cv_results["rung"], cv_results["param_sigma"].astype(float)
    for rung in np.unique(rungs):
        at = rungs == rung
        candidates = np.unique(sigmas[at])
        losses = [-cv_results["mean_test_score"][at & (sigmas == s)].max() for s in candidates]
        rows = cv_results["n_rows"][at][0]
        axes.plot(candidates, losses, marker="o", label=f"rung {rung}: {rows} rows")
    axes.legend()


def _report(r: dict) -> None:
    print(f"DSGRegressor (defaults)   test MSE {r['mse']:.3e}   fit {r['fit_seconds']:6.1f} s   "
          f"{r['n_components']} features, sigma_ {_words(r['sigma'])}, alpha_ {r['alpha']:g}, "
          f"{r['epochs_run']} epochs ({r['epochs']} at the size kept)")
    print(f"RBFSampler({PEER_COMPONENTS})+Ridge     test MSE {r['peer_mse']:.3e}   fit "
          f"{r['peer_seconds']:6.1f} s   (same sigma and alpha; MSE ratio ours/peer "
          f"{r['mse'] / r['peer_mse']:.2f})")
    print(f"model file {r['file_bytes'] / 1024:.0f} KiB (coefficients and a seed; the features "
          f"are regenerated), reloaded predictions identical: {r['reload_identical']}")
    if r["plot"] is not None:
        print(f"learning curve saved to {r['plot']}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=DEFAULT_ROWS, help="training rows (default 2^16)")
    parser.add_argument("--plot", default=None, help=f"plot path (default: temp dir/{PLOT_NAME})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    run(args.n, plot_path=args.plot, verbose=0 if args.quiet else 1)


if __name__ == "__main__":
    main()
