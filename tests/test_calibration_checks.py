"""scikit-learn's estimator checks for every calibrator, and the same contract
(clone, pickle, idempotent fit, sample order and subset invariance, read-only
and float32 input, data frames) on valid scores, which those checks cannot
generate.

scikit-learn's checks feed arbitrary feature matrices. A calibrator's columns
are one score per class, so the checks that fit ``X`` whose number of columns
differs from the number of classes of ``y`` (or, for a probability
calibrator, whose values are not probabilities) fail by design; they are
declared below with their reasons, and run in strict mode so that the list
cannot go stale. The whole set runs a second time on the probability
calibrators through an adapter that turns the checks' features into valid
scores (tests/_scores_adapter.py), so that those checks test them too.
"""

import pickle

import numpy as np
import pytest
from _scores_adapter import ScoresOf
from scipy.special import softmax
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

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

# scikit-learn's checks feed random features as logits: uninformative scores
# whose best temperature is infinite, so TemperatureScaler stops at its bound
# and says so, as it should; here the warning is expected, not news.
pytestmark = pytest.mark.filterwarnings(
    "ignore:TemperatureScaler stopped at T:sklearn.exceptions.ConvergenceWarning",
    # check_supervised_y_no_nan casts its NaN/inf targets on purpose (inside
    # scikit-learn's array-api-compat astype) to see that fit refuses them
    "ignore:invalid value encountered in cast:RuntimeWarning:sklearn.*",
)

COLUMNS = (
    "fits X whose number of columns differs from the number of classes of y; "
    "a calibrator's columns are one score per class (the contract is tested on "
    "valid scores in this file)"
)
ACCURACY = (
    "expects a high training accuracy from arbitrary features; a calibrator "
    "keeps (logit calibrators) or re-estimates the ranking its scores give"
)
PROBABILITIES = (
    "fits X with values outside [0, 1] or rows not summing to 1; a probability "
    "calibrator rejects those scores by design (tested on valid probabilities "
    "in this file)"
)
ONE_D = "1-D X is accepted by design: it holds the positive-class scores"
WEIGHTS = (
    "; test_calibration_sample_weight.py runs this check through an adapter that "
    "turns its features into valid scores"
)

_LOGIT_FAILS = {
    "check_classifiers_classes": COLUMNS,
    "check_classifiers_train": COLUMNS + "; " + ACCURACY,
    "check_dtype_object": COLUMNS,
    "check_estimators_dtypes": COLUMNS,
    "check_estimators_fit_returns_self": COLUMNS,
    "check_estimators_nan_inf": COLUMNS,
    "check_estimators_overwrite_params": COLUMNS,
    "check_estimators_pickle": COLUMNS,
    "check_n_features_in_after_fitting": COLUMNS,
    "check_pipeline_consistency": COLUMNS,
    "check_positive_only_tag_during_fit": COLUMNS,
    "check_readonly_memmap_input": COLUMNS,
    "check_sample_weight_equivalence_on_dense_data": COLUMNS + WEIGHTS,
}
_ITERATIVE_FAILS = {
    **_LOGIT_FAILS,
    "check_non_transformer_estimators_n_iter": COLUMNS,
}
_PLATT_FAILS = {
    name: COLUMNS
    for name in [
        "check_dict_unchanged",
        "check_dont_overwrite_parameters",
        "check_dtype_object",
        "check_estimators_dtypes",
        "check_estimators_nan_inf",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_fit2d_predict1d",
        "check_fit_score_takes_y",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_n_features_in_after_fitting",
        "check_pipeline_consistency",
        "check_positive_only_tag_during_fit",
        "check_supervised_y_2d",
        "check_sample_weight_equivalence_on_dense_data",
        "check_sample_weights_list",
    ]
}
_PLATT_FAILS["check_fit1d"] = ONE_D
_WEIGHT_CHECKS = [
    "check_classifiers_one_label_sample_weights",
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weights_list",
    "check_sample_weights_not_an_array",
    "check_sample_weights_not_overwritten",
    "check_sample_weights_pandas_series",
    "check_sample_weights_shape",
]
_PROBABILITY_FAILS = {
    name: PROBABILITIES
    for name in [
        "check_classifier_data_not_an_array",
        "check_classifiers_classes",
        "check_classifiers_train",
        "check_dict_unchanged",
        "check_dont_overwrite_parameters",
        "check_dtype_object",
        "check_estimators_dtypes",
        "check_estimators_fit_returns_self",
        "check_estimators_nan_inf",
        "check_estimators_overwrite_params",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_fit2d_1feature",
        "check_fit2d_predict1d",
        "check_fit_check_is_fitted",
        "check_fit_idempotent",
        "check_fit_score_takes_y",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_n_features_in",
        "check_n_features_in_after_fitting",
        "check_pipeline_consistency",
        "check_readonly_memmap_input",
        "check_supervised_y_2d",
        *_WEIGHT_CHECKS,
    ]
}
_PROBABILITY_FAILS["check_sample_weight_equivalence_on_dense_data"] += WEIGHTS

EXPECTED_FAILS = {
    TemperatureScaler: _LOGIT_FAILS,
    VectorScaler: _ITERATIVE_FAILS,
    MatrixScaler: _ITERATIVE_FAILS,
    PlattScaler: _PLATT_FAILS,
    HistogramBinningCalibrator: _PROBABILITY_FAILS,
    IsotonicCalibrator: _PROBABILITY_FAILS,
    BBQCalibrator: _PROBABILITY_FAILS,
    ENIRCalibrator: _PROBABILITY_FAILS,
    BetaCalibrator: _PROBABILITY_FAILS,
    DirichletCalibrator: {
        **_PROBABILITY_FAILS,
        "check_non_transformer_estimators_n_iter": PROBABILITIES,
    },
    EnsembleTemperatureScaler: _LOGIT_FAILS,
    ScalingBinningCalibrator: _PROBABILITY_FAILS,
    VennAbersCalibrator: _PROBABILITY_FAILS,
    SMSCalibrator: _ITERATIVE_FAILS,
    SVSCalibrator: _ITERATIVE_FAILS,
    QuadraticScaler: {
        **_PLATT_FAILS,
        "check_non_transformer_estimators_n_iter": COLUMNS,
    },
    BetaScaler: {
        **_PROBABILITY_FAILS,
        "check_non_transformer_estimators_n_iter": PROBABILITIES,
    },
    SplineCalibrator: _PROBABILITY_FAILS,
}

ALL_CALIBRATORS = [cls() for cls in EXPECTED_FAILS]
EXPECTED_FAILS[CalibratedClassifier] = {}


# ~550 checks: a minute or more on two shared cores, so they run with the slow
# tests (CI runs them); the contract tests below cover the same ground fast.
@pytest.mark.slow
# CalibratedClassifier checks its TemperatureScaler on each calibration split of
# the checks' tiny random data (5-9 rows in a class, uninformative features)
# and says, as it should, that the split is small or that the temperature does
# not beat the raw scores: expected here
@pytest.mark.filterwarnings(
    "ignore:TemperatureScaler has about:sklcalib.calibration.CalibrationWarning",
    "ignore:TemperatureScaler makes the probabilities worse:"
    "sklcalib.calibration.CalibrationWarning",
)
@parametrize_with_checks(
    [*ALL_CALIBRATORS, CalibratedClassifier(LogisticRegression(), cv=3)],
    expected_failed_checks=lambda est: EXPECTED_FAILS[type(est)],
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _valid_scores(calibrator, n=240, n_classes=3, seed=0):
    """Scores the calibrator takes, with targets drawn from softmax(z / 2)."""
    rng = np.random.default_rng(seed)
    binary_only = (PlattScaler, QuadraticScaler, BetaScaler)
    n_classes = 2 if isinstance(calibrator, binary_only) else n_classes
    logits = 4 * rng.normal(size=(n, n_classes))
    y = np.array([rng.choice(n_classes, p=p) for p in softmax(logits / 2, axis=1)])
    labels = np.array(["ant", "bee", "cat", "dog"])[:n_classes][y]
    if calibrator._input == "logits":
        return logits, labels
    return softmax(logits, axis=1), labels


@pytest.fixture(params=ALL_CALIBRATORS, ids=lambda c: type(c).__name__)
def calibrator(request):
    return clone(request.param)


def test_contract_on_valid_scores(calibrator):
    X, y = _valid_scores(calibrator)
    params = calibrator.get_params()
    fitted = calibrator.fit(X, y)
    assert fitted is calibrator
    assert calibrator.get_params() == params  # fit does not touch parameters
    assert calibrator.n_features_in_ == X.shape[1]
    assert list(calibrator.classes_) == sorted(set(y))
    proba = calibrator.predict_proba(X)
    assert proba.shape == (len(X), len(calibrator.classes_))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert set(calibrator.predict(X)) <= set(y)

    # pickling and refitting a clone give the same probabilities
    again = pickle.loads(pickle.dumps(calibrator))
    np.testing.assert_allclose(again.predict_proba(X), proba)
    np.testing.assert_allclose(clone(calibrator).fit(X, y).predict_proba(X), proba)

    # samples are independent: order and subsets do not matter
    order = np.random.default_rng(1).permutation(len(X))
    np.testing.assert_allclose(calibrator.predict_proba(X[order]), proba[order])
    np.testing.assert_allclose(calibrator.predict_proba(X[:7]), proba[:7])

    # float32 and read-only input, lists
    # on held-out scores: Venn-ABERS jumps at the calibration scores (equal
    # test scores sit after them for p0, before them for p1), so float32
    # rounding of a calibration score itself may land on the other side
    held_out = _valid_scores(calibrator, seed=1)[0]
    X32 = held_out.astype(np.float32)
    X32 /= X32.sum(axis=1, keepdims=True) if calibrator._input != "logits" else 1
    np.testing.assert_allclose(
        calibrator.predict_proba(X32), calibrator.predict_proba(held_out), atol=1e-5
    )
    readonly = X.copy()
    readonly.setflags(write=False)
    np.testing.assert_allclose(calibrator.predict_proba(readonly), proba)
    np.testing.assert_allclose(calibrator.predict_proba(X.tolist()), proba)


def test_contract_data_frames(calibrator):
    pd = pytest.importorskip("pandas")
    X, y = _valid_scores(calibrator)
    frame = pd.DataFrame(X, columns=[f"score_{k}" for k in range(X.shape[1])])
    calibrator.fit(frame, pd.Series(y))
    assert list(calibrator.feature_names_in_) == list(frame.columns)
    on_arrays = clone(calibrator).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(calibrator.predict_proba(frame), on_arrays)
    with pytest.raises(ValueError, match="feature names"):
        calibrator.predict_proba(frame.rename(columns=lambda c: c + "_renamed"))


# The same checks through an adapter that turns their features into valid
# scores (tests/_scores_adapter.py), so that the checks the direct run
# declares failing by design test the probability calibrators too.
PROBABILITY_CALIBRATORS = [c for c in ALL_CALIBRATORS if c._input == "probabilities"]
_ENIR_SEPARABLE = (
    "netcal's ENIR raises 'zero-size array to reduction operation minimum' "
    "(no candidate model) when a column's scores separate its class perfectly, "
    "as the centroid scores of the checks' blobs do"
)


def _refuses_weights(calibrator):
    """Whether the calibrator refuses sample weights (unit weights included)."""
    X, y = _valid_scores(calibrator, n=60)
    try:
        clone(calibrator).fit(X, y, sample_weight=np.ones(len(y)))
    except (TypeError, ValueError):
        return True
    return False


def _adapter_fails(calibrator):
    fails = {}
    if _refuses_weights(calibrator):
        why = f"{type(calibrator).__name__} takes no sample weights"
        fails.update(dict.fromkeys(_WEIGHT_CHECKS, why))
    if isinstance(calibrator, ENIRCalibrator):
        for name in [
            "check_classifiers_classes",
            "check_dict_unchanged",
            "check_dont_overwrite_parameters",
            "check_estimators_fit_returns_self",
            "check_estimators_overwrite_params",
            "check_estimators_pickle",
            "check_estimators_pickle(readonly_memmap=True)",
            "check_f_contiguous_array_estimator",
            "check_fit2d_1feature",
            "check_fit2d_predict1d",
            "check_methods_sample_order_invariance",
            "check_methods_subset_invariance",
            "check_pipeline_consistency",
            "check_positive_only_tag_during_fit",
            "check_readonly_memmap_input",
        ]:
            fails.setdefault(name, _ENIR_SEPARABLE)
    return fails


@pytest.mark.slow
@parametrize_with_checks(
    [ScoresOf(c) for c in PROBABILITY_CALIBRATORS],
    expected_failed_checks=lambda est: _adapter_fails(est.calibrator),
    xfail_strict=True,
)
def test_sklearn_estimator_checks_on_scores_of_features(estimator, check):
    check(estimator)
