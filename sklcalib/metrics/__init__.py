"""Calibration metrics: one bin-statistics kernel, the ECE family, smooth ECE,
a report, and scikit-learn scorers.

Every binned metric is computed from :func:`bin_statistics`. The functions take
``(y_true, y_prob, *, n_bins=15, labels=None, sample_weight=None)`` like
:func:`sklearn.metrics.log_loss`; ``y_prob`` is ``(n, K)`` or ``(n,)``
positive-class probabilities of a binary problem.
"""

from ._accumulator import CalibrationAccumulator
from ._bootstrap import (
    CalibrationComparison,
    ConfidenceInterval,
    bootstrap_interval,
    compare_calibration,
)
from ._calibration_error import (
    adaptive_calibration_error,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from ._calibration_report import CalibrationReport, calibration_report
from ._consistency import CalibrationTestResult, calibration_test
from ._cumulative import (
    CumulativeTestResult,
    SpiegelhalterTestResult,
    cumulative_calibration_error,
    cumulative_calibration_test,
    spiegelhalter_test,
)
from ._debiased import debiased_calibration_error
from ._intervals import calibration_error_interval
from ._kernel import kernel_calibration_error
from ._multicalibration import (
    MulticalibrationAudit,
    SegmentRow,
    multicalibration_audit,
)
from ._scorers import (
    CALIBRATION_SCORERS,
    adaptive_ece_scorer,
    classwise_ece_scorer,
    cumulative_ks_scorer,
    cumulative_kuiper_scorer,
    debiased_ece_scorer,
    ece_scorer,
    ece_sweep_scorer,
    get_scorer,
    get_scorer_names,
    kernel_calibration_error_scorer,
    mce_scorer,
    smooth_ece_scorer,
)
from ._smooth import smooth_calibration_error
from ._sweep import ece_sweep
from .binning import BinStatistics, bin_statistics

__all__ = [
    "CALIBRATION_SCORERS",
    "BinStatistics",
    "CalibrationAccumulator",
    "CalibrationComparison",
    "CalibrationReport",
    "CalibrationTestResult",
    "ConfidenceInterval",
    "CumulativeTestResult",
    "MulticalibrationAudit",
    "SegmentRow",
    "SpiegelhalterTestResult",
    "adaptive_calibration_error",
    "adaptive_ece_scorer",
    "bin_statistics",
    "bootstrap_interval",
    "calibration_error_interval",
    "calibration_report",
    "calibration_test",
    "classwise_calibration_error",
    "classwise_ece_scorer",
    "compare_calibration",
    "cumulative_calibration_error",
    "cumulative_calibration_test",
    "cumulative_ks_scorer",
    "cumulative_kuiper_scorer",
    "debiased_calibration_error",
    "debiased_ece_scorer",
    "ece_scorer",
    "ece_sweep",
    "ece_sweep_scorer",
    "expected_calibration_error",
    "get_scorer",
    "get_scorer_names",
    "kernel_calibration_error",
    "kernel_calibration_error_scorer",
    "maximum_calibration_error",
    "mce_scorer",
    "multicalibration_audit",
    "smooth_calibration_error",
    "smooth_ece_scorer",
    "spiegelhalter_test",
]
