"""The ``sklcalib`` command line (also ``python -m sklcalib``).

``main`` parses the command line and dispatches to a command: ``benchmark``
(its options and run; the benchmark itself is :mod:`sklcalib.benchmark`) and
``report`` (the calibration report of predictions in a file, read by
``readers``).
"""

from sklcalib.cli.main import main

__all__ = ["main"]
