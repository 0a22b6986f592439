"""The ``sklcalib`` command line (also ``python -m sklcalib``).

``main`` parses the command line and dispatches to a command, one module each:
``benchmark_command`` (the options of ``sklcalib benchmark`` and the run they
start; the benchmark itself is :mod:`sklcalib.benchmark`) and
``report_command`` (``sklcalib report``: the calibration report of predictions
in a file, read by :func:`sklcalib.io.read_predictions`).
"""

from sklcalib.cli.main import main

__all__ = ["main"]
