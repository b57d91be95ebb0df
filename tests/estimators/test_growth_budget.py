"""The cost model and the growth's budget: work counted from the shapes, a doubling tried only
where it fits, ``effort`` trading time for accuracy, and the report of predicted seconds."""

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.datasets import synthetic_regression
from kernelstream.solvers import throughput
from kernelstream.planning import LIMITS
from kernelstream.planning.cost import Work, feature_work, growth_budget, solve_work


def _rows(n=6000, seed=0):
    X, y = make_classification(n, 20, n_informative=10, flip_y=0.02, random_state=seed)
    return X.astype(np.float32), y


def test_work_is_counted_from_the_shapes():
    """A solve is its passes over the stored features plus the preconditioner's ``s²D + s³/3``;
    features are ``nDd`` multiply-adds, ``nD`` cosines and their bytes; the budget is affine."""
    n, D, d = 1000, 512, 20
    solve = solve_work(n, D, iterations=7, item_bytes=2, sketch_rows=256)
    assert solve.bytes == 7 * n * D * 2 and solve.passes == 7
    assert solve.madds == 256**2 * D and solve.factorised == 256**3 / 3  # the factor: LAPACK's rate
    features = feature_work(n, d, D, item_bytes=2)
    assert (features.madds, features.transcendentals, features.bytes) == (n * D * d, n * D, 2 * n * D)
    both = solve + features
    assert both.units(LIMITS) == pytest.approx(solve.units(LIMITS) + features.units(LIMITS))
    assert features.units(LIMITS) == pytest.approx(
        n * D * d + LIMITS.work_byte_units * 2 * n * D + LIMITS.work_cosine_units * n * D)
    assert growth_budget(100, 5.0, 7.0) == 507.0
    rates = throughput.Throughput(1e9, 1e9, 1e8, 1e10, 1e-6, fresh_bytes_per_second=1e10)
    assert Work(1e9, 2e9, 1e8, 0, 1e10, 1e6).seconds(rates) == pytest.approx(6.0)
    factorising = dataclasses.replace(rates, factorised_madds_per_second=5e8)
    assert Work(factorised=1e9).seconds(factorising) == pytest.approx(2.0)
    assert Work(factorised=1e9).units(LIMITS) == Work(1e9).units(LIMITS)  # budgets: as a product


def test_the_growth_stops_where_the_next_doubling_would_pass_the_budget():
    """A budget of one size's work keeps the start size and says why; a larger one grows."""
    X, y = _rows()
    tight = dataclasses.replace(LIMITS, growth_units_per_row=1.0, growth_units_fixed=0.0)
    model = DSGClassifier(random_state=0).fit(X, y, limits=tight)
    stops = [r for r in model.fit_plan_.stages if r["stage"] == "growth_stop"]
    assert model.n_components_ == LIMITS.solve_start_features
    assert len(stops) == 1 and "past the budget" in stops[0]["why"]
    assert "growth_stop" in str(model.fit_plan_)
    loose = dataclasses.replace(LIMITS, growth_units_per_row=1e9)
    grown = DSGClassifier(random_state=0).fit(X, y, limits=loose)
    assert grown.n_components_ > model.n_components_
    assert model.fit_plan_.growth_budget < grown.fit_plan_.growth_budget


def test_effort_trades_time_for_features():
    """"fast" keeps at most the features of "auto", "thorough" at least as many."""
    X, y = _rows()
    sizes = {effort: DSGClassifier(random_state=0, effort=effort).fit(X, y).n_components_
             for effort in ("fast", "auto", "thorough")}
    assert sizes["fast"] <= sizes["auto"] <= sizes["thorough"]
    assert sizes["fast"] < sizes["thorough"]


def test_a_budget_in_seconds_stops_by_the_predicted_seconds():
    X, y = _rows(4000)
    model = DSGClassifier(random_state=0, effort=1e-6).fit(X, y)
    assert model.fit_plan_.seconds_budget == 1e-6
    assert model.n_components_ == LIMITS.solve_start_features
    why = [r["why"] for r in model.fit_plan_.stages if r["stage"] == "growth_stop"]
    assert why and "past effort=" in why[0]


def test_a_budget_in_seconds_sizes_the_subsample_by_its_predicted_seconds():
    """A tight budget in seconds takes the fewest subsample rows, a loose one the most, each
    priced at this machine's throughput (the plan, before any data is read)."""
    from kernelstream.planning import DataShape, plan_fit
    from kernelstream.planning.cost import predicted_selection
    shape = DataShape(n_rows=30000, n_features=20, n_classes=2)
    params = DSGClassifier(random_state=0).get_params()
    measured = throughput.measured_throughput("cpu")
    rows = {}
    for seconds in (1e-6, 1e6):
        plan = plan_fit("DSGClassifier", shape, {**params, "effort": seconds}, throughput=measured)
        rows[seconds] = plan.selection_rows
        assert plan.seconds_budget == seconds
    assert rows[1e-6] == LIMITS.selection_least_rows < rows[1e6]
    tight = plan_fit("DSGClassifier", shape, {**params, "effort": 1e-6}, throughput=measured)
    assert predicted_selection(tight, 20, rows[1e6]).seconds(measured) > 1e-6


def test_the_model_does_not_depend_on_the_machines_speed():
    """The default budget counts work, not seconds: a machine measured ten times slower fits
    the same model with the same seed."""
    X, y = _rows(4000)
    first = DSGClassifier(random_state=0).fit(X, y)
    key = (torch.device("cpu").type, None, torch.get_num_threads())
    measured = throughput.measured_throughput("cpu")
    slow = throughput.Throughput(*(v * 10 if name.startswith("seconds") else v / 10
                                   for name, v in measured.as_dict().items()))
    throughput._MEASURED[key] = slow
    try:
        second = DSGClassifier(random_state=0).fit(X, y)
    finally:
        throughput._MEASURED[key] = measured
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))
    predicted = [r["predicted_seconds"] for r in second.fit_plan_.stages if "predicted_seconds" in r]
    before = [r["predicted_seconds"] for r in first.fit_plan_.stages if "predicted_seconds" in r]
    np.testing.assert_allclose(predicted, np.array(before) * 10, rtol=1e-9)


def test_each_engine_stage_reports_its_predicted_seconds():
    X, y, _ = synthetic_regression(5000, random_state=0)
    model = DSGRegressor(random_state=0).fit(X, y)
    stages = {r["stage"]: r for r in model.fit_plan_.stages}
    for name in ("selection", "features", "solve"):
        assert stages[name]["predicted_seconds"] > 0
    assert "predicted seconds" in str(model.fit_plan_)


@pytest.mark.parametrize("effort", ["slow", 0.0, -1.0])
def test_a_bad_effort_is_refused(effort):
    X, y = _rows(3000)
    with pytest.raises(ValueError, match="effort"):
        DSGClassifier(effort=effort).fit(X, y)


def test_a_steep_gain_buys_a_doubling_past_the_budget():
    """Past the budget a doubling is still taken where the last one cut the held-out loss by
    ``growth_overrun_gain``, up to ``growth_overrun`` times the budget; without the overrun the
    same fit stops at the budget."""
    X, y = _rows(7500)  # 1,024 → 2,048 features cut the held-out loss by 9%
    plain = DSGClassifier(random_state=0).fit(
        X, y, limits=dataclasses.replace(LIMITS, growth_overrun=1.0))
    why = [r["why"] for r in plain.fit_plan_.stages if r["stage"] == "growth_stop"]
    assert plain.n_components_ >= 2 * LIMITS.solve_start_features and "past the budget" in why[0]
    steep = DSGClassifier(random_state=0).fit(
        X, y, limits=dataclasses.replace(LIMITS, growth_overrun_gain=0.0, growth_overrun=100.0))
    assert steep.n_components_ > plain.n_components_


def test_the_first_solve_is_predicted_from_the_narrowing_scaled_by_its_sketch():
    """The narrowing's iterations carry to the first full-size solve as ``√(s₀/s)`` of them
    (``s₀``, ``s``: the two sketches' rows), at least ``predicted_iterations``: at 675,000
    rows and 1,024 features the sketch has 5,273 rows against the narrowing's 1,024."""
    from types import SimpleNamespace
    from kernelstream.solvers.engine import first_solve_iterations, sketch_rows
    plan = DSGClassifier(random_state=0).fit(*_rows(3000)).fit_plan_
    least, r = plan.limits.predicted_iterations, plan.block_size * plan.narrow_blocks
    positions, floor = torch.arange(675_000), max(plan.selection_rows, plan.limits.sketch_least_rows)
    sketch = (positions[:floor], positions)
    cache = SimpleNamespace(n_rows=675_000)
    s0 = sketch_rows(plan.narrow_rows, r, floor, plan.limits)
    s = sketch_rows(675_000, r, floor, plan.limits)
    assert s > s0
    assert first_solve_iterations(plan, cache, r, sketch, 80) == pytest.approx(80 * (s0 / s) ** 0.5)
    assert first_solve_iterations(plan, cache, r, sketch, 22) == least
    assert first_solve_iterations(plan, cache, r, sketch, None) == least
    same = (positions[:floor], positions[:plan.narrow_rows])
    assert first_solve_iterations(plan, cache, r, same, 40) == pytest.approx(40)
