"""Per-feature lengthscales by the exact GP marginal likelihood (or kernel ridge's closed-form
leave-one-out) on a subsample: relevance is recovered, gradients are exact, errors are clear."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_friedman1

from kernelstream.features import make_feature_map
from kernelstream.solvers.gp_evidence import neg_log_marginal_likelihood
from kernelstream.solvers.lengthscales import (_Problem, _value_and_gradient, choose_lengthscales,
                                               fit_lengthscales, initial_lengthscales, loo_error)


def _friedman(n=300, d=10, seed=0):
    """Friedman #1: features 0–4 matter (0–2 non-linearly), 5.. are noise; standardised."""
    X, y = make_friedman1(n, n_features=d, noise=0.5, random_state=seed)
    return (X - X.mean(0)) / X.std(0), y


@pytest.mark.parametrize("objective", ["marginal_likelihood", "loo"])
def test_irrelevant_features_get_much_larger_lengthscales(objective):
    X, y = _friedman()
    ell, noise, signal, info = fit_lengthscales(X, y, rows=300, objective=objective, max_iter=40)
    assert np.median(ell[5:]) > 10 * np.median(ell[:3]), ell
    if objective == "marginal_likelihood":  # the sharper of the two
        assert ell[5:].min() > 2.5 * ell[:3].max(), ell
    assert 0.05 < noise < 2.0 and signal > 1.0  # noise variance 0.25 in y²
    assert info["rows"] == 300 and info["n_iter"] <= 40 and info["objective"] == objective


def test_labels_as_targets_find_the_relevant_features():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4, 1.0, -1.0)  # a circle in features 0 and 1
    ell, *_ = fit_lengthscales(X, y, rows=300, max_iter=40)
    assert ell[2:].min() > 3 * ell[:2].max(), ell


@pytest.mark.parametrize("kernel", ["laplace", "matern"])
def test_other_families_find_the_relevant_features(kernel):
    X, y = _friedman(200)
    ell, *_ = fit_lengthscales(X, y, kernel=kernel, rows=200, max_iter=30)
    assert np.median(ell[5:]) > 2 * np.median(ell[:3]), ell


@pytest.mark.parametrize("gaussian", [False, True], ids=["autograd", "closed_form"])
@pytest.mark.parametrize("objective", ["marginal_likelihood", "loo"])
def test_the_gradient_is_the_autograd_gradient(objective, gaussian):
    X, y = _friedman(60, 5)
    X = X[:, :4]
    y = torch.as_tensor((y - y.mean()) / y.std())
    kernel = make_feature_map("rbf", 4, 1.0, 2, 0).kernel_at
    theta = np.r_[np.log([1.0, 2.0, 3.0, 4.0]), 0.3, np.log(0.2)]
    problem = _Problem(torch.as_tensor(X), y, kernel, objective, gaussian=gaussian)
    value, grad = _value_and_gradient(problem, theta)
    params = torch.tensor(theta, requires_grad=True)
    K = kernel(torch.as_tensor(X), torch.as_tensor(X), torch.exp(params[:4]))
    signal, noise = torch.exp(params[4]), torch.exp(params[5]) + 1e-6
    expected = (loo_error(K, y, noise / signal) if objective == "loo"
                else neg_log_marginal_likelihood(K, y, signal, noise) / len(y))
    expected.backward()
    assert value == pytest.approx(float(expected.detach()), rel=1e-10)
    mask = slice(None) if objective != "loo" else [0, 1, 2, 3, 5]
    np.testing.assert_allclose(grad[mask], params.grad.numpy()[mask], rtol=1e-6, atol=1e-10)


def test_loo_error_is_refitting_without_each_row():
    rng = np.random.default_rng(1)
    X, y, lam = rng.normal(size=(25, 3)), rng.normal(size=25), 0.3
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    errors = []
    for i in range(25):
        keep = np.arange(25) != i
        weights = np.linalg.solve(K[keep][:, keep] + lam * np.eye(24), y[keep])
        errors.append(y[i] - K[i, keep] @ weights)
    closed = loo_error(torch.as_tensor(K), torch.as_tensor(y), lam)
    assert float(closed) == pytest.approx(np.mean(np.square(errors)), rel=1e-10)


def test_the_guard_scores_the_exact_gp_leave_one_out():
    """``choose_lengthscales``'s numbers are the GP's leave-one-out errors, refitted without each
    row (``C = a·K_ℓ + s²I``), in units of mean(y²)."""
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    ell, a, s2 = np.array([0.7, 1.5, 4.0]), 2.0, 0.3
    K = np.exp(-0.5 * (((X[:, None] - X[None]) / ell) ** 2).sum(-1))
    errors = []
    for i in range(30):
        keep = np.arange(30) != i
        weights = np.linalg.solve(a * K[keep][:, keep] + s2 * np.eye(29), y[keep])
        errors.append(y[i] - a * K[i, keep] @ weights)
    choice, loo = choose_lengthscales(X, y, (ell, a, s2), (1.5, a, s2))
    assert loo[0] == pytest.approx(np.mean(np.square(errors)) / np.mean(y**2), rel=1e-10)
    assert choice == ("per_feature" if loo[0] <= 0.8 * loo[1] else "isotropic")


def test_the_guard_keeps_per_feature_lengthscales_only_when_they_clearly_pay():
    X, y = _friedman(300)
    y = y - y.mean()
    ell, noise, signal, _ = fit_lengthscales(X, y, rows=300, max_iter=40)
    iso = (float(np.sqrt(X.shape[1])), signal, noise)  # the start, one bandwidth
    choice, loo = choose_lengthscales(X, y, (ell, signal, noise), iso)
    assert choice == "per_feature" and loo[0] < 0.5 * loo[1], loo
    same, tie = choose_lengthscales(X, y, (np.full(10, 2.0), signal, noise), (2.0, signal, noise))
    assert same == "isotropic" and tie[0] == pytest.approx(tie[1], rel=1e-12)  # a tie: isotropic
    assert choose_lengthscales(X, y, (ell, signal, noise), iso, ratio=loo[0] / loo[1] / 2)[0] == "isotropic"
    few, _ = choose_lengthscales(X[:199], y[:199], (ell, signal, noise), iso)  # < 20 rows per feature
    assert few == "isotropic"


def test_the_subsample_and_the_budgets_are_kept():
    X, y = _friedman(400)
    ell, _, _, info = fit_lengthscales(X, y, rows=100, max_iter=3, seed=5)
    assert info["rows"] == 100 and info["n_iter"] <= 3 and ell.shape == (10,)
    again = fit_lengthscales(X, y, rows=100, max_iter=3, seed=5)[0]
    np.testing.assert_array_equal(ell, again)  # seeded
    assert fit_lengthscales(X, y, rows=100, max_seconds=0.0)[3]["n_iter"] <= 1


def test_the_start_is_the_per_feature_scale():
    X = np.c_[np.full(50, 0.1), np.linspace(0, 1, 50), 3 * np.linspace(0, 1, 50)]
    start = initial_lengthscales(X)
    assert start[2] == pytest.approx(3 * start[1]) and start[0] == pytest.approx(2 * start[1])
    assert np.all(initial_lengthscales(X, "median") == initial_lengthscales(X, "median")[0])


def test_bad_arguments_are_refused():
    X, y = _friedman(50)
    with pytest.raises(ValueError, match="no per-feature lengthscales"):
        fit_lengthscales(X, y, kernel="polynomial")
    with pytest.raises(ValueError, match="objective must be one of"):
        fit_lengthscales(X, y, objective="cv")
    with pytest.raises(ValueError, match="init must be"):
        fit_lengthscales(X, y, init="ones")
