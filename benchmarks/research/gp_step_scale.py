"""Research probe for issue 5: the scale of one step of the GP dual iteration as n grows.

Power iteration for the top eigenvalue of P(K_hat + s2 I), K_hat from 4 random-feature blocks and
P the Nystrom preconditioner, on the gp_scale data at n = 2^11, 2^15, 2^16 (M = 1024) and 2^16
(M = 4096); ``--quick``: n = 2^11, M = 256 only (seconds). Run from the repository root:

    python -m benchmarks.research.gp_step_scale [--quick]
"""
import sys, torch
from benchmarks import gp_scale
from benchmarks.common.timing import Stopwatch, set_threads
from kernelstream.features import make_feature_map
from kernelstream.solvers.gp_dual import nystrom_preconditioner
set_threads(2)
CASES = ((11, 256),) if "--quick" in sys.argv[1:] else ((11, 1024), (15, 1024), (16, 1024), (16, 4096))
for k, M in CASES:
    X, y, Xt, ft, sigma = gp_scale.data(k)
    fm = make_feature_map("rbf", 2, sigma, 2048, 123)
    Xq = torch.as_tensor(X, dtype=torch.float32)
    clock = Stopwatch.started()
    P = nystrom_preconditioner(fm, Xq, 0.1, M, torch.Generator().manual_seed(0))
    v = torch.randn(len(X), 1)
    blocks = [fm.block_features(Xq, 2000 + j) for j in range(4)]
    for it in range(15):
        w = P(sum(B @ (B.T @ v) for B in blocks) / len(blocks) + 0.1 * v)
        lam = float(w.norm() / v.norm()); v = w / w.norm()
    print(k, M, "lambda_max est", round(lam, 2), round(clock.elapsed(),1), flush=True)
