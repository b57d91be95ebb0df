"""One rank of a data-parallel fit, launched by ``test_data_parallel.py`` under torchrun (or with
``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set).

``fit``: a classifier (bandwidth and α chosen) and a regressor (features grown) on shards of
CSV files read as streams; rank k writes ``rank{k}.npz`` (coefficients, predictions, block-split
predictions). ``engine``: both with their defaults on shards that fit in memory (the engine,
its products summed over ranks); rank k writes ``engine{k}.npz`` (its rows, the predictions,
the plan).
``long``: a fit that runs until it is killed. ``bad``: a fit on a file with a bad line.
``badsvm``: README's ``train.py`` on ``part-*.svm``, one file with a bad line (one rank's
shard). ``glob``: README's ``train.py`` on a glob that matches nothing.
Every rank writes ``pid{rank}`` once the process group is up.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

#: the estimators of the ``fit`` mode (the test fits the same in one process)
CLASSIFIER = dict(block_size=64, n_components=256, batch_size=256, max_iter=12, random_state=0)
REGRESSOR = dict(sigma=1.5, block_size=64, batch_size=256, max_iter=10, random_state=0)
SOURCE = dict(chunk_rows=256, shuffle_buffer=1024, seed=0)


def write_data(directory: Path) -> dict[str, Path]:
    """Two CSV files: moons (label last) and a 3-D regression (target last)."""
    from sklearn.datasets import make_moons

    rng = np.random.default_rng(0)
    X, y = make_moons(3000, noise=0.25, random_state=0)
    paths = {"moons": directory / "moons.csv", "wave": directory / "wave.csv",
             "long": directory / "long.csv"}
    np.savetxt(paths["moons"], np.column_stack([X, y]), delimiter=",", fmt="%.6f")
    Z = rng.uniform(-2, 2, (3000, 3))
    t = np.sin(Z[:, 0]) + 0.5 * Z[:, 1] + 0.3 * rng.standard_normal(3000)
    np.savetxt(paths["wave"], np.column_stack([Z, t]), delimiter=",", fmt="%.6f")
    np.savetxt(paths["long"], np.column_stack([Z[:, :2], Z[:, 2] > 0]), delimiter=",", fmt="%.6f")
    return paths


def fit_models(classifier_source, regressor_source):
    """Both fits read as streams (``stream_rows_bytes=0``): one process in lock step, as the
    ranks do (a single process would otherwise read these few rows into memory)."""
    import dataclasses

    from kernelstream import DSGClassifier, DSGRegressor
    from kernelstream.planning import LIMITS

    streamed = dataclasses.replace(LIMITS, stream_rows_bytes=0)
    return (DSGClassifier(**CLASSIFIER).fit(classifier_source, limits=streamed),
            DSGRegressor(**REGRESSOR).fit(regressor_source, limits=streamed))


def summary(clf, reg, X_test, Z_test) -> dict:
    return dict(clf_coef=clf.expansion_.prediction_parameters()[0].cpu().numpy(),
                clf_decision=clf.decision_function(X_test), clf_sigma=clf.sigma_,
                clf_alpha=clf.alpha_, reg_coef=reg.expansion_.prediction_parameters()[0].cpu().numpy(),
                reg_predict=reg.predict(Z_test), reg_components=reg.n_components_,
                reg_alpha=reg.alpha_, n_iter=(clf.n_iter_, reg.n_iter_))


#: the engine's fits: (name, data, estimator's defaults or not, its test inputs, limits changed);
#: "narrow" narrows on 1,024 rows (ranks solve the bandwidths at once, each on the rows gathered)
ENGINE_FITS = (("moons", "moons", "classifier", "X", {}),
               ("wave", "wave", "regressor", "Z", {}),
               ("narrow", "moons", "classifier", "X", {"narrow_rows": 1024}))


def engine_fit(kind: str, data, limits: dict, y=None):
    """The default ``DSGClassifier()`` or ``DSGRegressor()`` fitted on ``data`` (a source, or
    arrays ``data, y``) with ``limits`` changed from the planner's table."""
    import dataclasses

    from kernelstream import DSGClassifier, DSGRegressor
    from kernelstream.planning import LIMITS

    model = (DSGClassifier if kind == "classifier" else DSGRegressor)(random_state=0)
    args = (data,) if y is None else (data, y)
    return model.fit(*args, limits=dataclasses.replace(LIMITS, **limits))


def engine_fits(data: Path, shard) -> dict:
    """Each of :data:`ENGINE_FITS` on this rank's shard: the rows it read, the test
    predictions, the plan and its stages' names."""
    from kernelstream.data import open_source
    from kernelstream.estimators._first_pass import concat_chunks

    test, result = np.load(data / "test.npz"), {}
    for name, file, kind, X_test, limits in ENGINE_FITS:
        source = shard(open_source(data / f"{file}.csv", label=-1, **SOURCE))
        model = engine_fit(kind, source, limits)
        rows = concat_chunks(list(source.blocks()))
        predict = model.decision_function if kind == "classifier" else model.predict
        result.update({f"{name}_X": rows.X, f"{name}_y": rows.y,
                       f"{name}_predicted": predict(test[X_test]),
                       f"{name}_plan": str(model.fit_plan_),
                       f"{name}_stages": [s["stage"] for s in model.fit_plan_.stages]})
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["fit", "engine", "long", "bad", "badsvm", "glob"])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    from kernelstream import DSGClassifier, distributed
    from kernelstream.data import open_source

    comm = distributed.init(backend="gloo", timeout=60)
    (args.out / f"pid{comm.rank}").write_text(str(os.getpid()))
    shard = distributed.shard_for_this_rank
    if args.mode == "long":
        source = open_source(args.data / "long.csv", label=-1, **SOURCE)
        import dataclasses

        from kernelstream.planning import LIMITS

        DSGClassifier(sigma=1.0, alpha=1e-4, n_components=512, max_iter=100000, tol=None,
                      random_state=0).fit(shard(source),  # read as a stream: it runs until killed
                                          limits=dataclasses.replace(LIMITS, stream_rows_bytes=0))
    elif args.mode == "bad":
        DSGClassifier(**CLASSIFIER).fit(shard(open_source(args.data / "bad.csv", label=-1, **SOURCE)))
    elif args.mode in ("badsvm", "glob"):  # README's train.py: no shutdown if the fit raises
        pattern = "part-*.svm" if args.mode == "badsvm" else "no-such-*.svm"
        DSGClassifier(**CLASSIFIER).fit(shard(open_source(str(args.data / pattern), **SOURCE)))
    elif args.mode == "engine":
        np.savez(args.out / f"engine{comm.rank}.npz", **engine_fits(args.data, shard))
    else:
        clf, reg = fit_models(shard(open_source(args.data / "moons.csv", label=-1, **SOURCE)),
                              shard(open_source(args.data / "wave.csv", label=-1, **SOURCE)))
        test = np.load(args.data / "test.npz")
        result = summary(clf, reg, test["X"], test["Z"])
        result["blocks_decision"] = distributed.predict_by_blocks(clf, test["X"], "decision_function")
        np.savez(args.out / f"rank{comm.rank}.npz", **result)
    distributed.shutdown()


if __name__ == "__main__":
    main()
