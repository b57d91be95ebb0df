"""Randomly sorted, binarised Coulomb matrices (benchmarks/paper/coulomb.py): sorting is
invariant to the atoms' order and only permutes the matrix, the tanh steps are a thermometer
code whose squared distance grows like the entry's difference, and on QM7 the normalised codes
have the dimension and median distance the docstring states (the paper's σ = 60)."""

import numpy as np
import pytest
import torch

from benchmarks.paper.coulomb import CoulombBinariser, random_sorted_upper
from support import shared_dataset


def coulomb(Z, R):
    """C_ii = ½ Z_i^2.4, C_ij = Z_i Z_j / |R_i − R_j| (zero rows beyond the atoms)."""
    distance = np.linalg.norm(R[:, None] - R[None], axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):  # padding and the diagonal
        C = np.outer(Z, Z) / distance
    np.fill_diagonal(C, 0.5 * Z**2.4)
    return np.where(np.outer(Z, Z) > 0, C, 0.0)


@pytest.fixture
def molecules():
    rng = np.random.default_rng(0)
    Z = np.zeros((6, 8))
    Z[:, :5] = rng.choice([1, 6, 7, 8], size=(6, 5))
    return np.stack([coulomb(z, rng.normal(scale=2.0, size=(8, 3))) for z in Z])


def test_sorting_ignores_the_atoms_order_and_only_permutes(molecules):
    rng = np.random.default_rng(1)
    order = rng.permutation(8)
    shuffled = molecules[:, order][:, :, order]
    sorted_once = random_sorted_upper(molecules, rng, noise=0.0)
    np.testing.assert_array_equal(random_sorted_upper(shuffled, rng, noise=0.0), sorted_once)
    upper = np.triu_indices(8)
    for noisy in random_sorted_upper(molecules, rng, noise=1.0), sorted_once:
        C = np.zeros((6, 8, 8))
        C[:, upper[0], upper[1]] = noisy
        C = C + np.triu(C, 1).transpose(0, 2, 1)  # symmetric again
        np.testing.assert_allclose(np.linalg.eigvalsh(C), np.linalg.eigvalsh(molecules), atol=1e-9)
    norms = np.linalg.norm(C, axis=2)
    assert (np.diff(norms, axis=1) <= 1e-12).all()  # noise 0: descending row norms


def test_steps_are_a_thermometer_code(molecules):
    binariser = CoulombBinariser(step=1.0, noise=0.0).fit(molecules)
    largest = random_sorted_upper(molecules, np.random.default_rng(0), 0.0).max(axis=0)
    assert binariser.n_features_out == int((np.floor(largest) + 2).sum())
    assert largest[0] > 16  # entry 0 (a heavy atom's ½Z^2.4) has steps well past 13
    first = binariser.entries_ == 0
    for x, x_new in [(10.0, 13.0), (10.0, 10.5), (10.0, 4.0)]:
        before = binariser._codes(np.full((1, largest.shape[0]), x))[0, first]
        after = binariser._codes(np.full((1, largest.shape[0]), x_new))[0, first]
        delta = abs(x_new - x)
        # Σ_k (tanh(x' − k) − tanh(x − k))² ≈ ∫ = 4(Δ coth Δ − 1): ~4Δ²/3 small, ~4(Δ − 1) large
        np.testing.assert_allclose(((after - before) ** 2).sum(), 4 * (delta / np.tanh(delta) - 1), rtol=1e-2)
    rows = binariser.transform(molecules, np.random.default_rng(5))
    assert rows.dtype == np.float32 and rows.shape == (6, binariser.n_features_out)


def test_qm7_codes_have_the_papers_median_distance():
    data = shared_dataset("qm7")
    binariser = CoulombBinariser().fit(data["X"])
    assert binariser.n_features_out == 2098
    sample = np.random.default_rng(0).choice(len(data["X"]), 1000, replace=False)
    rows = torch.as_tensor(binariser.transform(data["X"][sample], np.random.default_rng(0)))
    distances = torch.cdist(rows[:500], rows[500:]).numpy()
    assert 55 < np.median(distances) < 62  # σ = 60 by the median trick (Dai et al., §7.4)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="shape"):
        random_sorted_upper(np.zeros((3, 4, 5)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="step > 0"):
        CoulombBinariser(step=0).fit(np.zeros((2, 3, 3)))
    with pytest.raises(RuntimeError, match="not fitted"):
        CoulombBinariser().transform(np.zeros((2, 3, 3)), np.random.default_rng(0))
