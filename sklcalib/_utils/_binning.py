"""Bins shared by the metrics, the calibrators and the reliability diagram:
the right-closed bin of a value, equal-mass groups and weighted quantiles,
and the calibration error of per-bin sums.

"Equal-mass" has three definitions here, kept apart because each reproduces
a reference and they differ on ties and on sizes that do not divide evenly
(tests/test_binning_definitions.py shows each on the same data):

- :func:`quantile_groups`, *rank groups*: ``strategy="quantile"`` of the
  metrics (AdaECE) and of the reliability diagram, AdaFocal's bins and the
  monotonic sweep. Exactly ``n_bins`` groups by rank in ``numpy.array_split``
  sizes; tied values may fall in different groups; weights do not move the
  boundaries.
- :func:`equal_mass_edges`, *midpoint edges* (Kumar et al.'s
  ``get_equal_bins``): the debiased ECE and scaling-binning. Edges halfway
  between the groups, duplicates dropped, so ties share a bin and there can
  be fewer bins; integer weights count as repetitions.
- :func:`quantile_value_edges`, *quantile edges* (scikit-learn's
  ``calibration_curve(strategy="quantile")``):
  ``HistogramBinningCalibrator(strategy="quantile")``. Edges at the (weighted)
  linear quantiles of the values, outer edges 0 and 1, duplicates merged; a
  calibrator must place an unseen value by its value alone.

The per-bin sums themselves, :func:`sklcalib.metrics.bin_statistics`, live
in the public module :mod:`sklcalib.metrics.binning`.
"""

from typing import NamedTuple

import numpy as np


def uniform_edges(n_bins):
    """Equal-width edges in float64, exactly ``np.linspace(0, 1, n_bins + 1)``."""
    return np.linspace(0.0, 1.0, n_bins + 1)


def bin_index(confidence, edges):
    """Index of the right-closed bin ``(edges[b], edges[b+1]]`` of each value.

    The one definition of sklcalib's bins, for any increasing edges from 0 to
    1 (uniform or quantile): a value exactly on an edge goes to the lower bin;
    0 goes to the first bin. The comparison is made in float64 (float32
    confidences convert exactly). The compiled metric kernel and AdaFocal's
    torch bins follow the same rule and are tested against this function.
    """
    idx = np.searchsorted(edges, confidence, side="left") - 1
    return np.clip(idx, 0, edges.shape[0] - 2)


def right_edge_index(values, right_edges):
    """Bin of each value for bins given by their right edges (as
    :func:`equal_mass_edges` returns them, the last 1.0): bin b holds
    ``(right_edges[b - 1], right_edges[b]]``; a value above the last edge
    goes to the last bin."""
    idx = np.searchsorted(right_edges, values, side="left")
    return np.minimum(idx, right_edges.shape[0] - 1)


def weighted_bin_sums(idx, n_bins, weights, *values):
    """Per-bin (weighted) count, then the per-bin (weighted) sum of each of
    ``values``, float64: the sums every binned quantity is made of.
    ``weights`` None counts every row once."""
    if weights is None:
        counts = np.bincount(idx, minlength=n_bins).astype(np.float64)
        sums = [np.bincount(idx, weights=v, minlength=n_bins) for v in values]
    else:
        counts = np.bincount(idx, weights=weights, minlength=n_bins)
        sums = [np.bincount(idx, weights=v * weights, minlength=n_bins) for v in values]
    return (counts, *sums)


class BinSummary(NamedTuple):
    """Per-bin ``rows``, ``mass`` (summed weight; ``rows`` unweighted),
    ``n_eff`` (Kish's effective number of rows ``mass**2 / sum(w**2)``, the
    rows unweighted, 0 for an empty bin: free of the weights' scale) and the
    weighted ``sums`` of each value, float64 arrays of ``n_bins``."""

    rows: np.ndarray
    mass: np.ndarray
    n_eff: np.ndarray
    sums: tuple


def bin_summaries(idx, n_bins, weights, *values):
    """The :class:`BinSummary` of rows in bins ``idx``: what every per-bin
    mean, share and variance estimate (the debiased error, the intervals'
    cells) is made of."""
    rows = np.bincount(idx, minlength=n_bins).astype(np.float64)
    if weights is None:
        _, *sums = weighted_bin_sums(idx, n_bins, None, *values)
        return BinSummary(rows, rows, rows, tuple(sums))
    mass, *sums, square = weighted_bin_sums(idx, n_bins, weights, *values, weights)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(square > 0, mass * mass / square, 0.0)
    return BinSummary(rows, mass, n_eff, tuple(sums))


def quantile_groups(confidence, n_bins):
    """Equal-mass group of each value: stable sort by confidence, then
    ``numpy.array_split`` sizes (sizes differ by at most one, larger first).

    Returns the group index of every sample (in the input order) and the sort
    order.
    """
    n = confidence.shape[0]
    order = np.argsort(confidence, kind="stable")
    size, extra = divmod(n, n_bins)
    sizes = np.full(n_bins, size, dtype=np.intp)
    sizes[:extra] += 1
    groups = np.empty(n, dtype=np.intp)
    groups[order] = np.repeat(np.arange(n_bins, dtype=np.intp), sizes)
    return groups, order, sizes


def quantile_edges(values, order, sizes):
    """Edges of the equal-mass groups of :func:`quantile_groups`.

    0, the largest value of every group but the last, and 1: right-closed bins
    ``(edges[b], edges[b + 1]]`` on them reproduce the groups (up to ties
    across a group boundary). Empty groups come last (sizes never increase),
    so an empty group's edge repeats the one before it.
    """
    edges = np.empty(sizes.shape[0] + 1)
    edges[0], edges[-1] = 0.0, 1.0
    last = np.cumsum(sizes) - 1  # sorted position of each group's largest value
    edges[1:-1] = values[order[last[:-1]]]
    return edges


def calibration_gaps(stats):
    """Bin weights (fractions of the total) and signed gaps conf - acc of the
    non-empty bins."""
    mask = stats.nonempty
    counts = stats.counts[mask]
    gaps = (stats.sum_confidence[mask] - stats.sum_correct[mask]) / counts
    return counts / counts.sum(), gaps


def binned_error(counts, sum_confidence, sum_correct, norm="l1"):
    """Calibration error of the given norm from per-bin sums, vectorised over
    leading axes (the bootstrap's resamples); the bins are the last axis.

    No clipping to [0, 1]: the weighted mean is ``sum(n_b |gap_b|) / sum(n_b)``
    with numerator and denominator summed in the same order, and every term
    ``n_b |gap_b|`` is at most ``n_b`` after rounding (a bin's sums of
    confidence and correctness are at most its count), so round-off cannot
    leave [0, 1]; a value outside it is a bug to see, not to hide. Empty bins
    add 0 to both sums.
    """
    filled = counts > 0
    safe = np.where(filled, counts, 1.0)
    gaps = np.where(filled, np.abs(sum_confidence - sum_correct) / safe, 0.0)
    if norm == "max":
        return gaps.max(axis=-1)
    if norm == "l2":
        return np.sqrt(np.sum(counts * (gaps * gaps), axis=-1) / counts.sum(axis=-1))
    return np.sum(counts * gaps, axis=-1) / counts.sum(axis=-1)


def error_from_stats(stats, norm="l1"):
    """Calibration error of the given norm from :class:`BinStatistics`
    (see :func:`binned_error`)."""
    return float(
        binned_error(stats.counts, stats.sum_confidence, stats.sum_correct, norm)
    )


def top_label(p, y_idx):
    """Top-label confidence and correctness (numpy reference path).

    ``p`` is (n, K) or (n,) binary positive-class probabilities; the argmax
    takes the first maximum, as ``numpy.argmax``.
    """
    if p.ndim == 1:
        positive = p > 0.5  # argmax of [1 - p, p], ties to column 0
        conf = np.where(positive, p, 1.0 - p)
        pred = positive.astype(np.intp)
    else:
        pred = np.argmax(p, axis=1)
        conf = p[np.arange(p.shape[0]), pred]
    return conf, pred == y_idx


def _expanded_index(cumulative_weight, positions):
    """Index of the sorted sample at each position of the expanded sample.

    With integer weights the expanded sample repeats sample i ``w_i`` times;
    position j (0-based) holds the sample whose cumulative weight first
    exceeds j. Zero-weight samples are never selected.
    """
    return np.searchsorted(cumulative_weight, positions, side="right")


def weighted_quantile(values, levels, sample_weight=None):
    """``numpy.quantile(values, levels)`` (linear method) with sample weights.

    With integer weights this is the quantile of the sample in which each
    value is repeated as many times as its weight (scikit-learn's meaning of
    ``sample_weight``); None is the unweighted ``numpy.quantile``.
    """
    if sample_weight is None:
        return np.quantile(values, levels)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    cumulative = np.cumsum(sample_weight[order])
    h = (cumulative[-1] - 1.0) * np.asarray(levels, dtype=np.float64)
    h = np.maximum(h, 0.0)
    below = np.floor(h)
    t = h - below
    last = len(ordered) - 1
    a = ordered[np.minimum(_expanded_index(cumulative, below), last)]
    b = ordered[np.minimum(_expanded_index(cumulative, below + 1), last)]
    # numpy's lerp: exact at both ends
    return np.where(t >= 0.5, b - (b - a) * (1 - t), a + (b - a) * t)


def equal_mass_edges(values, n_bins, sample_weight=None):
    """Right edges of equal-mass bins, as Kumar et al.'s ``get_equal_bins``.

    Sort the values, split them into ``n_bins`` groups as
    ``numpy.array_split`` does (at most as many groups as values), put an
    edge at the midpoint between consecutive groups and a last edge at 1.0,
    and drop duplicate edges. Bins are right-closed: a value v falls in bin
    ``searchsorted(edges, v, side="left")``.

    With integer ``sample_weight`` the split is that of the sample with each
    value repeated as many times as its weight; other weights split the
    total weight into ``n_bins`` equal parts.
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    weight = np.ones(len(values)) if sample_weight is None else sample_weight[order]
    cumulative = np.cumsum(weight)
    total = cumulative[-1]
    if np.all(weight == np.round(weight)):
        total = round(total)
        n_groups = min(n_bins, total)
        size, extra = divmod(total, n_groups)
        g = np.arange(1, n_groups)
        starts = g * size + np.minimum(g, extra)  # array_split's group starts
    else:
        n_groups = n_bins
        starts = np.arange(1, n_groups) * (total / n_groups)
    last = ordered[np.searchsorted(cumulative, starts, side="left")]
    first = ordered[_expanded_index(cumulative, starts)]
    # midpoints in the dtype of the values (float32 stays float32), as the
    # authors' code, then float64 edges
    return np.unique(np.r_[((last + first) / 2).astype(np.float64), 1.0])


def quantile_value_edges(values, n_bins, sample_weight=None):
    """Edges at the (weighted) quantiles of ``values``: the quantiles at levels
    ``0, 1/n_bins, ..., 1`` (:func:`weighted_quantile`), the outer ones
    replaced by 0 and 1 and duplicates merged (so there can be fewer than
    ``n_bins`` bins). For right-closed bins (:func:`bin_index`)."""
    levels = np.linspace(0, 1, n_bins + 1)
    edges = np.unique(weighted_quantile(values, levels, sample_weight))
    return np.unique(np.r_[0.0, edges[1:-1], 1.0])
