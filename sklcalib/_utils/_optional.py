"""Optional dependencies: whether one is installed, and an ImportError naming
the extra that installs it.

The core install is numpy, scipy and scikit-learn; everything else comes with
an extra (``pip install "sklcalib[torch]"``, ``[fast]``, ``[plot]``,
``[dask]``, ``[netcal]``, ``[data]``).
"""

import contextlib
import importlib
import importlib.util
import sys

# module -> the extra of sklcalib that installs it
EXTRAS = {
    "torch": "torch",
    "skorch": "torch",
    "numba": "fast",
    "matplotlib": "plot",
    "dask": "dask",
    "distributed": "dask",
    "netcal": "netcal",
}


def is_installed(module):
    """Whether the top-level ``module`` can be imported (without importing it)."""
    if module in sys.modules:  # None there means "blocked" (import fails)
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_extra_error(module, owner):
    """The ImportError raised when ``owner`` needs the missing ``module``."""
    extra = EXTRAS[module.split(".")[0]]
    return ImportError(
        f"{owner} needs the optional dependency {module.split('.')[0]}; install "
        f'it with pip install "sklcalib[{extra}]"'
    )


def import_optional(module, owner):
    """``importlib.import_module(module)``, or an ImportError naming the extra.

    Only a missing top-level package is translated; an ImportError raised
    inside an installed package (a broken install) propagates unchanged.
    """
    top = module.split(".")[0]
    if not is_installed(top):
        raise missing_extra_error(module, owner)
    return importlib.import_module(module)


@contextlib.contextmanager
def extra_imports(owner):
    """Turn a missing optional package, imported in the block, into the
    ImportError naming the extra.

    >>> with extra_imports("sklcalib.net"):  # doctest: +SKIP
    ...     import torch
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in EXTRAS:  # not an optional dependency: a real bug
            raise
        raise missing_extra_error(top, owner) from exc
