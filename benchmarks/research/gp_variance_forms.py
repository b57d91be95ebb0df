"""Research probe for issue 5: the variance estimators of route (a) from the same averaged duals.

Second-order form with random-feature products (what the library returns), with exact kernel
products, and the first-order form k** - k*^T a with exact k*, against the exact variance: on
500 points of sin in 1-D (noise 0.01 and 1e-4, 64 steps) and on the paper's GP set (narrow and
wide bandwidth); ``--quick``: the 1-D probes only (seconds).

    python -m benchmarks.research.gp_variance_forms [--quick]
"""
import sys, numpy as np, torch
from sklearn.gaussian_process.kernels import RBF
from benchmarks.common.timing import set_threads
from kernelstream.features import make_feature_map, median_distance
from kernelstream.datasets import synthetic_regression
from kernelstream.solvers.gp_dual import kernel_in_chunks, nystrom_preconditioner, posterior_from_duals, solve_dual
set_threads(1)
def probe(X, y, Xs, sigma, noise, T, label):
    k=RBF(sigma); K=k(X); Ks=k(Xs,X); n=len(X)
    A=np.linalg.solve(K+noise*np.eye(n), np.c_[y, Ks.T]); var=1-(Ks*A[:,1:].T).sum(1)
    fm = make_feature_map("rbf", X.shape[1], sigma, 2048, 12345)
    Xt=torch.as_tensor(X, dtype=torch.float32); Xv=torch.as_tensor(Xs, dtype=torch.float32)
    Kst = kernel_in_chunks(fm, Xt, Xv)
    Y = torch.cat([torch.as_tensor(y, dtype=torch.float32)[:,None], Kst], 1)
    P = nystrom_preconditioner(fm, Xt, noise, 1024, torch.Generator().manual_seed(0))
    res = solve_dual(fm, Xt, Y, noise, P, n_steps=T, step_size=0.5, average_start=T//5)
    Av = res.duals[:,1:].double().numpy()
    post = posterior_from_duals(fm, Xt, res.duals[:, :1], range(T), Xv, res.duals[:,1:])
    v_rf2 = 1 - 2*post.cross.double().numpy() + post.quadratic.double().numpy() + noise*(Av**2).sum(0)
    v_ex1 = 1 - (Ks*Av.T).sum(1)
    v_ex2 = 1 - 2*(Ks*Av.T).sum(1) + ((K@Av)*Av).sum(0) + noise*(Av*Av).sum(0)
    e=lambda a: round(float(np.linalg.norm(a-var)/np.linalg.norm(var)),4)
    print(label, "halvings", res.n_halvings, "rf2", e(v_rf2), "exact1", e(v_ex1), "exact2", e(v_ex2), "mean var", var.mean())
rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, (500, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(500)
Xs = np.linspace(-3, 3, 50)[:, None]
s = median_distance(X)
for noise in (0.01, 1e-4): probe(X, y, Xs, s, noise, 64, f"sin1d noise={noise}")
if "--quick" in sys.argv[1:]:
    sys.exit()
X, y, _ = synthetic_regression(2**11, random_state=0, noise=0.1**0.5)
Xs, _, _ = synthetic_regression(256, random_state=1)
probe(X, y, Xs, 0.1*median_distance(X), 0.1, 128, "paper set T=128")
probe(X, y, Xs, median_distance(X), 0.1, 64, "paper set wide T=64")
