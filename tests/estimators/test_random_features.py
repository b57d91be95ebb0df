"""RandomFeatures: block layout at any n_components, feature names and pandas output, save and
load, the exact kernel as ``kernel_matrix``, and input checks of the histogram kernels."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from kernelstream import DSGClassifier, RandomFeatures, load
from kernelstream.features import KERNELS
from kernelstream.io import ModelFileError
from support import runs_on_cuda

RNG = np.random.default_rng(0)
X_REAL = RNG.normal(size=(40, 5)) / 2
X_HIST = RNG.uniform(0, 1, size=(40, 5))

#: one name per distinct family (aliases such as "gaussian" draw the same features)
FAMILIES = sorted({(cls, tuple(sorted(defaults.items()))): name
                   for name, (cls, defaults) in reversed(list(KERNELS.items()))}.values())


def _data(kernel):
    return X_HIST if KERNELS[kernel][0].non_negative else X_REAL


def _relative_error(kernel, n_components, block_size=None, seeds=range(16)):
    """Median over seeds of ``‖ZZᵀ − K‖_F / ‖K‖_F`` (the median: some families, such as
    arccos2, have heavy-tailed errors)."""
    X, errors = _data(kernel), []
    for seed in seeds:
        rf = RandomFeatures(kernel=kernel, n_components=n_components, block_size=block_size,
                            sigma=1.0, random_state=seed).fit(X)
        Z, K = rf.transform(X), rf.kernel_matrix(X)
        errors.append(np.linalg.norm(Z @ Z.T - K) / np.linalg.norm(K))
    return float(np.median(errors))


@pytest.mark.slow
@pytest.mark.parametrize("kernel", FAMILIES)
def test_500_features_approximate_as_well_as_512(kernel):
    """n_components=500 is one block of 500 features, not 125 blocks of gcd(500, 1024) = 4:
    its error is that of 512 features up to Monte Carlo noise (exactly equal for the
    deterministic additive maps)."""
    rf = RandomFeatures(kernel=kernel, n_components=500, random_state=0).fit(_data(kernel))
    assert rf.feature_map_.block_size == 500 and rf.transform(_data(kernel)).shape == (40, 500)
    at_500, at_512 = _relative_error(kernel, 500), _relative_error(kernel, 512)
    assert at_500 <= 1.2 * at_512 + 1e-12, (at_500, at_512)


def test_blocks_of_block_size_plus_a_last_smaller_block():
    """n_components=300, block_size=128: blocks 0 and 1 of the fitted estimator's map, then
    block 2 at 44 features, each scaled by sqrt(r_j / n_components)."""
    import torch

    rf = RandomFeatures(n_components=300, block_size=128, sigma=1.0, random_state=0).fit(X_REAL)
    Z = rf.transform(X_REAL)
    assert Z.shape == (40, 300)
    Xt = torch.as_tensor(X_REAL)
    full = rf.feature_map_.features(Xt, [0, 1]).reshape(40, -1).numpy() * (128 / 300) ** 0.5
    np.testing.assert_allclose(Z[:, :256], full, rtol=1e-12, atol=1e-15)
    tail = rf._tail_map.features(Xt, [2])[:, 0].numpy() * (44 / 300) ** 0.5
    np.testing.assert_allclose(Z[:, 256:], tail, rtol=1e-12, atol=1e-15)
    assert rf._tail_map.seed == rf.seed_ and rf._tail_map.sigma == rf.sigma_
    assert np.abs(Z @ Z.T - rf.kernel_matrix(X_REAL)).max() < 0.4


# -- feature names, pandas output -----------------------------------------------------------
def test_feature_names_out():
    rf = RandomFeatures(n_components=6, random_state=0).fit(X_REAL)
    names = rf.get_feature_names_out()
    assert names.tolist() == [f"randomfeatures{i}" for i in range(6)]
    assert names.dtype == object


def test_pandas_output_and_input_column_names():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X_REAL, columns=list("abcde"))
    rf = RandomFeatures(n_components=8, random_state=0).set_output(transform="pandas")
    out = rf.fit_transform(frame)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(rf.get_feature_names_out())
    np.testing.assert_array_equal(out.to_numpy(), clone(rf).set_output(transform="default")
                                  .fit(frame).transform(frame))
    assert rf.feature_names_in_.tolist() == list("abcde")


# -- save and load --------------------------------------------------------------------------
@pytest.mark.parametrize("kernel, params, n_components, block_size", [
    ("rbf", None, 64, None), ("polynomial", {"degree": 3}, 100, 32), ("chi2", None, 50, None),
    ("rbf_orf", None, 300, 128), ("arccos0", None, 16, None)])
def test_save_and_load_transform_identically(tmp_path, kernel, params, n_components, block_size):
    X = _data(kernel)
    rf = RandomFeatures(kernel=kernel, kernel_params=params, n_components=n_components,
                        block_size=block_size, random_state=0).fit(X)
    rf.save(tmp_path / "rf.kst")
    loaded = load(tmp_path / "rf.kst")
    assert type(loaded) is RandomFeatures and loaded.get_params() == rf.get_params()
    if runs_on_cuda(rf):
        # "polynomial"'s transform is not bit-reproducible on CUDA (index_add_'s atomic adds in
        # the count sketch: an H100 gave 4 entries per call differing by 0.1 float64 eps of the
        # largest entry, none under torch.use_deterministic_algorithms): atol = 16 such eps
        Z = rf.transform(X)
        np.testing.assert_allclose(loaded.transform(X), Z, rtol=0,
                                   atol=16 * np.finfo(np.float64).eps * np.abs(Z).max())
    else:
        np.testing.assert_array_equal(loaded.transform(X), rf.transform(X))
    np.testing.assert_array_equal(loaded.kernel_matrix(X), rf.kernel_matrix(X))
    assert (loaded.seed_, loaded.sigma_, loaded.n_features_in_) == (rf.seed_, rf.sigma_, 5)
    assert loaded.get_feature_names_out().tolist() == rf.get_feature_names_out().tolist()


def test_saved_random_features_are_checksummed(tmp_path):
    rf = RandomFeatures(n_components=16, random_state=0).fit(X_REAL)
    rf.save(tmp_path / "rf.kst")
    data = (tmp_path / "rf.kst").read_bytes()
    seed = str(rf.seed_).encode()
    (tmp_path / "rf.kst").write_bytes(data.replace(seed, str(rf.seed_ + 1).encode()))
    with pytest.raises(ModelFileError, match="modified after saving"):
        load(tmp_path / "rf.kst")


def test_unfitted_random_features_cannot_be_saved(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        RandomFeatures().save(tmp_path / "rf.kst")


# -- the exact kernel -------------------------------------------------------------------------
def test_kernel_matrix_on_a_temporary_estimator():
    """The exact kernel is a method of its own: it works on an estimator nobody holds."""
    K = RandomFeatures(n_components=8, sigma=1.0, random_state=0).fit(X_REAL).kernel_matrix(
        X_REAL, X_REAL[:3])
    expected = np.exp(-np.square(X_REAL[:, None] - X_REAL[None, :3]).sum(-1) / 2)
    np.testing.assert_allclose(K, expected, rtol=1e-12)


def test_kernel_is_a_plain_string_parameter():
    rf = RandomFeatures(kernel="laplace", n_components=8, random_state=0)
    assert type(rf.kernel) is str and type(clone(rf).kernel) is str
    restored = pickle.loads(pickle.dumps(rf.fit(X_REAL)))
    assert type(restored.kernel) is str
    np.testing.assert_array_equal(restored.kernel_matrix(X_REAL), rf.kernel_matrix(X_REAL))


# -- histogram kernels on negative input -----------------------------------------------------
HISTOGRAM_KERNELS = [name for name, (cls, _) in KERNELS.items() if cls.non_negative]


@pytest.mark.parametrize("kernel", HISTOGRAM_KERNELS)
def test_negative_input_is_refused_at_fit_naming_the_kernel(kernel):
    assert {"chi2", "exp_chi2", "additive_chi2", "hellinger"} <= set(HISTOGRAM_KERNELS)
    message = f"kernel '{kernel}' needs non-negative features.*MinMaxScaler"
    with pytest.raises(ValueError, match=message):
        RandomFeatures(kernel=kernel, n_components=16).fit(X_REAL)
    with pytest.raises(ValueError, match=message):
        RandomFeatures(kernel=kernel, n_components=16).fit(sp.csr_matrix(X_REAL))
    rf = RandomFeatures(kernel=kernel, n_components=16, random_state=0).fit(X_HIST)
    with pytest.raises(ValueError, match=message):
        rf.transform(X_REAL)


def test_dsg_estimator_error_names_chi2():
    """The DSG estimators get the feature map's check: it names 'chi2', not 'additive_chi2'."""
    y = (X_REAL[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="kernel 'chi2' needs non-negative.*MinMaxScaler"):
        DSGClassifier(kernel="chi2", block_size=16, batch_size=16, max_iter=1,
                      random_state=0).fit(X_REAL, y)
