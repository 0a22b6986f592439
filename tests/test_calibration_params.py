"""Declared parameter validation: every calibrator states its constructor
parameters' constraints once (``_parameter_constraints``), checked at ``fit``
by scikit-learn's own checker, so a bad parameter gets scikit-learn's message
and its ``InvalidParameterError`` (a ``ValueError`` and a ``TypeError``)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_param_validation

from sklcalib._utils._param_validation import InvalidParameterError
from sklcalib.calibration import (
    BBQCalibrator,
    BetaCalibrator,
    BetaScaler,
    DirichletCalibrator,
    ENIRCalibrator,
    EnsembleTemperatureScaler,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScaler,
    PlattScaler,
    PriorCorrection,
    QuadraticScaler,
    ScalingBinningCalibrator,
    SMSCalibrator,
    SplineCalibrator,
    SVSCalibrator,
    TemperatureScaler,
    VectorScaler,
    VennAbersCalibrator,
)

CALIBRATORS = [
    TemperatureScaler(),
    VectorScaler(),
    MatrixScaler(),
    PlattScaler(),
    HistogramBinningCalibrator(),
    IsotonicCalibrator(),
    BBQCalibrator(),
    ENIRCalibrator(),
    BetaCalibrator(),
    DirichletCalibrator(),
    EnsembleTemperatureScaler(),
    ScalingBinningCalibrator(),
    VennAbersCalibrator(),
    SMSCalibrator(),
    SVSCalibrator(),
    QuadraticScaler(),
    BetaScaler(),
    SplineCalibrator(),
    PriorCorrection(),
]


@pytest.mark.parametrize("calibrator", CALIBRATORS, ids=lambda c: type(c).__name__)
def test_scikit_learns_parameter_check(calibrator):
    # scikit-learn's own check: one constraint per parameter, a bad type and
    # every invalid value its constraints generate raise InvalidParameterError
    # with its wording, at fit
    check_param_validation(type(calibrator).__name__, calibrator)


@pytest.mark.parametrize(
    ("calibrator", "message"),
    [
        (
            PlattScaler(C=-1),
            r"The 'C' parameter of PlattScaler must be a float in the range "
            r"\(0.0, inf\). Got -1 instead.",
        ),
        (
            SMSCalibrator(rho=np.inf),
            r"The 'rho' parameter of SMSCalibrator must be a float in the range "
            r"\(-inf, inf\). Got inf instead.",
        ),
        (
            SplineCalibrator(runout="linear"),
            r"The 'runout' parameter of SplineCalibrator must be a str among",
        ),
        (
            SplineCalibrator(clip=0.5),
            r"The 'clip' parameter of SplineCalibrator must be a float in the "
            r"range \[0.0, 0.5\)",
        ),
        (
            TemperatureScaler(grid=[1.0, -2.0]),
            r"The 'grid' parameter of TemperatureScaler must be a non-empty 1-D "
            r"array of finite positive temperatures",
        ),
        # Python counts True as 1: refused where no boolean is declared
        (
            VectorScaler(max_iter=True),
            r"The 'max_iter' parameter of VectorScaler must be an int in the "
            r"range \[1, inf\). Got True instead.",
        ),
        (
            HistogramBinningCalibrator(n_bins=0),
            r"The 'n_bins' parameter of HistogramBinningCalibrator must be an int "
            r"in the range \[1, 1000000\]",
        ),
    ],
    ids=repr,
)
def test_messages_are_scikit_learns_and_errors_both_kinds(calibrator, message):
    p = np.random.default_rng(0).uniform(0.05, 0.95, size=40)
    y = np.arange(40) % 2
    for kind in (InvalidParameterError, ValueError, TypeError):
        with pytest.raises(kind, match=message):
            clone(calibrator).fit(p, y)


def test_booleans_stay_valid_where_declared():
    p = np.random.default_rng(0).uniform(0.05, 0.95, size=40)
    y = np.arange(40) % 2
    BBQCalibrator(equal_intervals=np.True_).fit(p, y).predict_proba(p)
    ENIRCalibrator(quick_init=np.False_).fit(p, y).predict_proba(p)


def test_bbq_refuses_the_bins_netcal_cannot_predict_with():
    # netcal 1.3 fits equal-frequency bins, then raises "currently not
    # implemented" at predict: refused at fit instead
    p = np.random.default_rng(0).uniform(0.05, 0.95, size=40)
    y = np.arange(40) % 2
    with pytest.raises(InvalidParameterError, match="'equal_intervals' parameter"):
        BBQCalibrator(equal_intervals=False).fit(p, y)
