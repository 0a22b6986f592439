"""The metrics by name: the one table that ``bootstrap_interval``,
``calibration_test``, ``compare_calibration``, the scorers, the command line
and the benchmark read (their display: :mod:`sklcalib._utils._metric_display`,
with the same keys)."""

from sklcalib._utils._validation import check_option

from ._calibration_error import (
    adaptive_calibration_error,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from ._cumulative import cumulative_ks, cumulative_kuiper
from ._debiased import debiased_calibration_error
from ._kernel import kernel_calibration_error
from ._scoring_rules import brier_score, negative_log_likelihood
from ._smooth import smooth_calibration_error
from ._sweep import ece_sweep

#: metric name -> function ``f(y_true, y_prob, **params)``
METRICS = {
    "ece": expected_calibration_error,
    "adaptive_ece": adaptive_calibration_error,
    "classwise_ece": classwise_calibration_error,
    "mce": maximum_calibration_error,
    "smooth_ece": smooth_calibration_error,
    "debiased_ece": debiased_calibration_error,
    "ece_sweep": ece_sweep,
    "kernel_calibration_error": kernel_calibration_error,
    "cumulative_kuiper": cumulative_kuiper,
    "cumulative_ks": cumulative_ks,
    "nll": negative_log_likelihood,
    "brier": brier_score,
}


def resolve_metric(metric):
    """The function of a metric name, or the callable itself."""
    if callable(metric):
        return metric
    return METRICS[check_option(metric, "metric", tuple(METRICS))]
