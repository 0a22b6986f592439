"""Deprecated: ``sklcalib benchmark``'s options live in
:mod:`sklcalib.cli.benchmark_command`.

The old path keeps working, with a ``FutureWarning``.
"""

from sklcalib._utils._moved import moved_getattr

__getattr__ = moved_getattr(
    __name__,
    {
        "add_benchmark_parser": "sklcalib.cli.benchmark_command",
        "run_benchmark": "sklcalib.cli.benchmark_command",
    },
)
