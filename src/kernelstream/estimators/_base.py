"""Shared scikit-learn plumbing of the doubly stochastic estimators.

Estimators validate input, convert it to tensors on the chosen device, and call the pure solver
(:func:`kernelstream.solvers.dsg_step`); they hold no algorithm of their own.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import (_check_sample_weight, check_consistent_length,
                                      check_is_fitted, validate_data)

from .._device import resolve_device, resolve_dtype, to_tensor
from .._validation import Integral, Interval, Real, StrOptions, check_sample_weight_values
from ..expansion import Expansion
from ..features import KERNELS, make_feature_map, resolve_sigma
from ..schedules import make_schedule
from ..solvers import DSGConfig, dsg_step
from ._rollback import unchanged_on_error

__all__ = ["DSGBase", "MIN_STEPS", "assign_parameters"]

#: with max_iter="auto", enough passes to take at least this many steps
MIN_STEPS = 32


def assign_parameters(estimator, arguments: dict) -> None:
    """``__init__`` body of every estimator: store each argument unchanged (sklearn's contract).

    Call as ``assign_parameters(self, locals())`` first thing in ``__init__``.
    """
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


class DSGBase(BaseEstimator):
    """Parameters, fitting loop and persistence shared by DSGRegressor and DSGClassifier."""

    _parameter_constraints: dict = {
        "kernel": [str],
        "sigma": [Interval(Real, 0, None, closed="neither"), StrOptions({"median"})],
        "sigma_scale": [Interval(Real, 0, None, closed="neither")],
        "kernel_params": [dict, None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "block_size": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "learning_rate": [StrOptions({"inverse", "constant", "invscaling"})],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "t0": [Interval(Real, 0, None, closed="neither")],
        "power_t": [Interval(Real, 0, None, closed="left")],
        "precondition": ["boolean"],
        "precond_eps": [Interval(Real, 0, None, closed="neither")],
        "average": ["boolean", Interval(Integral, 1, None, closed="left")],
        "max_features": [Interval(Integral, 1, None, closed="left"), None],
        "fit_intercept": ["boolean"],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "device": [str],
        "dtype": [StrOptions({"float32", "float64"})],
    }

    # -- hooks the subclasses fill in ----------------------------------------------------
    def _encode_targets(self, y, *, first: bool, classes=None) -> np.ndarray:
        """Validated targets in the encoding of the loss (and fit the label encoding)."""
        raise NotImplementedError

    def _make_loss(self):
        raise NotImplementedError

    def _n_outputs(self) -> int:
        raise NotImplementedError

    def _initial_intercept(self, targets: np.ndarray) -> np.ndarray | None:
        return None

    def _target_tensor(self, targets: np.ndarray, device) -> torch.Tensor:
        dtype = torch.int64 if targets.dtype.kind in "iu" else self._torch_dtype()
        return torch.as_tensor(targets, dtype=dtype, device=device)

    # -- validation ----------------------------------------------------------------------
    def _torch_dtype(self) -> torch.dtype:
        return resolve_dtype(self.dtype)

    def _check_params(self) -> None:
        if self.kernel not in KERNELS:
            raise ValueError(f"Unknown kernel {self.kernel!r}; choose one of {sorted(KERNELS)} "
                             "or register yours with kernelstream.features.register_kernel.")
        resolve_dtype(self.dtype)

    def _validate_X(self, X, *, reset: bool):
        return validate_data(self, X, reset=reset, accept_sparse="csr",
                             dtype=[np.float64, np.float32], ensure_min_samples=1)

    def _validate_sample_weight(self, sample_weight, X) -> np.ndarray:
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        check_sample_weight_values(sample_weight)
        return sample_weight

    # -- fitting -------------------------------------------------------------------------
    def _new_expansion(self, X, seed: int, device) -> Expansion:
        """A fresh expansion whose bandwidth comes from ``X`` (the median heuristic)."""
        feature_map = make_feature_map(self.kernel, X.shape[1], 1.0, self.block_size, seed,
                                       kernel_params=self.kernel_params)
        sigma = resolve_sigma(self.sigma, X, type(feature_map).distance, self.sigma_scale,
                              seed=seed % 2**32)
        feature_map.sigma = sigma
        max_blocks = None
        if self.max_features is not None:
            max_blocks = max(1, self.max_features // self.block_size)
        average_start = None if self.average is False else (1 if self.average is True else int(self.average))
        return Expansion(feature_map, self._n_outputs(), dtype=self._torch_dtype(), device=device,
                         max_blocks=max_blocks, average_start=average_start)

    def _schedule(self):
        return make_schedule(self.learning_rate, self.eta0, self.t0, self.power_t)

    def _solver_config(self) -> DSGConfig:
        return DSGConfig(
            schedule=self._schedule(),
            alpha=self.alpha, precondition=self.precondition, precond_eps=self.precond_eps,
            fit_intercept=self.fit_intercept,
        )

    def _n_epochs(self, n_samples: int) -> int:
        if self.max_iter != "auto":
            return int(self.max_iter)
        steps_per_epoch = max(1, round(n_samples / self.batch_size))
        return max(1, math.ceil(getattr(self, "min_steps", MIN_STEPS) / steps_per_epoch))

    def _batches(self, n_samples: int, n_epochs: int, rng: np.random.RandomState):
        """Row indices of each mini-batch: ``round(n/b)`` near-equal batches per epoch."""
        n_batches = max(1, round(n_samples / self.batch_size))
        for _ in range(n_epochs):
            order = rng.permutation(n_samples) if self.shuffle else np.arange(n_samples)
            yield from np.array_split(order, n_batches)

    def _run(self, expansion: Expansion, X, targets, sample_weight, n_epochs, rng) -> None:
        """Algorithm 1 over the mini-batches of ``n_epochs`` passes."""
        n_batches = n_epochs * max(1, round(X.shape[0] / self.batch_size))
        batches = ((X[rows], targets[rows], sample_weight[rows])  # lazily: one batch in memory
                   for rows in self._batches(X.shape[0], n_epochs, rng))
        self._run_batches(expansion, batches, n_batches)

    def _run_batches(self, expansion: Expansion, batches, n_batches: int) -> None:
        """One solver step per ``(X_rows, targets, weights)`` numpy batch of the iterable."""
        loss, config = self._make_loss(), self._solver_config()
        device, dtype = expansion.device, self._torch_dtype()
        progress = None
        if self.verbose:
            from tqdm.auto import tqdm

            progress = tqdm(total=n_batches, desc=type(self).__name__, unit="step")
        for Xb, yb, wb in batches:
            Xb = to_tensor(Xb, dtype, device)
            yb = self._target_tensor(yb, device)
            wb = torch.as_tensor(wb, dtype=dtype, device=device)
            batch_loss = dsg_step(expansion, loss, Xb, yb, wb, config)
            if progress is not None:
                progress.update(1)
                progress.set_postfix(loss=f"{batch_loss:.4g}", features=expansion.n_features)
        if progress is not None:
            progress.close()

    def _unchanged_on_error(self, mutates_expansion: bool = False):
        """Restore every attribute (and the expansion's coefficients) if the body raises."""
        return unchanged_on_error(self, ("expansion_",) if mutates_expansion else ())

    def _fit(self, X, y, sample_weight=None):
        with self._unchanged_on_error():
            return self._fit_unsafe(X, y, sample_weight)

    def _partial_fit(self, X, y, sample_weight=None, classes=None):
        with self._unchanged_on_error(mutates_expansion=True):
            return self._partial_fit_unsafe(X, y, sample_weight, classes)

    def _fit_unsafe(self, X, y, sample_weight=None):
        self._validate_params()
        self._check_params()
        X = self._validate_X(X, reset=True)
        targets = self._encode_targets(y, first=True)
        if targets is None:  # unsupervised machines
            targets = np.zeros((X.shape[0], 1))
        check_consistent_length(X, targets)
        sample_weight = self._validate_sample_weight(sample_weight, X)
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
        device = resolve_device(self.device)
        expansion = self._new_expansion(X, seed, device)
        n_epochs = self._n_epochs(X.shape[0])
        self._run(expansion, X, targets, sample_weight * self._class_weights(targets), n_epochs, rng)
        self._set_fitted(expansion, device, seed, n_epochs)
        self._rng_state = rng
        return self

    def _partial_fit_unsafe(self, X, y, sample_weight=None, classes=None):
        first = not hasattr(self, "expansion_")
        if first:
            self._validate_params()
            self._check_params()
        X = self._validate_X(X, reset=first)
        targets = self._encode_targets(y, first=first, classes=classes)
        if targets is None:  # unsupervised machines
            targets = np.zeros((X.shape[0], 1))
        check_consistent_length(X, targets)
        sample_weight = self._validate_sample_weight(sample_weight, X)
        if first:
            rng = check_random_state(self.random_state)
            seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
            device = resolve_device(self.device)
            expansion = self._new_expansion(X, seed, device)
        else:
            expansion, seed, device = self.expansion_, self.seed_, self.device_
            rng = getattr(self, "_rng_state", None) or check_random_state(self.random_state)
        self._run(expansion, X, targets, sample_weight * self._class_weights(targets), 1, rng)
        self._set_fitted(expansion, device, seed, getattr(self, "n_iter_", 0) + 1)
        self._rng_state = rng
        return self

    def _class_weights(self, targets) -> np.ndarray:
        return np.ones(targets.shape[0])

    def _set_fitted(self, expansion: Expansion, device, seed: int, n_iter: int) -> None:
        self.expansion_ = expansion
        self.device_ = device
        self.seed_ = seed
        self.sigma_ = expansion.feature_map.sigma
        self.n_components_ = expansion.n_features
        self.t_ = expansion.step
        self.n_iter_ = n_iter

    # -- prediction ----------------------------------------------------------------------
    def _raw_decision(self, X) -> np.ndarray:
        """Model output ``(n, C)`` as float64 numpy."""
        check_is_fitted(self, "expansion_")
        X = self._validate_X(X, reset=False)
        out = np.empty((X.shape[0], self.expansion_.n_outputs), dtype=np.float64)
        step = 8192
        for i in range(0, X.shape[0], step):
            Xb = to_tensor(X[i : i + step], self._torch_dtype(), self.device_)
            out[i : i + step] = self.expansion_.predict(Xb).double().cpu().numpy()
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- persistence ---------------------------------------------------------------------
    def save(self, path) -> None:
        """Save to one safetensors file: JSON configuration plus the coefficients.

        The file holds ``n_blocks·r·C`` float coefficients, the intercept, the seed and the
        configuration; it never grows with the number of training points or the input dimension.
        Load it with :func:`kernelstream.load`.
        """
        from ..io import save_model

        save_model(self, path)
