"""Several classes on few rows: least squares on the exact dual route, or the softmax's epochs?

For bundled multiclass sets below 2048 training rows (scikit-learn's digits, wine and iris,
river's ImageSegments), seeded stratified 75/25 splits standardised on the training part:
test error of ``DSGClassifier(loss="logistic")`` (the softmax, trained by the preconditioned
epochs), ``DSGClassifier(loss="squared")`` (one-vs-rest least squares, solved exactly in the dual
with leave-one-out ``σ``, ``α``: :mod:`kernelstream.solvers.dual`) and a tuned ``SVC`` (C in
{0.1, 1, 10, 100}, gamma in {0.25, …, 4} × "scale", 3-fold CV). It decided ``loss="auto"`` for
such fits (``AUTO_BINARY_LOSS`` in ``kernelstream/estimators/classification.py``).

    python -m benchmarks.research.few_rows_multiclass
    python -m benchmarks.research.few_rows_multiclass --sets iris wine --seeds 0 --out /tmp/m.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from sklearn import datasets
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from benchmarks.common.data import RESULTS
from benchmarks.common.report import markdown_table, write_report
from kernelstream import DSGClassifier


def image_segments():
    """river's bundled ImageSegments (2310 rows, 18 features, seven classes)."""
    from river import datasets as river_datasets

    rows = list(river_datasets.ImageSegments())
    keys = list(rows[0][0])
    return np.array([[float(x[k]) for k in keys] for x, _ in rows]), np.array([str(t) for _, t in rows])


SETS = {"digits": lambda: datasets.load_digits(return_X_y=True),
        "segments": image_segments,
        "wine": lambda: datasets.load_wine(return_X_y=True),
        "iris": lambda: datasets.load_iris(return_X_y=True)}
METHODS = {"softmax (epochs)": dict(loss="logistic"), "least squares (dual)": dict(loss="squared")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(RESULTS / "few_rows_multiclass.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for name in args.sets:
        X, y = SETS[name]()
        errors = {method: [] for method in [*METHODS, "SVC (tuned)"]}
        seconds = {method: [] for method in METHODS}
        for seed in args.seeds:
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=seed,
                                                                stratify=y)
            scaler = StandardScaler().fit(X_train)
            X_train = scaler.transform(X_train).astype(np.float32)
            X_test = scaler.transform(X_test).astype(np.float32)
            for method, params in METHODS.items():
                start = time.perf_counter()
                model = DSGClassifier(random_state=seed, **params).fit(X_train, y_train)
                seconds[method].append(time.perf_counter() - start)
                errors[method].append(float(np.mean(model.predict(X_test) != y_test)))
            scale = 1.0 / (X_train.shape[1] * X_train.var())
            svc = GridSearchCV(SVC(), dict(C=[0.1, 1, 10, 100], gamma=[f * scale for f in (0.25, 0.5, 1, 2, 4)]),
                               cv=3).fit(X_train, y_train)
            errors["SVC (tuned)"].append(float(np.mean(svc.predict(X_test) != y_test)))
            print(name, seed, {m: round(e[-1], 4) for m, e in errors.items()}, flush=True)
        rows.append([f"{name} ({len(X_train)} / {len(X_test)}, {len(np.unique(y))} classes)",
                     *(f"{np.mean(errors[m]):.4f} ({np.mean(seconds[m]):.1f} s)" for m in METHODS),
                     f"{np.mean(errors['SVC (tuned)']):.4f}"])
    body = [f"Seeded stratified 75/25 splits (seeds {args.seeds}), standardised; mean test error "
            f"and mean fit time over the seeds; {args.threads} thread(s).", "",
            *markdown_table(["data set (train / test)", *METHODS, "SVC (tuned)"], rows), ""]
    print(write_report(Path(args.out), "Several classes on few rows: least squares (dual) or softmax",
                       body, threads=args.threads))


if __name__ == "__main__":
    main()
