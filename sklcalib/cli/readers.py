"""Deprecated: the file readers are :mod:`sklcalib.io` now.

``from sklcalib.cli.readers import read_predictions`` keeps working, with a
``FutureWarning``; import from :mod:`sklcalib.io` instead.
"""

import warnings

#: the names this module had, and where each lives now
_MOVED = {
    "InputFileError": "sklcalib.io",
    "Predictions": "sklcalib.io",
    "read_predictions": "sklcalib.io",
    "default_max_bytes": "sklcalib.io",
}


def __getattr__(name):
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    warnings.warn(
        f"sklcalib.cli.readers.{name} moved to {_MOVED[name]}.{name}; import it "
        "from there (sklcalib.cli.readers will be removed)",
        FutureWarning,
        stacklevel=2,
    )
    return getattr(import_module(_MOVED[name]), name)
