"""sample_weight in every calibrator and in CalibratedClassifier: frequency
weights, one rule for all. Integer weights are repeated rows and zero weights
removed rows (directly and through scikit-learn's own equivalence check; the
spline's rank grid to O(1/n), see test_leaders_spline.py), a term that
depends on the number of rows counts sum(w) rows, and such fits warn when the
weights sum to far fewer rows than carry weight; bad weights are named."""

import warnings

import numpy as np
import pytest
from _helpers import SPLINE_GRID, assert_weights_are_repeated_rows
from _scores_adapter import ScoresOf
from scipy.special import softmax
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
)

from sklcalib.calibration import (
    BBQCalibrator,
    BetaCalibrator,
    BetaScaler,
    CalibratedClassifier,
    DirichletCalibrator,
    ENIRCalibrator,
    EnsembleTemperatureScaler,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScaler,
    PlattScaler,
    QuadraticScaler,
    ScalingBinningCalibrator,
    SMSCalibrator,
    SplineCalibrator,
    SVSCalibrator,
    TemperatureScaler,
    VectorScaler,
    VennAbersCalibrator,
)

WEIGHTED = [
    TemperatureScaler(),
    TemperatureScaler(objective="ece"),
    VectorScaler(),
    MatrixScaler(reg=1e-2),
    PlattScaler(),
    HistogramBinningCalibrator(),
    HistogramBinningCalibrator(strategy="quantile", n_bins=5),
    IsotonicCalibrator(),
    DirichletCalibrator(),
    EnsembleTemperatureScaler(),
    ScalingBinningCalibrator(n_bins=5),
    VennAbersCalibrator(),
    SMSCalibrator(),
    SVSCalibrator(),
    QuadraticScaler(),
    BetaScaler(),
    SplineCalibrator(),
]
BINARY_ONLY = (PlattScaler, QuadraticScaler, BetaScaler)
NETCAL = [BBQCalibrator(), ENIRCalibrator(), BetaCalibrator()]
# repeated rows exactly: all but the spline, whose weighted row is one point
# at the middle of the ranks its repeats would spread over (O(1/n) apart)
REPEATED_EXACTLY = [c for c in WEIGHTED if not isinstance(c, SplineCalibrator)]


def _data(calibrator, n=150, seed=0):
    rng = np.random.default_rng(seed)
    k = 2 if isinstance(calibrator, BINARY_ONLY) else 3
    logits = 3 * rng.normal(size=(n, k))
    y = np.array([rng.choice(k, p=p) for p in softmax(logits / 2, axis=1)])
    if calibrator._input == "logits":
        return logits, y
    return softmax(logits, axis=1), y


@pytest.mark.parametrize("calibrator", REPEATED_EXACTLY + NETCAL, ids=repr)
def test_integer_weights_are_repeated_rows(calibrator):
    X, y = _data(calibrator)
    # the optimisers stop at a gradient tolerance: parameters agree to ~1e-7
    assert_weights_are_repeated_rows(calibrator, X, y, atol=1e-6)


@pytest.mark.parametrize("calibrator", WEIGHTED + NETCAL, ids=repr)
def test_unit_weights_are_no_weights(calibrator):
    X, y = _data(calibrator)
    np.testing.assert_allclose(
        clone(calibrator).fit(X, y, sample_weight=np.ones(len(y))).predict_proba(X),
        clone(calibrator).fit(X, y).predict_proba(X),
        atol=1e-9,
    )


@pytest.mark.parametrize("scale", [2.0**1020, 2.0**-1073], ids=["huge", "subnormal"])
@pytest.mark.parametrize("calibrator", WEIGHTED, ids=repr)
def test_extreme_weights_are_rescaled_exactly(calibrator, scale):
    # weights of 1e308 overflow every weighted sum (NaN probabilities, or
    # LogisticRegression's "Input X contains NaN"), subnormal ones lose their
    # digits: they are rescaled by the power of two that brings the largest
    # into [0.5, 1), exactly, so the fit is that of those weights
    X, y = _data(calibrator)
    u = np.arange(len(y)) % 3 + 1.0  # largest 3: rescaled to 3/4
    extreme = clone(calibrator).fit(X, y, sample_weight=u * scale)
    moderate = clone(calibrator).fit(X, y, sample_weight=u / 4)
    np.testing.assert_allclose(
        extreme.predict_proba(X), moderate.predict_proba(X), rtol=0, atol=1e-12
    )


_SPLINE_GRID = pytest.mark.xfail(strict=True, reason=SPLINE_GRID)


@pytest.mark.parametrize(
    "calibrator",
    [
        pytest.param(c, marks=_SPLINE_GRID) if isinstance(c, SplineCalibrator) else c
        for c in WEIGHTED + NETCAL
        if not isinstance(c, BINARY_ONLY)
    ],
    ids=repr,
)
def test_sklearn_sample_weight_equivalence_check(calibrator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence on 15 samples
        check_sample_weight_equivalence_on_dense_data(
            type(calibrator).__name__, ScoresOf(calibrator, logits="columns")
        )


@pytest.mark.parametrize("calibrator", WEIGHTED + NETCAL, ids=repr)
def test_bad_weights_are_named(calibrator):
    X, y = _data(calibrator, n=60)
    n = len(y)
    bad = {
        "negative": np.r_[-1.0, np.ones(n - 1)],
        "NaN": np.r_[np.nan, np.ones(n - 1)],
        "infinity": np.r_[np.inf, np.ones(n - 1)],
        "sums to zero": np.zeros(n),
        "entries": np.ones(n + 1),
        "1-D": np.ones((n, 2)),
    }
    for match, w in bad.items():
        with pytest.raises(ValueError, match=f"sample_weight.*{match}|{match}"):
            clone(calibrator).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("calibrator", NETCAL, ids=repr)
def test_netcal_calibrators_refuse_fractional_weights(calibrator):
    X, y = _data(calibrator, n=60)
    with pytest.raises(ValueError, match="takes integer sample_weight only"):
        clone(calibrator).fit(X, y, sample_weight=np.full(len(y), 1.5))
    with pytest.raises(ValueError, match="repeat the rows into"):
        clone(calibrator).fit(X, y, sample_weight=np.full(len(y), 1e6))


def _weighted_data(calibrator, n=400, seed=0):
    X, y = _data(calibrator, n=n, seed=seed)
    return X, y, np.random.default_rng(seed).uniform(0.5, 1.5, size=n)


# the fits whose result depends on the number of rows, and what that term is
SIZE_DEPENDENT = [
    (SMSCalibrator(), "mixing weight"),
    (SVSCalibrator(), "mixing weight"),
    (QuadraticScaler(), "ridge penalties"),
    (BetaScaler(reg=1.0), "ridge penalty"),
    (VennAbersCalibrator(), "test point"),
    (HistogramBinningCalibrator(strategy="quantile", n_bins=5), "quantile edges"),
]


@pytest.mark.parametrize(("calibrator", "term"), SIZE_DEPENDENT, ids=repr)
def test_weights_summing_to_one_warn_and_name_the_fix(calibrator, term):
    # normalised weights (what survey and importance weights often are) make
    # a frequency-weighted fit on 400 rows a fit on one: its prior
    X, y, w = _weighted_data(calibrator)
    with pytest.warns(UserWarning, match=rf"sums to 1 over 400 rows.*{term}.*mean 1"):
        clone(calibrator).fit(X, y, sample_weight=w / w.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # relative weights of mean ~1: silent
        clone(calibrator).fit(X, y, sample_weight=w)
        clone(calibrator).fit(X, y, sample_weight=w * 0.2)  # above a tenth


@pytest.mark.parametrize(
    "calibrator",
    [c for c in WEIGHTED if not any(repr(c) == repr(d) for d, _ in SIZE_DEPENDENT)]
    + [BetaScaler(), QuadraticScaler(reg_intercept=0.0, reg_quadratic=0.0)],
    ids=repr,
)
def test_fits_without_a_size_term_are_invariant_to_the_weights_scale(calibrator):
    # nothing in these fits counts rows (Platt's weak slope penalty aside,
    # C * sum(w), as scikit-learn's): a common factor changes nothing, and
    # normalised weights do not warn
    X, y, w = _weighted_data(calibrator)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        small = clone(calibrator).fit(X, y, sample_weight=w / w.sum())
    mean_one = clone(calibrator).fit(X, y, sample_weight=w / w.mean())
    atol = (
        1e-3 if isinstance(calibrator, PlattScaler | ScalingBinningCalibrator) else 1e-7
    )
    np.testing.assert_allclose(
        small.predict_proba(X), mean_one.predict_proba(X), atol=atol
    )


def test_sms_with_normalised_weights_is_the_fit_of_one_row():
    """The rule, measured: weights summing to 1 make SMS's mixing weight 1/2
    (a fit on one row: every probability pulled half-way to uniform), the
    same weights rescaled to mean 1 give the unweighted fit back."""
    X, y = _data(SMSCalibrator(), n=600)
    w = np.ones(len(y))
    with pytest.warns(UserWarning, match="rescale them to mean 1"):
        one_row = SMSCalibrator().fit(X, y, sample_weight=w / w.sum())
    assert one_row.epsilon_ == pytest.approx(0.5)
    rescaled = SMSCalibrator().fit(X, y, sample_weight=w)
    plain = SMSCalibrator().fit(X, y)
    assert plain.epsilon_ == pytest.approx(1 / 601)
    np.testing.assert_allclose(rescaled.predict_proba(X), plain.predict_proba(X))


# CalibratedClassifier's calibration check, provoked on purpose by the small
# problems of the CalibratedClassifier tests below
_ISOTONIC_FEW_ROWS = (
    "ignore:IsotonicCalibrator has about:sklcalib.calibration.CalibrationWarning"
)
_ISOTONIC_NO_GAIN = (
    "ignore:IsotonicCalibrator makes the probabilities worse:"
    "sklcalib.calibration.CalibrationWarning"
)


@pytest.fixture(scope="module")
def tabular():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=240) > 0).astype(int) + (X[:, 1] > 0.8)
    return X, y


# isotonic regression on scikit-learn's few rows: the calibration check's size
# warning (CalibrationWarning) is expected; the test is about the weights
@pytest.mark.filterwarnings(_ISOTONIC_FEW_ROWS)
def test_calibrated_classifier_sklearn_equivalence_check():
    # scikit-learn's check: weights on one LeaveOneGroupOut group, repeated
    # rows in the other fit; cv is replaced by the groups' splits
    check_sample_weight_equivalence_on_dense_data(
        "CalibratedClassifier",
        CalibratedClassifier(LogisticRegression(tol=1e-10), IsotonicCalibrator()),
    )


@pytest.mark.parametrize("ensemble", [True, False])
# a small fixture: each temperature is fitted on a third of it
@pytest.mark.filterwarnings(
    "ignore:TemperatureScaler has about:sklcalib.calibration.CalibrationWarning"
)
def test_calibrated_classifier_weights_reach_both_fits(tabular, ensemble):
    X, y = tabular
    w = np.random.default_rng(2).integers(0, 3, size=len(y))
    # repeated rows must stay in the fold of their original: fixed splits
    folds = np.arange(len(y)) % 3
    rep = np.repeat(np.arange(len(y)), w)
    split_w = [
        (np.flatnonzero(folds != f), np.flatnonzero(folds == f)) for f in range(3)
    ]
    split_r = [
        (np.flatnonzero(folds[rep] != f), np.flatnonzero(folds[rep] == f))
        for f in range(3)
    ]
    model = LogisticRegression(tol=1e-12, C=10.0)
    weighted = CalibratedClassifier(
        model, TemperatureScaler(), cv=split_w, ensemble=ensemble
    ).fit(X, y, sample_weight=w)
    repeated = CalibratedClassifier(
        model, TemperatureScaler(), cv=split_r, ensemble=ensemble
    ).fit(X[rep], y[rep])
    np.testing.assert_allclose(
        weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-5
    )


# the same, on 240 rows of 3 classes; weights of 0 leave the smallest class so
# few rows that isotonic regression's held-out log-loss is worse than the raw one
@pytest.mark.filterwarnings(_ISOTONIC_FEW_ROWS, _ISOTONIC_NO_GAIN)
def test_calibrated_classifier_frozen_and_passthrough_weights(tabular):
    X, y = tabular
    w = np.random.default_rng(3).integers(0, 3, size=len(y))
    rep = np.repeat(np.arange(len(y)), w)
    frozen = FrozenEstimator(LogisticRegression().fit(X, y))
    a = CalibratedClassifier(frozen, IsotonicCalibrator()).fit(X, y, sample_weight=w)
    b = CalibratedClassifier(frozen, IsotonicCalibrator()).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X))
    model = LogisticRegression(tol=1e-12)
    a = CalibratedClassifier(model, "passthrough").fit(X, y, sample_weight=w)
    b = clone(model).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X))


@pytest.mark.filterwarnings(_ISOTONIC_FEW_ROWS)
def test_estimator_without_weights_warns_and_calibrator_still_weighs(tabular):
    X, y = tabular
    w = np.r_[np.full(120, 3.0), np.ones(120)]
    clf = CalibratedClassifier(KNeighborsClassifier(), IsotonicCalibrator(), cv=3)
    with pytest.warns(UserWarning, match="does not accept sample_weight"):
        clf.fit(X, y, sample_weight=w)
    plain = clone(clf).fit(X, y)
    assert not np.allclose(clf.predict_proba(X), plain.predict_proba(X))


def test_calibrated_classifier_bad_weights(tabular):
    X, y = tabular
    clf = CalibratedClassifier(LogisticRegression(), cv=3)
    for w, match in [
        (-np.ones(len(y)), "negative"),
        (np.zeros(len(y)), "sums to zero"),
        (np.ones(len(y) - 1), "sample_weight has"),
        (np.r_[np.nan, np.ones(len(y) - 1)], "NaN"),
    ]:
        with pytest.raises(ValueError, match=match):
            clone(clf).fit(X, y, sample_weight=w)
