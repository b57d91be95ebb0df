"""A parameter that is also a method: ``RandomFeatures(kernel="rbf")`` and ``rf.kernel(X, Y)``.

scikit-learn stores ``kernel`` as an instance attribute, which would shadow a ``kernel`` method.
The descriptor stores the name as a :class:`KernelName` — a ``str`` (so ``get_params``, ``clone``,
``repr`` and parameter validation see a plain string) that is callable and forwards
``kernel(X, Y)`` to its owner's ``_kernel_matrix``.
"""

from __future__ import annotations

import weakref

__all__ = ["KernelName", "KernelParameter"]


class KernelName(str):
    """A kernel name that computes its owner's exact kernel matrix when called."""

    _owner = None

    def __call__(self, X, Y=None):
        owner = self._owner() if self._owner is not None else None
        if owner is None:
            raise TypeError("this kernel name is not attached to an estimator.")
        return owner._kernel_matrix(X, Y)

    def __reduce__(self):  # pickles and hashes as an unattached name
        return (KernelName, (str(self),))

    def __deepcopy__(self, memo):  # clone() deep-copies parameters: the copy is unattached
        return KernelName(str(self))


class KernelParameter:
    """Data descriptor storing the ``kernel`` parameter in the instance ``__dict__``."""

    def __set_name__(self, owner, name):
        self.name = name

    def __set__(self, obj, value):
        if isinstance(value, str):
            if not isinstance(value, KernelName) or _attached_elsewhere(value, obj):
                value = KernelName(value)
            value._owner = weakref.ref(obj)
        obj.__dict__[self.name] = value

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name]
        if isinstance(value, KernelName) and (value._owner is None or value._owner() is None):
            value._owner = weakref.ref(obj)  # after unpickling
        return value


def _attached_elsewhere(name: KernelName, obj) -> bool:
    owner = name._owner() if name._owner is not None else None
    return owner is not None and owner is not obj
