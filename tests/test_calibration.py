"""Temperature scaling: the fitted τ is the maximum-likelihood one, and the map keeps the ranking."""

import numpy as np
import pytest

from kernelstream.calibration import fit_temperature, tempered_proba


@pytest.mark.parametrize("n_classes", [2, 4])
def test_temperature_recovers_the_one_that_generated_the_labels(n_classes):
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(20000, n_classes))
    if n_classes == 2:
        scores = scores[:, 0]
    true_tau = 2.5
    P = tempered_proba(scores, true_tau)
    labels = np.array([rng.choice(P.shape[1], p=p) for p in P])
    assert fit_temperature(scores, labels) == pytest.approx(true_tau, rel=0.08)


def test_weights_count_as_repeated_rows():
    rng = np.random.default_rng(1)
    scores, labels = rng.normal(size=(300, 3)), rng.integers(0, 3, 300)
    weight = rng.integers(1, 4, 300)
    repeated = np.repeat(np.arange(300), weight)
    assert fit_temperature(scores, labels, weight) == pytest.approx(
        fit_temperature(scores[repeated], labels[repeated]), rel=1e-4)


def test_probabilities_sum_to_one_and_keep_the_argmax():
    scores = np.random.default_rng(2).normal(size=(50, 5))
    P = tempered_proba(scores, 0.3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(P.argmax(axis=1), scores.argmax(axis=1))
    margin = scores[:, 0]
    np.testing.assert_array_equal(tempered_proba(margin, 4.0).argmax(axis=1), (margin > 0).astype(int))


def test_separable_rows_give_a_finite_temperature():
    """Platt's smoothed targets: rows all on the right side do not push τ to its bound."""
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.5, 2.0, 400) * rng.choice([-1, 1], 400)
    tau = fit_temperature(scores, (scores > 0).astype(int))
    assert 1 < tau < 20


def test_temperature_minimises_the_cross_entropy_even_for_huge_scores():
    """The fitted τ is the grid's best within its resolution, computed independently with
    scipy's ``log_softmax``; scores of size 10³ (a least-squares margin on unscaled targets)
    neither overflow nor move the optimum."""
    from scipy.special import log_softmax

    rng = np.random.default_rng(4)
    scores = rng.normal(size=(2000, 3))
    labels = np.array([rng.choice(3, p=p) for p in tempered_proba(scores, 1.7)])
    epsilon = 1.0 / (len(labels) + 2)  # Platt's smoothing, as fit_temperature documents it
    targets = np.full((len(labels), 3), epsilon / 2)
    targets[np.arange(len(labels)), labels] = 1 - epsilon

    def cross_entropy(tau, s):
        return -(targets * log_softmax(tau * s, axis=1)).sum(axis=1).mean()

    for scale in (1.0, 1e3):
        tau = fit_temperature(scale * scores, labels)
        grid = np.exp(np.linspace(np.log(tau) - 0.05, np.log(tau) + 0.05, 21))
        losses = [cross_entropy(t, scale * scores) for t in grid]
        assert np.isfinite(losses).all()
        assert cross_entropy(tau, scale * scores) <= min(losses) + 1e-9
        assert scale * tau == pytest.approx(1.7, rel=0.15)
