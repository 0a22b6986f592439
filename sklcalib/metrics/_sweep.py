"""ECE-sweep of Roelofs, Cain, Shlens & Mozer, "Mitigating Bias in Calibration
Error Estimation" (AISTATS 2022): equal-mass bins, as many as keep the bin
accuracies monotonic in the confidence."""

import numpy as np

from sklcalib._utils._binning import error_from_stats
from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._validation import check_option

from ._calibration_error import top_label_inputs
from .binning import BinStatistics

SWEEP_NORMS = ("l1", "l2")


def _group_sums(cum, n_groups, n):
    """Sums over the ``numpy.array_split`` groups from a cumulative sum that
    starts with 0."""
    size, extra = divmod(n, n_groups)
    sizes = np.full(n_groups, size, dtype=np.intp)
    sizes[:extra] += 1
    ends = np.concatenate([[0], np.cumsum(sizes)])
    return np.diff(cum[ends])


def _grid(cum_w, cum_corr, bounds):
    """Filled flags, accuracies and weights of the groups between consecutive
    ``bounds`` (the same float operations as the sweep's own group sums)."""
    counts = np.diff(cum_w[bounds])
    corr = np.diff(cum_corr[bounds])
    filled = counts > 0
    accuracy = np.zeros(counts.shape[0])
    accuracy[filled] = corr[filled] / counts[filled]
    return filled, accuracy, counts


def _decreases(acc_before, acc_after, w_before, w_after, total):
    """Whether the accuracy falls from one group to a later one by more than
    the round-off of the prefix sums it is read from.

    A group's sums are differences of cumulative sums up to ``total``, so each
    accuracy carries an absolute error of a few ``eps * total / weight``. With
    weights that are not integers (a constant rescaling such as 1/120), two
    groups of equal accuracy could otherwise compare as a decrease and end the
    sweep early. With integer weights (unweighted rows) the accuracies are
    correctly rounded fractions: equal ones are equal floats, and distinct ones
    differ by at least ``1 / (w_before * w_after)``, far above this tolerance
    for any realistic ``n``, so the sweep is unchanged there.
    """
    tol = 16.0 * np.finfo(float).eps * total * (1.0 / w_before + 1.0 / w_after)
    return acc_after < acc_before - tol


def _first_decrease(filled, accuracy, counts, total):
    """Over the filled groups in order, the index (into ``filled``) of the
    second group of the first pair whose accuracy decreases; ``len(filled)``
    if none."""
    idx = np.flatnonzero(filled)
    a, c = accuracy[idx], counts[idx]
    drops = np.flatnonzero(_decreases(a[:-1], a[1:], c[:-1], c[1:], total))
    return int(idx[drops[0] + 1]) if drops.shape[0] else filled.shape[0]


def _last_filled_before(filled):
    """``out[e]``: the largest filled index below ``e`` (-1 if none)."""
    marks = np.where(filled, np.arange(filled.shape[0]), -1)
    return (
        np.concatenate([[-1], np.maximum.accumulate(marks)])
        if marks.size
        else (np.array([-1]))
    )


def _first_failure(cum_w, cum_corr, n):
    """The smallest ``b`` in ``2..n`` whose equal-mass groups have a decrease
    of accuracy (over the filled groups), or None.

    Candidate ``b`` has ``q = n // b`` and ``extra = n - b q``: ``numpy.array_split``
    makes the first ``extra`` groups of ``q + 1`` rows, which start at 0 (the
    "head" grid of step ``q + 1``), and the last ``b - extra`` of ``q`` rows,
    which end at ``n`` (the "tail" grid of step ``q`` counted from the end).
    So every ``b`` sharing ``q`` reads the same two grids: a prefix of one and
    a suffix of the other. Per ``q`` the grids cost ``O(n / q)``, and each
    ``b`` then costs O(1) (a decrease inside the prefix, inside the suffix, or
    across their junction), so the whole sweep is ``O(n log n)`` where checking
    each ``b`` afresh costs ``O(b)`` and the sweep ``O(n^2)`` on monotonic data.
    """
    total = cum_w[-1]
    b = 2
    while b <= n:
        q = n // b
        b_hi = n // q  # the largest b with the same q
        bs = np.arange(b, b_hi + 1)
        extra = n - bs * q
        k = bs - extra
        # head grid: groups [g (q+1), (g+1)(q+1)), enough for the largest extra
        m_head = int(extra.max())
        head_f, head_a, head_c = _grid(cum_w, cum_corr, np.arange(m_head + 1) * (q + 1))
        # tail grid: group t is [n - (t+1) q, n - t q); suffix of k groups
        m_tail = int(k.max())
        tail_bounds = n - np.arange(m_tail, -1, -1) * q  # increasing positions
        tail_f, tail_a, tail_c = _grid(cum_w, cum_corr, tail_bounds)
        # index t from the end
        tail_f, tail_a, tail_c = tail_f[::-1], tail_a[::-1], tail_c[::-1]
        # a decrease inside the head prefix of ``extra`` groups
        fail = _first_decrease(head_f, head_a, head_c, total) < extra
        # inside the tail suffix of k groups: in order of position (decreasing
        # t), a pair (t_prev > t_next) lies in the suffix iff t_prev < k
        t_idx = np.flatnonzero(tail_f)[::-1]  # filled, in order of position
        if t_idx.shape[0] > 1:
            a, c = tail_a[t_idx], tail_c[t_idx]
            drops = np.flatnonzero(_decreases(a[:-1], a[1:], c[:-1], c[1:], total))
            if drops.shape[0]:
                fail |= int(t_idx[drops].min()) < k
        # across the junction: the last filled head group before ``extra``
        # against the first filled tail group of the suffix (largest t < k)
        g = _last_filled_before(head_f)[extra]
        t = _last_filled_before(tail_f)[k]
        both = (g >= 0) & (t >= 0)
        junction = np.zeros(bs.shape[0], dtype=bool)
        g, t = g[both], t[both]
        junction[both] = _decreases(head_a[g], tail_a[t], head_c[g], tail_c[t], total)
        fail |= junction
        hits = np.flatnonzero(fail)
        if hits.shape[0]:
            return int(bs[hits[0]])
        b = b_hi + 1
    return None


def prefix_sums(conf, correct, weights):
    """Cumulative weights, weighted confidences and weighted correctness in
    the order of increasing confidence, each with a leading 0: the sums of any
    group of consecutive rows are two look-ups."""
    n = conf.shape[0]
    order = np.argsort(conf, kind="stable")
    w = np.ones(n) if weights is None else weights[order]
    cum_w = np.concatenate([[0.0], np.cumsum(w)])
    cum_conf = np.concatenate([[0.0], np.cumsum(w * conf[order])])
    cum_corr = np.concatenate([[0.0], np.cumsum(w * correct[order])])
    return cum_w, cum_conf, cum_corr


def sweep_groups(conf, correct, weights):
    """Per-group weighted counts, confidence sums and correctness sums of the
    largest monotonic equal-mass binning."""
    n = conf.shape[0]
    cum_w, cum_conf, cum_corr = prefix_sums(conf, correct, weights)
    failure = _first_failure(cum_w, cum_corr, n)
    b = n if failure is None else failure - 1
    return (
        _group_sums(cum_w, max(b, 1), n),
        _group_sums(cum_conf, max(b, 1), n),
        _group_sums(cum_corr, max(b, 1), n),
    )


@fill_doc
def ece_sweep(y_true, y_prob, *, norm="l1", labels=None, sample_weight=None):
    """Monotonic-sweep ECE of Roelofs et al. (2022).

    Samples are sorted by top-label confidence (stable sort). For
    ``b = 2, 3, ...`` they are split into ``b`` equal-mass groups (the sizes of
    ``numpy.array_split``); the sweep stops at the first ``b`` whose group
    accuracies are not non-decreasing (a fall within the round-off of the
    weighted sums does not count) and keeps ``b - 1`` groups (one group if
    ``b = 2`` already fails). The result is the calibration error of those
    groups, ``sum_g (n_g/N) |acc_g - conf_g|`` (L1) or the root of the weighted
    mean square gap (L2). Choosing the number of bins from the data reduces
    the upward bias of a fixed binning on miscalibrated models; on a
    calibrated model much of the plug-in's bias remains (Roelofs et al.
    measure the bias away from calibration), so a small value is no proof of
    calibration: see :func:`~sklcalib.metrics.calibration_test`.

    Parameters
    ----------
    y_true, y_prob : array-like
        The labels and the predicted probabilities of
        :func:`~sklcalib.metrics.expected_calibration_error`: the rows are
        sorted by their top-label confidence.
    norm : {"l1", "l2"}, default="l1"
        How the group gaps are combined.
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights (groups are formed by count, their means are weighted).

    Returns
    -------
    ece : float
        In [0, 1]; lower is better.

    Notes
    -----
    The candidates ``b`` that share ``q = n // b`` split the rows into a
    prefix of groups of ``q + 1`` rows starting at 0 and a suffix of groups of
    ``q`` rows ending at ``n``, so they are checked together from two grids
    of group sums: the whole sweep costs O(n log n) after the sort, also on
    perfectly monotonic data, where it runs to ``b = n``.

    References
    ----------
    R. Roelofs, N. Cain, J. Shlens and M. C. Mozer. Mitigating Bias in
    Calibration Error Estimation. AISTATS 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import ece_sweep
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> round(ece_sweep([0, 1, 1, 1], y_prob), 6)  # one group: 0.75 vs 0.75
    0.0
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, size=5000)
    >>> y = rng.uniform(size=5000) < p**2  # over-confident
    >>> round(ece_sweep(y, p), 2)
    0.18
    """
    check_option(norm, "norm", SWEEP_NORMS)
    conf, correct, w, _, _ = top_label_inputs(y_true, y_prob, labels, sample_weight)
    return sweep_error(conf, correct, w, norm)


def sweep_error(conf, correct, weights, norm="l1"):
    """ECE-sweep of validated top-label ``(confidence, correctness)``: the
    error of the sweep's groups, as the binned metrics take it from theirs."""
    groups = sweep_groups(conf.astype(np.float64), correct.astype(np.float64), weights)
    edges = np.empty(0)  # the groups' edges are not needed for the error
    return error_from_stats(BinStatistics(*groups, edges), norm)
