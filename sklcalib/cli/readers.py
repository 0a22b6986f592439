"""Deprecated: the file readers are :mod:`sklcalib.io` now.

``from sklcalib.cli.readers import read_predictions`` keeps working, with a
``FutureWarning``; import from :mod:`sklcalib.io` instead.
"""

from sklcalib._utils._moved import moved_getattr

__getattr__ = moved_getattr(
    __name__,
    {
        "InputFileError": "sklcalib.io",
        "Predictions": "sklcalib.io",
        "read_predictions": "sklcalib.io",
        "default_max_bytes": "sklcalib.io",
    },
)
