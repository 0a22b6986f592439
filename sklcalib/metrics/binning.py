"""Per-bin sums: the one bin-statistics kernel behind every binned metric.

Every binned quantity of sklcalib (ECE and its variants, the report, the
scorers, the reliability diagram) is a function of three per-bin sums: the
(weighted) number of samples, the sum of their confidences and the sum of
their correctness. :func:`bin_statistics` computes them once. Both names are
also exported by :mod:`sklcalib.metrics`.
"""

from typing import NamedTuple

import numpy as np

# modules, not names: this public module exposes only its __all__
from sklcalib._utils import _binning, _validation

__all__ = ["BinStatistics", "bin_statistics"]


class BinStatistics(NamedTuple):
    """Per-bin sums returned by :func:`bin_statistics`.

    A named tuple: the fields below are also its attributes.

    Parameters
    ----------
    counts : ndarray of shape (n_bins,), float64
        Number of samples in each bin (sum of their weights if weighted).
    sum_confidence : ndarray of shape (n_bins,), float64
        Sum of the (weighted) confidences in each bin.
    sum_correct : ndarray of shape (n_bins,), float64
        Sum of the (weighted) correctness indicators in each bin.
    edges : ndarray of shape (n_bins + 1,), float64
        Bin edges. Uniform bins are ``(edges[b], edges[b + 1]]`` (the first
        also holds 0). Quantile bins group samples by rank; their edges are
        0, the largest confidence of every non-last group and 1, for display.

    Examples
    --------
    >>> from sklcalib.metrics import bin_statistics
    >>> stats = bin_statistics([0.2, 0.5, 0.9, 1.0], [0, 1, 1, 1], n_bins=2)
    >>> stats.nonempty
    array([ True,  True])
    >>> counts, sum_confidence, sum_correct, edges = stats
    >>> sum_correct / counts  # accuracy of each bin
    array([0.5, 1. ])
    """

    counts: np.ndarray
    sum_confidence: np.ndarray
    sum_correct: np.ndarray
    edges: np.ndarray

    @property
    def nonempty(self):
        """Boolean mask of the bins holding a positive weight."""
        return self.counts > 0


def bin_statistics(
    confidence, correct, *, n_bins=15, strategy="uniform", sample_weight=None
):
    """Per-bin counts, sums of confidence and sums of correctness.

    This is the kernel every binned calibration metric is computed from.

    Parameters
    ----------
    confidence : array-like of shape (n_samples,)
        Predicted probability of the event (top-label confidence, or the
        probability of one class), in [0, 1].
    correct : array-like of shape (n_samples,)
        Whether the event happened (0/1 or bool).
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        ``"uniform"``: equal-width right-closed bins ``(lower, upper]`` on
        float64 edges ``np.linspace(0, 1, n_bins + 1)``, the first bin also
        holding 0; a confidence exactly on an edge goes to the lower bin.
        ``"quantile"``: equal-mass bins: samples sorted by confidence (stable
        sort) and split into ``n_bins`` consecutive groups whose sizes differ by
        at most one, larger groups first (the order of ``numpy.array_split``).
        Every sample is counted; groups are made by count, not by weight.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    stats : BinStatistics
        Named tuple ``(counts, sum_confidence, sum_correct, edges)`` of float64
        arrays; see :class:`BinStatistics`.

    Examples
    --------
    >>> from sklcalib.metrics import bin_statistics
    >>> stats = bin_statistics([0.2, 0.5, 0.9, 1.0], [0, 1, 1, 1], n_bins=2)
    >>> stats.counts
    array([2., 2.])
    >>> stats.sum_confidence
    array([0.7, 1.9])
    >>> stats.sum_correct
    array([1., 2.])
    >>> stats.edges
    array([0. , 0.5, 1. ])
    """
    n_bins = _validation.check_n_bins(n_bins)
    _validation.check_option(strategy, "strategy", _validation.STRATEGIES)
    conf = np.asarray(_validation.as_numpy(confidence))
    corr = np.asarray(_validation.as_numpy(correct))
    if conf.ndim != 1:
        raise ValueError(f"confidence must be 1-D, got shape {conf.shape}.")
    if corr.shape != conf.shape:
        raise ValueError(
            f"correct has shape {corr.shape} but confidence has shape {conf.shape}."
        )
    if conf.shape[0] == 0:
        raise ValueError("confidence is empty: at least one sample is required.")
    if conf.dtype == bool or not np.issubdtype(conf.dtype, np.number):
        raise ValueError(f"confidence must be numeric, got dtype {conf.dtype}.")
    if not np.all(np.isfinite(conf)) or np.any(conf < 0) or np.any(conf > 1):
        raise ValueError("confidence must be finite and within [0, 1].")
    if corr.dtype != bool and not np.all((corr == 0) | (corr == 1)):
        raise ValueError("correct must hold only 0/1 or booleans.")
    weights = _validation.check_sample_weight(sample_weight, conf.shape[0])
    return _bin_statistics(conf, corr, n_bins, strategy, weights)


def _bin_statistics(conf, correct, n_bins, strategy, weights):
    """:func:`bin_statistics` without validation (inputs already checked)."""
    conf64 = conf.astype(np.float64, copy=False)
    corr64 = correct.astype(np.float64, copy=False)
    if strategy == "uniform":
        edges = _binning.uniform_edges(n_bins)
        idx = _binning.bin_index(conf64, edges)
    else:
        idx, order, sizes = _binning.quantile_groups(conf64, n_bins)
        edges = _binning.quantile_edges(conf64, order, sizes)
    counts, sum_conf, sum_corr = _binning.weighted_bin_sums(
        idx, n_bins, weights, conf64, corr64
    )
    return BinStatistics(counts, sum_conf, sum_corr, edges)
