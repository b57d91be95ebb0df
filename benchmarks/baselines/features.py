"""Fixed feature maps for the r- and n- baselines: random features and a Nyström map.

- r-SDCA, r-Pegasos: ``kernelstream.RandomFeatures`` (the library's seeded blocks), built by
  :func:`random_features`.
- n-SDCA, n-Pegasos: :class:`NystromFeatures`, ``z(x) = K_mm^{-1/2} k_m(x)`` on ``m`` seeded
  landmarks with the library's exact kernel (Williams & Seeger 2001; Drineas & Mahoney 2005), so
  that ``z(x)ᵀz(y) = k_m(x)ᵀ K_mm⁺ k_m(y)``, which equals ``k(x, y)`` on the landmarks.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from kernelstream import RandomFeatures

from ._kernel import DTYPES, as_tensor, exact_kernel

__all__ = ["NystromFeatures", "random_features"]


def random_features(*, kernel: str = "rbf", n_components: int = 256, sigma: float,
                    kernel_params: dict | None = None, random_state: int = 0) -> RandomFeatures:
    """kernelstream's ``RandomFeatures`` with ``n_components`` features (the paper's 2^8) on
    the CPU; float64 input gives float64 features."""
    return RandomFeatures(kernel=kernel, n_components=n_components, sigma=sigma,
                          kernel_params=kernel_params, random_state=random_state, device="cpu")


class NystromFeatures(TransformerMixin, BaseEstimator):
    """Rank-``m`` Nyström features ``z(x) = K_mm^{-1/2} k(L, x)`` on ``m`` seeded landmarks ``L``.

    ``K_mm = U diag(s) Uᵀ``; eigenvalues below ``rcond · max(s)`` are dropped (a pseudo-inverse
    square root), so ``Z Zᵀ = K_nm K_mm⁺ K_mn``; with ``m = n`` that is ``K`` itself.

    Parameters
    ----------
    kernel : str, default="rbf"
        A kernel registered in ``kernelstream.features``; its exact ``kernel(X, Y)`` is used.
    n_components : int, default=256
        Landmarks ``m`` (the paper's rank 2^8), drawn without replacement.
    sigma : float, default=1.0
        Bandwidth.
    kernel_params : dict, default=None
    rcond : float or None, default=None
        Relative cut-off of the eigenvalues of ``K_mm`` (computed in float64); ``None`` is 1e-10
        for float64 and 1e-6 for float32 features (the rounding of a float32 ``k(X, L)``, which
        ``s^{-1/2}`` would otherwise amplify).
    random_state : int, default=0
        Seeds the landmark draw.
    dtype : {"float64", "float32"}, default="float64"
        Precision of the kernel evaluations and of the features.

    Attributes
    ----------
    landmarks_ : tensor of shape (m, d)
    normalization_ : tensor of shape (m, m)
        ``K_mm^{-1/2} = U_k diag(s_k^{-1/2}) U_kᵀ`` over the ``k`` eigenvalues kept.
    """

    def __init__(self, *, kernel="rbf", n_components=256, sigma=1.0, kernel_params=None,
                 rcond=None, random_state=0, dtype="float64"):
        self.kernel = kernel
        self.n_components = n_components
        self.sigma = sigma
        self.kernel_params = kernel_params
        self.rcond = rcond
        self.random_state = random_state
        self.dtype = dtype

    def fit(self, X, y=None):
        """Draw the landmarks and factor ``K_mm``. O(m²d + m³)."""
        Xt = as_tensor(X, DTYPES[self.dtype])
        if not 1 <= self.n_components <= Xt.shape[0]:
            raise ValueError(f"n_components must be between 1 and the {Xt.shape[0]} rows of X "
                             f"(landmarks are rows of X); got {self.n_components}.")
        rows = np.random.default_rng(self.random_state).choice(Xt.shape[0], self.n_components,
                                                               replace=False)
        feature_map = exact_kernel(self.kernel, Xt.shape[1], self.sigma, self.kernel_params)
        landmarks = Xt[torch.as_tensor(np.sort(rows))]
        K_mm = feature_map.kernel(landmarks.double(), landmarks.double())
        s, U = torch.linalg.eigh((K_mm + K_mm.T) / 2)
        rcond = self.rcond or (1e-10 if Xt.dtype == torch.float64 else 1e-6)
        keep = s > rcond * s.max()
        self.feature_map_, self.landmarks_ = feature_map, landmarks
        U_k = U[:, keep]
        self.normalization_ = ((U_k * s[keep].rsqrt()) @ U_k.T).to(Xt.dtype)  # K_mm^{-1/2}
        self.n_features_in_ = Xt.shape[1]
        return self

    def transform(self, X) -> np.ndarray:
        """``Z = k(X, L) K_mm^{-1/2}``, ``(n, m)``, as numpy. O(n·m·(d + m))."""
        check_is_fitted(self, "normalization_")
        Xt = as_tensor(X, self.landmarks_.dtype)
        if Xt.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xt.shape[1]} features, but NystromFeatures is expecting "
                             f"{self.n_features_in_} features as input.")
        chunks = [self.feature_map_.kernel(Xt[i:i + 4096], self.landmarks_) @ self.normalization_
                  for i in range(0, Xt.shape[0], 4096)]
        return torch.cat(chunks).numpy()
