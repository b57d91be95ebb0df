"""MNIST on PCA-100 inputs, as the authors' code feeds it to the kernel machine: pixels ``/255``,
PCA fitted on the 60,000 original training images (a subset in quick runs), applied to any
image (deformed ones too)."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.decomposition import PCA

from benchmarks.common.data import official_split

__all__ = ["PCAProjection", "mnist_pca"]


class PCAProjection:
    """``z = (x/255 − μ) Vᵀ``: the top ``n_components`` principal directions ``V`` of the
    training images ``/255`` (scikit-learn's ``PCA``, exact: covariance eigendecomposition),
    applied in torch float32."""

    def __init__(self, images: np.ndarray, n_components: int = 100):
        pca = PCA(n_components=n_components, svd_solver="covariance_eigh")
        pca.fit(np.asarray(images, dtype=np.float32).reshape(images.shape[0], -1) / 255.0)
        self.mean = torch.as_tensor(pca.mean_, dtype=torch.float32)
        self.components = torch.as_tensor(pca.components_, dtype=torch.float32)  # (k, 784)
        self.explained_variance_ratio = float(pca.explained_variance_ratio_.sum())

    def __call__(self, images) -> np.ndarray:
        """``(n, k)`` float32 projections of ``(n, 28, 28)`` or ``(n, 784)`` images in 0..255."""
        pixels = torch.as_tensor(images, dtype=torch.float32).reshape(len(images), -1)
        return ((pixels / 255.0 - self.mean) @ self.components.T).numpy()


def mnist_pca(n_components: int = 100, n_train: int | None = None, n_test: int | None = None,
              pca_on_all: bool = True):
    """``(projection, train images (n, 28, 28), y_train, Z_train, Z_test, y_test)``.

    The PCA is fitted on all 60,000 training images (``pca_on_all=False``: on the ``n_train``
    kept, for quick runs); ``n_train``/``n_test`` keep the first rows.
    """
    X, y, X_test, y_test = official_split("mnist")
    projection = PCAProjection(X if pca_on_all else X[:n_train], n_components)
    X, y = X[:n_train], y[:n_train]
    X_test, y_test = X_test[:n_test], y_test[:n_test]
    return (projection, X.reshape(-1, 28, 28), y.astype(np.int64), projection(X),
            projection(X_test), y_test.astype(np.int64))
