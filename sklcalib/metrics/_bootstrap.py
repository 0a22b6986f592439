"""Bootstrap intervals of calibration metrics and paired comparisons."""

from typing import NamedTuple

import numpy as np
from scipy.special import ndtr, ndtri

from sklcalib._utils._binning import top_label
from sklcalib._utils._resampling import (
    bootstrap_sums,
    full_sums,
    jackknife_sums,
    stream_seeds,
    uniform_indices,
)
from sklcalib._utils._scores import mean_standard_error, row_brier, row_log_loss
from sklcalib._utils._swap import (
    paired_resamples,
    paired_test,
    swap_products,
    top_label_rows,
)
from sklcalib._utils._validation import (
    as_numpy,
    check_confidence_level,
    check_n_bins,
    check_n_resamples,
    check_option,
    check_prob_values,
    check_targets,
    drop_zero_weight_rows,
)

from ._plans import bootstrap_plan
from ._registry import resolve_metric
from ._scoring_rules import scoring_rule_inputs

METHODS = ("percentile", "basic", "bca")
_JACKKNIFE_CHUNK = 4096  # rows left out per vectorised jackknife batch


class ConfidenceInterval(NamedTuple):
    """A point estimate with its confidence interval.

    The result of :func:`bootstrap_interval` and
    :func:`calibration_error_interval`. A named tuple: the fields below are
    also its attributes. Its repr is short (the resampled values are
    summarised by their number).

    Parameters
    ----------
    estimate : float
        The metric on the data.
    low, high : float
        The interval's bounds.
    standard_error : float
        Standard deviation (``ddof=1``) of the bootstrap distribution.
    bootstrap_distribution : ndarray of shape (n_resamples,)
        The metric on every resample.

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import bootstrap_interval
    >>> p, y = make_binary_scores(200, low=0.5)
    >>> ci = bootstrap_interval("ece", y, p, n_resamples=100, random_state=0)
    >>> ci._fields
    ('estimate', 'low', 'high', 'standard_error', 'bootstrap_distribution')
    >>> ci.bootstrap_distribution.shape
    (100,)
    >>> ci  # doctest: +ELLIPSIS
    ConfidenceInterval(estimate=..., bootstrap_distribution=<100 values>)
    """

    estimate: float
    low: float
    high: float
    standard_error: float
    bootstrap_distribution: np.ndarray

    def __repr__(self):
        # short, like scipy's result objects: not the resampled values
        return (
            f"ConfidenceInterval(estimate={self.estimate:.4g}, low={self.low:.4g}, "
            f"high={self.high:.4g}, standard_error={self.standard_error:.4g}, "
            f"bootstrap_distribution=<{np.size(self.bootstrap_distribution)} "
            "values>)"
        )


def _on_host(y_true, y_prob, params):
    """Torch tensors among the inputs as numpy arrays (detached: a model's
    output requires grad), as every metric reads them."""
    params = dict(params)
    if params.get("sample_weight") is not None:
        params["sample_weight"] = as_numpy(params["sample_weight"])
    return as_numpy(y_true), as_numpy(y_prob), params


class _Resampler:
    """Computes a metric on the data, on bootstrap resamples drawn from given
    stream seeds, and on leave-one-out subsets, by the fastest route: the
    metric's plan (sums per cell) when it has one, else recomputation."""

    def __init__(self, metric, y_true, y_prob, params):
        self.plan = bootstrap_plan(metric, y_true, y_prob, params)
        self.func = resolve_metric(metric)
        self.named = isinstance(metric, str)
        self.params = dict(params)
        self.y_true = np.asarray(y_true)
        self.y_prob = np.asanyarray(y_prob)  # keeps the bfloat16 mark
        if self.plan is not None:
            p = self.plan
            self.total = full_sums(p.codes, p.values, p.n_cells)
        elif self.named and "labels" not in self.params:
            # a resample may miss a class: fix the columns' labels once (as
            # the metric finds them, string order checked)
            w = self.params.get("sample_weight")
            self.params["labels"] = check_targets(y_true, y_prob, None, w)[2]
        # the metric's own value (a plan's sums agree to rounding)
        self.estimate = float(self.func(self.y_true, self.y_prob, **self.params))
        self.n = self.y_true.shape[0]

    def _subset(self, rows):
        params = dict(self.params)
        w = params.get("sample_weight")
        if w is not None:
            params["sample_weight"] = np.asarray(w)[rows]
        return self.func(self.y_true[rows], self.y_prob[rows], **params)

    def resample(self, seeds):
        if self.plan is not None:
            p = self.plan
            return p.finalize(bootstrap_sums(p.codes, p.values, p.n_cells, seeds))
        out = np.empty(seeds.shape[0])
        for b in range(seeds.shape[0]):
            out[b] = self._subset(uniform_indices(seeds[b : b + 1], self.n)[0])
        return out

    def jackknife(self):
        n = self.n
        if self.plan is not None:
            p = self.plan
            out = np.empty(n)
            for start in range(0, n, _JACKKNIFE_CHUNK):
                rows = np.arange(start, min(start + _JACKKNIFE_CHUNK, n))
                out[rows] = p.finalize(
                    jackknife_sums(p.codes, p.values, self.total, rows)
                )
            return out
        keep = np.ones(n, dtype=bool)
        out = np.empty(n)
        for i in range(n):
            keep[i] = False
            out[i] = self._subset(np.flatnonzero(keep))
            keep[i] = True
        return out


def _bca_levels(theta_b, theta_hat, theta_jack, alpha):
    """Bias-corrected and accelerated levels, as ``scipy.stats.bootstrap``
    (Efron & Tibshirani 1993, 14.3 and 15.4)."""
    below = np.count_nonzero(theta_b < theta_hat) + np.count_nonzero(
        theta_b <= theta_hat
    )
    if below == 0 or below == 2 * theta_b.shape[0]:
        # z0 = -inf or +inf: no level is defined. Not a degenerate
        # distribution: the statistic is that biased at this n
        side = "above" if below == 0 else "below"
        raise ValueError(
            f"The BCa interval is undefined here: all {theta_b.shape[0]} bootstrap "
            f"values lie {side} the estimate, so its bias correction is "
            "infinite (the statistic is that biased at this n, e.g. the ECE of "
            'a well-calibrated model); use method="percentile", or '
            "calibration_error_interval for an interval of the calibration error."
        )
    z0 = ndtri(below / (2.0 * theta_b.shape[0]))
    u = (theta_jack.shape[0] - 1) * (theta_jack.mean() - theta_jack)
    n = float(theta_jack.shape[0])
    num = np.sum(u**3) / n**3
    den = np.sum(u**2) / n**2
    a_hat = num / 6.0 / den**1.5 if den > 0 else 0.0
    z_alpha = ndtri(alpha)
    levels = []
    for z in (z_alpha, -z_alpha):
        levels.append(float(ndtr(z0 + (z0 + z) / (1 - a_hat * (z0 + z)))))
    return levels


def _interval(theta_b, estimate, confidence_level, method, jackknife):
    alpha = (1.0 - confidence_level) / 2.0
    if method == "bca":
        lo_level, hi_level = _bca_levels(theta_b, estimate, jackknife(), alpha)
    else:
        lo_level, hi_level = alpha, 1.0 - alpha
    if np.isnan(lo_level) or np.isnan(hi_level):
        raise ValueError(
            "The BCa interval is undefined for these data (degenerate bootstrap "
            'distribution); use method="percentile".'
        )
    low, high = np.quantile(theta_b, [lo_level, hi_level])
    if method == "basic":
        low, high = 2.0 * estimate - high, 2.0 * estimate - low
    return float(low), float(high)


def bootstrap_interval(
    metric,
    y_true,
    y_prob,
    *,
    n_resamples=1000,
    confidence_level=0.95,
    method="percentile",
    random_state=None,
    **metric_params,
):
    """Bootstrap interval of a statistic's sampling variability.

    Rows ``(y_true[i], y_prob[i])`` (and their ``sample_weight``) are
    resampled with replacement, jointly, and the metric is recomputed on every
    resample.

    What it covers: the spread of the statistic around *its expectation at
    this n*, not the model's calibration error. The plug-in calibration
    errors are biased upwards (a calibrated model scores above 0), and the
    bootstrap reproduces that bias instead of correcting it: for a calibrated
    binary model the percentile interval of the ECE excluded the true error 0
    in every one of 200 trials at n = 200 to 5000. For an interval of the
    error itself use :func:`~sklcalib.metrics.calibration_error_interval`.
    Its ``standard_error`` also overstates the estimator's true standard
    error near calibration (for the ECE of a calibrated model by 18-28 %,
    away from calibration by 1-14 %; measured in :ref:`uncertainty`): a
    resample duplicates rows, so its bins are noisier than the data's. The
    interval methods follow :func:`scipy.stats.bootstrap`:
    ``"percentile"`` takes the quantiles of the bootstrap distribution,
    ``"basic"`` reflects them about the estimate, ``"bca"`` corrects the
    levels for bias and skewness (the acceleration from a jackknife); it
    raises a ValueError where every resample lies on one side of the
    estimate (an infinite bias correction), as for the ECE of a
    well-calibrated model.

    The uniform-bin metrics (``"ece"`` with any ``norm``, ``"mce"``,
    ``"classwise_ece"``) and ``"nll"`` and ``"brier"`` are resampled without
    recomputing them: a row keeps its confidence, correctness and bin, so a
    resample only needs per-bin sums of the rows drawn, and the jackknife only
    needs the per-bin sums minus one row. Every other metric is recomputed on
    every resample (and for BCa on every leave-one-out subset: n calls).

    Parameters
    ----------
    metric : str or callable
        One of ``"ece"``, ``"adaptive_ece"``, ``"classwise_ece"``, ``"mce"``,
        ``"smooth_ece"``, ``"debiased_ece"``, ``"ece_sweep"``,
        ``"kernel_calibration_error"``, ``"nll"``, ``"brier"`` (the functions
        of :mod:`sklcalib.metrics`; NLL and Brier as in
        :func:`~sklcalib.metrics.calibration_report`), or a callable
        ``metric(y_true, y_prob, **metric_params)`` returning a float.
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities.
    n_resamples : int, default=1000
        Number of bootstrap resamples.
    confidence_level : float, default=0.95
        Coverage of the two-sided interval, in (0, 1).
    method : {"percentile", "basic", "bca"}, default="percentile"
        Interval method, as in :func:`scipy.stats.bootstrap`.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the resamples; an int gives reproducible results.
    **metric_params
        Passed to the metric (``n_bins``, ``labels``, ``sample_weight``, ...).
        A named metric gets ``labels`` fixed from the full data, so that a
        resample missing a class keeps the columns' meaning.

    Returns
    -------
    result : ConfidenceInterval
        Named tuple ``(estimate, low, high, standard_error,
        bootstrap_distribution)``.

    See Also
    --------
    calibration_error_interval : Interval of the population calibration error.
    compare_calibration : Paired comparison of two models.
    calibration_test : Whether a model is calibrated at all.

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import bootstrap_interval
    >>> p, y = make_binary_scores(500, low=0.5, truth=lambda p: p**2)  # over-confident
    >>> ci = bootstrap_interval("ece", y, p, random_state=0)
    >>> bool(ci.low < ci.estimate < ci.high)
    True
    >>> round(ci.estimate, 2), round(ci.standard_error, 2)
    (0.15, 0.02)
    """
    n_resamples = check_n_resamples(n_resamples)
    confidence_level = check_confidence_level(confidence_level)
    check_option(method, "method", METHODS)
    y_true, y_prob, metric_params = _on_host(y_true, y_prob, metric_params)
    # a row of weight 0 is no row: resamples are drawn from the others
    y_true, y_prob, metric_params = drop_zero_weight_rows(
        metric_params, y_true, y_prob, named=isinstance(metric, str)
    )
    sampler = _Resampler(metric, y_true, y_prob, metric_params)
    seeds = stream_seeds(random_state, n_resamples)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta_b = np.asarray(sampler.resample(seeds), dtype=np.float64)
    bad = ~np.isfinite(theta_b)
    if np.any(bad):
        raise ValueError(
            f"{int(bad.sum())} of {n_resamples} resamples give no finite value "
            "of the metric (e.g. every row drawn has sample_weight 0); drop "
            "the zero-weight rows or use more rows with positive weight."
        )
    low, high = _interval(
        theta_b, sampler.estimate, confidence_level, method, sampler.jackknife
    )
    return ConfidenceInterval(
        sampler.estimate,
        low,
        high,
        float(np.std(theta_b, ddof=1)) if n_resamples > 1 else 0.0,
        theta_b,
    )


class CalibrationComparison(NamedTuple):
    """Result of :func:`compare_calibration`.

    A named tuple: the fields below are also its attributes.

    Parameters
    ----------
    difference : float
        ``metric(y_prob_a) - metric(y_prob_b)``: negative when A is better
        calibrated (for an error metric).
    low, high : float
        Interval of the difference of the two models' *population* errors;
        it holds ``difference``.
    pvalue : float
        Two-sided p-value of "the two models are equally calibrated" (for
        the top-label ECE of "equal population ECE", a paired bootstrap-t;
        for other metrics a paired swap test of exchangeability).

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import compare_calibration
    >>> p, y = make_binary_scores(200, low=0.5)
    >>> res = compare_calibration(y, p, p**0.3, n_resamples=100, random_state=0)
    >>> res._fields
    ('difference', 'low', 'high', 'pvalue')
    >>> bool(res.low <= res.difference <= res.high)
    True
    """

    difference: float
    low: float
    high: float
    pvalue: float

    def __repr__(self):
        return (
            f"CalibrationComparison(difference={self.difference:.4g}, "
            f"low={self.low:.4g}, high={self.high:.4g}, pvalue={self.pvalue:.4g})"
        )


def paired_differences(metric, y_true, y_prob_a, y_prob_b, seeds, params):
    """Difference on the data and on every paired bootstrap resample (the
    same rows drawn for both models: the streams depend on the seeds and
    ``n`` only)."""
    a = _Resampler(metric, y_true, y_prob_a, params)
    b = _Resampler(metric, y_true, y_prob_b, params)
    return a.estimate - b.estimate, a.resample(seeds) - b.resample(seeds)


def _row_contributions(plan, n):
    """Dense ``(n, n_cells * (1 + v))``: what every row adds to the cell sums
    of a plan (its count and values, per contribution)."""
    codes, values = plan.codes, plan.values
    width = 1 + values.shape[2]
    out = np.zeros((n, plan.n_cells * width))
    rows = np.repeat(np.arange(n), codes.shape[1])
    base = codes.reshape(-1).astype(np.int64) * width
    np.add.at(out, (rows, base), 1.0)
    for t in range(values.shape[2]):
        np.add.at(out, (rows, base + 1 + t), values[:, :, t].reshape(-1))
    return out, width


def swap_differences(metric, y_true, y_prob_a, y_prob_b, n_resamples, rng, params):
    """The difference ``metric(a) - metric(b)`` after swapping the two models'
    predictions on a random half of the rows, ``n_resamples`` times.

    Under "A and B are exchangeable on every row" the swap changes nothing in
    law, so these differences are the null distribution of the observed one,
    symmetric about 0. Plan metrics take one matrix product per batch: a
    swapped model's cell sums are A's plus the swapped rows' (B - A)."""
    plan_a = bootstrap_plan(metric, y_true, y_prob_a, params)
    plan_b = bootstrap_plan(metric, y_true, y_prob_b, params)
    n = np.shape(y_true)[0]
    if plan_a is not None and plan_b is not None:
        ca, width = _row_contributions(plan_a, n)
        cb, _ = _row_contributions(plan_b, n)
        tot_a, tot_b = ca.sum(axis=0), cb.sum(axis=0)
        moved = swap_products(cb - ca, n_resamples, rng)
        sums_a = (tot_a + moved).reshape(n_resamples, plan_a.n_cells, width)
        sums_b = (tot_b - moved).reshape(n_resamples, plan_b.n_cells, width)
        return plan_a.finalize(sums_a) - plan_b.finalize(sums_b)
    func = resolve_metric(metric)
    fixed = dict(params)
    if isinstance(metric, str) and "labels" not in fixed:
        fixed["labels"] = np.unique(np.asarray(y_true))
    pa, pb = np.asarray(y_prob_a), np.asarray(y_prob_b)
    out = np.empty(n_resamples)
    for r in range(n_resamples):
        swap = rng.random(n) < 0.5
        mask = swap.reshape(-1, *([1] * (pa.ndim - 1)))
        out[r] = func(y_true, np.where(mask, pb, pa), **fixed) - func(
            y_true, np.where(mask, pa, pb), **fixed
        )
    return out


def _debiased_ece(metric, params):
    """Whether the comparison is of the top-label L1 ECE with uniform bins
    (the error whose swap test is of the debiased difference)."""
    return (
        isinstance(metric, str)
        and metric == "ece"
        and set(params) <= {"n_bins", "labels", "sample_weight", "norm", "strategy"}
        and params.get("norm", "l1") == "l1"
        and params.get("strategy", "uniform") == "uniform"
    )


def _ece_bootstrap_t(y_true, y_prob_a, y_prob_b, diff, n_resamples, rng, level, params):
    """The top-label ECE's paired bootstrap-t of the gap-corrected
    difference (:mod:`sklcalib._utils._swap`)."""
    n_bins = check_n_bins(params.get("n_bins", 15))
    y_idx, pa, _, w = check_targets(
        y_true, y_prob_a, params.get("labels"), params.get("sample_weight")
    )
    pb = check_targets(y_true, y_prob_b, params.get("labels"))[1]
    pa = check_prob_values(pa)
    pb = check_prob_values(pb)
    ra = top_label_rows(*top_label(pa, y_idx), n_bins, w)
    rb = top_label_rows(*top_label(pb, y_idx), n_bins, w)
    piece = paired_resamples(ra, rb, n_resamples, rng)
    # the plug-in difference as the metric computes it (rounding)
    return paired_test([piece._replace(difference=diff)], level), piece.null


def compare_calibration(
    y_true,
    y_prob_a,
    y_prob_b,
    *,
    metric="ece",
    n_resamples=1000,
    confidence_level=0.95,
    random_state=None,
    **metric_params,
):
    """Paired comparison of two models' calibration on the same rows.

    **The top-label ECE** (``metric="ece"``, uniform bins, L1): a paired
    bootstrap-t test of "equal population ECE" (Efron & Tibshirani 1993).
    The rows are resampled ``n_resamples`` times, jointly for both models,
    so that every resample keeps the dependence between the two models'
    errors (the same outcomes, the same rows). The statistic is the
    difference of the two plug-in ECEs, each *gap-corrected*: a bin's term
    ``|G| / n`` (``G`` its residual sum) minus the folded normal's bias at
    the bin's gap shrunk towards 0, which is the bin's exact zero-gap bias
    (the binomial mean absolute deviation at the bin's mean confidence) at
    a shrunk gap of 0 and vanishes once the gap is clear of the noise. The
    shrinkage pools the model's bins (Efron & Morris 1975): the model's
    common gap per row is shrunk as a single bin's would be, every bin's
    deviation from it by the positive-part James-Stein factor, so that a
    calibrated model is corrected nearly in full and a model that errs in
    one direction keeps its gaps. The plug-in's bias is largest at zero gap
    and nearly 0 for a miscalibrated bin, so subtracting the zero-gap bias
    everywhere shifts the statistic for two equally miscalibrated models of
    different spread. The statistic is divided by its standard error (the
    delta method, with the bins' signs smoothed near 0). The resamples are
    drawn from the rows with every bin's gap shrunk bin by bin (a
    calibrated bin is resampled near zero gap, not around its observed gap,
    which made the test conservative), and the p-value is ``(1 + #{|t*| >=
    |t|}) / (1 + R)`` with ``t*`` the resamples' statistics minus their
    mean, over their own standard errors.

    Why not swap the two models' predictions on random halves of the rows
    (the randomisation test this function used before): it is exact only
    when the two predictions of a row are interchangeable. Two models can
    be equally calibrated without that, e.g. one over- and one
    under-confident, or two temperatures of the same scores: a swapped
    model mixes the two directions, its bins' errors partly cancel, and the
    swap law was far narrower than the difference's own law (rejection at
    nominal 5 %: 11-13 % for independent opposite models, 32 % for two
    temperatures of the same scores, 24-27 % for a sharp 10-class net
    against its under-confident temperature, 31-48 % at 2 % prevalence;
    now 2.0-7.5 % on the equally calibrated pairs of the user guide's beds,
    600 and 400 replications per cell). The bootstrap takes the law of the
    difference itself (measured size, power and coverage in
    :ref:`uncertainty`).

    The interval is of the difference of the two models' *population*
    errors: the statistic plus or minus ``q`` standard errors (``q`` the
    ``confidence_level`` quantile of ``|t*|``) and a third of the sum of the
    two zero-gap biases (a gap-corrected bin keeps a bias within a third of
    its zero-gap bias either way, which the bootstrap does not see), widened
    to hold ``difference`` where needed. It holds the statistic plus or
    minus ``q`` standard errors, so it excludes 0 only when the test rejects
    at level ``1 - confidence_level``.

    **Other metrics**: a paired swap (randomisation) test (Fisher 1935) of
    the raw difference, ``n_resamples`` random swaps of the two models'
    predictions on half of the rows, exact when the two predictions of a
    row are interchangeable (the null is exchangeability; two models of
    different sharpness can differ in the expected plug-in value while
    being equally calibrated, as ``"classwise_ece"`` and ``"mce"`` do).
    NLL and Brier are means: their interval is the paired normal interval
    of the per-row differences; for the rest it is the observed difference
    plus or minus the ``confidence_level`` quantile of the absolute swapped
    differences, which excludes 0 exactly when the test rejects. The
    uniform-bin metrics and ``"nll"``, ``"brier"`` take one matrix product
    per batch of swaps; other metrics are recomputed twice per swap.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob_a, y_prob_b : array-like of shape (n_samples, n_classes) or (n_samples,)
        The two models' predicted probabilities for the same rows.
    metric : str or callable, default="ece"
        A metric name or callable, as in
        :func:`~sklcalib.metrics.bootstrap_interval`.
    n_resamples : int, default=1000
        Number of paired bootstrap resamples (the top-label ECE) or random
        swaps (other metrics).
    confidence_level : float, default=0.95
        Coverage of the interval of the difference, in (0, 1).
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the resamples or swaps.
    **metric_params
        Passed to the metric.

    Returns
    -------
    result : CalibrationComparison
        Named tuple ``(difference, low, high, pvalue)``; ``difference`` is
        ``metric(a) - metric(b)``.

    References
    ----------
    B. Efron, R. Tibshirani. An Introduction to the Bootstrap, 1993 (the
    bootstrap-t, 12.5 and 16.4).

    B. Efron, C. Morris. Data analysis using Stein's estimator and its
    generalizations. JASA, 1975 (the pooled shrinkage).

    R. A. Fisher. The Design of Experiments, 1935 (the paired randomisation
    test).

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import compare_calibration
    >>> p, y = make_binary_scores(1000, low=0.5)  # p is calibrated, p**0.3 is not
    >>> res = compare_calibration(y, p, p**0.3, random_state=0)
    >>> bool(res.difference < 0 and res.high < 0 and res.pvalue < 0.01)
    True
    """
    n_resamples = check_n_resamples(n_resamples)
    confidence_level = check_confidence_level(confidence_level)
    y_true, y_prob_a, metric_params = _on_host(y_true, y_prob_a, metric_params)
    y_prob_b = as_numpy(y_prob_b)
    if np.shape(y_prob_a) != np.shape(y_prob_b):
        raise ValueError(
            f"y_prob_a has shape {np.shape(y_prob_a)} but y_prob_b has shape "
            f"{np.shape(y_prob_b)}: the two models must score the same rows."
        )
    func = resolve_metric(metric)
    # the one weight check (NaN, negative and all-zero weights named); a row
    # of weight 0 is no row, for the swaps and the paired resamples too
    y_true, y_prob_a, y_prob_b, params = drop_zero_weight_rows(
        metric_params, y_true, y_prob_a, y_prob_b, named=isinstance(metric, str)
    )
    rng = np.random.default_rng(stream_seeds(random_state, 1)[0])
    diff = float(func(y_true, y_prob_a, **params) - func(y_true, y_prob_b, **params))
    if _debiased_ece(metric, params):
        res, null = _ece_bootstrap_t(
            y_true,
            y_prob_a,
            y_prob_b,
            diff,
            n_resamples,
            rng,
            confidence_level,
            params,
        )
        if not np.all(np.isfinite(null)):
            raise ValueError("The ECE is not finite on some resampled rows.")
        return CalibrationComparison(diff, res.low, res.high, res.pvalue)
    with np.errstate(invalid="ignore", divide="ignore"):
        null = swap_differences(
            metric, y_true, y_prob_a, y_prob_b, n_resamples, rng, params
        )
    if not np.all(np.isfinite(null)):
        raise ValueError(
            "The metric is not finite on some swapped predictions; "
            "compare_calibration needs a metric defined on every row subset."
        )
    pvalue = (1.0 + np.count_nonzero(np.abs(null) >= abs(diff) - 1e-12)) / (
        1.0 + n_resamples
    )
    if metric in ("nll", "brier"):
        # means: the paired normal interval of the per-row differences
        z = float(ndtri(0.5 + confidence_level / 2.0))
        half = z * _paired_mean_se(metric, y_true, y_prob_a, y_prob_b, params)
    else:
        # the swap distribution's quantile around the observed difference:
        # it excludes 0 exactly when the test rejects at this level
        half = float(np.quantile(np.abs(null), confidence_level))
    low, high = diff - half, diff + half
    return CalibrationComparison(diff, float(low), float(high), float(min(pvalue, 1.0)))


def _paired_mean_se(metric, y_true, y_prob_a, y_prob_b, params):
    """Standard error of the mean per-row score difference of the two models."""
    terms = row_log_loss if metric == "nll" else row_brier
    ca, y_idx, w = scoring_rule_inputs(
        y_true, y_prob_a, params.get("labels"), params.get("sample_weight")
    )
    cb, _, _ = scoring_rule_inputs(
        y_true, y_prob_b, params.get("labels"), params.get("sample_weight")
    )
    return mean_standard_error(terms(ca, y_idx) - terms(cb, y_idx), w)
