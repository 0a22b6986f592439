"""Top-label and per-class bin sums from validated targets: the statistics
code below the binned metrics.

Shared by the one-shot metrics, the report and
:class:`~sklcalib.metrics.CalibrationAccumulator` (and so the Dask path, which
runs the accumulator on every block), from targets already validated. The
top-label functions check the values of ``p`` themselves: in the fused kernel
on large inputs (numba, imported only then), with numpy on small ones.
"""

import numpy as np

from sklcalib._utils._binning import top_label
from sklcalib._utils._optional import is_installed
from sklcalib._utils._scores import as_columns
from sklcalib._utils._validation import check_prob_values

from .binning import _bin_statistics

# Below this many probabilities the numpy path takes milliseconds: it spares
# the numba import and, on a fresh install, the kernel's one-off compilation
# (~10 s, cached on disk afterwards). Tests move it to exercise both paths.
_FUSED_MIN_SIZE = 1 << 20


def _use_fused(p):
    # numba is optional (the "fast" extra): without it the numpy path, which
    # gives the same results, serves every size; float16 has no fused kernel
    return (
        p.ndim == 2
        and p.size >= _FUSED_MIN_SIZE
        and p.dtype in (np.float32, np.float64)
        and is_installed("numba")
    )


def validated_top_label(p, y_idx):
    """Check the values of ``p`` and return top-label ``(confidence, correct)``."""
    if _use_fused(p):
        from ._fused import fused_top_label

        return fused_top_label(p, y_idx)
    p = check_prob_values(p)
    return top_label(p, y_idx)


def uniform_top_label_statistics(p, y_idx, n_bins, sample_weight):
    """Check the values of ``p`` and return its top-label uniform-bin
    :class:`~sklcalib.metrics.BinStatistics`.

    This is the statistics code of the uniform-bin metrics, of
    :class:`~sklcalib.metrics.CalibrationAccumulator` and of every Dask block.
    Large inputs take the fused kernel (checks, max, argmax and binning in one
    pass, chunked independently of the number of threads); small ones numpy.
    """
    if _use_fused(p):
        from ._fused import fused_uniform_statistics

        return fused_uniform_statistics(p, y_idx, n_bins, sample_weight)
    p = check_prob_values(p)
    conf, correct = top_label(p, y_idx)
    return _bin_statistics(conf, correct, n_bins, "uniform", sample_weight)


def classwise_statistics(p, y_idx, n_bins, strategy, sample_weight):
    """Bin statistics of every column ``k`` against ``[y == k]`` (values of
    ``p`` already checked)."""
    columns = as_columns(p)
    return [
        _bin_statistics(columns[:, k], y_idx == k, n_bins, strategy, sample_weight)
        for k in range(columns.shape[1])
    ]
