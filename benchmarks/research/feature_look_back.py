"""Do the held-out gains of doubling the features shrink where the rows are many per feature,
so that a look back at half the start size can stand in for the first doubling? (issue 32)

Part 1 fits ``DSGRegressor(sigma=σ, alpha=α, n_components=D)`` (every row trains, one solve)
for ``D`` from 256 up, on the paper's 2-D set (943,718 training rows at the default fit's ``σ``
and ``α``) and on a rough 4-D target (262,144 rows, ``sin(2x₀x₁) + cos(2x₂)x₃`` plus noise 0.1,
two settings): the MSE against the noise-free target on 4,096 test points, and each doubling's
gain relative to the test loss ``(noise² + MSE)/2`` that ``growth_tol`` (1e-3) is measured
against. Part 2 fits the default ``DSGRegressor()`` on the 2-D set at 2^20 rows with the look
back (``look_back_rows_per_feature`` 256) and without it: CPU seconds, MSE and the sizes tried.
One thread.

    python -m benchmarks.research.feature_look_back --out benchmarks/results
    python -m benchmarks.research.feature_look_back --quick
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import threads
from kernelstream import DSGRegressor, planning
from kernelstream.datasets import synthetic_regression

#: the default fit's choice on the 2-D set at 2^20 rows (per-feature lengthscales, α on 943,718 rows)
SYNTHETIC_SIGMA, SYNTHETIC_ALPHA, SYNTHETIC_NOISE = (0.468, 0.476), 1.09e-7, 0.1
ROUGH_SETTINGS = ((0.7, 1e-6), (1.0, 1e-7))
ROUGH_NOISE = 0.1


def rough_target(X: np.ndarray) -> np.ndarray:
    return np.sin(2 * X[:, 0] * X[:, 1]) + np.cos(2 * X[:, 2]) * X[:, 3]


def rough_set(n: int) -> tuple:
    g = np.random.default_rng(0)
    X = g.normal(size=(n, 4)).astype(np.float32)
    X_test = g.normal(size=(4096, 4)).astype(np.float32)
    return X, rough_target(X) + ROUGH_NOISE * g.normal(size=n), X_test, rough_target(X_test)


def synthetic_set(n: int) -> tuple:
    X, y, _ = synthetic_regression(n, random_state=0)
    X_test, _, f_test = synthetic_regression(4096, random_state=1)
    return X, y, X_test, f_test


def gains(name: str, data: tuple, sigma, alpha: float, noise: float, sizes) -> list[list[object]]:
    """One row per size: MSE, CPU s, and the gain over half the size relative to the loss."""
    X, y, X_test, f_test = data
    rows, last = [], None
    for D in sizes:
        start = time.process_time()
        model = DSGRegressor(sigma=np.asarray(sigma) if np.ndim(sigma) else sigma, alpha=alpha,
                             n_components=D, block_size=min(D, 1024), random_state=0,
                             device="cpu").fit(X, y)
        seconds = time.process_time() - start
        mse = float(np.mean((model.predict(X_test) - f_test) ** 2))
        relative = "—" if last is None else f"{(last - mse) / (noise**2 + mse):.2e}"
        rows.append([name, f"{len(X):,}", str(sigma), f"{alpha:g}", f"{D:,}", f"{mse:.4g}",
                     relative, f"{seconds:.1f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)
        last = mse
    return rows


def default_fits(n: int) -> list[list[object]]:
    """The default fit with and without the look back."""
    X, y, X_test, f_test = synthetic_set(n)
    table = []
    for label, per_feature in (("with the look back", planning.LIMITS.look_back_rows_per_feature),
                               ("without", 10**9)):
        limits = dataclasses.replace(planning.LIMITS, look_back_rows_per_feature=per_feature)
        saved = planning.plan_fit.__kwdefaults__["limits"]
        planning.plan_fit.__kwdefaults__["limits"] = limits
        try:
            start = time.process_time()
            model = DSGRegressor(random_state=0, device="cpu").fit(X, y)
            seconds = time.process_time() - start
        finally:
            planning.plan_fit.__kwdefaults__["limits"] = saved
        mse = float(np.mean((model.predict(X_test) - f_test) ** 2))
        sizes = ", ".join(f"{g['n_components']:,}" for g in model.feature_growth_)
        table.append([label, f"{n:,}", f"{mse:.4g}", f"{seconds:.1f}", sizes,
                      f"{model.n_components_:,}"])
        print(" | ".join(map(str, table[-1])), flush=True)
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sets, two sizes")
    parser.add_argument("--out", type=Path, help="write DIR/feature_look_back.md")
    args = parser.parse_args(argv)
    n_synthetic, n_rough, n_default = (8192, 8192, 8192) if args.quick else (943718, 2**18, 2**20)
    sizes = (256, 512) if args.quick else (256, 512, 1024, 2048, 4096)
    with threads(1):
        part1 = gains("2-D set", synthetic_set(n_synthetic), SYNTHETIC_SIGMA, SYNTHETIC_ALPHA,
                      SYNTHETIC_NOISE, sizes)
        rough = rough_set(n_rough)
        for sigma, alpha in ROUGH_SETTINGS:
            part1 += gains("rough 4-D", rough, sigma, alpha, ROUGH_NOISE, sizes[:-1] or sizes)
        part2 = default_fits(n_default)
    body = ["One thread; CPU s of `fit` (`time.process_time`), one fit each. Gain: the MSE "
            "against the noise-free target at half the size minus at this size, over the test "
            "loss's scale `noise² + MSE` (twice the squared loss that `growth_tol` = 1e-3 is "
            "relative to).", "", "## Each doubling's gain", "",
            *markdown_table(["set", "rows", "σ", "α", "features", "MSE", "gain / loss", "CPU s"],
                            part1),
            "", "## The default fit on the 2-D set with and without the look back", "",
            *markdown_table(["fit", "rows", "MSE", "CPU s", "sizes tried (feature_growth_)",
                             "n_components_"], part2)]
    if args.out:
        write_report(args.out / "feature_look_back.md", "Each doubling's held-out gain, and the "
                     "default fit with a look back at half the start size", body, threads=1)
    else:
        print("\n".join(body))


if __name__ == "__main__":
    main()
