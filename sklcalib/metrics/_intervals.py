"""Intervals of the *population* calibration error.

The plug-in ECE is biased upwards (a calibrated model scores above 0), so the
bootstrap of the plug-in covers the plug-in's expectation at this ``n``, not
the model's error. :func:`calibration_error_interval` covers the population
value of the error at the given binning:

* given the rows in a bin, the bin's mean outcome is a binomial proportion
  around the bin's true accuracy; a binned error is a function of these
  proportions, so its law at any configuration of accuracies is simulated
  per bin (cells, not rows: the cost does not grow with ``n``), exactly
  (by the binomial distribution function) where a bin's rarer outcome is
  expected fewer than 50 times;
* the interval inverts the test of the observed statistic along a path of
  configurations: every bin's accuracy at its mean score plus ``s`` times
  its gap shrunk across bins (Efron & Morris 1975), ``s`` of either sign.
  A point of the path is kept when the observed statistic lies within its
  law's central ``confidence_level`` range; the interval runs from the
  smallest to the largest population error of the kept points. At ``s = 0``
  every gap is 0, so the lower bound is 0 exactly when the consistency test
  (Broecker & Smith 2007) does not reject at level ``(1 - confidence) / 2``;
  the noise is everywhere that of the accuracies simulated, not of the mean
  scores, and a bin whose rows are all right keeps its binomial noise; for
  a binary model's classwise L2 error, where the direction's own noise
  changes the test, the union along two other plausible directions
  (``direction_union`` in :mod:`._cells`);
* for the debiased L2 error the test is that of its unbiased square (Sun,
  Chaudhari, Barnett & Dobriban 2024 give its two variance terms; the
  simulation has both, and the skew at calibration), and the bounds are
  rooted;
* NLL and Brier are means of per-row scores whose every possible value is
  known (the score of each label): :mod:`._score_interval`.

The interval always holds the estimate shown beside it.
"""

import numpy as np

from sklcalib._utils._binning import error_from_stats
from sklcalib._utils._resampling import stream_seeds
from sklcalib._utils._scores import as_columns, row_scores, weighted_mean
from sklcalib._utils._validation import (
    check_n_bins,
    check_option,
    check_prob_values,
    check_targets,
)

from ._bootstrap import ConfidenceInterval, check_confidence_level
from ._cells import (
    STATISTIC_OF,
    CellDraws,
    _binned_cells,
    _debiased_cells,
    _statistic,
    direction_union,
)
from ._debiased import MODES, debiased_square_error
from ._score_interval import score_interval
from ._statistics import (
    classwise_statistics,
    uniform_top_label_statistics,
    validated_top_label,
)
from .binning import _bin_statistics

#: the metrics :func:`calibration_error_interval` accepts
INTERVAL_METRICS = (
    "ece",
    "adaptive_ece",
    "classwise_ece",
    "debiased_ece",
    "nll",
    "brier",
)
#: simulated draws of the bin means (cheap: cells, not rows), fewer when
#: there are many cells (classwise errors of many classes)
N_DRAWS = 2000
_DRAW_BUDGET = 400_000
_MIN_DRAWS = 400


def calibration_error_interval(
    y_true,
    y_prob,
    *,
    metric="ece",
    confidence_level=0.95,
    random_state=None,
    **metric_params,
):
    """Confidence interval of the model's *population* calibration error.

    The plug-in ECE is biased upwards: a calibrated model scores above 0, by
    as much as its standard error on a few hundred rows, and
    :func:`~sklcalib.metrics.bootstrap_interval` (which resamples the plug-in)
    covers the plug-in's expectation at this ``n`` instead of the model's
    error. This interval covers the population value of the error, at the
    given binning:

    - ``"ece"``, ``"adaptive_ece"``, ``"classwise_ece"`` (L1, or L2 with
      ``norm="l2"``): ``sum_b P(bin b) |E[outcome - score | bin b]|``, the
      error the estimator converges to with these bins (per class and
      averaged for ``"classwise_ece"``);
    - ``"debiased_ece"``: the root of ``sum_b P(bin b) E[outcome - score |
      bin b]^2`` at its equal-mass bins;
    - ``"nll"``, ``"brier"``: the expected per-row score.

    Given the rows in a bin, the bin's mean outcome is a binomial proportion
    around the bin's true accuracy, so the estimator's law at any accuracies
    is simulated per bin (cells, not rows: the cost does not grow with
    ``n``), exactly where a bin's rarer outcome is expected fewer than 50
    times. The interval inverts the test of the observed error along a path
    of accuracies: every bin at its mean score plus ``s`` times its gap
    shrunk across bins (Efron & Morris 1975), ``s`` of either sign; a point
    is kept when the observed error lies within its law's central
    ``confidence_level`` range, and the interval runs over the population
    errors of the kept points. The noise is thus that of the accuracies, not
    of the mean scores (a sharp over-confident network is right less often
    than it says, and noisier), and a bin whose rows are all right keeps its
    binomial noise: 36 rows at 0.999, all right, give an upper bound near
    0.09, not 0. At ``s = 0`` every gap is 0, so the interval starts at 0
    exactly when the consistency test of the same statistic (Broecker &
    Smith 2007) does not reject at level ``(1 - confidence_level) / 2``.
    For a binary model's classwise L2 error, whose law depends on how the
    path's direction (taken from the same rows) shares the error between
    well-measured and sparse bins, the interval is the union along two other
    directions the data make plausible where they test it differently. For
    ``"debiased_ece"`` the test is that of the unbiased square (with the
    linear and degenerate variance terms of Sun et al. 2024, and its skew),
    and the bounds are rooted. For a classwise error the simulated spread is
    corrected for the dependence of a row's outcomes across classes (exactly
    one is 1; away from calibration it doubles the variance of a sharp
    network's classwise error). NLL and Brier are means of scores whose
    value for every label is known: the interval inverts the test of the
    observed mean over label laws running from every row's best label
    through the model's own probabilities and the uniform law to its worst
    label (its skew included: under 2 % prevalence a small test set may hold
    no positive at all). The bins are taken as given (their counts are not
    resampled). The interval always holds ``estimate``; measured coverage
    and widths on beds whose truth is known by construction are in the user
    guide (:ref:`uncertainty`).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities.
    metric : {"ece", "adaptive_ece", "classwise_ece", "debiased_ece", \
"nll", "brier"}, default="ece"
        The error whose population value is wanted.
    confidence_level : float, default=0.95
        Coverage of the two-sided interval, in (0, 1).
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the simulation; an int gives reproducible results.
    **metric_params
        Passed to the metric: ``n_bins``, ``labels``, ``sample_weight``,
        ``norm`` (``"l1"`` or ``"l2"``, binned errors) and ``mode``
        (``"debiased_ece"``).

    Returns
    -------
    result : ConfidenceInterval
        ``estimate`` is the metric's value on the data (the number shown
        beside the interval), ``low <= estimate <= high``;
        ``standard_error`` and ``bootstrap_distribution`` are those of the
        simulated estimator (empty for NLL and Brier).

    See Also
    --------
    bootstrap_interval : Sampling variability of any statistic at this n.
    calibration_test : The test whose acceptance puts 0 in the interval.

    References
    ----------
    B. Efron and R. Tibshirani. An Introduction to the Bootstrap, 1993.
    J. Broecker and L. A. Smith. Increasing the reliability of reliability
    diagrams. Weather and Forecasting, 2007.
    Y. Sun, P. Chaudhari, I. J. Barnett and E. Dobriban. A confidence
    interval for the l2 expected calibration error. arXiv:2408.08998, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import bootstrap_interval, calibration_error_interval
    >>> rng = np.random.default_rng(1)
    >>> p = rng.uniform(0.5, 1.0, size=500)
    >>> y = rng.uniform(size=500) < p  # calibrated: the true error is 0
    >>> ci = calibration_error_interval(y, p, random_state=0)
    >>> [round(v, 3) for v in (ci.estimate, ci.low, ci.high)]
    [0.045, 0.0, 0.067]
    >>> boot = bootstrap_interval("ece", y, p, random_state=0)  # not the error's
    >>> [round(v, 3) for v in (boot.low, boot.high)]
    [0.029, 0.088]
    >>> y = rng.uniform(size=500) < p**3  # over-confident
    >>> ci = calibration_error_interval(y, p, random_state=0)
    >>> bool(0.2 < ci.low < ci.estimate < ci.high)
    True
    """
    return interval_and_pvalue(
        y_true,
        y_prob,
        metric=metric,
        confidence_level=confidence_level,
        random_state=random_state,
        **metric_params,
    )[0]


def interval_and_pvalue(
    y_true,
    y_prob,
    *,
    metric="ece",
    confidence_level=0.95,
    random_state=None,
    **metric_params,
):
    """:func:`calibration_error_interval` and, for the binned errors, the
    p-value of the consistency test of the same statistic (None for NLL and
    Brier): ``(ConfidenceInterval, pvalue)``."""
    check_option(metric, "metric", INTERVAL_METRICS)
    confidence_level = check_confidence_level(confidence_level)
    params = dict(metric_params)
    if metric in ("nll", "brier"):
        unknown = set(params) - {"labels", "sample_weight"}
        if unknown:
            raise TypeError(f"{metric} takes no parameter {sorted(unknown)}.")
    else:
        allowed = {"n_bins", "labels", "sample_weight"}
        allowed |= {"mode"} if metric == "debiased_ece" else {"norm"}
        unknown = set(params) - allowed
        if unknown:
            raise TypeError(
                f"calibration_error_interval got unexpected parameters for "
                f"metric={metric!r}: {sorted(unknown)}."
            )
    n_bins = check_n_bins(params.get("n_bins", 15))
    norm = check_option(params.get("norm", "l1"), "norm", ("l1", "l2"))
    mode = check_option(params.get("mode", "top_label"), "mode", MODES)
    y_idx, p, _, w = check_targets(
        y_true, y_prob, params.get("labels"), params.get("sample_weight")
    )
    p = check_prob_values(p)
    if w is not None and not np.sum(w) > 0:
        raise ValueError("sample_weight sums to zero: the error is undefined.")
    return validated_interval(
        metric,
        y_idx,
        p,
        w,
        confidence_level=confidence_level,
        random_state=random_state,
        n_bins=n_bins,
        norm=norm,
        mode=mode,
    )


def validated_interval(
    metric,
    y_idx,
    p,
    w,
    *,
    estimate=None,
    confidence_level=0.95,
    random_state=None,
    n_bins=15,
    norm="l1",
    mode="top_label",
    top=None,
):
    """The interval of ``metric``'s population value and the consistency
    test's p-value (None for NLL and Brier), from inputs already validated:
    ``y_idx``, ``p`` and ``w`` as ``check_targets`` returns them, the values
    of ``p`` checked, ``w`` None or of positive sum, the parameters valid.
    ``estimate``, when given, is the metric's value on these inputs (the
    report has it already; it is computed otherwise), and ``top`` the
    top-label ``(confidence, correct)`` of ``p``. The entry of
    :func:`calibration_report`, which validates once and has every estimate:
    with the same ``random_state`` it returns what
    :func:`calibration_error_interval` does."""
    rng = np.random.default_rng(stream_seeds(random_state, 1)[0])
    if estimate is None:
        estimate = _estimate(metric, y_idx, p, w, n_bins, norm, mode)
    estimate = float(estimate)
    if metric in ("nll", "brier"):
        ci = score_interval(metric, y_idx, p, w, estimate, confidence_level, rng)
        return ci, None
    if metric == "debiased_ece":
        cells = _debiased_cells(y_idx, p, w, n_bins, mode, top)
        kind = "debiased"
    else:
        cells = _binned_cells(metric, y_idx, p, w, n_bins, top)
        kind = norm
    return _binned_interval(cells, kind, estimate, confidence_level, rng)


def _estimate(metric, y_idx, p, w, n_bins, norm, mode):
    """The metric on validated inputs (the public functions' kernels)."""
    if metric in ("nll", "brier"):
        return weighted_mean(row_scores(p, y_idx)[0 if metric == "nll" else 1], w)
    if metric == "ece":
        return error_from_stats(uniform_top_label_statistics(p, y_idx, n_bins, w), norm)
    if metric == "adaptive_ece":
        conf, correct = validated_top_label(p, y_idx)
        return error_from_stats(
            _bin_statistics(conf, correct, n_bins, "quantile", w), norm
        )
    if metric == "classwise_ece":
        stats = classwise_statistics(p, y_idx, n_bins, "uniform", w)
        return float(np.mean([error_from_stats(s, norm) for s in stats]))
    if mode == "top_label":
        conf, correct = validated_top_label(p, y_idx)
        return float(np.sqrt(max(debiased_square_error(conf, correct, n_bins, w), 0.0)))
    columns = as_columns(p)
    squares = [
        max(debiased_square_error(columns[:, k], y_idx == k, n_bins, w), 0.0)
        for k in range(columns.shape[1])
    ]
    return float(np.sqrt(np.mean(squares)))


def _binned_interval(cells, kind, estimate, confidence_level, rng):
    alpha = 1.0 - confidence_level
    if cells.n.shape[0] == 0 or not np.any(cells.n > 1):
        # no bin holds two rows: the data say nothing about the error
        return ConfidenceInterval(estimate, 0.0, 1.0, 0.5, np.empty(0)), 1.0
    n_cells = cells.n.shape[0]
    n_draws = int(min(N_DRAWS, max(_MIN_DRAWS, _DRAW_BUDGET // n_cells)))
    draws = CellDraws(cells.n, rng, n_draws)
    observed = float(_statistic(cells, cells.ybar, STATISTIC_OF[kind]))
    res = direction_union(cells, kind, observed, alpha, draws)
    low, high = res.low, res.high
    # the estimator itself at the shrunk configuration: its spread
    if kind == "debiased":
        low, high = np.sqrt(max(low, 0.0)), np.sqrt(max(high, 0.0))
        shown = np.sqrt(_statistic(cells, res.shrunk, "debiased"))
    else:
        shown = _statistic(cells, res.shrunk, kind)
    pvalue = (1.0 + np.count_nonzero(res.null >= observed - 1e-12)) / (1.0 + n_draws)
    low, high = min(low, estimate), max(min(high, 1.0), estimate)
    se = float(np.std(shown, ddof=1))
    return ConfidenceInterval(estimate, float(low), float(high), se, shown), float(
        pvalue
    )
