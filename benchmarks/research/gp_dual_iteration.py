"""Research probe for issue 5 (GP posterior by doubly stochastic gradients): dual iteration.

Not part of the library. Solves the GP system (K + s2 I) A = [y, K(X, X*)] in dual coordinates,
    A <- A + gamma * P (Y - Psi_t Psi_t^T A - s2 A),
with a fresh random-feature block Psi_t every step (unbiased for K) and a fixed Woodbury
preconditioner P = (Phi0 Phi0^T + s2 I)^-1 from D0 separate features; the mean is the average over
post-burn-in steps of Psi_t(x*)^T Psi_t^T A_t (an expansion over seeded blocks), the variance either
k** - f_i(x*_i) (route a, ill-conditioned) or the second-order form
k** - 2 k*^T a + a^T (K + s2 I) a (error quadratic in the error of a).

    python -m benchmarks.research.gp_dual_iteration BLOCK STEPS D0 BURN GAMMA
    e.g. 2048 400 4096 100 0.04   (about 7 min on one shared core; 256 20 512 10 0.04: seconds)
"""
import sys, numpy as np, torch
from benchmarks.common.timing import Stopwatch, set_threads
from kernelstream.datasets import synthetic_regression
from kernelstream.features import GaussianRFF, median_distance
set_threads(1)
X, y, f = synthetic_regression(2**11, random_state=0, noise=0.1**0.5, dtype=np.float64)
Xs, _, _ = synthetic_regression(2**10, random_state=1, dtype=np.float64)
Xs = Xs[:256]
sigma = 0.1*median_distance(X); noise=0.1; n=len(X)
r, T, D0, burn, gam = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
fm = GaussianRFF(2, sigma, r, seed=1)
Xt, Xst, yt = torch.as_tensor(X), torch.as_tensor(Xs), torch.as_tensor(y)
K = fm.kernel(Xt,Xt); Ks = fm.kernel(Xst,Xt)
Y = torch.cat([yt[:,None], Ks.T],1)
A = torch.linalg.solve(K + noise*torch.eye(n,dtype=torch.float64), Y)
mean_true = Ks @ A[:,0]; var_true = 1 - (Ks*A[:,1:].T).sum(1)
e=lambda a,b: float(torch.linalg.norm(a-b)/torch.linalg.norm(b))
J0 = D0//r
Phi0 = fm.features(Xt, list(range(10000, 10000+J0))).reshape(n,-1)/np.sqrt(J0)
L0 = torch.linalg.cholesky(Phi0.T@Phi0 + noise*torch.eye(Phi0.shape[1],dtype=torch.float64))
def P(v): return (v - Phi0@torch.cholesky_solve(Phi0.T@v, L0))/noise
alpha = torch.zeros_like(Y); abar=torch.zeros_like(alpha)
q1 = torch.zeros(len(Xs), Y.shape[1], dtype=torch.float64)  # f_i(x*_j) averaged
q2 = torch.zeros(Y.shape[1], dtype=torch.float64)           # ||Psi^T a_i||^2 averaged
clock = Stopwatch.started(); cnt=0
for t in range(1, T+1):
    Pt = fm.features(Xt,[t])[:,0]
    Z = Pt.T@alpha
    alpha = alpha + gam*P(Y - Pt@Z - noise*alpha)
    if t > burn:
        cnt += 1
        abar += (alpha-abar)/cnt
        c = Pt.T@alpha
        q1 += (fm.features(Xst,[t])[:,0]@c - q1)/cnt
        q2 += ((c*c).sum(0) - q2)/cnt
    if t in (50,100,200,400,800) or t==T:
        fi = q1[:,1:].diagonal()
        v1 = 1 - fi
        ab = abar[:,1:]
        v2 = 1 - 2*fi + q2[1:] + noise*(ab*ab).sum(0)
        v3 = 1 - 2*(Ks*ab.T).sum(1) + ((K@ab)*ab).sum(0) + noise*(ab*ab).sum(0)
        print(t, "mean", round(e(q1[:,0],mean_true),4), "var 1-f", round(e(v1,var_true),4), "var 2nd-order RF", round(e(v2,var_true),4), "var 2nd-order exact-k", round(e(v3,var_true),4), round(clock.elapsed(),1), flush=True)
