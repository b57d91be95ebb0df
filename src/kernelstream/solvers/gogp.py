"""GoGP kernel variant: an inducing set chosen by distance to its span, on torch tensors.

Geometry (Le et al., KAIS 2019, Prop. 1). With augmented features ``Φ̃(x)``,
``⟨Φ̃(x), Φ̃(x')⟩ = k(x, x') + s²·[x = x']``, the projection of ``Φ̃(x)`` onto ``span Φ̃(U)`` has
coefficients ``d(x) = (K_UU + s²I)⁻¹ k_U(x)``, and the posterior of the GP on ``U`` is

    μ(x) = d(x)ᵀ z_U,            σ²(x) = k(x, x) − k_U(x)ᵀ d(x).

(With the mean learnt from every point by "rls" below, the variance :meth:`~GoGPKernelState.predict`
reports is ``k(x, x) − k_Uᵀ(K_UU + s²P)⁻¹k_U``: the effective labels ``γ`` read as observations of
``f(U)`` whose noise covariance is that of their least-squares fit, ``s²P``. ``P = I`` when every
point is a member, which is Prop. 1; Prop. 1's variance ignores the points that did not join,
and on a 36,000-row stream it was about 3× the squared error of the mean and its 95% intervals
covered 0.986 of new targets — docs/decisions/gogp-variance.md.)

A point joins ``U`` when ``σ(x) > θ`` (its distance to the span, noise left out), so ``θ → 0``
keeps every point and gives the exact GP. ``G⁻¹ = (K_UU + s²I)⁻¹`` is kept by Schur-complement
updates (grow and shrink), O(|U|²) each, never re-inverted.

Two learners of the mean, both O(|U|²) per point:

``"rls"`` (default)
    Prop. 1 with the labels of ``U`` replaced by *effective* labels ``γ``: ``μ(x) = d(x)ᵀγ``,
    ``γ = argmin Σ_s c_s (d_sᵀγ − z_s)²`` over every point seen, each represented by its projection
    coefficients ``d_s`` (``e_u`` for a member of ``U``). Kept by recursive least squares:
    ``P = (Σ c_s d_s d_sᵀ)⁻¹`` by Sherman–Morrison, ``γ ← γ + P d c(z − dᵀγ)/(1 + c dᵀPd)``,
    ``r = Σ c_s z_s d_s``. A new member extends ``P⁻¹`` by a diagonal entry (past projections
    do not involve it), so ``P⁻¹ ⪰ diag(c)`` stays well conditioned. With ``θ → 0`` every
    ``d_s = e_s`` and ``μ`` is the exact posterior mean after one pass.
``"sgd"``
    The paper's update (the step before Lemma 2): ``α_t = f(x_t) − z_t``, ``w ← (t−1)/t · w``,
    then a new member gets ``−2α_t/(λt)`` or ``w_U ← w_U − 2α_t/(λt) · d`` (projection onto all
    of ``U`` or onto its ``n_neighbors`` nearest members), ``λ = 2s²/N``; projection onto the
    ball ``‖w‖ ≤ z_max/√λ`` when ``λ < 2``; optional iterate averaging. ``f(x) = k_U(x)ᵀw``.

Budget: past ``max_inducing`` members, the most redundant one — largest ``[G⁻¹]_uu``, i.e. the
smallest distance ``1/[G⁻¹]_uu`` of ``Φ̃(u)`` to the span of the others — leaves ``U``; the
data projected on it are re-projected on the rest (``Φ̃(u) ≈ Σ_v e_v Φ̃(v)``,
``e = −G⁻¹_{-u,u}/G⁻¹_uu``, so ``d ← d_{-u} + d_u e``).

Budget: the removed member's slot takes the last member (:func:`move_last`), so no matrix is
compacted.

Storage and cost (issue 33). The symmetric matrices ``G⁻¹``, ``P`` (and ``K_UU`` for "sgd") are
float64 numpy arrays of ``capacity × capacity`` of which the lower triangle of the leading
``|U| × |U|`` block is kept (BLAS's upper triangle of the column-major view, leading dimension
``capacity``); the per-point work is BLAS ``dsymv`` (``G⁻¹k``, ``Pd``) and ``dsyr`` (the rank-one
updates and downdates of ``G⁻¹`` and ``P`` when a point joins or leaves) on that block, called
through SciPy's ``cython_blas`` function pointers so that no block is copied. The Sherman–Morrison
update of a point that does not join is kept aside (``P = P_stored − Σ a_i v_i v_iᵀ``) and
applied ``PENDING`` at a time by one ``dsyrk`` (:meth:`GoGPKernelState.fold`), so such a point
costs two ``dsymv`` passes over a triangle. No torch call and no refactorisation is made per point:
:meth:`GoGPKernelState.update_many` computes the kernel of a chunk of rows against ``U`` and
against themselves in one call, and a point reads its ``k_U(x)`` from that table through the
slot -> column map ``_orig`` (members that joined within the chunk are columns of the chunk).
"""

from __future__ import annotations

import ctypes
import math
from typing import Callable

import numpy as np
import scipy.linalg.blas as scipy_blas
import torch

from .._state import SolverState

__all__ = ["GoGPKernelState", "from_dense", "schur_grow", "schur_shrink", "symmetric"]

Kernel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
CHUNK = 128  # rows whose kernel against U (and each other) update_many computes in one call


def _blas_routines():
    """``(dsymv, dsyr)`` of SciPy's BLAS as ctypes functions (``None`` where unavailable)."""
    try:
        from scipy.linalg import cython_blas
        capi = cython_blas.__pyx_capi__
        name = ctypes.pythonapi.PyCapsule_GetName
        name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        pointer = ctypes.pythonapi.PyCapsule_GetPointer
        pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        i, d = ctypes.POINTER(ctypes.c_int), ctypes.c_void_p  # arrays by address
        symv = ctypes.CFUNCTYPE(None, ctypes.c_char_p, i, d, d, i, d, i, d, d, i)
        syr = ctypes.CFUNCTYPE(None, ctypes.c_char_p, i, d, d, i, d, i)
        syrk = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, i, i, d, d, i, d, d, i)
        return (symv(pointer(capi["dsymv"], name(capi["dsymv"]))),
                syr(pointer(capi["dsyr"], name(capi["dsyr"]))),
                syrk(pointer(capi["dsyrk"], name(capi["dsyrk"]))))
    except (ImportError, AttributeError, KeyError, ValueError, TypeError):  # pragma: no cover
        return None, None, None


_DSYMV, _DSYR, _DSYRK = _blas_routines()
PENDING = 32  # rank-one updates of P kept aside and applied together (one dsyrk)


def _ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


_ONE, _ZERO, _INC = ctypes.c_double(1.0), ctypes.c_double(0.0), ctypes.c_int(1)


def symv(T: np.ndarray, n: int, x: np.ndarray) -> np.ndarray:
    """``A x`` for the symmetric ``A`` whose lower triangle is ``T[:n, :n]`` (BLAS ``dsymv``)."""
    if n == 0:
        return np.zeros(0)
    x = np.ascontiguousarray(x, dtype=np.float64)
    if _DSYMV is None:  # pragma: no cover - f2py copies the block
        return scipy_blas.dsymv(1.0, T[:n, :n], x, lower=1)
    y, c, ref = np.empty(n), ctypes.c_int, ctypes.byref
    _DSYMV(b"U", ref(c(n)), ref(_ONE), _ptr(T), ref(c(T.shape[1])), _ptr(x), ref(_INC),
           ref(_ZERO), _ptr(y), ref(_INC))
    return y


def syr(T: np.ndarray, n: int, alpha: float, x: np.ndarray) -> None:
    """In place: ``A ← A + α x xᵀ`` on the lower triangle ``T[:n, :n]`` (BLAS ``dsyr``)."""
    if n == 0:
        return
    x = np.ascontiguousarray(x, dtype=np.float64)
    if _DSYR is None:  # pragma: no cover
        T[:n, :n] = scipy_blas.dsyr(alpha, x, a=np.asfortranarray(T[:n, :n]), lower=1)
        return
    c, ref = ctypes.c_int, ctypes.byref
    _DSYR(b"U", ref(c(n)), ref(ctypes.c_double(alpha)), _ptr(x), ref(_INC), _ptr(T),
          ref(c(T.shape[1])))


def syrk(T: np.ndarray, n: int, alpha: float, W: np.ndarray) -> None:
    """In place: ``A ← A + α WᵀW`` on the lower triangle ``T[:n, :n]``, ``W`` of shape
    ``(k, T.shape[1])`` read on its first ``n`` columns (BLAS ``dsyrk``, rank ``k``)."""
    if n == 0 or len(W) == 0:
        return
    W = np.ascontiguousarray(W, dtype=np.float64)
    if _DSYRK is None or W.shape[1] != T.shape[1]:  # pragma: no cover
        T[:n, :n] += np.tril(alpha * (W[:, :n].T @ W[:, :n]))
        return
    c, ref = ctypes.c_int, ctypes.byref
    _DSYRK(b"U", b"N", ref(c(n)), ref(c(len(W))), ref(ctypes.c_double(alpha)), _ptr(W),
           ref(c(W.shape[1])), ref(_ONE), _ptr(T), ref(c(T.shape[1])))


def column(T: np.ndarray, n: int, j: int) -> np.ndarray:
    """Column ``j`` (``n`` entries) of the symmetric matrix stored in ``T``'s lower triangle."""
    return np.concatenate((T[j, :j], T[j:n, j]))


def symmetric(T: np.ndarray, n: int) -> np.ndarray:
    """The dense symmetric ``(n, n)`` matrix whose lower triangle is ``T[:n, :n]``."""
    L = np.tril(T[:n, :n])
    return L + np.tril(L, -1).T


def from_dense(A: np.ndarray, capacity: int | None = None) -> np.ndarray:
    """Storage of the symmetric ``A`` (``(n, n)``): its lower triangle in ``capacity²``."""
    n = A.shape[0]
    T = np.zeros((capacity or n, capacity or n))
    T[:n, :n] = np.tril(A)
    return T


def schur_grow(T: np.ndarray, n: int, d: np.ndarray, g: float) -> None:
    """In place: ``[[G, k], [kᵀ, κ]]⁻¹`` of order ``n+1`` from ``G⁻¹`` of order ``n``,
    ``d = G⁻¹k`` and ``g = κ − kᵀd`` (the Schur complement), O(n²)."""
    syr(T, n, 1.0 / g, d)  # G⁻¹ + d dᵀ/g
    T[n, :n] = -d / g
    T[n, n] = 1.0 / g


def schur_shrink(T: np.ndarray, n: int, j: int) -> None:
    """In place: the inverse of ``G`` without row/column ``j`` (order ``n−1``) from ``A = G⁻¹``
    of order ``n``: ``A − a aᵀ/a_jj`` on the rest, then the last member moves into slot ``j``
    (:func:`move_last`), O(n²)."""
    a = column(T, n, j)
    syr(T, n, -1.0 / a[j], a)
    move_last(T, n, j)


def move_last(T: np.ndarray, n: int, j: int) -> None:
    """In place, order ``n``: row and column ``n−1`` overwrite row and column ``j`` (the
    matrix of the members with the last one in slot ``j``, order ``n−1``), O(n)."""
    last = n - 1
    if j == last:
        return
    values = T[last, :last].copy()       # entries (i, last), i < last
    values[j] = T[last, last]
    T[j, :j] = values[:j]
    T[j, j] = values[j]
    T[j + 1:last, j] = values[j + 1:]


def check_finite_update(mean: float, var: float, direction) -> None:
    """Refuse a point whose prediction, variance or projection is not finite (nothing is
    committed yet)."""
    finite = np.isfinite(direction.numpy() if isinstance(direction, torch.Tensor) else direction)
    if not (math.isfinite(mean) and math.isfinite(var) and bool(finite.all())):
        raise FloatingPointError(
            "GoGP met a non-finite prediction: the kernel matrix of the inducing set is "
            "numerically singular at these hyper-parameters, or the inputs are far outside the "
            "scale seen so far. Standardise X, or set a larger noise.")


class GoGPKernelState(SolverState):
    """Inducing set, ``(K_UU + s²I)⁻¹`` and the mean learner of the GoGP kernel variant.

    All arrays float64 numpy on the CPU (the kernel may run on ``device``); no scikit-learn.
    ``update`` learns one point and ``update_many`` a sequence (each returning the predictions
    made *before* learning each point); ``predict`` gives mean and latent variance.
    """

    _state_fields = ("noise", "theta", "solver", "max_inducing", "n_neighbors", "average", "z_max",
                     "n_total", "size", "t", "n_removed", "_Ub", "_mats", "_vecs")

    def __init__(self, kernel: Kernel, noise: float, theta: float, *, solver: str = "rls",
                 max_inducing: int | None = None, n_neighbors: int | None = None,
                 average: bool = False, z_max: float = 1.0, n_total: int = 1,
                 n_features_in: int = 1, device=None, capacity: int = 64) -> None:
        self.kernel, self.noise, self.theta = kernel, float(noise), float(theta)
        self.solver, self.max_inducing, self.n_neighbors = solver, max_inducing, n_neighbors
        self.average, self.z_max, self.n_total = average, float(z_max), int(n_total)
        self.size, self.t, self.n_removed = 0, 0, 0
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self._orig = None  # slot -> column of the chunk's kernel table, inside update_many
        self._Ub = np.empty((capacity, n_features_in))
        names = ("Ginv", "P") if solver == "rls" else ("Ginv", "K")  # (K_UU+s²I)⁻¹; RLS P; K_UU
        self._mats = {name: np.zeros((capacity, capacity)) for name in names}
        self._vecs = {name: np.zeros(capacity)
                      for name in (("gamma", "r") if solver == "rls" else ("w", "w_avg"))}
        self._no_pending(capacity)

    def _no_pending(self, capacity: int) -> None:
        """Empty buffers of the Sherman–Morrison updates kept aside (``P`` is exact)."""
        self._V, self._a, self._nv = np.zeros((PENDING, capacity)), np.zeros(PENDING), 0

    # -- views on the buffers -------------------------------------------------------------
    @property
    def U(self) -> torch.Tensor:
        """The members, ``(|U|, d)`` (a view)."""
        return torch.from_numpy(self._Ub[:self.size])

    def dense(self, name: str) -> torch.Tensor:
        """The symmetric matrix ``name`` ("Ginv", "P" or "K") of order ``|U|``, dense (a copy)."""
        if name == "P":
            self.fold()
        return torch.from_numpy(symmetric(self._mats[name], self.size))

    Ginv = property(lambda self: self.dense("Ginv"), doc="``(K_UU + s²I)⁻¹``, dense.")
    P = property(lambda self: self.dense("P"), doc="The RLS matrix ``P``, dense.")
    K = property(lambda self: self.dense("K"), doc="``K_UU`` (solver 'sgd'), dense.")
    gamma = property(lambda self: torch.from_numpy(self._vecs["gamma"][:self.size]))
    r = property(lambda self: torch.from_numpy(self._vecs["r"][:self.size]))
    w = property(lambda self: torch.from_numpy(self._vecs["w"][:self.size]))
    w_avg = property(lambda self: torch.from_numpy(self._vecs["w_avg"][:self.size]))

    def state_dict(self) -> dict:
        """The fields, with the numpy buffers as CPU tensors (views; pending updates applied)."""
        if self.solver == "rls":
            self.fold()
        state = super().state_dict()
        state["_Ub"] = torch.from_numpy(self._Ub)
        state["_mats"] = {k: torch.from_numpy(v) for k, v in self._mats.items()}
        state["_vecs"] = {k: torch.from_numpy(v) for k, v in self._vecs.items()}
        return state

    def load_state_dict(self, state: dict, device=None):
        """Set the fields (the buffers back as owned numpy arrays); the kernel runs on ``device``."""
        super().load_state_dict(state, "cpu")
        self._Ub = self._Ub.numpy()
        self._mats = {k: v.numpy() for k, v in self._mats.items()}
        self._vecs = {k: v.numpy() for k, v in self._vecs.items()}
        self._no_pending(self._Ub.shape[0])
        self.device = torch.device("cpu") if device is None else torch.device(device)
        return self

    def _reserve(self, m: int) -> None:
        """Grow the buffers when ``m`` members do not fit (doubling, up to the budget + 1)."""
        cap = self._Ub.shape[0]
        if m <= cap:
            return
        new = max(m, 2 * cap)
        if self.max_inducing is not None:
            new = max(m, min(new, self.max_inducing + 1))
        Ub = np.empty((new, self._Ub.shape[1]))
        Ub[:cap] = self._Ub
        self._Ub = Ub
        for name, A in self._mats.items():
            self._mats[name] = np.zeros((new, new))
            self._mats[name][:cap, :cap] = A
        for name, v in self._vecs.items():
            self._vecs[name] = np.zeros(new)
            self._vecs[name][:cap] = v
        V, self._V = self._V, np.zeros((PENDING, new))
        self._V[:, :cap] = V

    # -- geometry -------------------------------------------------------------------------
    def _kernel_table(self, X: torch.Tensor) -> np.ndarray:
        """``[k(X, U) | k(X, X)]``, ``(n, |U| + n)``, in one kernel call."""
        Y = torch.cat([torch.from_numpy(self._Ub[:self.size]).to(X.device, X.dtype), X])
        return self.kernel(X, Y).cpu().numpy()

    def _project(self, x: np.ndarray, k: np.ndarray, kxx: float):
        """``d = G⁻¹k``, ``σ²(x) = k(x,x) − k·d`` and the index of an equal member."""
        m = self.size
        d = symv(self._mats["Ginv"], m, k)
        var = kxx - float(k @ d)
        same = np.flatnonzero(self._Ub[:m, 0] == x[0])  # candidates, then whole rows
        same = same[(self._Ub[same] == x).all(axis=1)] if len(same) else same
        return d, max(var, 0.0), (int(same[0]) if len(same) else None)

    def project(self, x: torch.Tensor):
        """``k_U(x)``, ``d = G⁻¹k_U(x)``, ``σ²(x) = k(x,x) − k_U·d`` and the index of an equal member."""
        table = self._kernel_table(x[None].to(self.device, torch.float64))[0]
        k, kxx = table[:self.size], float(table[self.size])
        d, var, same = self._project(x.cpu().numpy(), k, kxx)
        return torch.from_numpy(k), torch.from_numpy(d), var, same

    def _projected_mean(self, X: torch.Tensor) -> float:
        """``μ(x) = d·γ`` of one row (``d = G⁻¹k_U(x)``, its kernel row as a one-row
        :meth:`update_many` makes it), kept with ``d`` until the state changes: a row predicted
        and then learnt (progressive validation) is projected once."""
        x = X[0].cpu().numpy().astype(np.float64)
        table = self._kernel_table(X.to(self.device, torch.float64))
        d, var, same = self._project(x, table[0, :self.size], float(table[0, self.size]))
        self._projected = (x.tobytes(), self.t, self.size, self.n_removed, table, (d, var, same))
        return float(d @ self._vecs["gamma"][:self.size])

    def _kept_projection(self, x: np.ndarray):
        """:meth:`_projected_mean`'s ``(table, (d, var, same))`` of ``x`` if the state has not
        changed since, else ``None``; used once."""
        kept, self._projected = self.__dict__.get("_projected"), None
        if kept is None or kept[:4] != (x.tobytes(), self.t, self.size, self.n_removed):
            return None
        return kept[4], kept[5]

    # -- points ---------------------------------------------------------------------------
    def update(self, x: torch.Tensor, z: float, weight: float = 1.0) -> float:
        """Learn ``(x, z)`` with data weight ``c``; returns ``μ(x)`` predicted before learning."""
        return float(self.update_many(x[None], np.array([z], dtype=np.float64), weight)[0])

    def update_many(self, X: torch.Tensor, z, weight=1.0, chunk: int = CHUNK) -> np.ndarray:
        """Learn the rows of ``X`` in order (weights ``c``, a number or one per row); returns the
        prediction made before learning each. The kernel of each ``chunk`` rows against ``U``
        and each other is one call; a point that fails commits nothing, earlier ones stay."""
        z = np.asarray(z, dtype=np.float64)
        c = np.broadcast_to(np.asarray(weight, dtype=np.float64), z.shape)
        means = np.empty(len(z))
        Xd = X.to(self.device, torch.float64)
        Xn = X.cpu().numpy().astype(np.float64, copy=False)
        for a in range(0, len(z), chunk):
            b = min(a + chunk, len(z))
            m0 = self.size
            kept = self._kept_projection(Xn[a]) if b - a == 1 else None
            table = self._kernel_table(Xd[a:b]) if kept is None else kept[0]
            self._orig = np.empty(m0 + b - a + 1, dtype=np.int64)
            self._orig[:m0] = np.arange(m0)
            try:
                for i in range(b - a):
                    self._column = m0 + i  # the column of this point in the table
                    k = table[i, self._orig[:self.size]]
                    means[a + i] = self._learn(Xn[a + i], float(z[a + i]), float(c[a + i]),
                                               k, float(table[i, m0 + i]),
                                               None if kept is None else kept[1])
            finally:
                self._orig = None
        return means

    def _learn(self, x: np.ndarray, z: float, weight: float, k: np.ndarray, kxx: float,
               projected: tuple | None = None) -> float:
        """One point, with its kernel row ``k = k_U(x)`` and ``k(x, x)`` (and its
        :meth:`_project`, where a prediction made it)."""
        d, var, same = self._project(x, k, kxx) if projected is None else projected
        if same is not None:  # Φ̃(x) = Φ̃(u): a second observation of a member
            d = np.zeros_like(d)
            d[same] = 1.0
            var = 0.0
        joins = same is None and math.sqrt(var) > self.theta
        if self.solver == "rls":
            mean = float(d @ self._vecs["gamma"][:self.size])
        else:
            mean = float(k @ self._vecs["w"][:self.size])
        check_finite_update(mean, var, d)  # before anything changes: a failed point commits nothing
        self.t += 1
        if self.solver == "rls":
            self._rls_step(x, z, weight, k, kxx, d, var, joins, mean)
        else:
            self._sgd_step(x, z, k, kxx, d, var, joins, same is not None, mean)
        if self.max_inducing is not None and self.size > self.max_inducing:
            self.remove(self.most_redundant())
        return mean

    def _grow(self, x: np.ndarray, d: np.ndarray, var: float) -> int:
        """Append ``x`` to U; ``g = var + s²`` is the squared distance of ``Φ̃(x)`` to the span."""
        m = self.size
        self._reserve(m + 1)
        schur_grow(self._mats["Ginv"], m, d, var + self.noise)
        self._Ub[m] = x
        if self._orig is not None:
            self._orig[m] = self._column
        self.size = m + 1
        return m

    def _rls_step(self, x, z, c, k, kxx, d, var, joins, mean) -> None:
        m, P, gamma = self.size, self._mats["P"], self._vecs["gamma"]
        if joins:  # P⁻¹ ← blockdiag(P⁻¹, c): past projections do not involve x
            j = self._grow(x, d, var)
            self._mats["P"][j, :j] = 0.0
            self._mats["P"][j, j] = 1.0 / c
            self._V[:self._nv, j] = 0.0
            self._vecs["r"][j] = c * z
            self._vecs["gamma"][j] = z
            return
        Pd = symv(P, m, d)                                       # O(|U|²)
        nv, V, a = self._nv, self._V, self._a
        if nv:                                                   # P = P_stored − Σ a_i v_i v_iᵀ
            Pd -= (a[:nv] * (V[:nv, :m] @ d)) @ V[:nv, :m]
        denom = 1.0 + c * float(d @ Pd)
        gamma[:m] += Pd * (c * (z - mean) / denom)               # γ ← γ + P_new d c (z − dᵀγ)
        V[nv, :m], a[nv] = Pd, c / denom                         # Sherman–Morrison, kept aside
        self._nv = nv + 1
        if self._nv == len(a):
            self.fold()
        self._vecs["r"][:m] += d * (c * z)

    def fold(self) -> None:
        """Apply the pending Sherman–Morrison updates to ``P``: ``P ← P − Σ a_i v_i v_iᵀ``, one
        rank-``PENDING`` ``dsyrk`` instead of one ``dsyr`` pass over ``P`` per point."""
        if self._nv:
            W = self._V[:self._nv] * np.sqrt(self._a[:self._nv])[:, None]
            syrk(self._mats["P"], self.size, -1.0, W)
            self._nv = 0

    def _sgd_step(self, x, z, k, kxx, d, var, joins, same, mean) -> None:
        t = self.t
        lam = 2.0 * self.noise / max(self.n_total, 1)
        step = 2.0 * (mean - z) / (lam * t)                      # 2α_t/(λt)
        self._vecs["w"][:self.size] *= (t - 1.0) / t
        if joins:
            j = self._grow(x, d, var)
            self._mats["K"][j, :j] = k
            self._mats["K"][j, j] = kxx
            self._vecs["w"][j] = -step
            self._vecs["w_avg"][j] = 0.0
        else:
            self._vecs["w"][:self.size] -= step * (d if same else self._neighbour_projection(k, d))
        m, w = self.size, self._vecs["w"][:self.size]
        if lam < 2.0:  # Π_S: ball of radius z_max/√λ, ‖w‖² = wᵀK_UU w
            norm = max(float(w @ symv(self._mats["K"], m, w)), 0.0) ** 0.5
            radius = self.z_max / lam**0.5
            if norm > radius:
                w *= radius / norm
        if self.average:
            self._vecs["w_avg"][:m] += (w - self._vecs["w_avg"][:m]) / t

    def _neighbour_projection(self, k: np.ndarray, d: np.ndarray) -> np.ndarray:
        """``d`` over all of U, or over its ``n_neighbors`` nearest members (zeros elsewhere)."""
        if self.n_neighbors is None or self.n_neighbors >= self.size:
            return d
        idx = np.argpartition(-k, self.n_neighbors)[:self.n_neighbors]  # largest k = nearest
        G = self._mats["K"][np.maximum.outer(idx, idx), np.minimum.outer(idx, idx)]
        G[np.diag_indices_from(G)] += self.noise
        out = np.zeros_like(d)
        out[idx] = np.linalg.solve(G, k[idx])  # O(n_neighbors³)
        return out

    # -- budget ---------------------------------------------------------------------------
    def most_redundant(self) -> int:
        """Member with the largest ``[G⁻¹]_uu``: the nearest to the span of the others."""
        return int(np.argmax(np.diagonal(self._mats["Ginv"])[:self.size]))

    def remove(self, j: int) -> None:
        """Drop member ``j``, re-projecting what was learnt on it onto the others; the last
        member takes slot ``j``. O(|U|²)."""
        m = self.size
        if self.solver == "rls":
            self.fold()                               # P exact before its downdate
        a = column(self._mats["Ginv"], m, j)
        e = -a / a[j]                                 # Φ̃(u_j) ≈ Σ_v e_v Φ̃(u_v)
        e[j] = 0.0
        if self.solver == "rls":
            self._rls_removed(j, e)
        else:
            for name in ("w", "w_avg"):
                self._vecs[name][:m] += self._vecs[name][j] * e
            move_last(self._mats["K"], m, j)
        schur_shrink(self._mats["Ginv"], m, j)
        for v in self._vecs.values():
            v[j] = v[m - 1]
        self._Ub[j] = self._Ub[m - 1]
        if self._orig is not None:
            self._orig[j] = self._orig[m - 1]
        self.size = m - 1
        self.n_removed += 1
        if self.solver == "rls":
            self._vecs["gamma"][:m - 1] = symv(self._mats["P"], m - 1, self._vecs["r"][:m - 1])

    def _rls_removed(self, j: int, e: np.ndarray) -> None:
        """``d ← Td`` with ``T = [I | e]``: ``P ← (T P⁻¹ Tᵀ)⁻¹ = Y₁₁ − y₁₂y₁₂ᵀ/y₂₂``, ``r ← T r``
        (``e_j = 0``; the last member then moves into slot ``j``).

        ``Y = S⁻ᵀ P S⁻¹`` for ``S = [[I, e], [0, 1]]``: ``Y₁₁ = P₁₁``, ``y₁₂ = p₁₂ − P₁₁e``,
        ``y₂₂ = p₂₂ − 2p₁₂ᵀe + eᵀP₁₁e``; O(|U|²).
        """
        m, P = self.size, self._mats["P"]
        Pe = symv(P, m, e)                           # P₁₁e on the others, p₁₂ᵀe at j
        p = column(P, m, j)
        y = p - Pe
        y22 = p[j] - 2.0 * Pe[j] + float(e @ Pe)
        y[j] = 0.0
        syr(P, m, -1.0 / y22, y)
        move_last(P, m, j)
        self._vecs["r"][:m] += self._vecs["r"][j] * e

    # -- prediction -----------------------------------------------------------------------
    def predict(self, X: torch.Tensor, chunk: int = 2048, return_var: bool = True):
        """Mean and latent variance of ``f`` at the rows of X (``None`` without ``return_var``).

        "rls": ``σ²(x) = k(x,x) − k_Uᵀ(K_UU + s²P)⁻¹k_U`` — the effective labels ``γ`` read as
        observations of ``f(U)`` with the covariance ``s²P`` of their least-squares fit, so the
        variance shrinks with every point projected on ``U`` (``P = I`` when every point is a
        member: Prop. 1's ``k − k_Uᵀ(K_UU + s²I)⁻¹k_U``, the exact GP). "sgd": Prop. 1's.
        """
        name = "gamma" if self.solver == "rls" else ("w_avg" if self.average else "w")
        opts = dict(dtype=torch.float64, device=X.device)
        if self.solver == "rls" and not return_var and X.shape[0] == 1 and self.size:
            return torch.tensor([self._projected_mean(X)], **opts), None
        if self.solver == "rls":  # the mean's weights G⁻¹γ from the stored triangle (dsymv)
            weights = torch.from_numpy(symv(self._mats["Ginv"], self.size,
                                            self._vecs[name][:self.size])).to(**opts)
        else:
            weights = torch.from_numpy(self._vecs[name][:self.size]).to(**opts)
        U = self.U.to(**opts)
        L = self._variance_factor(U) if return_var and self.size else None
        Ginv = self.Ginv.to(**opts) if return_var and L is None and self.size else None
        means, variances = [], []
        for i in range(0, X.shape[0], chunk):
            Xb = X[i:i + chunk]
            kdiag = torch.diagonal(self.kernel(Xb, Xb)).clone() if return_var else None
            if self.size == 0:
                means.append(torch.zeros(len(Xb), **opts))
                variances.append(kdiag)
                continue
            K = self.kernel(Xb, U)                       # (n, m)
            means.append(K @ weights)
            if return_var:
                if L is None:                            # Prop. 1: G⁻¹ = (K_UU + s²I)⁻¹
                    explained = ((K @ Ginv) * K).sum(1)
                else:                                    # ‖L⁻¹k_U‖², L Lᵀ = K_UU + s²P
                    explained = torch.linalg.solve_triangular(L, K.T, upper=False).square().sum(0)
                variances.append(torch.clamp(kdiag - explained, min=0.0))
        return torch.cat(means), (torch.cat(variances) if return_var else None)

    def _variance_factor(self, U: torch.Tensor) -> torch.Tensor | None:
        """Cholesky factor of ``K_UU + s²P`` ("rls"; ``None`` for "sgd"), O(|U|³), cached until
        the next update."""
        if self.solver != "rls":
            return None
        key = (self.t, self.size, self.n_removed, U.device)
        cached = self.__dict__.get("_factor")
        if cached is not None and cached[0] == key:
            return cached[1]
        A = self.kernel(U, U) + self.noise * self.P.to(U.device)
        A = (A + A.T) / 2
        jitter = 0.0
        L, info = torch.linalg.cholesky_ex(A)
        while int(info) and jitter < 1e-3:               # numerically singular K_UU: add a ridge
            jitter = max(10.0 * jitter, 1e-12 * float(A.diagonal().mean()))
            L, info = torch.linalg.cholesky_ex(A + jitter * torch.eye(len(A), dtype=A.dtype,
                                                                      device=A.device))
        self._factor = (key, L)
        return L

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_factor", None)  # caches, rebuilt on demand
        state.pop("_projected", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_V" not in state:  # pickled before the pending updates existed
            self._no_pending(self._Ub.shape[0])
