"""The river adapters' rows a second in ``progressive_val_score``, against river's own models.

Issue 51's rates: ``RiverDSGClassifier()`` on river's bundled ``Phishing`` (1,250 rows) and
``RiverGoGPRegressor()`` on ``TrumpApproval`` (1,001 rows), defaults (``RiverDSGClassifier``
also on the 7 classes of ``ImageSegments``, 2,310 rows, its labels learnt from the stream), in
``river.evaluate.progressive_val_score`` (each row predicted, then learnt), against river's
``StandardScaler | LogisticRegression`` (shown with +), ``HoeffdingTreeClassifier`` and ``KNNClassifier`` on
the first (the tree and KNN on ImageSegments too), ``StandardScaler | LinearRegression`` on
TrumpApproval. One thread (torch's and the BLAS
pool's, set before anything runs); a warm-up pass, then ``--repeats`` passes, each from a fresh
model: CPU seconds of the pass, rows a second at the best and the median, the score.

    python -m benchmarks.river_adapters --out benchmarks/results
    python -m benchmarks.river_adapters --repeats 1                 # seconds
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.common.report import report_table
from benchmarks.common.timing import threads

HEADER = ["stream", "model", "score", "rows/s best", "rows/s median", "CPU s min"]


def cases() -> list[tuple]:
    """``(stream name, dataset factory, metric factory, [(model name, model factory)])``."""
    from river import datasets, linear_model, metrics, neighbors, preprocessing, tree

    from kernelstream.integrations.river import RiverDSGClassifier, RiverGoGPRegressor
    return [
        ("Phishing", datasets.Phishing, metrics.Accuracy, [
            ("RiverDSGClassifier(random_state=0)", lambda: RiverDSGClassifier(random_state=0)),
            ("StandardScaler + LogisticRegression",
             lambda: preprocessing.StandardScaler() | linear_model.LogisticRegression()),
            ("HoeffdingTreeClassifier", tree.HoeffdingTreeClassifier),
            ("KNNClassifier", neighbors.KNNClassifier)]),
        ("ImageSegments", datasets.ImageSegments, metrics.Accuracy, [
            ("RiverDSGClassifier(random_state=0)", lambda: RiverDSGClassifier(random_state=0)),
            ("HoeffdingTreeClassifier", tree.HoeffdingTreeClassifier),
            ("KNNClassifier", neighbors.KNNClassifier)]),
        ("TrumpApproval", datasets.TrumpApproval, metrics.RMSE, [
            ("RiverGoGPRegressor(random_state=0)", lambda: RiverGoGPRegressor(random_state=0)),
            ("StandardScaler + LinearRegression",
             lambda: preprocessing.StandardScaler() | linear_model.LinearRegression())]),
    ]


def one_pass(dataset, make_model, make_metric) -> tuple[float, float]:
    """``(CPU seconds, score)`` of one progressive validation from a fresh model."""
    from river import evaluate
    model, metric = make_model(), make_metric()
    start = time.process_time()
    evaluate.progressive_val_score(dataset, model, metric)
    return time.process_time() - start, metric.get()


@threads(1)
def table(repeats: int) -> list[list[str]]:
    """The table's rows: each stream's models, on one thread."""
    rows = []
    for stream, make_data, make_metric, models in cases():
        dataset = make_data()
        n = sum(1 for _ in dataset)
        for name, make_model in models:
            one_pass(dataset, make_model, make_metric)  # warm-up
            runs = [one_pass(dataset, make_model, make_metric) for _ in range(repeats)]
            seconds = [s for s, _ in runs]
            rows.append([stream, name, f"{runs[0][1]:.4f}", f"{n / min(seconds):,.0f}",
                         f"{n / statistics.median(seconds):,.0f}", f"{min(seconds):.3f}"])
            print(" | ".join(rows[-1]), flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write DIR/river_adapters.md")
    args = parser.parse_args(argv)
    rows = table(args.repeats)
    report_table(args.out, "river_adapters.md", "The river adapters in progressive validation, "
                 "against river's models", "One thread (torch and the BLAS pool); "
                 f"`progressive_val_score` with defaults, a warm-up pass and {args.repeats} timed "
                 "passes, each from a fresh model; rows a second of CPU time; score: accuracy "
                 "(Phishing, ImageSegments) or RMSE (TrumpApproval).", HEADER, rows)


if __name__ == "__main__":
    main()
