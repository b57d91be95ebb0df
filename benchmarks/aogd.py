"""AOGD against the paper's Table 2 and the two online pairwise baselines (issue 8).

Protocol (AlQuabeh et al., "Experimental Setup"): for every method, grid search of the step size
``η ∈ 2^[−8:−1]`` and the L2 weight ``λ ∈ 10^[−8:−1]`` by 3-fold cross-validation on the training
set (mean validation AUC), refit on the whole training set with the best pair, test ROC AUC; five
seeded runs; mean ± standard error (std/√5) of AUC × 100. One online pass per fit.

Methods, all on the *same* features (random Fourier features of the library, D = 1024, Gaussian
kernel, σ = median distance of the run's training set, seeded per run) and on the raw features
("linear"):

- AOGD: Algorithm 1 (squared loss, ``γ = η``, ``p = 0.5``: the library's defaults);
- OGD-last: pairs each example with the previous example of the opposite class, one step
  (Yang et al. 2021; a buffer of size one, FIFO);
- OGD-reservoir: per-class reservoir buffers of ``s = 16`` examples; the step averages the
  gradients over the opposite class's buffer (Zhao et al. 2011; Kar et al. 2013).

The same baselines are scikit-learn estimators in ``kernelstream.baselines``
(``OGDLastClassifier``, ``ReservoirOGDClassifier``; tested equal to these grid runners).

Every method uses the same step schedule: constant, ``η_t = η`` (the default; the paper's regret
analysis takes a constant ``η``, Remark 1's ``η = 1/√T``), or ``η_t = η/√t`` with
``--schedule invscaling`` (the estimator's default; on the paper's grid it under-steps: CV then
picks the grid's top ``2^−1`` for every RFF method on every data set). Hyper-parameter grids run
as a batch dimension of ``w`` (64 independent models on one stream, exact).

Data: diabetes and german (no official split): five seeded stratified 80/20 splits, features
min-max scaled to [−1, 1] on the training part (LIBSVM's ``*_scale``). a9a, usps, mnist: the
official train/test split, five seeds (feature draw, stream order, CV folds). usps and mnist are
binarised as even digits (positive) vs odd digits (the paper does not say how; this split is
balanced); mnist pixels are divided by 255 (LIBSVM ``mnist.scale``).

    python -m benchmarks.aogd run diabetes german a9a usps mnist   # one JSON per data set
    python -m benchmarks.aogd flat                                 # time per example vs t
    python -m benchmarks.aogd report                               # aogd.md + aogd.png
    python -m benchmarks.aogd run diabetes --quick --out /tmp/bench   # seconds: seed 0, 4 × 4 grid

``--schedule invscaling`` writes to ``results/aogd/invscaling/``, ``--average`` (every method
returns the mean of its per-example iterates) to ``results/aogd/average/``, ``--splits kfold``
(diabetes/german: the five test folds of one stratified 5-fold split) to ``results/aogd/kfold/``;
each is a section of the report. ``--methods aogd`` reruns one method and merges it into the saved
runs; ``--folder`` sends a run elsewhere (the seeds 5–24 diagnostic in ``results/aogd/seeds5-24/``).
``--out DIR`` replaces ``benchmarks/results`` for every action (``report`` reads and writes there).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from benchmarks.common import data
from benchmarks.common.machine import machine_line
from benchmarks.common.report import command_line, write_report
from benchmarks.common.timing import Stopwatch, threads
from kernelstream import AOGDClassifier
from kernelstream.features import build_feature_map
from kernelstream.solvers.pairwise import (PairwiseState, ReservoirBuffers, aogd_chunk,
                                          bernoulli_coins, chunk_update, pair_directions,
                                          reservoir_chunk)

ETAS = 2.0 ** np.arange(-8, 0)
LAMBDAS = 10.0 ** np.arange(-8, 0)
D_RFF, BUFFER, P_REPLACE, GAMMA_RATIO, RUNS = 1024, 16, 0.5, 1.0, 5
SCHEDULES = ("constant", "invscaling")
SCHEDULE = "constant"  # set by --schedule; the same for every method
SPLITS = "random"  # set by --splits: how diabetes and german are split into train and test
AVERAGE = False  # set by --average: every method returns the mean of its per-example iterates
PAPER = {  # Table 2: AOGD, OGD (Yang et al.), Kar (reservoir buffer)
    "diabetes": ((81.91, 0.48), (82.53, 0.31), (79.85, 0.28)),
    "german": ((80.75, 0.48), (79.25, 0.42), (77.24, 0.52)),
    "a9a": ((90.03, 0.41), (90.01, 0.42), (77.93, 1.55)),
    "usps": ((92.76, 0.48), (89.88, 0.47), (89.58, 0.25)),
    "mnist": ((96.98, 0.38), (89.56, 0.34), (89.16, 0.14)),
}
METHODS = ("aogd", "last", "reservoir")


# -- data -------------------------------------------------------------------------------------
def load(name: str, seed: int):
    """``X_train, y_train, X_test, y_test`` with y in {0, 1} for run ``seed``."""
    file = "german_numer" if name == "german" else name
    arrays = data.load(file)
    if "X" in arrays:
        y = (arrays["y"] == arrays["y"].max()).astype(int)  # diabetes: 1 positive; german: 2 (bad)
        X = arrays["X"].astype(np.float64)
        if SPLITS == "kfold":  # run r tests on fold r of one seeded stratified 5-fold split
            if not 0 <= seed < 5:
                raise ValueError(f"--splits kfold has runs 0..4, got seed {seed}")
            train, test = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))[seed]
            Xtr, Xte, ytr, yte = X[train], X[test], y[train], y[test]
        else:
            Xtr, ytr, Xte, yte = data.random_split(X, y, test_size=0.2, seed=seed, stratify=True)
        lo, hi = Xtr.min(0), Xtr.max(0)
        span = np.where(hi > lo, hi - lo, 1.0)
        return 2 * (Xtr - lo) / span - 1, ytr, 2 * (Xte - lo) / span - 1, yte
    Xtr, Xte = arrays["X_train"].astype(np.float64), arrays["X_test"].astype(np.float64)
    ytr, yte = arrays["y_train"], arrays["y_test"]
    if name in ("usps", "mnist"):
        ytr, yte = (ytr % 2 == 0).astype(int), (yte % 2 == 0).astype(int)
        if name == "mnist":
            Xtr, Xte = Xtr / 255.0, Xte / 255.0
    else:
        ytr, yte = (ytr > 0).astype(int), (yte > 0).astype(int)
    return Xtr, ytr, Xte, yte


def rff(Xtr, seed: int):
    """The library's seeded Gaussian random features, σ = median distance of ``Xtr``."""
    fm = build_feature_map("rbf", Xtr, sigma="median", block_size=D_RFF, seed=seed)

    def transform(X):
        out = torch.empty(X.shape[0], D_RFF)
        for i in range(0, X.shape[0], 8192):
            out[i : i + 8192] = fm.transform(torch.as_tensor(X[i : i + 8192], dtype=torch.float32), 1)
        return out

    return transform


# -- the three online learners, batched over a grid of (η, λ) -------------------------------
def _schedule(eta, t, m):
    """``(G, m)`` step sizes of examples ``t + 1 .. t + m``: ``η`` or ``η/√t``."""
    if SCHEDULE == "constant":
        return eta.unsqueeze(1).expand(-1, m).clone()
    steps = 1.0 / torch.sqrt(torch.arange(t + 1, t + m + 1, dtype=torch.float64))  # 1/√t
    return eta.unsqueeze(1) * steps.unsqueeze(0)


def _model(w, total, t):
    """What a runner returns after ``t`` examples: the last iterate, or with ``--average`` the
    mean of the ``t`` per-example iterates."""
    return total / max(t, 1) if AVERAGE else w


def _run_stream(Z, y, eta, chunk, callback, update):
    """One pass in chunks: ``update(w, state, Zc, positive, steps, weights, total)`` returns the
    models after a chunk (adding their per-example iterates to ``total`` with ``--average``)."""
    w, state = torch.zeros(eta.shape[0], Z.shape[1], dtype=torch.float64), PairwiseState.empty(Z.shape[1])
    total = torch.zeros_like(w) if AVERAGE else None
    for i in range(0, Z.shape[0], chunk):
        Zc, m = Z[i : i + chunk].double(), min(chunk, Z.shape[0] - i)
        weights = torch.ones(m, dtype=torch.float64) if AVERAGE else None
        w = update(w, state, Zc, torch.as_tensor(y[i : i + m] == 1), _schedule(eta, state.t, m),
                   weights, total)
        if callback:
            callback(i + m, _model(w, total, i + m))
    return _model(w, total, Z.shape[0])


def run_aogd(Z, y, eta, lam, seed, chunk=32, callback=None):
    def update(w, state, Zc, positive, steps, weights, total):
        coins = bernoulli_coins(seed, state.t, Zc.shape[0], P_REPLACE)
        return aogd_chunk(w, state, Zc, positive, coins, steps, GAMMA_RATIO * steps, lam,
                          example_weights=weights, iterate_sum=total)

    return _run_stream(Z, y, eta, chunk, callback, update)


def run_last(Z, y, eta, lam, seed, chunk=64, callback=None):
    """OGD pairing with the previous opposite-class example: the random rows of AOGD with p = 1."""
    def update(w, state, Zc, positive, steps, weights, total):
        T, B, valid = pair_directions(Zc, positive, torch.ones(Zc.shape[0], dtype=torch.bool), state)
        return chunk_update(w, T[1::2], B, steps * valid, lam, iterate_weights=weights,
                            iterate_sum=total)

    return _run_stream(Z, y, eta, chunk, callback, update)


def run_reservoir(Z, y, eta, lam, seed, chunk=8, callback=None):
    """Per-class reservoir buffers of size s; each step averages over the opposite buffer."""
    buffers = ReservoirBuffers(BUFFER, Z.shape[1], seed)

    def update(w, state, Zc, positive, steps, weights, total):
        state.t += Zc.shape[0]  # after the schedule of this chunk was read
        return reservoir_chunk(w, buffers, Zc, positive, steps, lam, weights=weights, total=total)

    return _run_stream(Z, y, eta, chunk, callback, update)


RUNNERS = {"aogd": run_aogd, "last": run_last, "reservoir": run_reservoir}


def auc_columns(Z, y, w) -> np.ndarray:
    scores = (Z.double() @ w.T).numpy()
    return np.array([roc_auc_score(y, s) if np.isfinite(s).all() else 0.5 for s in scores.T])


# -- protocol -----------------------------------------------------------------------------------
def grid_search(method, Z, y, seed):
    """3-fold CV over the 64 (η, λ) pairs at once; returns the best (η, λ) and its CV AUC."""
    eta, lam = np.meshgrid(ETAS, LAMBDAS, indexing="ij")
    eta = torch.tensor(eta.ravel())
    lam = torch.tensor(lam.ravel()).unsqueeze(1)
    cv = np.zeros(eta.shape[0])
    folds = StratifiedKFold(3, shuffle=True, random_state=seed)
    for k, (fit_rows, val_rows) in enumerate(folds.split(np.zeros(len(y)), y)):
        w = RUNNERS[method](Z[fit_rows], y[fit_rows], eta, lam, seed + 101 * k)
        cv += auc_columns(Z[val_rows], y[val_rows], w) / 3
    best = int(np.argmax(cv))
    return float(eta[best]), float(lam[best, 0]), float(cv[best])


def one_run(name: str, seed: int, curves: bool, methods=METHODS) -> dict:
    Xtr, ytr, Xte, yte = load(name, seed)
    order = np.random.default_rng(seed).permutation(len(ytr))  # the stream order
    Xtr, ytr = Xtr[order], ytr[order]
    out = {}
    for features in ("rff", "linear"):
        with Stopwatch() as whole:
            transform = rff(Xtr, seed) if features == "rff" else (lambda X: torch.as_tensor(X))
            Ztr, Zte = transform(Xtr), transform(Xte)
            for method in methods:
                with Stopwatch() as sw:
                    eta, lam, cv = grid_search(method, Ztr, ytr, seed)
                    w = RUNNERS[method](Ztr, ytr, torch.tensor([eta]), torch.tensor([[lam]]), seed)
                    test_auc = float(auc_columns(Zte, yte, w)[0])
                out[f"{method}/{features}"] = dict(eta=eta, lam=lam, cv_auc=cv, test_auc=test_auc,
                                                   seconds=sw.wall)
                print(f"  {name} seed {seed} {method}/{features}: {out[f'{method}/{features}']}", flush=True)
            if curves and features == "rff":
                out["curves"] = {m: auc_curve(m, Xtr, ytr, Zte, yte, transform, out[f"{m}/rff"], seed)
                                 for m in METHODS}
        out[f"seconds/{features}"] = whole.wall
    return out


def auc_curve(method, Xtr, ytr, Zte, yte, transform, best, seed, n_points=20):
    """(seconds, examples, test AUC) along one pass: training time plus the pro-rated time of
    mapping the stream's features; the AUC evaluations are not timed."""
    marks = list(np.unique(np.geomspace(256, len(ytr), n_points).astype(int)))
    with Stopwatch() as mapping:
        Z = transform(Xtr)
    points, training = [], Stopwatch()
    eta, lam = torch.tensor([best["eta"]]), torch.tensor([[best["lam"]]])

    def record(t, w):
        if marks and t >= marks[0]:
            while marks and t >= marks[0]:
                marks.pop(0)
            elapsed = training.elapsed() + mapping.wall * t / len(ytr)
            with training.pause():
                points.append((elapsed, t, float(auc_columns(Zte, yte, w)[0])))

    with training:
        RUNNERS[method](Z, ytr, eta, lam, seed, callback=record)
    return points


def flat_time(n=200_000, d=20, chunk=10_000) -> list[tuple[int, float]]:
    """Seconds per 10^4 examples along a 2·10^5 stream, default AOGDClassifier (D = 1024)."""
    rng = np.random.default_rng(0)
    direction = rng.normal(size=d)
    clf = AOGDClassifier(random_state=0, device="cpu")
    rows = []
    for i in range(0, n, chunk):
        X = rng.normal(size=(chunk, d))
        y = (np.sin(X @ direction) > 0).astype(int)
        with Stopwatch() as sw:
            clf.partial_fit(X, y, classes=[0, 1])
        rows.append((i + chunk, sw.wall))
    return rows


# -- report ---------------------------------------------------------------------------------------
def summary(values):
    values = np.asarray(values) * 100
    return values.mean(), values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def _load_runs(folder: Path) -> dict:
    """``{name: {"runs": [per-seed dict, seed order], "meta": {...}, "curves": ...}}``."""
    out = {}
    for n in PAPER:
        if (folder / f"{n}.json").exists():
            saved = json.loads((folder / f"{n}.json").read_text())
            seeds = sorted(saved["runs"], key=int)
            out[n] = dict(runs=[saved["runs"][k] for k in seeds], meta=saved["meta"],
                          curves=saved["runs"].get("0", {}).get("curves"))
    return out


KEYS = [f"{m}/{f}" for f in ("rff", "linear") for m in METHODS]


def _cv_chosen(constant: dict, invscaling: dict) -> dict:
    """The schedule as a third grid axis: per method and run, the schedule whose best (η, λ) has
    the higher CV AUC. Both grids use the same folds, coins and features, so this *is* the 3-fold
    CV over η × λ × {constant, η/√t}; no test AUC is looked at."""
    out = {}
    for n, r in constant.items():
        if n not in invscaling or len(invscaling[n]["runs"]) != len(r["runs"]):
            continue
        runs = []
        for a, b in zip(r["runs"], invscaling[n]["runs"]):
            if not all(k in a and k in b for k in KEYS):
                break
            runs.append({k: dict(a[k], schedule="constant") if a[k]["cv_auc"] >= b[k]["cv_auc"]
                         else dict(b[k], schedule="invscaling") for k in KEYS})
        else:
            out[n] = dict(runs=runs)
    return out


def _auc(runs, key) -> np.ndarray:
    return 100 * np.array([r[key]["test_auc"] for r in runs])


def _paired(runs, a, b) -> str:
    """``mean ± SE`` of the per-seed differences ``a − b`` (AUC × 100) and the seeds ``a`` won."""
    diff = _auc(runs, a) - _auc(runs, b)
    se = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
    return f"{diff.mean():+.2f} ± {se:.2f} ({int((diff > 0).sum())}/{len(diff)})"


COMPARISON_HEAD = ("| data set | AOGD | OGD-last | reservoir | AOGD − OGD-last, paired (seeds won) | "
                   "AOGD − reservoir, paired (seeds won) | AOGD ≥ OGD-last / ≥ reservoir |\n"
                   "|---|---|---|---|---|---|---|")


def _comparison(runs: dict, features: str = "rff") -> tuple[list[str], list[str]]:
    """Markdown rows of AOGD against both baselines (means and paired differences), and the data
    sets where AOGD's mean is at least both baselines'."""
    rows, wins = [], []
    for n, r in runs.items():
        ours = _auc(r["runs"], f"aogd/{features}").mean()
        base = {m: _auc(r["runs"], f"{m}/{features}").mean() for m in ("last", "reservoir")}
        ok = [ours >= base["last"], ours >= base["reservoir"]]
        wins += [n] if all(ok) else []
        rows.append(f"| {n} | {ours:.2f} | {base['last']:.2f} | {base['reservoir']:.2f} | "
                    f"{_paired(r['runs'], f'aogd/{features}', f'last/{features}')} | "
                    f"{_paired(r['runs'], f'aogd/{features}', f'reservoir/{features}')} | "
                    f"{'yes' if ok[0] else 'no'} / {'yes' if ok[1] else 'no'} |")
    return rows, wins


VERDICTS: list[str] = []  # one summary row per protocol variant, filled by _section


def _section(runs: dict, what: str) -> list[str]:
    """Table 2 layout (RFF and linear, ours beside the paper's), the paper bar, and AOGD against
    the baselines."""
    lines = ["| data set | AOGD (ours, RFF) | OGD-last (RFF) | reservoir s=16 (RFF) | AOGD (linear) | "
             "OGD-last (linear) | reservoir (linear) | paper AOGD | paper OGD | paper Kar | "
             "ours ≥ paper − 2 SE |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    paper_ok = []
    for n, r in runs.items():
        cells = ["{:.2f} ± {:.2f}".format(*summary([x[k]["test_auc"] for x in r["runs"]])) for k in KEYS]
        paper = PAPER[n][0]
        ok = _auc(r["runs"], "aogd/rff").mean() >= paper[0] - 2 * paper[1]
        paper_ok += [n] if ok else []
        lines.append(f"| {n} ({len(r['runs'])} runs) | " + " | ".join(cells) + " | "
                     + " | ".join(f"{a:.2f} ± {b:.2f}" for a, b in PAPER[n])
                     + f" | {'yes' if ok else 'no'} |")
    compare, wins = _comparison(runs)
    _, linear_wins = _comparison(runs, "linear")
    VERDICTS.append(f"| {what} | {len(paper_ok)}/{len(runs)} (misses: "
                    f"{', '.join(n for n in runs if n not in paper_ok) or 'none'}) | {len(wins)}/{len(runs)} "
                    f"(misses: {', '.join(n for n in runs if n not in wins) or 'none'}) |")
    return [*lines, "",
            f"{what}: paper bar (AOGD ≥ paper's AOGD − 2 SE) met on {len(paper_ok)} of {len(runs)} "
            f"({', '.join(paper_ok) or 'none'}).", "",
            "AOGD against the baselines on the same RFF features and the same tuning (AUC × 100; "
            "paired: mean ± SE over the runs of the per-run difference, and the runs AOGD won):", "",
            COMPARISON_HEAD, *compare, "",
            f"**{what}: AOGD ≥ both baselines (RFF, mean over runs) on {len(wins)} of {len(runs)}: "
            f"{', '.join(wins) or 'none'}.** On the linear features: {len(linear_wins)} of "
            f"{len(runs)} ({', '.join(linear_wins) or 'none'}).", ""]


def _chosen(runs: dict, with_schedule: bool) -> list[str]:
    out = ["| data set | method | η, λ" + (", schedule" if with_schedule else "")
           + " chosen per run |", "|---|---|---|"]
    for n, r in runs.items():
        for key in KEYS:
            picks = ", ".join(
                f"(2^{math.log2(x[key]['eta']):.0f}, 1e{math.log10(x[key]['lam']):.0f}"
                + ((", c" if x[key]["schedule"] == "constant" else ", √t") if with_schedule else "")
                + ")" for x in r["runs"])
            out.append(f"| {n} | {key} | {picks} |")
    return out


def report(root: Path) -> None:
    """aogd.md and aogd.png in ``root`` from the runs saved under ``root / "aogd"``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    VERDICTS.clear()
    constant = _load_runs(root / "aogd")
    invscaling = _load_runs(root / "aogd" / "invscaling")
    averaged = _load_runs(root / "aogd" / "average")
    kfold = _load_runs(root / "aogd" / "kfold")
    both = _cv_chosen(constant, invscaling)
    names = list(constant)
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.4), squeeze=False)
    for ax, n in zip(axes[0], names):
        for m, label in zip(METHODS, ("AOGD", "OGD-last", f"reservoir s={BUFFER}")):
            curve = np.array(constant[n]["curves"][m])
            ax.plot(curve[:, 0], 100 * curve[:, 2], marker=".", label=label)
        ax.set_xscale("log")
        ax.set_title(n)
        ax.set_xlabel("training seconds (1 core, shared)")
        ax.set_ylabel("test AUC × 100")
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(root / "aogd.png", dpi=110)
    flat = json.loads((root / "aogd" / "flat_time.json").read_text()) if (
        root / "aogd" / "flat_time.json").exists() else None
    meta = constant[names[0]]["meta"]["0"] if names else {}
    text = ["Commands (each writes one JSON per data set; `report` writes this file and aogd.png):", "",
            "- `python -m benchmarks.aogd run diabetes german a9a usps mnist` — last iterate, "
            "constant step (`results/aogd/`);",
            "- `... run diabetes german a9a usps mnist --schedule invscaling` — η/√t "
            "(`results/aogd/invscaling/`; AOGD rerun with `--methods aogd` after γ became η);",
            "- `... run diabetes german a9a usps mnist --average` — every method returns the mean of "
            "its per-example iterates (`results/aogd/average/`);",
            "- `... run diabetes german --splits kfold` — the 5 test folds of one stratified 5-fold "
            "split instead of 5 random 80/20 splits (`results/aogd/kfold/`);",
            "- `... run diabetes german --seeds 5 … 24 [--average] --folder results/aogd/seeds5-24[/average]` "
            "— 20 more random splits, a diagnostic (not a protocol);",
            "- `python -m benchmarks.research.aogd_ceiling` — batch models on the same splits "
            "(`results/aogd/ceiling.json`);",
            "- `python -m benchmarks.aogd flat`, then `python -m benchmarks.aogd report`.", "",
            "Protocol: grid η ∈ 2^[−8:−1] × λ ∈ 10^[−8:−1] by 3-fold CV (mean validation AUC) on the "
            "training set, refit on all of it, test ROC AUC; 5 seeded runs; mean ± standard error "
            "(std/√5) of AUC × 100. One online pass, squared loss; every method gets the same grid, "
            "folds, features, step schedule and output (last or averaged iterate). AOGD uses γ = η "
            "and p = 0.5 (the estimator's defaults). RFF: Gaussian kernel, D = 1024, σ = median "
            "distance, ‖ψ(x)‖ = 1 (the paper's Eq. 11). diabetes/german: 5 stratified 80/20 splits, "
            "min-max to [−1, 1]; a9a/usps/mnist: official split, 5 seeds; usps/mnist: even vs odd "
            "digits, mnist pixels / 255. Baselines: OGD-last pairs with the previous opposite-class "
            "example (Yang et al. 2021); reservoir keeps s = 16 examples per class by reservoir "
            "sampling and averages over the opposite buffer (Zhao et al. 2011, Kar et al. 2013). The "
            "paper's columns are its Table 2 (its OGD is linear; its Kar buffer size is not stated).",
            "",
            "The paper does not state its step schedule (Algorithm 1 takes η_t, γ_t; its regret "
            "analysis uses a constant η = 1/√T), nor how its five runs split diabetes and german "
            "(\"five times on different folds\"). Algorithm 1 returns the last iterate; for convex "
            "losses the usual online-to-batch conversion of a regret bound (Cesa-Bianchi et al. "
            "2004; for pairwise losses Kar et al. 2013, which the paper cites) speaks of the averaged "
            "iterate. Each variant below is the same for every method.", ""]
    sections = []
    if both:
        sections += ["## Last iterate, schedule chosen by CV (η × λ × {constant, η/√t})", "",
                     "The two schedule grids share folds, coins and features, so picking the higher "
                     "CV AUC per method and run is exactly CV over η × λ × schedule.", "",
                     *_section(both, "Last iterate, schedule by CV")]
    sections += ["## Last iterate, constant step η_t = η (Algorithm 1 as printed)", "",
                 *_section(constant, "Last iterate, constant step")]
    if invscaling:
        sections += _invscaling_section(invscaling)
    if averaged:
        sections += ["## Averaged iterates, constant step", "",
                     "Every method returns `w̄ = (1/T) Σ_t w_t` over its per-example iterates "
                     "(`AOGDClassifier(average=True)` for AOGD); all else as above.", "",
                     *_section(averaged, "Averaged iterates, constant step")]
    if kfold:
        sections += ["## Last iterate, constant step, 5-fold test splits (diabetes, german)", "",
                     "Run r tests on fold r of `StratifiedKFold(5, shuffle=True, random_state=0)` "
                     "and trains on the other four (decided before running, as a literal reading of "
                     "\"five times on different folds\").", "",
                     *_section(kfold, "Last iterate, constant step, 5-fold splits")]
    sections += _diagnostics(root)
    verdict = ["## Summary", "", "| variant (same for every method) | AOGD ≥ paper − 2 SE | "
               "AOGD ≥ both baselines (RFF) |", "|---|---|---|", *VERDICTS, "",
               "Margins on diabetes and german are far below their standard errors; the 20 extra "
               "splits and the batch models below say what is signal there.", ""]
    text += verdict + sections
    if both:
        text += ["Hyper-parameters chosen by CV over both schedules (c = constant, √t = η/√t):", "",
                 *_chosen(both, True), ""]
    text += ["Hyper-parameters chosen by CV, last iterate, constant step:", "",
             *_chosen(constant, False), "",
             "![AUC vs time](aogd.png)", "",
             "Figure: test AUC against training seconds for seed 0, constant step (CV-chosen η, λ; "
             "the RFF mapping of the stream is included in the time, AUC evaluation is not)."]
    if flat:
        text += ["", "Time per example along one stream (default `AOGDClassifier`, D = 1024, d = 20, "
                 "`partial_fit` in chunks of 10^4; `python -m benchmarks.aogd flat`):", "",
                 "| examples seen | µs per example in this chunk |", "|---|---|",
                 *[f"| {n} | {1e6 * s / 10_000:.1f} |" for n, s in flat["rows"]]]
    write_report(root / "aogd.md", "AOGD: Table 2 protocol (issue 8)", text,
                 machine=f"{meta.get('machine', '?')}; 1 torch thread; **shared** (2 cores, other "
                         "agents' jobs running), so seconds are indicative only")
    print("\n".join(text[: text.index("## Summary") + len(verdict)]))


def _diagnostics(root: Path) -> list[str]:
    """20 more random splits of diabetes and german, and batch models on the same splits."""
    out = []
    folder = root / "aogd" / "seeds5-24"
    for label, sub in (("last iterate", folder), ("averaged iterates", folder / "average")):
        runs = _load_runs(sub)
        if runs:
            if not out:
                out += ["## Diagnostic: 20 more random splits (seeds 5–24; diabetes, german)", "",
                        "Not a protocol: the same benchmark on seeds 5–24, constant step, to see "
                        "which differences on the five protocol splits are signal. (The last-iterate "
                        "file was first written to a scratch folder and copied; its meta keeps that "
                        "command.)", "",
                        COMPARISON_HEAD.replace("| data set |", "| data set, output |")]
            rows, _ = _comparison(runs)
            out += [row.replace(f"| {n} |", f"| {n}, {label} |", 1) for row, n in zip(rows, runs)]
    ceiling = root / "aogd" / "ceiling.json"
    if ceiling.exists():
        saved = json.loads(ceiling.read_text())["runs"]
        out += ["", "Batch models on the same random splits (`benchmarks/research/aogd_ceiling.py`; "
                "tuned by 3-fold CV; the squared-AUC optimum is the exact minimiser of AOGD's loss "
                "over all pairs on the same D = 1024 features), AUC × 100:", "",
                "| data set | model | seeds 0–4 (the protocol's splits) | seeds 0–24 (mean ± SE) |",
                "|---|---|---|---|"]
        for n, runs in saved.items():
            for key in runs["0"]:
                v = 100 * np.array([runs[s][key] for s in sorted(runs, key=int)])
                out.append(f"| {n} | {key} | {v[:5].mean():.2f} | {v.mean():.2f} ± "
                           f"{v.std(ddof=1) / math.sqrt(len(v)):.2f} |")
    return out + [""] if out else []


def _invscaling_section(runs: dict) -> list[str]:
    """η_t = η/√t: AOGD with γ = η/4 (the first version) and γ = η, against the baselines."""
    out = ["## Last iterate, decaying step η_t = η/√t (the estimator's default schedule)", "",
           "`AOGD γ=η/4` is the first version's AOGD (γ = η/4 was its default; 5 runs of the full "
           "protocol, with the baselines in the same files); `AOGD γ=η` was rerun with "
           "`--schedule invscaling --methods aogd` (the baselines do not depend on γ, and their code "
           "is unchanged). Here CV picks the grid's top η = 2^−1 for nearly every RFF fit: on the "
           "paper's grid the decaying step is too small for these features.", "",
           "| data set | AOGD γ=η/4 (RFF) | AOGD γ=η (RFF) | OGD-last (RFF) | reservoir s=16 (RFF) | "
           "RFF fits at η = 2^−1 |", "|---|---|---|---|---|---|"]
    for n, r in runs.items():
        cells = []
        for key in ("aogd-quarter/rff", "aogd/rff", "last/rff", "reservoir/rff"):
            have = all(key in x for x in r["runs"])
            cells.append("{:.2f} ± {:.2f}".format(*summary([x[key]["test_auc"] for x in r["runs"]]))
                         if have else "–")
        picks = [v["eta"] for x in r["runs"] for k, v in x.items()
                 if k.endswith("/rff") and isinstance(v, dict)]
        out.append(f"| {n} ({len(r['runs'])} runs) | " + " | ".join(cells)
                   + f" | {sum(e == 0.5 for e in picks)}/{len(picks)} |")
    done = {n: r for n, r in runs.items() if all(k in x for x in r["runs"] for k in KEYS)}
    if done:
        out += ["", *_section(done, "Last iterate, η/√t, γ = η")]
    return out


def main(argv=None) -> None:
    global SCHEDULE, SPLITS, AVERAGE, ETAS, LAMBDAS, D_RFF
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["run", "report", "flat"])
    parser.add_argument("datasets", nargs="*", default=list(PAPER))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(RUNS)),
                        help="runs to do now; results merge into the data set's JSON")
    parser.add_argument("--schedule", choices=SCHEDULES, default="constant",
                        help="step schedule of every method (invscaling: results/aogd/invscaling/)")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS),
                        help="methods to run now; the others' saved results are kept")
    parser.add_argument("--splits", choices=("random", "kfold"), default="random",
                        help="diabetes/german: 5 seeded random 80/20 splits, or the 5 test folds "
                             "of one seeded stratified 5-fold split (results/aogd/kfold/)")
    parser.add_argument("--average", action="store_true",
                        help="every method returns the mean of its per-example iterates "
                             "(results/aogd/average/)")
    parser.add_argument("--folder", type=Path, default=None,
                        help="write the runs here instead (diagnostics kept out of the report)")
    parser.add_argument("--out", type=Path, default=data.RESULTS,
                        help="results root instead of benchmarks/results (every action)")
    parser.add_argument("--quick", action="store_true",
                        help="seed 0, a 4 × 4 grid, D = 256; flat: 2·10^4 examples (seconds)")
    args = parser.parse_args(argv)
    SCHEDULE, SPLITS, AVERAGE = args.schedule, args.splits, args.average
    if args.quick:
        args.seeds, ETAS, LAMBDAS, D_RFF = [0], ETAS[::2], LAMBDAS[::2], 256
    folder = args.folder or args.out / "aogd" / ("" if SCHEDULE == "constant" else SCHEDULE) / (
        "kfold" if SPLITS == "kfold" else "") / ("average" if AVERAGE else "")
    folder.mkdir(parents=True, exist_ok=True)
    with threads(1):
        if args.action == "report":
            return report(args.out)
        if args.action == "flat":
            rows = flat_time(n=20_000 if args.quick else 200_000)
            (args.out / "aogd" / "flat_time.json").write_text(json.dumps({"rows": rows}))
            return print(rows)
        for name in args.datasets:
            run(name, args, folder / f"{name}.json")


def run(name: str, args, path: Path) -> None:
    """The runs ``args.seeds`` of one data set, merged into the JSON at ``path``."""
    saved = json.loads(path.read_text()) if path.exists() else {"runs": {}, "meta": {}}
    for seed in args.seeds:
        every = set(args.methods) == set(METHODS)
        with Stopwatch() as sw:
            fresh = one_run(name, seed, curves=seed == 0 and every and SCHEDULE == "constant",
                            methods=tuple(args.methods))
        saved["runs"][str(seed)] = fresh if every else {**saved["runs"].get(str(seed), {}), **fresh}
        saved["meta"][str(seed)] = dict(
            machine=machine_line(), seconds=sw.wall, schedule=SCHEDULE, gamma_ratio=GAMMA_RATIO,
            methods=list(args.methods), splits=SPLITS, average=AVERAGE, command=command_line(),
            quick=args.quick)
        path.write_text(json.dumps(saved))
        print(name, seed, f"{sw.wall:.0f}s", flush=True)


if __name__ == "__main__":
    main()
