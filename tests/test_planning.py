"""The fit planner: each threshold of :class:`FitLimits` decided at its boundary, and the plan a
fitted estimator keeps is the route it took."""

import dataclasses
import math

import numpy as np
import pytest
from sklearn.datasets import make_classification

from kernelstream import DSGClassifier, DSGRegressor
from kernelstream.planning import (LIMITS, DataShape, FitPlan, default_features, dual_features,
                                   plan_fit, resolve_loss, resolve_precond_eps)

CLASSIFIER = DSGClassifier().get_params()
REGRESSOR = DSGRegressor().get_params()


def _plan(params=CLASSIFIER, n_classes=2, warm=False, limits=LIMITS, **shape):
    shape = {"n_rows": 1000, "n_features": 10, **shape}
    estimator = "DSGClassifier" if "class_weight" in params else "DSGRegressor"
    n_classes = n_classes if estimator == "DSGClassifier" else None
    return plan_fit(estimator, DataShape(n_classes=n_classes, **shape), params, warm=warm,
                    limits=limits)


def _with(params, **changes):
    return {**params, **changes}


L = LIMITS
#: bytes of one cached feature of the default kernel (rbf, float32 fits: held in float16)
ITEM = 2
#: limits under which no cache fits: rows beyond the dual route go by epochs
EPOCHS = dataclasses.replace(LIMITS, cache_bytes=0)


@pytest.mark.parametrize("params, shape, route", [
    (CLASSIFIER, dict(n_rows=L.dual_max_rows), "dual"),
    (CLASSIFIER, dict(n_rows=L.dual_max_rows + 1), "subsample"),
    (REGRESSOR, dict(n_rows=L.dual_max_rows), "dual"),
    (REGRESSOR, dict(n_rows=L.dual_max_rows + 1), "subsample"),
    (REGRESSOR, dict(n_rows=L.dual_max_rows + 1, limits=EPOCHS), "epochs"),  # no cache fits
    (_with(REGRESSOR, sigma=1.0, alpha=1e-3, early_stopping=False),  # every row trains
     dict(n_rows=L.cache_bytes // (ITEM * 1024) - 1), "subsample"),
    (_with(REGRESSOR, sigma=1.0, alpha=1e-3, early_stopping=False),
     dict(n_rows=L.cache_bytes // (ITEM * 1024)), "subsample"),  # no block fits: drawn each pass
    (REGRESSOR, dict(n_rows=5000, n_features=L.dual_dense_floats // L.subsample_rows), "subsample"),
    (REGRESSOR, dict(n_rows=5000, n_features=L.dual_dense_floats // L.subsample_rows + 1), "epochs"),
    (_with(REGRESSOR, loss="huber"), dict(n_rows=5000), "subsample"),          # Newton
    (_with(CLASSIFIER, loss="squared_hinge"), dict(n_rows=5000), "subsample"),  # Newton
    (_with(CLASSIFIER, loss="squared_hinge"), dict(n_rows=5000, n_classes=3), "subsample"),
    (_with(CLASSIFIER, loss="log_loss"), dict(n_rows=5000), "subsample"),
    (_with(CLASSIFIER, loss="hinge"), dict(n_rows=5000, n_classes=3), "subsample"),
    (_with(REGRESSOR, solver="sgd"), dict(n_rows=5000), "epochs"),            # epochs asked for
    (_with(REGRESSOR, max_iter=5), dict(n_rows=5000), "subsample"),           # bounds Newton
    (CLASSIFIER, dict(n_rows=5000, n_classes=3), "subsample"),               # least squares
    (REGRESSOR, dict(n_rows=5000, stream=True), "epochs"),
    (_with(REGRESSOR, checkpoint="fit.ckpt"), dict(n_rows=5000), "subsample"),  # resumable
    (_with(REGRESSOR, loss="huber"), dict(n_rows=100), "dual"),            # Newton on few rows
    (_with(REGRESSOR, max_iter=5), dict(n_rows=100), "dual"),
    (_with(REGRESSOR, solver="cg"), dict(n_rows=100), "dual"),
    (_with(REGRESSOR, solver="sgd"), dict(n_rows=100), "epochs"),          # epochs asked for
    (_with(REGRESSOR, solver="one_pass"), dict(n_rows=100), "one_pass"),
    (REGRESSOR, dict(n_rows=100, stream=True), "epochs"),                  # streams never
    (REGRESSOR, dict(n_rows=1024, n_features=L.dual_dense_floats // 1024, sparse=True), "dual"),
    (REGRESSOR, dict(n_rows=1024, n_features=L.dual_dense_floats // 1024 + 1, sparse=True), "epochs"),
    (REGRESSOR, dict(n_rows=1024, n_features=L.dual_dense_floats // 1024 + 1), "dual"),  # dense
])
def test_route_at_each_boundary(params, shape, route):
    assert _plan(params, **shape).route == route


def test_features_are_drawn_every_pass_where_the_cache_holds_no_block():
    """One block of the training rows past ``cache_bytes``: the engine's route, its features
    drawn in every pass (no refinement on every row, no look back: each costs passes), said in
    the plan; within it they are cached; ``cache_bytes=0`` still means epochs."""
    params = _with(REGRESSOR, sigma=1.0, alpha=1e-3, early_stopping=False)
    room = L.cache_bytes // (ITEM * 1024)
    cached, drawn = _plan(params, n_rows=room - 1), _plan(params, n_rows=room)
    assert not cached.regenerate and drawn.regenerate and drawn.route == "subsample"
    assert not drawn.refine and not drawn.look_back
    assert any("drawn again in every pass" in reason for reason in drawn.reasons)
    assert _plan(params, n_rows=room, limits=EPOCHS).route == "epochs"


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_classifier_whose_features_are_drawn_solves_least_squares_alone(n_classes):
    """``loss="auto"`` with the features drawn in every pass: least squares is compared and
    solved (each Newton step of the squared hinge or softmax would read every row: 118 passes
    on 200,000 rows against the plan's 20); cached, two classes compare the squared hinge."""
    room = L.cache_bytes // (ITEM * 1024)
    drawn, cached = _plan(n_classes=n_classes, n_rows=2 * room), _plan(n_classes=n_classes, n_rows=room // 2)
    assert drawn.regenerate and drawn.loss == "squared" and drawn.losses_compared == ("squared",)
    assert any("least squares alone" in reason for reason in drawn.reasons)
    assert not cached.regenerate
    assert cached.losses_compared == (("squared", "squared_hinge") if n_classes == 2 else ("squared",))


@pytest.mark.parametrize("params, shape, selection, fallback", [
    # two classes, squared hinge: the dual subsample, cross-validation behind it
    (CLASSIFIER, dict(n_rows=L.cv_max_rows), "dual_subsample", "cross_validation"),
    (CLASSIFIER, dict(n_rows=L.cv_max_rows + 1), "race", None),
    (CLASSIFIER, dict(n_rows=3000, n_features=L.dual_dense_floats // L.dual_max_rows),
     "dual_subsample", "cross_validation"),
    (CLASSIFIER, dict(n_rows=3000, n_features=L.dual_dense_floats // L.dual_max_rows + 1),
     "cross_validation", None),
    (REGRESSOR, dict(n_rows=L.cv_max_rows), "cross_validation", None),
    (REGRESSOR, dict(n_rows=L.cv_max_rows + 1), "race", None),
    (_with(REGRESSOR, sigma=1.0), dict(n_rows=10000), "validation", None),  # alphas side by side
    (_with(REGRESSOR, sigma=1.0, alpha=1e-4), dict(n_rows=10000), "none", None),
    (CLASSIFIER, dict(n_rows=10000, stream=True, selection_rows=L.cv_max_rows),
     "dual_subsample", "cross_validation"),                                  # a stream's sample
])
def test_selection_at_each_boundary(params, shape, selection, fallback):
    plan = _plan(params, limits=EPOCHS, **shape)
    assert (plan.selection, plan.fallback_selection) == (selection, fallback)


def test_three_classes_take_no_dual_subsample():
    assert _plan(n_classes=3, n_rows=3000, limits=EPOCHS).selection == "cross_validation"


@pytest.mark.parametrize("block_size, judge", [(L.direct_max_features - 1, "direct"),
                                              (L.direct_max_features, "epochs")])
def test_candidates_are_judged_exactly_while_the_normal_equations_are_small(block_size, judge):
    assert _plan(_with(REGRESSOR, block_size=block_size), n_rows=5000, limits=EPOCHS).judge == judge


def test_the_default_budget_is_clipped_at_both_ends():
    assert default_features(10) == L.min_default_features
    assert default_features(10**7) == L.max_default_features
    n = 30000  # 16·√n·ln n inside the clip
    assert default_features(n) == int(16 * np.sqrt(n) * np.log(n))
    assert dual_features(1024) == L.max_dual_features          # 2^24 / 1024 = 16,384
    assert dual_features(2048) == L.dual_feature_work // 2048  # 8,192 > the default budget


@pytest.mark.parametrize("limits", [LIMITS, EPOCHS])
def test_the_budget_is_of_the_training_rows_after_the_split(limits):
    plan = _plan(REGRESSOR, n_rows=20000, limits=limits)
    n_train = 20000 - int(np.ceil(0.1 * 20000))
    assert plan.max_blocks == int(np.ceil(default_features(n_train) / plan.block_size))
    assert plan.start_blocks == 1 and plan.validation_fraction == 0.1
    given = _plan(_with(REGRESSOR, n_components=3000, block_size=1024), n_rows=20000,
                  limits=limits)
    assert (given.block_size, given.start_blocks, given.max_blocks) == (1000, 3, 3)


def test_the_subsample_route_grows_features_only_within_the_cache():
    n = 4 * 10**6  # 8 GiB of float16 hold about a thousand features of four million rows
    plan = _plan(REGRESSOR, n_rows=n)
    n_train = n - int(np.ceil(0.1 * n))
    assert plan.route == "subsample" and plan.max_blocks == L.cache_bytes // (ITEM * (n_train + 1) * 1024)
    assert plan.selection_rows == L.subsample_rows
    assert plan.selection_features == min(L.subsample_features, plan.n_components)
    fixed = _plan(_with(REGRESSOR, sigma=1.0, alpha=1e-4, early_stopping=False), n_rows=10000)
    assert (fixed.selection, fixed.validation_fraction) == ("none", None)
    assert fixed.start_blocks == fixed.max_blocks  # no held-out rows to judge growth: the budget


@pytest.mark.parametrize("changes, limits, dtype", [
    ({}, L, "float16"),                                   # bounded cosines in a float32 fit
    ({"kernel": "laplace"}, L, "float16"),
    ({"kernel": "rbf_fastfood"}, L, "float16"),
    ({"dtype": "float64"}, L, "float64"),                 # the user asked for float64
    ({"kernel": "arccos"}, L, "float32"),                 # unbounded: the fit's dtype
    ({"kernel": "polynomial"}, L, "float32"),
    ({}, dataclasses.replace(L, half_cache=False), "float32"),
])
def test_the_cache_holds_bounded_features_in_float16(changes, limits, dtype):
    plan = _plan(_with(REGRESSOR, **changes), n_rows=5000, limits=limits)
    assert plan.route == "subsample" and plan.cache_dtype == dtype
    assert f"features cached in {dtype}" in "\n".join(plan.reasons)
    n = 10**6  # the blocks the budget holds follow the bytes of a cached feature: 4, 2 or 1
    whole = dataclasses.replace(limits, growth_cache_bytes=limits.cache_bytes)
    wide = _plan(_with(REGRESSOR, **changes, block_size=1024), n_rows=n, limits=whole)
    item = {"float16": 2, "float32": 4, "float64": 8}[dtype]
    n_train = n - int(np.ceil(0.1 * n))
    assert wide.max_blocks == L.cache_bytes // (item * (n_train + 1) * 1024) >= 1


@pytest.mark.parametrize("params, n_train, refine", [
    (REGRESSOR, L.refine_rows - 1, False),
    (REGRESSOR, L.refine_rows, True),                    # a challenger on every training row
    (CLASSIFIER, L.refine_rows, True),
    (_with(REGRESSOR, sigma=1.0), L.refine_rows, False),  # a bandwidth given: nothing to refine
])
def test_the_full_rows_refine_the_bandwidth_from_refine_rows(params, n_train, refine):
    n = math.ceil(n_train / 0.9)  # the held-out tenth is ceil(0.1 n)
    while n - math.ceil(0.1 * n) > n_train:
        n -= 1
    plan = _plan(params, n_rows=n)
    assert plan.route == "subsample" and n - math.ceil(0.1 * n) == n_train
    assert plan.refine is refine
    assert any("challenges sigma by one solve on every training row" in r for r in plan.reasons) is refine


@pytest.mark.parametrize("params, per_feature, look_back", [
    (REGRESSOR, L.look_back_rows_per_feature, True),       # many rows a feature: look back
    (REGRESSOR, L.look_back_rows_per_feature - 1, False),
    (CLASSIFIER, L.look_back_rows_per_feature, True),
    (_with(REGRESSOR, n_components=2048), 10**3, False),   # a size given: no doubling
])
def test_the_first_doubling_looks_back_where_the_rows_are_many_per_feature(params, per_feature,
                                                                           look_back):
    """From ``look_back_rows_per_feature`` training rows per feature of the first doubled size,
    a solve at half the start size must lose to it before the first doubling."""
    start = L.solve_start_features
    n_train = per_feature * 2 * start
    n = math.ceil(n_train / 0.9)
    while n - math.ceil(0.1 * n) > n_train:
        n -= 1
    n += n - math.ceil(0.1 * n) < n_train
    plan = _plan(params, n_rows=n, limits=dataclasses.replace(L, growth_cache_bytes=L.cache_bytes))
    assert plan.route == "subsample" and plan.basis == "random_features"
    assert plan.look_back is look_back
    assert any(f"the first doubling only where {start // 2:,} features" in r
               for r in plan.reasons) is look_back


def test_the_narrowing_compares_bandwidths_at_the_start_size_whatever_n_components():
    """The narrowing's challengers are solved at the growth's start features, also where
    ``n_components`` fixes a larger size (at 4,096 given they were solved at 4,096: 12 of a
    17 s fit on 20,000 rows, against 1.3 s)."""
    grown = _plan(CLASSIFIER, n_rows=40000)
    given = _plan(_with(CLASSIFIER, n_components=8192), n_rows=40000)
    assert grown.narrow and given.narrow and given.start_blocks == given.max_blocks == 8
    assert grown.narrow_blocks == given.narrow_blocks == grown.start_blocks == 1
    assert "at 1,024 features" in str(given)


def test_without_choices_or_early_stopping_every_row_trains():
    params = _with(REGRESSOR, sigma=1.0, alpha=1e-4, early_stopping=False)
    assert _plan(params, n_rows=10000).validation_fraction is None


@pytest.mark.parametrize("loss, solver, n_classes, few_rows, resolved", [
    ("auto", "preconditioned", 2, False, L.auto_binary_loss),
    ("auto", "preconditioned", 2, True, L.auto_binary_loss),  # with least squares beside it
    ("auto", "preconditioned", 3, True, "squared"),
    ("auto", "preconditioned", 3, False, "logistic"),
    ("auto", "cg", 2, False, "squared"),
    ("auto", "one_pass", 2, False, "logistic"),
    ("log_loss", "preconditioned", 2, False, "logistic"),
    ("hinge", "preconditioned", 2, False, "hinge"),
    ("huber", "preconditioned", None, False, "huber"),
])
def test_loss_auto_resolves_as_documented(loss, solver, n_classes, few_rows, resolved):
    assert resolve_loss(loss, solver, n_classes, few_rows) == resolved


@pytest.mark.parametrize("eps, loss, n_classes, resolved", [
    ("auto", "logistic", 3, L.precond_eps_softmax), ("auto", "softmax", 10, L.precond_eps_softmax),
    ("auto", "logistic", 2, L.precond_eps_binary), ("auto", "squared_hinge", 5, L.precond_eps_binary),
    (0.7, "logistic", 3, 0.7)])
def test_precond_eps_auto(eps, loss, n_classes, resolved):
    assert resolve_precond_eps(eps, loss, n_classes) == resolved


def test_binary_auto_on_the_dual_route_compares_two_losses():
    plan = _plan(n_rows=500)
    assert plan.losses_compared == ("squared", "squared_hinge")
    assert _plan(_with(CLASSIFIER, loss="squared"), n_rows=500).losses_compared == ("squared",)


def test_one_pass_takes_enough_epochs_for_the_minimum_steps():
    params = _with(REGRESSOR, solver="one_pass", batch_size=100)
    assert _plan(params, n_rows=100).max_iter == L.min_steps
    assert _plan(params, n_rows=100 * L.min_steps).max_iter == 1


def test_changed_limits_change_the_plan_and_nothing_else():
    limits = dataclasses.replace(LIMITS, dual_max_rows=100)
    shape = DataShape(n_rows=500, n_features=3, n_classes=2)
    assert plan_fit("DSGClassifier", shape, CLASSIFIER, limits=limits).route == "subsample"
    assert plan_fit("DSGClassifier", shape, CLASSIFIER).route == "dual"


def test_the_plan_is_pure_and_immutable():
    assert _plan(n_rows=3000) == _plan(n_rows=3000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        _plan().route = "dual"


def test_warm_start_plans_no_selection():
    plan = _plan(REGRESSOR, n_rows=10000, warm=True)
    assert (plan.route, plan.selection, plan.narrow) == ("warm_start", "none", False)


def test_a_fitted_estimator_keeps_the_plan_of_the_route_it_took():
    X, y = make_classification(2100, n_features=5, random_state=0)
    small = dict(n_components=128, block_size=128, random_state=0)
    dual = DSGClassifier(**small, sigma=2.0, alpha=1e-3).fit(X[:L.dual_max_rows], y[:L.dual_max_rows])
    assert isinstance(dual.fit_plan_, FitPlan) and dual.fit_plan_.route == "dual"
    assert "param_loss" in dual.cv_results_ and len(dual.feature_growth_) == 1
    once = DSGRegressor(**small, sigma=1.0, alpha=1e-4).fit(X, y)
    assert once.fit_plan_.route == "subsample" and once.fit_plan_.selection == "none"
    assert once.loss_curve_ and once.n_components_ == 128
    epochs = DSGRegressor(**small, sigma=1.0, alpha=1e-4, solver="sgd").fit(X, y)
    assert epochs.fit_plan_.route == "epochs" and epochs.fit_plan_.selection == "none"
    huber = DSGRegressor(**small, sigma=1.0, alpha=1e-4, loss="huber").fit(X, y)
    assert huber.fit_plan_.route == "subsample" and huber.fit_plan_.loss == "huber"
    assert [r["stage"] for r in huber.fit_plan_.stages][-1] == "newton"
    text = str(once.fit_plan_)
    assert text.startswith("DSGRegressor.fit on arrays of 2,100 rows x 5 features")
    assert "dual_max_rows=2,048" in text


def test_the_gaussian_processes_plan_their_marginal_likelihood_and_route():
    from kernelstream import DSGGaussianProcessRegressor, GoGPRegressor
    from kernelstream.planning import plan_gaussian_process

    gp, gogp = DSGGaussianProcessRegressor().get_params(), GoGPRegressor().get_params()
    shape = DataShape(n_rows=5000, n_features=4)
    plan = plan_gaussian_process("DSGGaussianProcessRegressor", shape, gp)
    assert (plan.chosen, plan.evidence_rows, plan.route) == (("sigma", "noise"), 1000, "landmarks")
    assert plan_gaussian_process("DSGGaussianProcessRegressor", shape, gp,
                                 test_points=True).route == "targets"
    assert plan.solve == "cg" and plan.route == "landmarks" and "cg_gp_rows" in str(plan)
    many = DataShape(n_rows=L.cg_gp_rows + 1, n_features=4)
    assert plan_gaussian_process("DSGGaussianProcessRegressor", many, gp).solve == "dual"
    assert plan_gaussian_process("DSGGaussianProcessRegressor", shape, gp,
                                 test_points=True).solve == "dual"  # the targets route
    few = DataShape(n_rows=L.exact_gp_rows, n_features=4)  # the exact posterior up to the limit
    plan = plan_gaussian_process("DSGGaussianProcessRegressor", few, gp)
    assert (plan.solve, plan.route) == ("exact", "exact")
    lower = dataclasses.replace(L, exact_gp_rows=L.exact_gp_rows - 1)  # a plan of other limits
    assert plan_gaussian_process("DSGGaussianProcessRegressor", few, gp, limits=lower).solve == "cg"
    for given in ({"n_components": 1024}, {"variance_method": "operator"}, {"solver": "dual"}):
        assert plan_gaussian_process("DSGGaussianProcessRegressor", few, {**gp, **given}).solve == "dual"
    landmarks = {**gp, "variance_method": "landmarks"}  # not the exact variance: cg's
    assert plan_gaussian_process("DSGGaussianProcessRegressor", few, landmarks).solve == "cg"
    given = plan_gaussian_process("DSGGaussianProcessRegressor", shape, {**gp, "sigma": 1.0,
                                                                         "noise": 0.1})
    assert (given.chosen, given.evidence_rows) == ((), 0)
    plan = plan_gaussian_process("GoGPRegressor", shape, gogp)
    assert (plan.evidence_rows, plan.route) == (L.gogp_evidence_rows, "kernel")
    assert plan_gaussian_process("GoGPRegressor", DataShape(n_rows=200, n_features=4),
                                 gogp).evidence_rows == 200


def test_fitted_gaussian_processes_keep_their_plan():
    from kernelstream import DSGGaussianProcessRegressor, GoGPRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    gp = DSGGaussianProcessRegressor(n_steps=8, random_state=0).fit(X, y)
    assert gp.fit_plan_.route == gp.variance_method_ == "exact" == gp.solver_
    dual = DSGGaussianProcessRegressor(n_steps=8, solver="dual", random_state=0).fit(X, y)
    assert dual.fit_plan_.route == dual.variance_method_ == "landmarks"
    assert "solve: dual" in str(dual.fit_plan_) and "(solver as given)" in str(dual.fit_plan_)
    assert "marginal likelihood on 300 seeded rows" in str(gp.fit_plan_)
    gogp = GoGPRegressor(random_state=0).fit(X, y)
    assert gogp.fit_plan_.evidence_rows == 300 and "join_threshold sqrt(noise)" in str(gogp.fit_plan_)


@pytest.mark.parametrize("params, n_rows, centres", [
    (_with(CLASSIFIER, basis="nystroem"), 60000, L.nystroem_centres),
    (_with(REGRESSOR, basis="nystroem"), 10000, 8192),                 # at most the training rows
    (_with(CLASSIFIER, basis="nystroem", n_components=3000), 60000, 3000),  # as given
])
def test_the_nystroem_basis_takes_its_centres_from_the_training_rows(params, n_rows, centres):
    plan = _plan(params, n_rows=n_rows, n_features=784)
    assert plan.route == "subsample" and plan.basis == "nystroem"
    assert plan.n_components == centres and plan.start_blocks == plan.max_blocks
    assert plan.cache_dtype == "float32" and any("basis='nystroem'" in r for r in plan.reasons)
    assert _plan(CLASSIFIER, n_rows=n_rows, n_features=784).basis == "random_features"


@pytest.mark.parametrize("params, shape, why", [
    (_with(CLASSIFIER, basis="nystroem"), dict(n_rows=L.dual_max_rows), "solved exactly in the dual"),
    (_with(CLASSIFIER, basis="nystroem"), dict(n_rows=10000, sparse=True), "sparse rows"),
    (_with(CLASSIFIER, basis="nystroem", solver="sgd"), dict(n_rows=10000), "solver='sgd'"),
    (_with(CLASSIFIER, basis="nystroem", solver="one_pass"), dict(n_rows=10000), "solver='one_pass'"),
])
def test_a_nystroem_basis_off_the_subsample_route_is_a_clear_error(params, shape, why):
    with pytest.raises(ValueError, match=f"basis='nystroem' needs the subsample route.*{why}"):
        _plan(params, **shape)
    with pytest.raises(ValueError, match="warm start"):
        _plan(_with(CLASSIFIER, basis="nystroem"), n_rows=10000, warm=True)


@pytest.mark.parametrize("params, shape, nystroem, path, finish", [
    (CLASSIFIER, dict(n_classes=10), True, True, True),
    (CLASSIFIER, dict(n_classes=2), False, False, False),  # two classes: random features
    (REGRESSOR, dict(), False, False, False),
    (CLASSIFIER, dict(n_classes=10, sparse=True), False, False, False),
    (_with(CLASSIFIER, loss="squared"), dict(n_classes=10), False, False, False),
    (_with(CLASSIFIER, alpha=1e-6), dict(n_classes=10), True, False, True),  # α as given
    (_with(CLASSIFIER, sigma=5.0, alpha=1e-6, n_components=4096), dict(n_classes=10), True, False,
     False),  # nothing to judge: every row trains, no held-out rows
    (_with(CLASSIFIER, basis="nystroem", loss="squared"), dict(n_classes=10), True, True, False),
    (_with(CLASSIFIER, basis="random_features"), dict(n_classes=10), False, False, False),
])
def test_auto_takes_the_centres_for_three_or_more_classes(params, shape, nystroem, path, finish):
    """``basis="auto"``: a Nyström basis for three or more classes with ``loss="auto"`` on dense
    rows, whose fit challenges the carried ``α`` (``alpha="auto"``, held-out rows) and finishes
    with the squared hinge (held-out rows); random features otherwise."""
    plan = _plan(params, n_rows=60000, n_features=784, **shape)
    assert plan.route == "subsample"
    assert (plan.basis == "nystroem", plan.alpha_path, plan.hinge_finish) == (nystroem, path, finish)
    assert ("then 'squared_hinge'" in str(plan)) == finish


def test_auto_keeps_random_features_on_fewer_rows_than_twice_the_centres():
    assert _plan(CLASSIFIER, n_classes=10, n_rows=40000, n_features=784).basis == "nystroem"
    assert _plan(CLASSIFIER, n_classes=10, n_rows=36000, n_features=784).basis == "random_features"
    assert _plan(_with(CLASSIFIER, n_components=4096), n_classes=10, n_rows=10000,
                 n_features=784).basis == "nystroem"  # 9,000 training rows, 4,096 centres
    assert _plan(_with(CLASSIFIER, n_components=4096), n_classes=10, n_rows=8000,
                 n_features=784).basis == "random_features"


def test_auto_keeps_random_features_where_the_cache_cannot_hold_the_centres_columns():
    small = dataclasses.replace(LIMITS, cache_bytes=8 * 60000 * 8192)  # half the centres, in float64
    assert _plan(CLASSIFIER, n_classes=10, n_rows=60000, n_features=784, limits=small).basis == "random_features"
    assert _plan(_with(CLASSIFIER, basis="nystroem"), n_classes=10, n_rows=60000, n_features=784,
                 limits=small).n_components == 8192  # asked for: what the cache holds


def test_the_fitted_plan_and_its_stages_are_saved_and_loaded_with_the_model(tmp_path):
    """``fit_plan_`` is the fit's report: its choices, limits and stages come back from the
    model file as they were (the same words and the same stage records)."""
    import kernelstream

    X, y = make_classification(3000, n_features=5, random_state=0)
    model = DSGRegressor(random_state=0, block_size=256).fit(X, y)
    model.save(tmp_path / "m.kst")
    loaded = kernelstream.load(tmp_path / "m.kst")
    assert isinstance(loaded.fit_plan_, FitPlan) and loaded.fit_plan_.stages
    assert str(loaded.fit_plan_) == str(model.fit_plan_)
    assert loaded.fit_plan_.limits == model.fit_plan_.limits
    assert [r["stage"] for r in loaded.fit_plan_.stages] == [r["stage"] for r in model.fit_plan_.stages]


def test_a_growth_caches_within_growth_cache_bytes_unless_cache_bytes_is_given():
    """cache_bytes="auto": a growth of random features holds at most ``growth_cache_bytes``
    (a default fit of 10^6 rows stays under 3 GB); a number given is the budget itself."""
    auto = _plan(REGRESSOR, n_rows=10**6)
    given = _plan(_with(REGRESSOR, cache_bytes=6 * 2**30), n_rows=10**6)
    assert auto.cache_bytes == min(L.cache_bytes, L.growth_cache_bytes)
    assert given.cache_bytes == 6 * 2**30 and given.max_blocks >= auto.max_blocks
    assert "growth_cache_bytes" in "\n".join(auto.reasons) or auto.cache_bytes == L.cache_bytes
    assert auto.max_blocks == 1 and auto.growth_budget == float("inf")  # one size: no growth
    grows = _plan(REGRESSOR, n_rows=10**5)
    assert grows.growth_budget == pytest.approx(L.growth_units_per_row * (10**5 - 10**4)
                                                + L.growth_units_fixed)


def test_new_memory_past_the_warm_bytes_is_priced_at_the_fresh_rate():
    """A stage's first ``warm_bytes`` of new memory at the timed rate, the rest at the fresh
    one (never faster than the timed rate): the first write of a large cache."""
    from kernelstream.planning.cost import Work
    from kernelstream.solvers.throughput import Throughput
    rates = Throughput(1e9, 1e9, 1e8, allocated_bytes_per_second=4e9,
                       fresh_bytes_per_second=1e9, warm_bytes=1e9)
    assert Work(allocated=5e8).seconds(rates) == pytest.approx(0.125)
    assert Work(allocated=3e9).seconds(rates) == pytest.approx(0.25 + 2.0)
    slow = dataclasses.replace(rates, allocated_bytes_per_second=5e8)
    assert Work(allocated=3e9).seconds(slow) == pytest.approx(6.0)
