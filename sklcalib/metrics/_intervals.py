"""Intervals of the *population* calibration error.

The plug-in ECE is biased upwards (a calibrated model scores above 0), so the
bootstrap of the plug-in covers the plug-in's expectation at this ``n``, not
the model's error. :func:`calibration_error_interval` covers the population
value of the error at the given binning:

* every bin's mean outcome is, given the bin's rows, a binomial proportion
  around the bin's true accuracy; the estimator is a function of these
  proportions, so its sampling distribution around the truth can be simulated
  per bin (a parametric bootstrap of the bin means: cells, not rows, so its
  cost does not grow with ``n``);
* it is simulated at a *bias-corrected* recalibration of the model (every
  bin's gap shrunk to the value whose expected absolute plug-in gap is the
  observed one, or for the debiased L2 error to the root of its unbiased
  square) and the interval is the pivot ``estimate - (draw - truth of the
  draws)`` at its two tails: the "basic" bootstrap interval of a bias-corrected
  model (Efron & Tibshirani 1993, ch. 10 and 13);
* near calibration the pivot is not smooth (the absolute value folds the
  noise); there the lower bound comes from inverting the consistency test:
  the same per-bin simulation with every gap 0 is the null distribution of
  the calibration test (Broecker & Smith 2007), and when it does not reject
  at level ``1 - confidence_level`` the lower bound is 0;
* for the debiased L2 error the pivot is taken on the squared scale, where
  the estimator is unbiased and its variance has the two terms of Sun,
  Chaudhari, Barnett & Dobriban (2024), the linear one away from calibration
  and the degenerate one at it; the simulation reproduces both (and the skew
  at calibration that a normal interval misses), and the bounds are rooted
  after clipping at 0.

The interval always holds the estimate shown beside it.
"""

import numpy as np
from scipy.special import ndtri

from sklcalib._utils._resampling import stream_seeds
from sklcalib._utils._scores import mean_standard_error, row_brier, row_log_loss
from sklcalib._utils._validation import (
    check_n_bins,
    check_option,
    check_prob_values,
    check_targets,
)

from ._bootstrap import ConfidenceInterval, check_confidence_level
from ._calibration_error import (
    adaptive_calibration_error,
    classwise_calibration_error,
    expected_calibration_error,
)
from ._cells import (
    _binned_cells,
    _debiased_cells,
    _noise_sd,
    _shrunk_gaps,
    _simulate,
    _statistic,
)
from ._debiased import MODES, debiased_calibration_error
from ._scoring_rules import brier_score, negative_log_likelihood, scoring_rule_inputs

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
N_DRAWS = 4000
_DRAW_BUDGET = 400_000


def _debiased_bounds(cells, null_means, alpha):
    """Bounds of the squared debiased L2 error ``theta^2``, by inverting the
    law of its estimator ``S``.

    ``S`` is unbiased; its variance is ``4 sum_b w_b^2 d_b^2 s_b^2 + 2 sum_b
    w_b^2 s_b^4`` (``w_b`` the bin's share, ``d_b`` its gap, ``s_b^2`` the
    variance of its mean outcome): a linear term that grows with the truth,
    dominant away from calibration, and a degenerate one that dominates at
    calibration (Sun et al. 2024). Given ``theta^2``, the linear term is
    largest when the whole gap sits in the cell of largest ``w_b s_b^2``:
    that least-favourable law, simulated exactly (the degenerate part from
    the null draws, skew included; the linear part from the same draws'
    noise in that cell), is inverted at both tails. The lower bound is 0
    exactly when the consistency test of ``S`` does not reject at level
    alpha / 2."""
    s_obs = float(_raw_debiased(cells, cells.ybar))
    s_null = _raw_debiased(cells, null_means)
    k = cells.n_groups
    lever = cells.share * _noise_sd(cells) ** 2
    j = int(np.argmax(lever))
    eps = null_means[:, j] - cells.pbar[j]
    share = max(float(cells.share[j]), 1e-300)

    def quantile(x, level):
        delta = np.sqrt(k * x / share)
        return float(np.quantile(s_null + x + 2.0 / k * share * delta * eps, level))

    def solve(level, s_obs):
        # the x >= 0 at which the level-quantile of S equals s_obs (it
        # increases with x); 0 if it is above s_obs already at x = 0
        if quantile(0.0, level) >= s_obs:
            return 0.0
        lo, hi = 0.0, max(s_obs, 1e-12)
        while quantile(hi, level) < s_obs and hi < 4.0:
            lo, hi = hi, 2.0 * hi
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if quantile(mid, level) < s_obs:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    low = solve(1.0 - alpha / 2.0, s_obs)
    # the upper bound of an estimate below 0 is that of 0 (the estimate shown
    # is clipped there): an interval [0, 0] would claim more than the data say
    s_top = max(s_obs, 0.0)
    high = solve(alpha / 2.0, s_top)
    # the normal version of the same law (its lower tail is longer than the
    # skewed exact one's at small bins): the upper bound takes the larger
    z = float(ndtri(1.0 - alpha / 2.0))
    c = float(lever[j]) / k
    v0 = 2.0 * float(np.sum(lever**2)) / (k * k)
    centre = s_top + 2.0 * z * z * c
    half = np.sqrt(max(4 * z * z * c * s_top + 4 * z**4 * c * c + z * z * v0, 0.0))
    high = max(high, centre + half)
    return np.sqrt(low), np.sqrt(min(high, 1.0))


def _raw_debiased(cells, ybar):
    """The squared debiased statistic before any clipping at 0."""
    d = ybar - cells.pbar
    n = cells.n
    with np.errstate(divide="ignore", invalid="ignore"):
        noise = np.where(n > 1, ybar * (1.0 - ybar) / (n - 1.0), 0.0)
    per_cell = cells.share * (d * d - noise)
    return per_cell.sum(axis=-1) / cells.n_groups


def _binned_interval(cells, kind, estimate, confidence_level, rng, n_draws):
    alpha = 1.0 - confidence_level
    if cells.n.shape[0] == 0 or not np.any(cells.n > 1):
        # no bin holds two rows: the data say nothing about the error
        return ConfidenceInterval(float(estimate), 0.0, 1.0, 0.5, np.empty(0)), 1.0
    observed = _statistic(cells, cells.ybar, kind)
    # the statistic with every gap 0: the consistency test's null distribution
    null_means = _simulate(cells, 0.0, rng, n_draws)
    if kind == "debiased":
        null = _raw_debiased(cells, null_means)
    else:
        null = _statistic(cells, null_means, kind)
    if kind == "debiased":
        low, high = _debiased_bounds(cells, null_means, alpha)
        draws = np.sqrt(np.maximum(null, 0.0))
    else:
        # lower bound: |d + e| - |d| <= |e| bin by bin (and so for the
        # weighted norm), so estimate - truth is at most the statistic of the
        # noise alone, whose law is the null's: its 1 - alpha/2 quantile is a
        # lower bound valid at every truth, and it is > 0 exactly when the
        # consistency test rejects at level alpha / 2
        low = max(observed - np.quantile(null, 1.0 - alpha / 2.0), 0.0)
        # upper bound: the plug-in's bias is >= 0 (Jensen), so estimate -
        # truth is at least its centred noise, simulated at the shrunk gaps
        gaps = _shrunk_gaps(cells)
        draws = _statistic(cells, _simulate(cells, gaps, rng, n_draws), kind)
        high = observed - np.quantile(draws - draws.mean(), alpha / 2.0)
    low, high = min(low, estimate), max(high, estimate)
    se = float(np.std(draws, ddof=1))
    pvalue = (1.0 + np.count_nonzero(null >= observed)) / (1.0 + n_draws)
    ci = ConfidenceInterval(
        float(estimate), float(low), float(min(high, 1.0)), se, draws
    )
    return ci, float(pvalue)


def _mean_interval(func, y_true, y_prob, params, confidence_level):
    """Normal interval of a mean score (NLL, Brier): the population value is
    the expected per-row score, the plug-in is unbiased, and the CLT holds."""
    columns, y_idx, w = scoring_rule_inputs(
        y_true, y_prob, params.get("labels"), params.get("sample_weight")
    )
    terms = (row_log_loss if func is negative_log_likelihood else row_brier)(
        columns, y_idx
    )
    estimate = float(func(y_true, y_prob, **params))
    se = mean_standard_error(terms, w)
    z = float(ndtri(0.5 + confidence_level / 2.0))
    # both scores are non-negative
    low, high = max(estimate - z * se, 0.0), estimate + z * se
    return ConfidenceInterval(estimate, float(low), float(high), se, np.empty(0))


_BINNED = {
    "ece": expected_calibration_error,
    "adaptive_ece": adaptive_calibration_error,
    "classwise_ece": classwise_calibration_error,
}


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

    Every bin's mean outcome is a binomial proportion around the bin's true
    accuracy, so the estimator's distribution around the truth is simulated
    per bin (cells, not rows: the cost does not grow with ``n``) at a
    bias-corrected copy of the model (every gap shrunk to the value whose
    expected plug-in gap is the one observed); the interval is that pivot's
    basic bootstrap interval (Efron & Tibshirani 1993). Near calibration the
    lower bound comes from the consistency test of the same statistic
    (Broecker & Smith 2007; the same simulation with every gap 0): whenever
    it does not reject at level ``1 - confidence_level``, the interval
    starts at 0. For ``"debiased_ece"`` the pivot is taken on the squared
    scale, where the estimator is unbiased and its variance has the linear
    and degenerate terms of Sun et al. (2024), and the bounds are rooted.
    NLL and Brier get the normal interval of a mean. The interval always
    holds ``estimate``; measured coverage, widths and times are in the user
    guide (:ref:`uncertainty`).

    Classes of a classwise error are simulated independently (their
    dependence through the row is ignored), and the bins are taken as given
    (their counts are not resampled): both are second-order at the sizes
    where the interval matters.

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
    [0.045, 0.0, 0.065]
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
        func = negative_log_likelihood if metric == "nll" else brier_score
        return _mean_interval(func, y_true, y_prob, params, confidence_level), None
    allowed = {"n_bins", "labels", "sample_weight"}
    allowed |= {"mode"} if metric == "debiased_ece" else {"norm"}
    unknown = set(params) - allowed
    if unknown:
        raise TypeError(
            f"calibration_error_interval got unexpected parameters for "
            f"metric={metric!r}: {sorted(unknown)}."
        )
    n_bins = check_n_bins(params.get("n_bins", 15))
    y_idx, p, _, w = check_targets(
        y_true, y_prob, params.get("labels"), params.get("sample_weight")
    )
    p = check_prob_values(p)
    if w is not None and not np.sum(w) > 0:
        raise ValueError("sample_weight sums to zero: the error is undefined.")
    rng = np.random.default_rng(stream_seeds(random_state, 1)[0])
    if metric == "debiased_ece":
        mode = check_option(params.get("mode", "top_label"), "mode", MODES)
        estimate = debiased_calibration_error(y_true, y_prob, **params)
        cells = _debiased_cells(y_idx, p, w, n_bins, mode)
        kind = "debiased"
    else:
        norm = check_option(params.get("norm", "l1"), "norm", ("l1", "l2"))
        estimate = _BINNED[metric](y_true, y_prob, **params)
        cells = _binned_cells(metric, y_idx, p, w, n_bins)
        kind = norm
    n_draws = int(min(N_DRAWS, max(1000, _DRAW_BUDGET // max(cells.n.shape[0], 1))))
    return _binned_interval(cells, kind, estimate, confidence_level, rng, n_draws)
