"""The plan of :class:`DSGGaussianProcessRegressor` and :class:`GoGPRegressor`: which
hyper-parameters the marginal likelihood fits, on how many rows, the GP's solve and its
variance route."""

from __future__ import annotations

from dataclasses import dataclass

from ..solvers.lengthscales import MIN_ROWS_PER_LENGTHSCALE, PER_FEATURE_LOO_RATIO
from .budget import is_auto
from .limits import FitLimits, LIMITS
from .plan import DataShape

__all__ = ["GaussianProcessPlan", "plan_gaussian_process"]


@dataclass(frozen=True)
class GaussianProcessPlan:
    """What :class:`DSGGaussianProcessRegressor` and :class:`GoGPRegressor` choose for the user:
    the output of :func:`plan_gaussian_process`, kept as ``fit_plan_``."""

    estimator: str
    shape: DataShape
    #: the hyper-parameters fitted by the marginal likelihood (ML-II), "sigma" and "noise"
    chosen: tuple[str, ...]
    #: rows of that fit (0: nothing is fitted)
    evidence_rows: int
    #: the GP's variance route ("exact", "targets", "landmarks", "operator"); GoGP's variant
    route: str
    reasons: tuple[str, ...] = ()
    #: the GP's solve: "exact" (one Cholesky factorisation of ``K + s²I``), "cg" (conjugate
    #: gradients on the exact kernel) or "dual" (the preconditioned dual iteration over
    #: random-feature blocks); "" for GoGP
    solve: str = ""

    def __str__(self) -> str:
        s = self.shape
        lines = [f"{self.estimator}.fit on {s.n_rows:,} rows x {s.n_features:,} features:",
                 f"  route: {self.route}"] + ([f"  solve: {self.solve}"] if self.solve else [])
        return "\n".join(lines + [f"  - {reason}" for reason in self.reasons])


def plan_gaussian_process(estimator: str, shape: DataShape, params: dict, *,
                          test_points: bool = False, limits: FitLimits = LIMITS) -> GaussianProcessPlan:
    """The plan of a GP (``estimator="DSGGaussianProcessRegressor"``) or GoGP fit: which
    hyper-parameters the marginal likelihood fits and on how many rows, and the route;
    ``test_points``: the GP was given ``X_variance``. Pure, as :func:`plan_fit`.

    The GP's ``solver="auto"`` is ``"exact"`` up to ``limits.exact_gp_rows`` rows without a
    feature budget (``n_components``) and with the variance of ``"auto"`` or ``"targets"``;
    ``"cg"`` up to ``limits.cg_gp_rows`` without a budget or ``X_variance``, with the variance of
    ``"auto"`` or ``"landmarks"``; else ``"dual"``. The exact solve's variance route without
    ``X_variance`` is ``"exact"``, conjugate gradients' ``"landmarks"``."""
    chosen = tuple(name for name in ("sigma", "noise") if is_auto(params[name]))
    gogp = estimator == "GoGPRegressor"
    most = limits.gogp_evidence_rows if gogp else params["evidence_size"]
    rows = min(shape.n_rows, most) if chosen and (gogp or shape.n_rows >= 3) else 0
    solve = "" if gogp else _gp_solve(shape, params, limits, test_points)
    if gogp:
        route = params["variant"]
    else:
        route = params["variance_method"]
        if route == "auto":
            route = "targets" if test_points else "exact" if solve == "exact" else "landmarks"
    per_feature = ("sigma" in chosen and shape.n_features >= 2
                   and params.get("kernel", "rbf") in ("rbf", "laplace", "matern"))
    where = (f"{rows:,} {'first' if gogp else 'seeded'} rows (at most "
             f"{'gogp_evidence_rows' if gogp else 'evidence_size'}={most:,})")
    if not chosen:
        reasons = ["sigma and noise as given"]
    elif per_feature and rows >= MIN_ROWS_PER_LENGTHSCALE * shape.n_features:
        reasons = [f"{' and '.join(chosen)} by the marginal likelihood on {where}, sigma both as one "
                   "bandwidth and as one lengthscale per feature" + ("" if gogp else
                                                                     " (amplitude at most var(y))")
                   + "; the per-feature lengthscales kept only if their leave-one-out error there "
                   f"is at most {PER_FEATURE_LOO_RATIO:g} x the bandwidth's (kernel_choice_ says which)"]
    else:
        reasons = [f"{' and '.join(chosen)} (and the amplitude) by the marginal likelihood on {where}"
                   + (f"; one bandwidth: fewer than {MIN_ROWS_PER_LENGTHSCALE} evidence rows per "
                      "feature" if per_feature else "")]
    if gogp:
        reasons.append("join_threshold " + ("sqrt(noise): a point joins when its distance to "
                                            "the inducing set's span exceeds the noise's"
                                            if params["join_threshold"] == "auto" else "as given"))
    else:
        reasons.append(_solve_reason(solve, shape, params, limits, test_points))
        reasons.append(f"variance by the {route!r} route" + (
            " (variance_method='auto': X_variance was given)" if params["variance_method"] == "auto"
            and test_points else " (variance_method='auto': no X_variance)"
            if params["variance_method"] == "auto" else ""))
    return GaussianProcessPlan(estimator, shape, chosen, rows, route, tuple(reasons), solve)


def _gp_solve(shape: DataShape, params: dict, limits: FitLimits, test_points: bool) -> str:
    """The GP's solve: ``solver`` as given, or by :func:`plan_gaussian_process`'s rule."""
    solver = params.get("solver", "auto")
    if solver != "auto":
        return solver
    budget, variance = params.get("n_components") is not None, params["variance_method"]
    if shape.n_rows <= limits.exact_gp_rows and not budget and variance in ("auto", "targets"):
        return "exact"
    if (shape.n_rows <= limits.cg_gp_rows and not budget and not test_points
            and variance in ("auto", "landmarks")):
        return "cg"
    return "dual"


def _solve_reason(solve: str, shape: DataShape, params: dict, limits: FitLimits,
                  test_points: bool) -> str:
    """The plan's sentence on the GP's solve."""
    given = " (solver as given)" if params.get("solver", "auto") != "auto" else ""
    if solve == "exact":
        return (f"the exact posterior by one Cholesky factorisation of the {shape.n_rows:,} x "
                f"{shape.n_rows:,} kernel matrix{given or f' (at most exact_gp_rows={limits.exact_gp_rows:,} rows)'}")
    if solve == "cg":
        return ("the exact kernel's duals by conjugate gradients preconditioned by the Nystrom "
                f"landmarks{given or f' (at most cg_gp_rows={limits.cg_gp_rows:,} rows)'}")
    why = given or (f": more than cg_gp_rows={limits.cg_gp_rows:,} rows"
                    if shape.n_rows > limits.cg_gp_rows else ": a feature budget (n_components)"
                    if params.get("n_components") is not None
                    else f": X_variance beyond exact_gp_rows={limits.exact_gp_rows:,} rows"
                    if test_points else f": variance_method={params['variance_method']!r}")
    return f"the dual iteration over random-feature blocks{why}"
