"""Consistency-resampling calibration test (Bröcker & Smith 2007;
Vaicenavicius et al. 2019)."""

from typing import NamedTuple

import numpy as np

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._resampling import (
    consistency_sums,
    drawn_classes,
    stream_seeds,
    uniforms,
)
from sklcalib._utils._scores import as_columns
from sklcalib._utils._validation import (
    check_prob_values,
    check_targets,
    drop_zero_weight_rows,
)

from ._bootstrap import check_n_resamples
from ._plans import consistency_plan
from ._registry import resolve_metric


@fill_doc
class CalibrationTestResult(NamedTuple):
    """Result of :func:`calibration_test`.

    A named tuple: the fields below are also its attributes.

    Parameters
    ----------
    statistic : float
        The metric on the data.
    pvalue : float
        ``(1 + #{null >= statistic}) / (1 + n_resamples)``.
    null_distribution : ndarray of shape (n_resamples,)
        The metric on every resample with labels drawn from ``y_prob``.

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import calibration_test
    >>> p, y = make_binary_scores(200, low=0.5)
    >>> res = calibration_test(y, p, n_resamples=100, random_state=0)
    >>> res._fields
    ('statistic', 'pvalue', 'null_distribution')
    >>> res.null_distribution.shape
    (100,)
    >>> res  # doctest: +ELLIPSIS
    CalibrationTestResult(statistic=..., pvalue=..., null_distribution=<100 values>)
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray

    def __repr__(self):
        # short, like scipy's result objects: not the null draws
        return (
            f"CalibrationTestResult(statistic={self.statistic:.4g}, "
            f"pvalue={self.pvalue:.4g}, "
            f"null_distribution=<{np.size(self.null_distribution)} values>)"
        )


@fill_doc
def calibration_test(
    y_true,
    y_prob,
    *,
    metric="ece",
    n_resamples=1000,
    random_state=None,
    **metric_params,
):
    """Test the hypothesis "this model is calibrated" by consistency resampling.

    Under the hypothesis the labels are draws from the predicted
    probabilities. The test keeps ``y_prob``, draws new labels
    ``y* ~ Categorical(y_prob[i])`` row by row, recomputes the metric, and
    compares the metric on the real labels with this null distribution:
    ``pvalue = (1 + #{null >= statistic}) / (1 + n_resamples)``. Unlike a
    threshold on the ECE, this accounts for the ECE's upward bias on few rows.

    For the uniform-bin metrics (``"ece"``, ``"mce"``, ``"classwise_ece"``),
    the equal-mass ones (``"adaptive_ece"``, ``"debiased_ece"``, and
    ``strategy="quantile"``: their bins depend on the scores only) and
    ``"nll"``, ``"brier"`` the bins stay fixed and
    only the correctness changes, so a resample is one pass that adds each
    row's drawn outcome to its bin; other metrics are recomputed on every
    resample.

    Parameters
    ----------
    %(labels_and_probabilities)s
    metric : str or callable, default="ece"
        A metric name or callable, as in
        :func:`~sklcalib.metrics.bootstrap_interval`; larger must mean worse
        calibrated.
    n_resamples : int, default=1000
        Number of label draws.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the label draws.
    **metric_params
        Passed to the metric.

    Returns
    -------
    result : CalibrationTestResult
        Named tuple ``(statistic, pvalue, null_distribution)``.

    References
    ----------
    J. Bröcker and L. A. Smith. Increasing the reliability of reliability
    diagrams. Weather and Forecasting, 2007.
    J. Vaicenavicius et al. Evaluating model calibration in classification.
    AISTATS 2019.

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import calibration_test
    >>> p, calibrated = make_binary_scores(300, low=0.5)
    >>> calibration_test(calibrated, p, random_state=0).pvalue > 0.05
    True
    >>> _, over_confident = make_binary_scores(300, low=0.5, truth=lambda p: p**3)
    >>> calibration_test(over_confident, p, random_state=0).pvalue < 0.01
    True
    """
    n_resamples = check_n_resamples(n_resamples)
    # a row of weight 0 is no row: no label is drawn for it
    y_true, y_prob, metric_params = drop_zero_weight_rows(
        metric_params, y_true, y_prob, named=isinstance(metric, str)
    )
    func = resolve_metric(metric)
    seeds = stream_seeds(random_state, n_resamples)
    plan = consistency_plan(metric, y_true, y_prob, metric_params)
    if plan is not None:
        statistic = float(func(y_true, y_prob, **metric_params))
        null = plan.finalize(consistency_sums(plan, seeds))
    else:
        params = dict(metric_params)
        _y_idx, p, classes, _ = check_targets(
            y_true, y_prob, params.get("labels"), params.get("sample_weight")
        )
        p = check_prob_values(p)
        if isinstance(metric, str):
            params["labels"] = classes
        statistic = float(func(y_true, y_prob, **params))
        columns = as_columns(p)
        cumulative = np.cumsum(columns.astype(np.float64), axis=1)
        null = np.empty(n_resamples)
        for b in range(n_resamples):
            k = drawn_classes(uniforms(seeds[b : b + 1], p.shape[0]), cumulative)[0]
            null[b] = func(classes[k], y_prob, **params)
    null = np.asarray(null, dtype=np.float64)
    if not np.all(np.isfinite(null)) or not np.isfinite(statistic):
        raise ValueError(
            "The metric has no finite value on the data or on some label "
            "draws; calibration_test needs a metric defined on every draw."
        )
    pvalue = (1.0 + np.count_nonzero(null >= statistic)) / (1.0 + n_resamples)
    return CalibrationTestResult(statistic, float(pvalue), null)
