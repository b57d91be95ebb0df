"""The fit planner: what a ``fit`` of :class:`DSGRegressor` or :class:`DSGClassifier` will do.

One pure function, :func:`plan_fit`, turns the data's shape and the estimator's parameters into
an immutable :class:`FitPlan`: the route (the engine's exact dual or subsample route, epochs, one
pass), how ``σ`` and ``α`` are chosen and on how many rows, the candidates, the feature budget,
the solver, the loss "auto" resolves to, the stopping rule, and the limits the fit runs with.
Every threshold it compares against is a field of :class:`FitLimits`, documented once; the
measurements behind them are decision records under ``docs/decisions/``. The fitted estimator
keeps the plan as ``fit_plan_``; ``print`` it to read in words what was done and why, and what
each stage cost. Nothing here touches data or tensors. One module a job:

- :mod:`.limits`: the knobs (:class:`FitLimits`, :data:`LIMITS`);
- :mod:`.plan`: the plan's types (:class:`DataShape`, :class:`FitPlan`);
- :mod:`.budget`: the feature budgets, layouts and predicates the routes and sentences share;
- :mod:`.cost`: the cost model, each stage's work from the shapes and the growth's budget;
- :mod:`.routes`: route choice (:func:`plan_fit`);
- :mod:`.reasons`: the plan's sentences;
- :mod:`.gaussian_process`: the GP's and GoGP's plan (:func:`plan_gaussian_process`).
"""

from .budget import (DUAL_LOSSES, ENGINE_SOLVERS, cache_dtype, chooses, default_features,
                     dual_features, dual_layout, effective_dimension, engine_solves, feature_layout,
                     is_auto, looks_back, max_feature_blocks, nystroem_basis, spectral_start_features)
from .gaussian_process import GaussianProcessPlan, plan_gaussian_process
from .limits import LIMITS, FitLimits, default_cache_bytes, fit_limits
from .plan import DataShape, FitPlan
from .routes import plan_fit, resolve_loss, resolve_precond_eps, with_spectral_start

__all__ = ["is_auto", "FitLimits", "FitPlan", "GaussianProcessPlan", "DataShape", "LIMITS", "plan_fit",
           "plan_gaussian_process", "default_features", "dual_features", "max_feature_blocks",
           "feature_layout", "dual_layout", "resolve_loss", "resolve_precond_eps", "chooses",
           "cache_dtype", "nystroem_basis", "looks_back", "engine_solves", "default_cache_bytes",
           "DUAL_LOSSES", "ENGINE_SOLVERS", "fit_limits", "effective_dimension",
           "spectral_start_features", "with_spectral_start"]
