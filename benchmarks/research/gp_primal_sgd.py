"""Research probe for issue 5: the paper's primal functional SGD for the GP mean.

Averaged constant-step doubly stochastic SGD on the squared loss with nu = noise/n (no
preconditioning), function values tracked at the training and test points. Prints the relative
error of the last and the averaged iterate against the closed-form posterior mean.

    python -m benchmarks.research.gp_primal_sgd BATCH BLOCK STEPS GAMMA
    e.g. 64 512 4000 4   (13.5% averaged, 26% last iterate; about 40 s on one core; 64 256 80 4: seconds)
"""
import sys, numpy as np, torch
from benchmarks.common.timing import Stopwatch, set_threads
from kernelstream.datasets import synthetic_regression
from kernelstream.features import GaussianRFF, median_distance
set_threads(1)
X, y, f = synthetic_regression(2**11, random_state=0, noise=0.1**0.5, dtype=np.float64)
Xs, _, _ = synthetic_regression(2**10, random_state=1, dtype=np.float64)
sigma = 0.1*median_distance(X); noise=0.1; n=len(X)
b, r, T, gam = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
burnfrac = float(sys.argv[5]) if len(sys.argv)>5 else 0.5
fm = GaussianRFF(2, sigma, r, seed=1)
Xt, Xst, yt = torch.as_tensor(X), torch.as_tensor(Xs), torch.as_tensor(y)
K = fm.kernel(Xt,Xt); Ks = fm.kernel(Xst,Xt)
A = torch.linalg.solve(K + noise*torch.eye(n,dtype=torch.float64), torch.cat([yt[:,None], Ks.T],1))
mean_true = Ks @ A[:,0]; var_true = 1 - (Ks*A[:,1:].T).sum(1)
e=lambda a,b: float(torch.linalg.norm(a-b)/torch.linalg.norm(b))
nu = noise/n
Xall = torch.cat([Xt, Xst])
fv = torch.zeros(len(Xall), dtype=torch.float64); fbar = torch.zeros_like(fv); cnt=0
g = torch.Generator().manual_seed(0)
clock = Stopwatch.started()
for t in range(1, T+1):
    idx = torch.randint(n, (b,), generator=g)
    Pall = fm.features(Xall,[t])[:,0]
    res = fv[idx] - yt[idx]
    a = -gam/b * Pall[idx].T @ res
    fv = (1-gam*nu)*fv + Pall @ a
    if t > burnfrac*T:
        cnt+=1; fbar += (fv-fbar)/cnt
    if t % (T//8)==0:
        print(t, "last", round(e(fv[n:],mean_true),4), "avg", round(e(fbar[n:],mean_true),4) if cnt else None, round(clock.elapsed(),1), flush=True)
