"""Predictions from files: :func:`read_predictions` reads the true classes and
the scores of any model from a .csv, .parquet, .npz or .npy file, checked as
the metrics check them, for :func:`sklcalib.metrics.calibration_report` or
any other function of sklcalib (``sklcalib report`` is a thin layer over it).

The file layouts, the names of other layouts (``y_true=``, ``scores=``) and
the memory limit checked before reading are described in
:func:`read_predictions`.
"""

from sklcalib._utils._memory import default_max_bytes
from sklcalib.io._common import InputFileError
from sklcalib.io._predictions import Predictions, read_predictions

__all__ = ["InputFileError", "Predictions", "default_max_bytes", "read_predictions"]
