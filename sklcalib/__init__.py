"""sklcalib: classifiers that are honest about their confidence.

Calibration losses for PyTorch, a scikit-learn compatible skorch classifier,
post-hoc calibrators, and one metric core (ECE and friends) exposed as
functions and as scikit-learn scorers.

The public names are imported lazily (PEP 562) so that ``import sklcalib``
stays fast: torch, skorch and numba load only when a name that needs them is
first used.
"""

from importlib import import_module

__version__ = "0.1.0"

# public name -> submodule that defines it: what the README and the user
# guides teach; everything else is one package deeper (sklcalib.metrics,
# sklcalib.calibration, ...)
_LAZY = {
    # network estimator
    "NetClassifier": "sklcalib.net",
    "MLP": "sklcalib.net",
    # post-hoc calibration: the calibrators, the leaders of public calibration
    # benchmarks (SMS, SVS, spline, quadratic, beta) first
    "SMSCalibrator": "sklcalib.calibration",
    "SVSCalibrator": "sklcalib.calibration",
    "SplineCalibrator": "sklcalib.calibration",
    "QuadraticScaler": "sklcalib.calibration",
    "BetaScaler": "sklcalib.calibration",
    "TemperatureScaler": "sklcalib.calibration",
    "VectorScaler": "sklcalib.calibration",
    "MatrixScaler": "sklcalib.calibration",
    "PlattScaler": "sklcalib.calibration",
    "HistogramBinningCalibrator": "sklcalib.calibration",
    "IsotonicCalibrator": "sklcalib.calibration",
    "BBQCalibrator": "sklcalib.calibration",
    "ENIRCalibrator": "sklcalib.calibration",
    "BetaCalibrator": "sklcalib.calibration",
    "DirichletCalibrator": "sklcalib.calibration",
    "EnsembleTemperatureScaler": "sklcalib.calibration",
    "ScalingBinningCalibrator": "sklcalib.calibration",
    "VennAbersCalibrator": "sklcalib.calibration",
    "PriorCorrection": "sklcalib.calibration",
    # calibration in every segment (a map of the score and segment columns)
    "SegmentCalibrator": "sklcalib.calibration",
    # ... and choosing, wrapping and checking them
    "CalibratedClassifier": "sklcalib.calibration",
    "CalibratorSearchCV": "sklcalib.calibration",
    "select_calibrator": "sklcalib.calibration",
    "check_calibrator": "sklcalib.calibration",
    "CalibrationWarning": "sklcalib.calibration",
    "get_calibrator": "sklcalib.calibration",
    # metrics
    "expected_calibration_error": "sklcalib.metrics",
    "adaptive_calibration_error": "sklcalib.metrics",
    "classwise_calibration_error": "sklcalib.metrics",
    "maximum_calibration_error": "sklcalib.metrics",
    "smooth_calibration_error": "sklcalib.metrics",
    "calibration_report": "sklcalib.metrics",
    "CalibrationAccumulator": "sklcalib.metrics",
    "ece_scorer": "sklcalib.metrics",
    "adaptive_ece_scorer": "sklcalib.metrics",
    "classwise_ece_scorer": "sklcalib.metrics",
    "mce_scorer": "sklcalib.metrics",
    "smooth_ece_scorer": "sklcalib.metrics",
    "debiased_calibration_error": "sklcalib.metrics",
    "ece_sweep": "sklcalib.metrics",
    "kernel_calibration_error": "sklcalib.metrics",
    "calibration_error_interval": "sklcalib.metrics",
    "bootstrap_interval": "sklcalib.metrics",
    "calibration_test": "sklcalib.metrics",
    "compare_calibration": "sklcalib.metrics",
    "ConfidenceInterval": "sklcalib.metrics",
    "CalibrationTestResult": "sklcalib.metrics",
    "CalibrationComparison": "sklcalib.metrics",
    "debiased_ece_scorer": "sklcalib.metrics",
    "ece_sweep_scorer": "sklcalib.metrics",
    "kernel_calibration_error_scorer": "sklcalib.metrics",
    "CALIBRATION_SCORERS": "sklcalib.metrics",
    "get_scorer": "sklcalib.metrics",
    # plotting
    "ReliabilityDisplay": "sklcalib.plotting",
}

_SUBMODULES = {
    "losses",
    "net",
    "callbacks",
    "calibration",
    "metrics",
    "plotting",
    "diagnostics",
    "datasets",
    "io",
    "benchmark",
}

__all__ = sorted([*_LAZY, *_SUBMODULES, "__version__"])


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # cache: later look-ups skip this hook
        return value
    if name in _SUBMODULES:
        return import_module(f"sklcalib.{name}")
    raise AttributeError(f"module 'sklcalib' has no attribute {name!r}")


def __dir__():
    return __all__
