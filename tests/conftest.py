"""Test-session settings (the shared helpers are in ``support.py``)."""

import torch

# One torch thread per pytest-xdist worker: two workers with two OpenMP threads each on a
# 2-core CI machine spin-wait on each other (measured: a 50 ms fit took 2 s).
torch.set_num_threads(1)
