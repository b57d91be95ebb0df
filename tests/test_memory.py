"""Fit memory does not grow with the input dimension beyond the data itself.

Storing every block's frequencies at d = 784 with D = 2^15 features would cost 784 x 2^14 x 4 B
= 51 MB (paired features) or 100 MB (cos + phase); regenerating blocks keeps only a bounded
cache (32 MiB by default).
"""

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, resource, sys
import numpy as np, torch
torch.set_num_threads(1)
from kernelstream import DSGRegressor
d = int(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.standard_normal((20000, d), dtype=np.float32)
y = np.sin(X[:, 0]).astype(np.float32)
model = DSGRegressor(n_components=2**15, batch_size=512, solver="sgd", max_iter=1, random_state=0).fit(X, y)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"peak": peak, "data": X.nbytes, "features": model.n_components_}))
"""


def _peak(d: int) -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(d)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_peak_memory_grows_only_with_the_data():
    small, large = _peak(50), _peak(784)
    assert small["features"] == large["features"] == 2**15
    extra_data = large["data"] - small["data"]
    growth = large["peak"] - small["peak"]
    assert growth <= extra_data + 64 * 2**20, (growth / 2**20, extra_data / 2**20)
