"""Research probe for issue 5: the random-feature floor of the GP posterior.

Not part of the library. Exact GP posterior with the random-feature kernel of D = J * BLOCK
features against the exact one, on the issue's 2^11/2^10 synthetic setting (sigma = 0.1 x median,
noise 0.1): any method whose function lives in a fixed D-feature span inherits this error.

    python -m benchmarks.research.gp_random_feature_floor SAMPLING BLOCK J1,J2,...
    e.g. iid 1024 2,4,8,16,32   (iid 256 1,2: seconds)
"""
import sys, numpy as np, torch
from benchmarks.common.timing import set_threads
from kernelstream.datasets import synthetic_regression
from kernelstream.features import GaussianRFF, median_distance
set_threads(1)
X, y, f = synthetic_regression(2**11, random_state=0, noise=0.1**0.5, dtype=np.float64)
Xs, _, _ = synthetic_regression(2**10, random_state=1, dtype=np.float64)
sigma = 0.1*median_distance(X); noise=0.1; n=len(X)
fm = GaussianRFF(2, sigma, int(sys.argv[2]), seed=1, sampling=sys.argv[1])
Xt, Xst = torch.as_tensor(X), torch.as_tensor(Xs)
K = fm.kernel(Xt,Xt).numpy(); Ks = fm.kernel(Xst,Xt).numpy()
A = np.linalg.solve(K + noise*np.eye(n), np.c_[y, Ks.T])
mean_true = Ks @ A[:,0]; var_true = 1 - (Ks*A[:,1:].T).sum(1)
print("var range", var_true.min(), var_true.max(), np.sqrt((var_true**2).mean()))
for J in [int(a) for a in sys.argv[3].split(",")]:
    P = fm.features(Xt, list(range(J))).reshape(n,-1).numpy()/np.sqrt(J)
    Ps = fm.features(Xst, list(range(J))).reshape(len(Xs),-1).numpy()/np.sqrt(J)
    Kh = P@P.T; Ksh = Ps@P.T
    A = np.linalg.solve(Kh + noise*np.eye(n), np.c_[y, Ksh.T])
    m = Ksh@A[:,0]; v = (Ps*Ps).sum(1) - (Ksh*A[:,1:].T).sum(1)
    e=lambda a,b: np.linalg.norm(a-b)/np.linalg.norm(b)
    print(J*fm.block_size, "mean", round(e(m,mean_true),4), "var", round(e(v,var_true),4), "var(k**=1)", round(e(1-(Ksh*A[:,1:].T).sum(1),var_true),4), flush=True)
