"""Low-level ops of the hot loops (BLAS, LAPACK, Triton); the kernels themselves, as feature
maps, live in :mod:`kernelstream.features`.

- :mod:`.workspace`: reusable scratch buffers (fresh memory costs page faults in hot loops);
- :mod:`.fourier`: ``Σ_j ψ_j(X) c_j`` for Fourier blocks in cache-sized chunks, in torch ops
  (CPU and CUDA), never materialising the whole ``n × D`` feature matrix;
- :mod:`.sparse`: CSR rows kept sparse up to the feature maps (:class:`~.sparse.CSRRows`) and
  their projection ``X W`` by the non-zeros (a sparse × dense GEMM);
- :mod:`.precond`: the block preconditioner's solve, ``(ΨᵀΨ/b + εI)⁻¹ΨᵀG/b`` (SYRK Gram and
  in-place LAPACK Cholesky on CPU, torch ops elsewhere);
- :mod:`.triton_fourier`: the same contraction and the new block's gradient as fused Triton
  kernels that draw the block parameters inside the kernel (imported only when needed);
- :mod:`.backend`: the one place that picks the torch or the Triton path
  (``KERNELSTREAM_TRITON=1`` opts in to Triton on CUDA).
"""

from .fourier import fourier_block, fourier_contract
from .workspace import scratch

__all__ = ["fourier_block", "fourier_contract", "scratch"]
