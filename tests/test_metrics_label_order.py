"""String labels matched to columns in sorted order: said in a warning when
``labels`` is not given (a model whose columns are cat, dog, bird scores an
ECE of 0.56 instead of 0.05 without a word otherwise)."""

import warnings

import numpy as np
import pytest

from sklcalib.metrics import (
    calibration_report,
    expected_calibration_error,
    kernel_calibration_error,
)


def _animals(n=300, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(3), size=n)
    idx = (rng.uniform(size=(n, 1)) > p.cumsum(axis=1)).sum(axis=1)
    return np.array(["cat", "dog", "bird"])[idx], p


@pytest.mark.parametrize(
    "metric", [expected_calibration_error, kernel_calibration_error]
)
def test_string_labels_without_labels_name_the_assumed_order(metric):
    y, p = _animals()
    with pytest.warns(
        UserWarning, match=r"sorted label order \['bird', 'cat', 'dog'\]"
    ):
        metric(y, p)


def test_the_warning_points_at_the_callers_line_and_shows_once_per_report():
    y, p = _animals()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        calibration_report(y, p)
    ours = [w for w in caught if "sorted label order" in str(w.message)]
    assert len(ours) == 1
    assert ours[0].filename == __file__


def test_no_warning_with_labels_or_integer_labels():
    y, p = _animals()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected_calibration_error(y, p, labels=["cat", "dog", "bird"])
        expected_calibration_error(np.searchsorted(["bird", "cat", "dog"], y), p)


def test_binary_string_labels_say_which_is_the_positive_class():
    rng = np.random.default_rng(1)
    s = rng.uniform(size=200)
    y = np.where(rng.uniform(size=200) < s, "yes", "no")
    with pytest.warns(UserWarning, match=r"\['no', 'yes'\]"):
        expected_calibration_error(y, s)
