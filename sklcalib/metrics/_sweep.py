"""ECE-sweep of Roelofs, Cain, Shlens & Mozer, "Mitigating Bias in Calibration
Error Estimation" (AISTATS 2022): equal-mass bins, as many as keep the bin
accuracies monotonic in the confidence."""

import numpy as np

from sklcalib._utils._binning import BinStatistics, error_from_stats
from sklcalib._utils._validation import check_option

from ._calibration_error import top_label_inputs

SWEEP_NORMS = ("l1", "l2")


def _group_sums(cum, n_groups, n):
    """Sums over the ``numpy.array_split`` groups from a cumulative sum that
    starts with 0."""
    size, extra = divmod(n, n_groups)
    sizes = np.full(n_groups, size, dtype=np.intp)
    sizes[:extra] += 1
    ends = np.concatenate([[0], np.cumsum(sizes)])
    return np.diff(cum[ends])


def sweep_groups(conf, correct, weights):
    """Per-group weighted counts, confidence sums and correctness sums of the
    largest monotonic equal-mass binning."""
    n = conf.shape[0]
    order = np.argsort(conf, kind="stable")
    w = np.ones(n) if weights is None else weights[order]
    # cumulative sums with a leading 0: the sums of any group are two look-ups
    cum_w = np.concatenate([[0.0], np.cumsum(w)])
    cum_conf = np.concatenate([[0.0], np.cumsum(w * conf[order])])
    cum_corr = np.concatenate([[0.0], np.cumsum(w * correct[order])])

    def groups(b):
        return (
            _group_sums(cum_w, b, n),
            _group_sums(cum_conf, b, n),
            _group_sums(cum_corr, b, n),
        )

    best = groups(1)
    for b in range(2, n + 1):
        counts, sum_conf, sum_corr = groups(b)
        filled = counts > 0  # zero-weight groups have no accuracy to compare
        accuracy = sum_corr[filled] / counts[filled]
        if np.any(np.diff(accuracy) < 0):
            break
        best = (counts, sum_conf, sum_corr)
    return best


def ece_sweep(y_true, y_prob, *, norm="l1", labels=None, sample_weight=None):
    """Monotonic-sweep ECE of Roelofs et al. (2022).

    Samples are sorted by top-label confidence (stable sort). For
    ``b = 2, 3, ...`` they are split into ``b`` equal-mass groups (the sizes of
    ``numpy.array_split``); the sweep stops at the first ``b`` whose group
    accuracies are not non-decreasing and keeps ``b - 1`` groups (one group if
    ``b = 2`` already fails). The result is the calibration error of those
    groups, ``sum_g (n_g/N) |acc_g - conf_g|`` (L1) or the root of the weighted
    mean square gap (L2). Choosing the number of bins from the data removes
    much of the bias of a fixed binning away from calibration, but little
    near it (for a calibrated model, about a third of the plug-in's bias at
    200 rows and none at 5000): it is not an estimate that reads 0 for a
    calibrated model.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities, see
        :func:`~sklcalib.metrics.expected_calibration_error`.
    norm : {"l1", "l2"}, default="l1"
        How the group gaps are combined.
    labels : array-like of shape (n_classes,), default=None
        The label of every column of ``y_prob``.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights (groups are formed by count, their means are weighted).

    Returns
    -------
    ece : float
        In [0, 1]; lower is better.

    Notes
    -----
    Each candidate ``b`` costs O(b) from cumulative sums, so the sweep costs
    O(b_final^2) after the sort; the sweep usually stops after a few dozen
    groups, but perfectly monotonic data run to ``b = n``.

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
