"""Per-class bin sums and per-row scores, from validated inputs.

Shared by the one-shot metrics, the report and
:class:`~sklcalib.metrics.CalibrationAccumulator` (and so the Dask path, which
runs the accumulator on every block). The top-label uniform-bin sums live
beside the metrics in ``_calibration_error`` (they dispatch to the fused
kernel).
"""

import numpy as np

from sklcalib._utils._binning import _bin_statistics


def as_columns(p):
    """(n, K) probabilities; a 1-D binary ``p`` becomes ``[1 - p, p]``."""
    return np.column_stack([1.0 - p, p]) if p.ndim == 1 else p


def classwise_statistics(p, y_idx, n_bins, strategy, sample_weight):
    """Bin statistics of every column ``k`` against ``[y == k]`` (values of
    ``p`` already checked)."""
    columns = as_columns(p)
    return [
        _bin_statistics(columns[:, k], y_idx == k, n_bins, strategy, sample_weight)
        for k in range(columns.shape[1])
    ]


def score_terms(p, y_idx):
    """Per-row negative log-likelihood and Brier score, float64.

    Probabilities are clipped at the machine epsilon of their dtype before
    the log, as ``sklearn.metrics.log_loss`` does; the Brier term is
    ``sum_k (p_k - [y = k])^2`` (two columns for a 1-D binary ``p``).
    """
    columns = as_columns(p)
    n = columns.shape[0]
    p_true = columns[np.arange(n), y_idx].astype(np.float64)
    nll = -np.log(np.clip(p_true, np.finfo(columns.dtype).eps, 1.0))
    sq = np.square(columns.astype(np.float64)).sum(axis=1)
    brier = sq - 2.0 * p_true + 1.0  # sum_k (p_k - e_k)^2 without a one-hot copy
    return nll, brier
