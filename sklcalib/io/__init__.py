"""Reading predictions from files: .csv, .parquet, .npz, .npy.

File layouts (the columns' order is the classes' order):

- ``.csv`` / ``.parquet``: a column ``y_true`` holding each row's class, and one
  column per class holding its probability (``--logits``: its logit); the
  column headers are the class names, and ``y_true`` must use them. Parquet
  needs pandas and pyarrow (``pip install "sklcalib[parquet]"``).
- ``.npz``: an array ``y_true`` and an array ``y_prob`` (probabilities) or
  ``logits``, of shape (n, K), or (n,) for the positive class of a binary
  problem; optionally ``classes``, the K class names. Integer ``y_true`` holds
  column indices 0..K-1 (with or without ``classes``); string ``y_true`` holds
  class names, which need ``classes``. Saved by ``numpy.savez``.
- ``.npy``: a structured array with a field ``y_true`` and one field per class
  (like a table), or a plain (n, K + 1) float array whose first column is the
  column index 0..K-1 of the true class and whose other K columns are the
  probabilities (or logits).

A file is untrusted input: every problem ends in :class:`InputFileError`, one
line for the user, never a traceback. Arrays of Python objects are refused
(loading a pickle can run arbitrary code). Before anything is decompressed or
allocated, the size the data would take in memory is read from the file's own
directory (the zip directory of an .npz, the header of an .npy, the row-group
sizes of a parquet file, the first rows of a csv) and compared with a limit,
:func:`default_max_bytes` unless the caller gives one: a 5 MB archive that
inflates to 2 GB is refused, not decompressed.
"""

from sklcalib._utils._memory import default_max_bytes
from sklcalib.io._common import InputFileError
from sklcalib.io._predictions import Predictions, read_predictions

__all__ = ["InputFileError", "Predictions", "default_max_bytes", "read_predictions"]
