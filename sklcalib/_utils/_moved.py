"""Old module paths that moved: their names still resolve, with a warning.

A module that was renamed keeps a file at its old path whose ``__getattr__``
is :func:`moved_getattr`: ``from old.path import name`` returns the object at
its new home and warns (``FutureWarning``) once per access, naming where to
import it from.
"""

import warnings
from importlib import import_module


def moved_getattr(old_module, moved):
    """A module ``__getattr__`` for ``old_module`` whose names now live
    elsewhere: ``moved`` maps each old name to the module that holds it."""

    def __getattr__(name):
        if name not in moved:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        warnings.warn(
            f"{old_module}.{name} moved to {moved[name]}.{name}; import it from "
            f"there ({old_module} will be removed in a future release)",
            FutureWarning,
            stacklevel=2,
        )
        return getattr(import_module(moved[name]), name)

    return __getattr__
