"""scikit-learn's estimator checks for SegmentCalibrator, as for the other
calibrators (tests/test_calibration_checks.py): run directly, every check
passes or stops at the calibrator's refusal of features that are not one
score per class; run through the adapter that turns the checks' features
into valid logits (tests/_scores_adapter.py), every check passes (none is
declared an expected failure). The checks give no segment columns
(``segments=None``): the segment columns are a keyword of ``fit``, which
scikit-learn's checks do not know."""

import re

import pytest
from _scores_adapter import ScoresOf
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklcalib.calibration import SegmentCalibrator

pytestmark = pytest.mark.filterwarnings(
    # check_supervised_y_no_nan casts its NaN/inf targets on purpose
    "ignore:invalid value encountered in cast:RuntimeWarning:sklearn.*",
)


class _LogitsSegmentCalibrator(SegmentCalibrator):
    """The adapter's contract: which scores the calibrator takes."""

    _input = "logits"


METHODS = ("logistic", "boosting", "blend", "auto")
REFUSAL = re.compile(
    r"scores has \d+ columns( but y has \d+ classes|; the calibrator was fitted)"
)


def _refusal(error):
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ValueError) and REFUSAL.search(str(error)):
            return True
        error = error.__cause__ or error.__context__
    return False


@pytest.mark.slow
@parametrize_with_checks(
    [SegmentCalibrator(method=m, response="logits") for m in METHODS],
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    try:
        check(estimator)
    except Exception as error:
        if not _refusal(error):
            raise


@pytest.mark.slow
@parametrize_with_checks(
    [ScoresOf(_LogitsSegmentCalibrator(method=m, response="logits")) for m in METHODS],
    xfail_strict=True,
)
def test_sklearn_estimator_checks_on_valid_scores(estimator, check):
    check(estimator)
