"""Post-hoc calibrators and the CalibratedClassifier meta-estimator.

Every calibrator is a scikit-learn classifier fitted on held-out scores of
another classifier: ``fit(scores, y)``, ``predict_proba(scores)``,
``predict(scores)``, ``classes_``. Logit calibrators take the output of
``decision_function``; probability calibrators take ``predict_proba``.
Binary problems accept 1-D positive-class scores.

===================================  =============  =================================
calibrator                           scores         method
===================================  =============  =================================
:class:`TemperatureScaler`           logits         ``softmax(z / T)``
:class:`VectorScaler`                logits         ``softmax(w * z + b)``
:class:`MatrixScaler`                logits         ``softmax(W z + b)``
:class:`PlattScaler`                 binary score   ``sigmoid(a s + b)``
:class:`HistogramBinningCalibrator`  probabilities  one-vs-rest bin frequencies
:class:`IsotonicCalibrator`          probabilities  one-vs-rest isotonic regression
:class:`BBQCalibrator`               probabilities  netcal's BBQ, one-vs-rest
:class:`ENIRCalibrator`              probabilities  netcal's ENIR, one-vs-rest
:class:`BetaCalibrator`              probabilities  netcal's beta, one-vs-rest
:class:`DirichletCalibrator`         probabilities  ``softmax(W log p + b)``, ODIR
:class:`EnsembleTemperatureScaler`   logits         mixture of ``softmax(z / T)``,
                                                    ``softmax(z)`` and uniform
:class:`ScalingBinningCalibrator`    probabilities  Platt, then equal-mass bins
:class:`VennAbersCalibrator`         probabilities  Venn–ABERS, one-vs-rest
:class:`SMSCalibrator`               logits         structured matrix scaling
:class:`SVSCalibrator`               logits         structured vector scaling
:class:`QuadraticScaler`             binary score   ``sigmoid(a + b s + c s^2)``
:class:`BetaScaler`                  probabilities  beta calibration, native, binary
:class:`SplineCalibrator`            probabilities  spline of the cumulative gap,
                                                    one-vs-rest
===================================  =============  =================================

:data:`CALIBRATORS` names each of them once (``"temperature"``,
``"isotonic"``, ``"beta"``, ...): :func:`get_calibrator`,
``CalibratedClassifier(calibrator="name")``, :func:`select_calibrator`,
``sklcalib report --calibrate`` and the tabular benchmark all read it.
:class:`CalibratedClassifier` wraps an estimator and any of these calibrators
the way scikit-learn's ``CalibratedClassifierCV`` does (``calibrator=None``
is a fresh :class:`TemperatureScaler`, ``"passthrough"`` no calibration).
Every calibrator's ``fit`` takes ``sample_weight``: frequency weights, as in
scikit-learn (a weight of 2 is the row repeated; see the user guide).

:class:`SegmentCalibrator` calibrates the scores *and* segment columns
(region, age band, device...) given beside them: ``fit(scores, y,
segments=...)``, ``predict_proba(scores, segments=...)``; it repairs a model
miscalibrated differently in different segments, which the global
calibrators above cannot.
"""

from ._beta_native import BetaScaler
from ._binning import HistogramBinningCalibrator, IsotonicCalibrator
from ._dirichlet import DirichletCalibrator
from ._ensemble_temperature import EnsembleTemperatureScaler
from ._meta import CalibratedClassifier
from ._netcal import BBQCalibrator, BetaCalibrator, ENIRCalibrator
from ._prior import PriorCorrection
from ._quadratic import QuadraticScaler
from ._registry import (
    CALIBRATORS,
    CalibratorSpec,
    available_calibrators,
    calibrator_spec,
    get_calibrator,
)
from ._scaling import MatrixScaler, PlattScaler, VectorScaler
from ._scaling_binning import ScalingBinningCalibrator
from ._segment import SegmentCalibrator
from ._select import (
    CalibrationWarning,
    CalibratorSearchCV,
    check_calibrator,
    select_calibrator,
)
from ._sms import SMSCalibrator, SVSCalibrator
from ._spline import SplineCalibrator
from ._temperature import (
    DEFAULT_GRID,
    TEMPERATURE_BOUNDS,
    TemperatureScaler,
)
from ._venn_abers import VennAbersCalibrator

__all__ = [
    "CALIBRATORS",
    "DEFAULT_GRID",
    "TEMPERATURE_BOUNDS",
    "BBQCalibrator",
    "BetaCalibrator",
    "BetaScaler",
    "CalibratedClassifier",
    "CalibrationWarning",
    "CalibratorSearchCV",
    "CalibratorSpec",
    "DirichletCalibrator",
    "ENIRCalibrator",
    "EnsembleTemperatureScaler",
    "HistogramBinningCalibrator",
    "IsotonicCalibrator",
    "MatrixScaler",
    "PlattScaler",
    "PriorCorrection",
    "QuadraticScaler",
    "SMSCalibrator",
    "SVSCalibrator",
    "ScalingBinningCalibrator",
    "SegmentCalibrator",
    "SplineCalibrator",
    "TemperatureScaler",
    "VectorScaler",
    "VennAbersCalibrator",
    "available_calibrators",
    "calibrator_spec",
    "check_calibrator",
    "get_calibrator",
    "select_calibrator",
]


def __getattr__(name):
    # a name of an earlier version: select_calibrator returned a result
    # object, CalibratorSelection; it returns the fitted search now
    if name == "CalibratorSelection":
        import warnings

        warnings.warn(
            "CalibratorSelection is deprecated and will be removed in a future "
            "version; select_calibrator returns a fitted CalibratorSearchCV.",
            FutureWarning,
            stacklevel=2,
        )
        return CalibratorSearchCV
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
