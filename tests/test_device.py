"""Moving rows to the compute device: arrays, CSR matrices and tensors alike."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from kernelstream._device import to_tensor
from support import DEVICES


@pytest.mark.parametrize("device", DEVICES)
def test_arrays_csr_and_tensors_become_the_same_dense_tensor(device):
    X = np.arange(12, dtype=np.float64).reshape(3, 4)
    expected = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    for rows in (X, sp.csr_matrix(X), torch.as_tensor(X), torch.as_tensor(X).to(device)):
        got = to_tensor(rows, torch.float32, torch.device(device))
        assert got.device.type == device and got.dtype == torch.float32
        torch.testing.assert_close(got.cpu(), expected)
