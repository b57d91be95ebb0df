"""The kernel's columns at stored centres (the fitted form of a Nyström model): its features,
its configuration through a model file's state, and clear errors where it cannot serve."""

import numpy as np
import pytest
import torch

from kernelstream._state import feature_map_from_config
from kernelstream.features import make_feature_map
from kernelstream.features.kernel_columns import KernelColumns


def _columns(n_centres=64, d=5, block_size=16):
    g = torch.Generator().manual_seed(0)
    kernel_map = make_feature_map("laplace", d, 2.0, block_size, 7)
    return KernelColumns(kernel_map, torch.randn(n_centres, d, generator=g)), kernel_map


def test_each_block_is_the_kernel_at_its_centres_and_contract_is_k_C_beta():
    columns, kernel_map = _columns()
    X = torch.randn(40, 5, generator=torch.Generator().manual_seed(1))
    C = columns.centres
    torch.testing.assert_close(columns.features(X, [2])[:, 0], kernel_map.kernel(X, C[32:48]))
    beta = torch.randn(4, 16, 3, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(columns.contract(X, beta), kernel_map.kernel(X, C) @ beta.reshape(64, 3),
                               rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(columns.kernel(X, C), kernel_map.kernel(X, C))
    assert columns.sigma == kernel_map.sigma and columns.max_blocks == 4


def test_the_configuration_rebuilds_the_same_map_with_its_centres():
    columns, _ = _columns()
    rebuilt = feature_map_from_config(columns.config())
    assert isinstance(rebuilt, KernelColumns)
    assert torch.equal(rebuilt.centres, columns.centres)
    assert rebuilt.kernel_map.config() == columns.kernel_map.config()
    as_array = {**columns.config(), "centres": columns.centres.numpy()}  # a loaded ndarray
    assert torch.equal(feature_map_from_config(as_array).centres, columns.centres)


@pytest.mark.parametrize("centres, match", [
    (torch.randn(64, 4), r"centres must be \(M, 5\)"),
    (torch.randn(60, 5), "multiple of the block size 16"),
    (torch.full((64, 5), float("nan")), "NaN or infinite"),
])
def test_bad_centres_are_refused_with_what_is_wrong(centres, match):
    kernel_map = make_feature_map("rbf", 5, 1.0, 16, 0)
    with pytest.raises(ValueError, match=match):
        KernelColumns(kernel_map, centres)


def test_the_basis_cannot_grow_nor_pose_as_random_features():
    columns, _ = _columns()
    X = torch.randn(3, 5)
    with pytest.raises(ValueError, match="cannot grow"):
        columns.features(X, [4])
    with pytest.raises(NotImplementedError, match="not random features"):
        columns.transform(X, 2)
    with pytest.raises(AttributeError):
        columns.centres = np.zeros((64, 5))
