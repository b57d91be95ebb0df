"""Research probe for issue 5: the scale of one step of the GP dual iteration as n grows.

Power iteration for the top eigenvalue of P(K_hat + s2 I), K_hat from 4 random-feature blocks and
P the Nystrom preconditioner, on the gp_scale data at n = 2^11, 2^15, 2^16 (M = 1024) and 2^16
(M = 4096). Run from the repository root:

    python benchmarks/research/gp_step_scale.py
"""
import pathlib, sys, numpy as np, torch, time
torch.set_num_threads(2)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import gp_scale
from kernelstream.features import make_feature_map
from kernelstream.solvers.gp_dual import nystrom_preconditioner
for k, M in ((11, 1024), (15, 1024), (16, 1024), (16, 4096)):
    X, y, Xt, ft, sigma = gp_scale.data(k)
    fm = make_feature_map("rbf", 2, sigma, 2048, 123)
    Xq = torch.as_tensor(X, dtype=torch.float32)
    t=time.time()
    P = nystrom_preconditioner(fm, Xq, 0.1, M, torch.Generator().manual_seed(0))
    v = torch.randn(len(X), 1)
    blocks = [fm.block_features(Xq, 2000 + j) for j in range(4)]
    for it in range(15):
        w = P(sum(B @ (B.T @ v) for B in blocks) / len(blocks) + 0.1 * v)
        lam = float(w.norm() / v.norm()); v = w / w.norm()
    print(k, M, "lambda_max est", round(lam, 2), round(time.time()-t,1), flush=True)
