"""Cumulative calibration statistics and tests: Kuiper and
Kolmogorov–Smirnov forms of the cumulative differences (Arrieta-Ibarra,
Gujral, Tannen, Tygert & Xu, JMLR 2022), with their Brownian-motion limit
laws, and Spiegelhalter's z-test."""

from typing import NamedTuple

import numpy as np
from scipy.special import ndtr

from sklcalib._utils._brownian import brownian_sf
from sklcalib._utils._cumulative import cumulative_statistics, scaled
from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._score_columns import MODES, score_columns
from sklcalib._utils._validation import (
    check_option,
    check_prob_values,
    check_scalar,
    check_targets,
    reject_dask,
)

STATISTICS = ("kuiper", "ks")
ALTERNATIVES = ("two-sided", "greater", "less")

_IN_MEMORY = (
    "Compute it on in-memory arrays (y_true.compute(), y_prob.compute()) or "
    "on an in-memory sample of the rows."
)


def _validated_columns(y_true, y_prob, labels, sample_weight, mode, what):
    """Validate once; return ``(resolved mode, columns, class indices, w,
    classes)``."""
    reject_dask(
        f"{what} sorts all the rows by their score",
        _IN_MEMORY,
        y_true=y_true,
        y_prob=y_prob,
        sample_weight=sample_weight,
    )
    check_option(mode, "mode", MODES)
    y_idx, p, classes, w = check_targets(y_true, y_prob, labels, sample_weight)
    p = check_prob_values(p)
    resolved, columns, indices = score_columns(p, y_idx, mode)
    return resolved, columns, indices, w, classes


def _statistics(columns, w, statistic):
    """Per column ``(statistic, sigma)`` arrays."""
    values, sigmas = [], []
    for outcome, score in columns:
        kuiper, ks, sigma = cumulative_statistics(outcome, score, w)
        values.append(kuiper if statistic == "kuiper" else ks)
        sigmas.append(sigma)
    return np.array(values), np.array(sigmas)


@fill_doc
def cumulative_calibration_error(
    y_true,
    y_prob,
    *,
    statistic="kuiper",
    mode="auto",
    labels=None,
    sample_weight=None,
):
    """Cumulative calibration error, binning-free (Kuiper or KS form).

    The range (Kuiper) or the largest absolute value (Kolmogorov–Smirnov)
    of the cumulative differences. Sort the rows by their score ``p`` and accumulate
    ``C_k = sum_{i <= k} w_i (y_i - p_i) / sum_i w_i`` with ``C_0 = 0``
    (Arrieta-Ibarra, Gujral, Tannen, Tygert & Xu, 2022). ``"kuiper"`` is
    ``max C - min C``, ``"ks"`` is ``max |C|``. No bins: ``C`` rises where
    the model underestimates the outcome and falls where it overestimates,
    and the slope of ``C`` against the share of rows is the local
    miscalibration, so the statistic is in probability units.

    The starting 0 counts in the range, as in mcgrad's ``ecce``; MAPIE's
    ``kuiper_statistic`` omits it, so the two differ when every ``C_k`` has
    the same sign. Rows with tied scores form one group: ``C`` is read only
    at the end of each group (the order inside a group is arbitrary).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities, columns in the order of ``labels`` or of the
        sorted unique labels; a 1-D array holds the positive class's
        probability of a binary problem. Dask arrays are refused (the rows
        must be sorted together): pass in-memory arrays.
    statistic : {"kuiper", "ks"}, default="kuiper"
        The range or the largest absolute value of the cumulative differences.
    mode : {"auto", "top_label", "classwise"}, default="auto"
        Which score: ``"auto"`` is the positive class's probability against
        ``[y = labels[1]]`` for a binary problem and the top-label confidence
        against correctness otherwise; ``"classwise"`` averages the
        statistic of every column against ``[y = labels[k]]``.
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights: weighted sums, normalised by the total weight (a
        constant rescaling changes nothing).

    Returns
    -------
    error : float
        In [0, 1]; lower is better.

    See Also
    --------
    cumulative_calibration_test : The same statistic in units of its
        standard deviation under calibration, with a p-value.

    Examples
    --------
    >>> from sklcalib.metrics import cumulative_calibration_error
    >>> y_true = [0, 1, 0, 1, 1]
    >>> y_prob = [0.1, 0.3, 0.4, 0.8, 0.9]
    >>> round(cumulative_calibration_error(y_true, y_prob), 6)
    0.14
    >>> round(cumulative_calibration_error(y_true, y_prob, statistic="ks"), 6)
    0.12
    """
    check_option(statistic, "statistic", STATISTICS)
    _, columns, _, w, _ = _validated_columns(
        y_true, y_prob, labels, sample_weight, mode, "the cumulative error"
    )
    values, _ = _statistics(columns, w, statistic)
    return float(values.mean())


def cumulative_kuiper(y_true, y_prob, *, mode="auto", labels=None, sample_weight=None):
    """:func:`cumulative_calibration_error` with ``statistic="kuiper"``: the
    registry's ``"cumulative_kuiper"`` (scorer ``"neg_cumulative_kuiper"``)."""
    return cumulative_calibration_error(
        y_true,
        y_prob,
        statistic="kuiper",
        mode=mode,
        labels=labels,
        sample_weight=sample_weight,
    )


def cumulative_ks(y_true, y_prob, *, mode="auto", labels=None, sample_weight=None):
    """:func:`cumulative_calibration_error` with ``statistic="ks"``: the
    registry's ``"cumulative_ks"`` (scorer ``"neg_cumulative_ks"``)."""
    return cumulative_calibration_error(
        y_true,
        y_prob,
        statistic="ks",
        mode=mode,
        labels=labels,
        sample_weight=sample_weight,
    )


@fill_doc
class CumulativeTestResult(NamedTuple):
    """Result of :func:`cumulative_calibration_test`.

    A named tuple: the fields below are also its attributes. With
    ``mode="classwise"`` the per-column fields are arrays of shape
    ``(n_classes,)`` and ``pvalue`` is the Bonferroni-adjusted smallest
    per-class p-value (``class_pvalues`` holds them unadjusted).

    Parameters
    ----------
    statistic : float or ndarray
        The cumulative calibration error, in probability units.
    sigma : float or ndarray
        Its standard deviation under calibration,
        ``sqrt(sum w_i^2 p_i (1 - p_i)) / sum w_i``.
    scaled_statistic : float or ndarray
        ``statistic / sigma``.
    pvalue : float
        The probability that the scaled statistic's limit law exceeds it.
    mde : float or ndarray
        The minimum detectable error, ``mde_sigmas * sigma``: a cumulative
        error below it is not told apart from noise at that many standard
        deviations.
    kind : str
        ``"kuiper"`` or ``"ks"``.
    mode : str
        ``"binary"``, ``"top_label"`` or ``"classwise"``.
    class_pvalues : ndarray or None
        Per-class unadjusted p-values (classwise only).

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import cumulative_calibration_test
    >>> p, y = make_binary_scores(1000)
    >>> res = cumulative_calibration_test(y, p)
    >>> res  # doctest: +ELLIPSIS
    CumulativeTestResult(kind='kuiper', mode='binary', statistic=..., pvalue=...)
    >>> bool(res.pvalue > 0.05)
    True
    """

    statistic: object
    sigma: object
    scaled_statistic: object
    pvalue: float
    mde: object
    kind: str
    mode: str
    class_pvalues: object = None

    def __repr__(self):
        def short(x):
            if np.ndim(x):
                return "[" + ", ".join(f"{v:.4g}" for v in np.ravel(x)) + "]"
            return f"{x:.4g}"

        return (
            f"CumulativeTestResult(kind={self.kind!r}, mode={self.mode!r}, "
            f"statistic={short(self.statistic)}, sigma={short(self.sigma)}, "
            f"scaled_statistic={short(self.scaled_statistic)}, "
            f"pvalue={self.pvalue:.4g}, mde={short(self.mde)})"
        )


@fill_doc
def cumulative_calibration_test(
    y_true,
    y_prob,
    *,
    statistic="kuiper",
    mode="auto",
    labels=None,
    sample_weight=None,
    mde_sigmas=5.0,
):
    """Test "this model is calibrated" with a cumulative statistic.

    Under calibration the cumulative differences of
    :func:`cumulative_calibration_error`, divided by their standard deviation
    ``sigma = sqrt(sum w_i^2 p_i (1 - p_i)) / sum w_i``, tend to a standard
    Brownian motion on [0, 1] (Arrieta-Ibarra et al., 2022). The p-value is
    the probability that the range of that motion (``"kuiper"``) or the
    maximum of its absolute value (``"ks"``) exceeds the scaled statistic,
    both in closed form (series of Feller, 1951, and Darling & Siegert, 1953,
    accurate in both tails). No resampling, no bins; the rows are sorted
    once.

    Parameters
    ----------
    %(labels_and_cumulative_probabilities)s
    statistic : {"kuiper", "ks"}, default="kuiper"
        The range or the largest absolute value of the cumulative differences.
    mode : {"auto", "top_label", "classwise"}, default="auto"
        Which score, see :func:`cumulative_calibration_error`.
        ``"classwise"`` tests every column and adjusts the smallest p-value
        for their number (Bonferroni: ``min(1, K * min_k p_k)``).
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights: the weighted sums, with ``sigma`` from the squared
        weights (the variance of a weighted sum of independent rows), so a
        constant rescaling of the weights changes nothing. Integer weights
        are therefore not the same as repeated rows (repeated rows are not
        independent draws).
    mde_sigmas : float, default=5.0
        The number of standard deviations of the minimum detectable error
        ``mde = mde_sigmas * sigma`` (mcgrad reports 5).

    Returns
    -------
    result : CumulativeTestResult
        ``statistic``, ``sigma``, ``scaled_statistic``, ``pvalue``, ``mde``.

    Notes
    -----
    The p-values equal mcgrad's ``ecce_pvalue`` (Kuiper) and MAPIE's
    ``kuiper_p_value`` and ``kolmogorov_smirnov_p_value`` on binary scores
    without ties, where MAPIE's range (which omits the starting 0) agrees.
    The limit law is asymptotic; on 1,000 binary rows and 5,000 top-label
    rows of 10 classes a calibrated model is rejected at the 5 % level in
    4–6 % of simulations (see the user guide's table).

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import cumulative_calibration_test
    >>> p, y = make_binary_scores(2000, truth=lambda p: (p + 0.1).clip(0, 1))
    >>> res = cumulative_calibration_test(y, p)
    >>> bool(res.pvalue < 1e-6), bool(res.statistic > res.mde)
    (True, True)
    """
    check_option(statistic, "statistic", STATISTICS)
    mde_sigmas = check_scalar(mde_sigmas, "mde_sigmas", low=0, low_open=True)
    resolved, columns, _, w, _ = _validated_columns(
        y_true, y_prob, labels, sample_weight, mode, "the cumulative test"
    )
    values, sigmas = _statistics(columns, w, statistic)
    z = scaled(values, sigmas)
    pvalues = np.asarray(brownian_sf(z, statistic), dtype=np.float64)
    if resolved == "classwise":
        pvalue = float(min(1.0, len(columns) * pvalues.min()))
        return CumulativeTestResult(
            values, sigmas, z, pvalue, mde_sigmas * sigmas, statistic, resolved, pvalues
        )
    return CumulativeTestResult(
        float(values[0]),
        float(sigmas[0]),
        float(z[0]),
        float(pvalues[0]),
        float(mde_sigmas * sigmas[0]),
        statistic,
        resolved,
    )


class SpiegelhalterTestResult(NamedTuple):
    """Result of :func:`spiegelhalter_test`.

    Parameters
    ----------
    statistic : float
        Spiegelhalter's z.
    pvalue : float
        Its p-value under the standard normal law, for the alternative asked.

    Examples
    --------
    >>> from sklcalib.metrics import spiegelhalter_test
    >>> spiegelhalter_test([0, 1, 1], [0.2, 0.7, 0.9])  # doctest: +ELLIPSIS
    SpiegelhalterTestResult(statistic=..., pvalue=...)
    """

    statistic: float
    pvalue: float

    def __repr__(self):
        return (
            f"SpiegelhalterTestResult(statistic={self.statistic:.4g}, "
            f"pvalue={self.pvalue:.4g})"
        )


@fill_doc
def spiegelhalter_test(
    y_true, y_prob, *, labels=None, sample_weight=None, alternative="two-sided"
):
    """Test the calibration of binary probabilities with Spiegelhalter's z.

    ``z = sum w_i (y_i - p_i)(1 - 2 p_i) / sqrt(sum w_i^2 (1 - 2 p_i)^2
    p_i (1 - p_i))`` (Spiegelhalter, 1986): the Brier score minus its
    expectation under calibration, over its standard deviation. A positive
    ``z`` is a Brier score worse than calibration explains.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels of a binary problem.
    y_prob : array-like of shape (n_samples, 2) or (n_samples,)
        Predicted probabilities (a 1-D array holds the positive class's).
    labels : array-like of shape (2,), default=None
        The label of every column of ``y_prob``.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights (the variance from the squared weights).
    alternative : {"two-sided", "greater", "less"}, default="two-sided"
        ``"greater"`` is MAPIE's ``spiegelhalter_p_value``, ``1 - Phi(z)``.

    Returns
    -------
    result : SpiegelhalterTestResult
        ``statistic`` (z) and ``pvalue``.

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import spiegelhalter_test
    >>> p, y = make_binary_scores(1000)
    >>> bool(spiegelhalter_test(y, p).pvalue > 0.05)
    True
    """
    check_option(alternative, "alternative", ALTERNATIVES)
    reject_dask(
        "the Spiegelhalter test is computed in memory",
        _IN_MEMORY,
        y_true=y_true,
        y_prob=y_prob,
        sample_weight=sample_weight,
    )
    y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
    if p.ndim == 2 and p.shape[1] != 2:
        raise ValueError(
            f"spiegelhalter_test is for binary problems, but y_prob has "
            f"{p.shape[1]} columns: use cumulative_calibration_test for "
            "multiclass probabilities."
        )
    p = check_prob_values(p)
    score = (p if p.ndim == 1 else p[:, 1]).astype(np.float64)
    y = (y_idx == 1).astype(np.float64)
    slope = 1.0 - 2.0 * score
    if w is None:
        numerator = float(np.dot(y - score, slope))
        variance = float(np.dot(slope * slope, score * (1.0 - score)))
    else:
        numerator = float(np.dot(w * (y - score), slope))
        variance = float(np.dot(w * w * slope * slope, score * (1.0 - score)))
    if variance > 0:
        z = numerator / np.sqrt(variance)
    else:  # every score in {0, 1/2, 1}: no spread to standardise by
        z = 0.0 if numerator == 0 else np.copysign(np.inf, numerator)
    if alternative == "greater":
        pvalue = ndtr(-z)
    elif alternative == "less":
        pvalue = ndtr(z)
    else:
        pvalue = 2.0 * ndtr(-abs(z))
    return SpiegelhalterTestResult(float(z), float(min(pvalue, 1.0)))
