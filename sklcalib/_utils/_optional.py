"""Optional dependencies: whether one is installed, and an ImportError naming
the extra that installs it.

The core install is numpy, scipy and scikit-learn; everything else comes with
an extra (``pip install "sklcalib[torch]"``, ``[fast]``, ``[plot]``,
``[dask]``, ``[netcal]``, ``[data]``).
"""

import contextlib
import importlib
import importlib.util
import os
import sys
import threading

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


#: Set this environment variable to a non-empty value other than "0" to make
#: sklcalib behave as if numba were not installed (every compiled path then
#: takes its numpy reference, with the same numbers): how CI and the tests
#: check the core install's paths on a machine that has numba.
DISABLE_NUMBA_ENV = "SKLCALIB_DISABLE_NUMBA"


def numba_disabled():
    """Whether :data:`DISABLE_NUMBA_ENV` asks sklcalib to ignore numba."""
    return os.environ.get(DISABLE_NUMBA_ENV, "") not in ("", "0")


def is_installed(module):
    """Whether the top-level ``module`` can be imported (without importing it).

    numba counts as absent while :data:`DISABLE_NUMBA_ENV` is set.
    """
    if module == "numba" and numba_disabled():
        return False
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


# numba's parallel kernels share one pool of worker threads. With the
# "workqueue" threading layer (numba's fallback when neither TBB nor OpenMP is
# present) that pool is not thread-safe: two Python threads launching parallel
# kernels at once abort the process (numba's "Terminating: Nested parallel
# kernel launch detected"). Under that layer sklcalib's kernels run one at a
# time behind this lock; under TBB or OpenMP they run concurrently.
_COMPILED_LOCK = threading.RLock()
_WORKQUEUE = None  # cached answer of _workqueue_layer once numba has launched


def _workqueue_layer():
    """Whether numba's parallel kernels run (or will run) on "workqueue"."""
    global _WORKQUEUE
    if _WORKQUEUE is not None:
        return _WORKQUEUE
    import numba  # the caller is about to run a compiled kernel anyway

    try:
        _WORKQUEUE = numba.threading_layer() == "workqueue"  # already launched
        return _WORKQUEUE
    except ValueError:  # no parallel kernel has run yet: predict numba's choice
        pass
    layer = str(numba.config.THREADING_LAYER).lower()
    if layer == "workqueue":
        return True
    if layer in ("tbb", "omp", "safe", "threadsafe"):
        return False  # numba raises rather than fall back to workqueue
    # "default" tries TBB, then OpenMP, then workqueue; "forksafe" skips
    # OpenMP on Linux: the lock is cheap, so err on its side
    candidates = ("tbbpool", "omppool") if layer == "default" else ("tbbpool",)
    for pool in candidates:
        try:
            importlib.import_module(f"numba.np.ufunc.{pool}")
        except ImportError:
            continue
        return False
    return True


@contextlib.contextmanager
def parallel_kernel_section():
    """Run a numba parallel kernel; serialised under the workqueue layer."""
    if _workqueue_layer():
        with _COMPILED_LOCK:
            yield
    else:
        yield
