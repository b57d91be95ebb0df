"""Research probe for issue 5: the variance operator as pair coefficients over M Nystrom landmarks.

The DTC posterior variance k** - Q** + s2 k_xM (s2 K_MM + K_Mn K_nM)^-1 k_Mx against the exact one,
for bandwidths 0.1 / 0.3 / 1.0 x median and M = 256 / 512 / 1024 (2^11 points, 2^10 test points).

    python -m benchmarks.research.gp_landmark_operator
"""
import numpy as np
from kernelstream.datasets import synthetic_regression
from kernelstream.features import median_distance
from sklearn.gaussian_process.kernels import RBF
X, y, _ = synthetic_regression(2**11, random_state=0, noise=0.1**0.5)
Xs, _, _ = synthetic_regression(2**10, random_state=1)
noise=0.1
for scale in (0.1, 0.3, 1.0):
    sigma = scale*median_distance(X)
    k = RBF(sigma)
    K = k(X); Ks = k(Xs, X)
    L = np.linalg.cholesky(K + noise*np.eye(len(X)))
    V = np.linalg.solve(L, Ks.T); var = 1-(V*V).sum(0)
    for M in (256, 512, 1024):
        S = np.random.default_rng(0).permutation(len(X))[:M]
        KnM = K[:, S]; KMM = K[np.ix_(S,S)]; KsM = Ks[:, S]
        LM = np.linalg.cholesky(KMM + 1e-8*np.eye(M))
        Q = (np.linalg.solve(LM, KsM.T)**2).sum(0)
        Sig = noise*KMM + KnM.T@KnM
        LS = np.linalg.cholesky(Sig + 1e-8*np.eye(M))
        W = np.linalg.solve(LS, KsM.T)
        v = 1 - Q + noise*(W*W).sum(0)
        print(scale, M, "DTC var err", round(np.linalg.norm(v-var)/np.linalg.norm(var),4))
