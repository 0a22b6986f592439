"""Bin sums and per-row scores: the statistics code below the metrics.

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
    check_prob_values(p)
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
    check_prob_values(p)
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


def nll_terms(columns, y_idx):
    """Per-row ``-log p_y`` of (n, K) probabilities, float64.

    Probabilities are clipped at the machine epsilon of their dtype before
    the log, as ``sklearn.metrics.log_loss`` does.
    """
    p_true = columns[np.arange(columns.shape[0]), y_idx].astype(np.float64)
    return -np.log(np.clip(p_true, np.finfo(columns.dtype).eps, 1.0))


def brier_terms(columns, y_idx):
    """Per-row ``sum_k (p_k - [y = k])^2`` of (n, K) probabilities, float64.

    Computed as ``sum_{k != y} p_k^2 + (1 - p_y)^2`` (the squares' array with
    the true class's entry zeroed, no one-hot copy): a sum of non-negative
    terms, so never negative, and a near-certain correct row keeps its small
    value instead of the cancellation of ``sum_k p_k^2 - 2 p_y + 1``.
    """
    rows = np.arange(columns.shape[0])
    p_true = columns[rows, y_idx].astype(np.float64)
    squares = np.square(columns, dtype=np.float64)
    squares[rows, y_idx] = 0.0
    return squares.sum(axis=1) + np.square(1.0 - p_true)


def score_terms(p, y_idx):
    """Per-row negative log-likelihood and Brier score, float64, of
    probabilities ``p`` (two columns for a 1-D binary ``p``): see
    :func:`nll_terms` and :func:`brier_terms`."""
    columns = as_columns(p)
    return nll_terms(columns, y_idx), brier_terms(columns, y_idx)


def mean_standard_error(terms, w=None):
    """Standard error of the (weighted) mean of per-row ``terms``: the
    unbiased variance of the rows (reliability weights: the biased weighted
    variance over ``1 - sum(wn^2)``) times ``sum(wn^2)``, ``wn`` the
    normalised weights; the textbook ``std(ddof=1) / sqrt(n)`` for equal
    weights. ``1 - sum(wn^2)`` is summed as ``sum_i wn_i (1 - wn_i)``, with
    the largest weight's ``1 - wn`` from the other weights, so that one
    dominant weight (an effective number of rows just above 1) does not
    cancel to 0. Fewer than two rows with positive weight have no standard
    error: a ValueError."""
    terms = np.asarray(terms, dtype=np.float64)
    if w is not None:
        w = np.asarray(w, dtype=np.float64)
        positive = w > 0
        terms, w = terms[positive], w[positive]
    if terms.shape[0] < 2:
        raise ValueError(
            "The standard error of a mean needs at least two rows with positive weight."
        )
    if w is None:
        return float(np.std(terms, ddof=1) / np.sqrt(terms.shape[0]))
    w = w / w.max()  # no overflow at any scale
    total = w.sum()
    wn = w / total
    mean = np.dot(wn, terms)
    biased = np.dot(wn, (terms - mean) ** 2)
    top = int(np.argmax(w))
    rest = total - w  # no cancellation: only the largest can exceed total / 2
    rest[top] = np.sum(np.delete(w, top))
    one_minus_sum_sq = np.dot(wn, rest) / total
    return float(np.sqrt(biased / one_minus_sum_sq * np.dot(wn, wn)))
