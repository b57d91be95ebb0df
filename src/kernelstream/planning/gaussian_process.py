"""The plan of :class:`DSGGaussianProcessRegressor` and :class:`GoGPRegressor`: which
hyper-parameters the marginal likelihood fits, on how many rows, and the variance route."""

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
    #: the GP's variance route ("targets", "landmarks", "operator"); GoGP's variant
    route: str
    reasons: tuple[str, ...] = ()

    def __str__(self) -> str:
        s = self.shape
        lines = [f"{self.estimator}.fit on {s.n_rows:,} rows x {s.n_features:,} features:",
                 f"  route: {self.route}"]
        return "\n".join(lines + [f"  - {reason}" for reason in self.reasons])


def plan_gaussian_process(estimator: str, shape: DataShape, params: dict, *,
                          test_points: bool = False, limits: FitLimits = LIMITS) -> GaussianProcessPlan:
    """The plan of a GP (``estimator="DSGGaussianProcessRegressor"``) or GoGP fit: which
    hyper-parameters the marginal likelihood fits and on how many rows, and the route;
    ``test_points``: the GP was given ``X_variance``. Pure, as :func:`plan_fit`."""
    chosen = tuple(name for name in ("sigma", "noise") if is_auto(params[name]))
    gogp = estimator == "GoGPRegressor"
    most = limits.gogp_evidence_rows if gogp else params["evidence_size"]
    rows = min(shape.n_rows, most) if chosen and (gogp or shape.n_rows >= 3) else 0
    if gogp:
        route = params["variant"]
    else:
        route = params["variance_method"]
        route = ("targets" if test_points else "landmarks") if route == "auto" else route
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
        reasons.append(f"variance by the {route!r} route" + (
            " (variance_method='auto': X_variance was given)" if params["variance_method"] == "auto"
            and test_points else " (variance_method='auto': no X_variance)"
            if params["variance_method"] == "auto" else ""))
    return GaussianProcessPlan(estimator, shape, chosen, rows, route, tuple(reasons))
