"""Cumulative differences of outcomes and probabilities, on validated arrays.

The kernel of the cumulative calibration statistics (Arrieta-Ibarra,
Gujral, Tannen, Tygert & Xu, JMLR 2022) and of the segment audit. For rows
sorted by their score ``p``, with outcomes ``y`` in {0, 1} and weights ``w``,

    C_k = sum_{i <= k} w_i (y_i - p_i) / sum_i w_i,   C_0 = 0,

is read only at the ends of groups of tied scores (the order of tied rows is
arbitrary, so no value inside a tie group is a statistic of the data). The
Kuiper statistic is ``max C - min C`` over ``C_0`` and those ends (mcgrad's
convention: the start 0 counts; MAPIE leaves it out), the Kolmogorov–Smirnov
statistic ``max |C|``; under calibration ``C`` is a sum of independent
centred terms of variance ``w_i^2 p_i (1 - p_i)``, so its standard deviation
at the end is ``sigma = sqrt(sum w_i^2 p_i (1 - p_i)) / sum w_i``.
"""

from typing import NamedTuple

import numpy as np


class CumulativePath(NamedTuple):
    """The cumulative differences of one score column.

    ``score`` (m,) and ``value`` (m,): the score and ``C`` at the end of
    each of the ``m`` tie groups, in increasing score; ``fraction`` (m,): the
    share of the total weight up to that end (the path's time axis);
    ``sd`` (m,): the standard deviation of ``C`` there under calibration,
    ``sqrt(sum_{i <= k} w_i^2 p_i (1 - p_i)) / sum_i w_i``; ``sigma``: its
    last value.
    """

    score: np.ndarray
    value: np.ndarray
    fraction: np.ndarray
    sd: np.ndarray
    sigma: float


def _sorted_unweighted(outcome, score):
    """Scores sorted ascending and their residuals ``y - p``, in one sort.

    The outcome rides in the lowest bit of the score's bit pattern shifted
    left by one: non-negative float64 values order like their bit patterns
    (as int64), and the largest, 1.0, is below 2**62, so the shift keeps the
    order and loses nothing. ``np.sort`` of int64 is several times faster
    than ``np.argsort`` and saves the gathers.
    """
    keys = np.add(score, 0.0, dtype=np.float64).view(np.int64)  # + 0.0: no -0.0
    keys <<= 1
    np.bitwise_or(keys, outcome, out=keys, casting="unsafe")
    keys.sort()
    y = keys & 1
    keys >>= 1
    s = keys.view(np.float64)
    return s, y - s


def _sorted(outcome, score, weight):
    """``(score, weighted residual, weight)`` sorted by score; the residual
    is ``w (y - p)``, weight None if unweighted."""
    if weight is None:
        s, residual = _sorted_unweighted(outcome, score)
        return s, residual, None
    order = np.argsort(score)
    s = score[order].astype(np.float64)
    w = weight[order]
    return s, w * (outcome[order] - s), w


def group_ends(sorted_score):
    """Boolean mask of the last row of every tie group of sorted scores."""
    ends = np.empty(sorted_score.shape[0], dtype=bool)
    np.not_equal(sorted_score[1:], sorted_score[:-1], out=ends[:-1])
    ends[-1] = True
    return ends


def _cumulative(s, residual, w):
    """``(C at every row, sigma)`` of sorted arrays (normalised by the total
    weight); ``residual`` is consumed."""
    if w is None:
        total = float(s.shape[0])
        variance = float(np.dot(s, 1.0 - s))
    else:
        total = float(w.sum())
        variance = float(np.dot(w * w * s, 1.0 - s))
    c = np.cumsum(residual, out=residual)
    c /= total
    return c, np.sqrt(max(variance, 0.0)) / total


def cumulative_statistics(outcome, score, weight=None):
    """``(kuiper, ks, sigma)`` of one score column.

    ``outcome`` (n,) bool or 0/1, ``score`` (n,) in [0, 1] (float32 read as
    float64), ``weight`` (n,) float64 or None; already validated. Tied scores
    are grouped: only the ends of tie groups are read.
    """
    s, residual, w = _sorted(outcome, score, weight)
    c, sigma = _cumulative(s, residual, w)
    if not np.all(s[1:] != s[:-1]):  # ties: read only the ends of the groups
        c = c[group_ends(s)]
    high = max(float(c.max()), 0.0)  # C_0 = 0 counts
    low = min(float(c.min()), 0.0)
    return high - low, max(high, -low), sigma


def cumulative_path(outcome, score, weight=None):
    """The :class:`CumulativePath` of one score column (validated inputs)."""
    s, residual, w = _sorted(outcome, score, weight)
    c, sigma = _cumulative(s, residual, w)
    ends = group_ends(s)
    w = np.ones(s.shape[0]) if w is None else w
    cw = np.cumsum(w)
    variance = np.cumsum(w * w * s * (1.0 - s))
    sd = np.sqrt(np.maximum(variance[ends], 0.0)) / cw[-1]
    return CumulativePath(s[ends], c[ends], cw[ends] / cw[-1], sd, sigma)


def scaled(statistic, sigma):
    """``statistic / sigma`` elementwise: 0 for 0/0 and inf for a positive
    statistic with ``sigma = 0`` (scores all 0 or 1, contradicted by an
    outcome), never NaN."""
    statistic = np.asarray(statistic, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    positive = sigma > 0
    out = np.where(positive, statistic / np.where(positive, sigma, 1.0), 0.0)
    out = np.where(~positive & (statistic > 0), np.inf, out)
    return out if out.ndim else float(out)
