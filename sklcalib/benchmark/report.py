"""Deprecated: the benchmark's tables are :mod:`sklcalib.benchmark.tables`
and its figures :mod:`sklcalib.benchmark.figures`.

The old path keeps working, with a ``FutureWarning``.
"""

from sklcalib._utils._moved import moved_getattr
from sklcalib.benchmark.tables import __all__ as _TABLES

__getattr__ = moved_getattr(
    __name__,
    {
        **dict.fromkeys(_TABLES, "sklcalib.benchmark.tables"),
        "plot_curvature": "sklcalib.benchmark.figures",
        "plot_reliability": "sklcalib.benchmark.figures",
    },
)
