"""scikit-learn's estimator checks for every calibrator, and the same contract
(clone, pickle, idempotent fit, sample order and subset invariance, read-only
and float32 input, data frames) on valid scores, which those checks cannot
generate.

scikit-learn's checks feed arbitrary feature matrices. A calibrator's columns
are one score per class (logits, or probabilities whose rows sum to 1), so a
check that fits features with another number of columns, or with values
that are not probabilities, meets the calibrator's refusal of its input.
Each calibrator runs the checks twice:

- on itself: every check passes, or stops at that refusal, asserted by its
  message (in the exception or the chain of exceptions the check raised);
  only the failures a reader must know about are declared, with reasons;
- through an adapter that turns the checks' features into valid scores
  (tests/_scores_adapter.py), where every check must pass: the checks test
  the calibrators for real.
"""

import pickle
import re

import numpy as np
import pytest
from _helpers import SPLINE_GRID
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

ALL_CALIBRATORS = [
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
]

# The calibrators' refusals of input that is not theirs (see _base.py and
# sklcalib._utils._validation.check_prob_values).
_WRONG_WIDTH = r"scores has \d+ columns but y has \d+ classes"
_NOT_PROBABILITIES = (
    r"scores contains (NaN|values greater than 1)|scores rows must sum to 1"
    r"|Negative values in data: scores"
)
REFUSALS = {
    "logits": re.compile(_WRONG_WIDTH),
    "probabilities": re.compile(f"{_WRONG_WIDTH}|{_NOT_PROBABILITIES}"),
}

ACCURACY = (
    "expects a high training accuracy from arbitrary features taken as "
    "logits; temperature scaling keeps the ranking of its scores, and ensemble "
    "temperature scaling, SMS and SVS stay close to it by design (a mixture "
    "with it, penalties towards it), so they cannot reach it (through the "
    "adapter, where the scores carry the features' information, they pass)"
)
ONE_D = (
    "expects 1-D X to be refused; a binary calibrator takes 1-D X by design: "
    "the positive-class scores"
)
_RANKING_KEEPERS = (
    TemperatureScaler,
    EnsembleTemperatureScaler,
    SMSCalibrator,
    SVSCalibrator,
)


def _declared_failures(estimator):
    """The direct run's expected failures that are not a refusal of input."""
    if isinstance(estimator, _RANKING_KEEPERS):
        return {"check_classifiers_train": ACCURACY}
    if isinstance(estimator, PlattScaler | QuadraticScaler):
        return {"check_fit1d": ONE_D}
    return {}


SEPARABLE = (
    "the adapter's centroid logits of the check's blobs separate the classes, "
    "so vector scaling's NLL has no minimum (the scales grow without bound) "
    "and the fit stops where the gradient falls below tol, a point that "
    "rounding moves by 5e-7 in probability between the weighted and the "
    "repeated data (on scores that do not separate the classes the two agree "
    "to 1e-6: test_calibration_sample_weight.py)"
)
NETCAL_BETA_TOLERANCE = (
    "the adapter computes its centroids from the weights or from the repeated "
    "rows, equal up to rounding, and netcal's beta fit, which stops at its "
    "optimiser's tolerance, turns that rounding into 4e-5 in probability; on "
    "the same scores the weighted fit is the repeated one exactly "
    "(test_calibration_sample_weight.py, test_calibration_hardening.py)"
)
_WEIGHT_CHECK = "check_sample_weight_equivalence_on_dense_data"
_ADAPTER_FAILURES = {
    SplineCalibrator: {_WEIGHT_CHECK: SPLINE_GRID},
    VectorScaler: {_WEIGHT_CHECK: SEPARABLE},
    BetaCalibrator: {_WEIGHT_CHECK: NETCAL_BETA_TOLERANCE},
}


def _refusal(error, pattern):
    """Whether ``error`` or an exception in its chain is the refusal."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ValueError) and pattern.search(str(error)):
            return True
        error = error.__cause__ or error.__context__
    return False


# ~1100 checks: minutes on two shared cores, so they run with the slow tests
# (CI runs them); the contract tests below cover the same ground fast.
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
    expected_failed_checks=_declared_failures,
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    if isinstance(estimator, CalibratedClassifier):  # takes features: no refusal
        check(estimator)
        return
    try:
        check(estimator)
    except Exception as error:
        if not _refusal(error, REFUSALS[estimator._input]):
            raise


def test_refusal_detection_reads_the_chain():
    # the direct run's tolerance is exactly the refusal, wherever the check
    # wrapped it: not any ValueError, not an unrelated assertion
    def wrapped(message):
        try:
            raise ValueError(message)
        except ValueError as inner:
            try:
                raise AssertionError("the check's own message") from inner
            except AssertionError as outer:
                return outer

    columns = "scores has 4 columns but y has 3 classes; give one score column"
    assert _refusal(wrapped(columns), REFUSALS["logits"])
    assert _refusal(
        ValueError("scores rows must sum to 1 (within"), REFUSALS["probabilities"]
    )
    assert not _refusal(ValueError("scores rows must sum to 1 ("), REFUSALS["logits"])
    assert not _refusal(wrapped("Input contains NaN"), REFUSALS["probabilities"])
    assert not _refusal(AssertionError(columns), REFUSALS["logits"])


def test_every_calibrator_refuses_input_that_is_not_its_own():
    # what the direct run tolerates is a refusal each calibrator makes, with
    # a message naming the problem
    rng = np.random.default_rng(0)
    y = np.arange(30) % 3
    for calibrator in ALL_CALIBRATORS:
        binary = not calibrator.__sklearn_tags__().classifier_tags.multi_class
        yk = y % 2 if binary else y
        n_classes = 2 if binary else 3
        wide = softmax(rng.normal(size=(30, n_classes + 2)), axis=1)
        with pytest.raises(ValueError, match=REFUSALS[calibrator._input]):
            clone(calibrator).fit(wide, yk)
        if calibrator._input == "probabilities":
            with pytest.raises(ValueError, match=_NOT_PROBABILITIES):
                clone(calibrator).fit(rng.normal(size=(30, n_classes)), yk)


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


def test_documented_attributes_are_the_fitted_ones(calibrator):
    # the Attributes section names exactly the public attributes that a fit
    # on a DataFrame sets (feature_names_in_ included)
    pd = pytest.importorskip("pandas")
    from numpydoc.docscrape import ClassDoc

    documented = {
        name.strip()
        for entry in ClassDoc(type(calibrator))["Attributes"]
        for name in entry.name.split(",")
    }
    X, y = _valid_scores(calibrator)
    calibrator.fit(pd.DataFrame(X, columns=[f"s{k}" for k in range(X.shape[1])]), y)
    fitted = {k for k in vars(calibrator) if k.endswith("_") and k[0] != "_"}
    assert documented == fitted


# The same checks through an adapter that turns their features into valid
# scores (tests/_scores_adapter.py): every check must pass for every
# calibrator, but for three weight-equivalence checks that fail by rounding.
@pytest.mark.slow
@parametrize_with_checks(
    [ScoresOf(c) for c in ALL_CALIBRATORS],
    expected_failed_checks=lambda est: _ADAPTER_FAILURES.get(type(est.calibrator), {}),
    xfail_strict=True,
)
def test_sklearn_estimator_checks_on_scores_of_features(estimator, check):
    check(estimator)
