"""String labels without ``labels=``: the columns are matched in sorted order
(scikit-learn's ``classes_``) only when the data show that order; a model
whose columns are in file order (cat, dog, bird) scores an ECE of 0.41
instead of 0.07 otherwise (the 300 rows below), and a warning can be
filtered away, so an order the data contradict or cannot tell is a
ValueError at every entry point."""

import warnings

import numpy as np
import pytest

from sklcalib import metrics
from sklcalib.plotting import ReliabilityDisplay

FILE_ORDER = np.array(["cat", "dog", "bird"])


def _animals(n=300, seed=0):
    """Labels drawn from ``p`` whose columns are in file order."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(3), size=n)
    idx = (rng.uniform(size=(n, 1)) > p.cumsum(axis=1)).sum(axis=1)
    return FILE_ORDER[idx], p


ENTRY_POINTS = {
    "ece": metrics.expected_calibration_error,
    "adaptive": metrics.adaptive_calibration_error,
    "classwise": metrics.classwise_calibration_error,
    "mce": metrics.maximum_calibration_error,
    "smooth": metrics.smooth_calibration_error,
    "debiased": metrics.debiased_calibration_error,
    "sweep": metrics.ece_sweep,
    "skce": metrics.kernel_calibration_error,
    "report": lambda y, p, **k: metrics.calibration_report(y, p, random_state=0, **k),
    "interval": lambda y, p, **k: metrics.calibration_error_interval(
        y, p, random_state=0, **k
    ),
    "test": lambda y, p, **k: metrics.calibration_test(
        y, p, n_resamples=20, random_state=0, **k
    ),
    "bootstrap": lambda y, p, **k: metrics.bootstrap_interval(
        "ece", y, p, n_resamples=20, random_state=0, **k
    ),
    "compare": lambda y, p, **k: metrics.compare_calibration(
        y, p, p, n_resamples=20, random_state=0, **k
    ),
}


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_columns_in_file_order_are_an_error_even_with_warnings_filtered(name):
    y, p = _animals()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"\['cat', 'dog', 'bird'\] fits the"):
            ENTRY_POINTS[name](y, p)
    # with the order stated, the same call gives a number
    ENTRY_POINTS[name](y, p, labels=FILE_ORDER)


def test_the_reliability_diagram_checks_the_order_too():
    pytest.importorskip("matplotlib")
    y, p = _animals()
    with pytest.raises(ValueError, match="labels="):
        ReliabilityDisplay.from_predictions(y, p)


def test_sorted_columns_shown_by_the_data_need_no_labels_and_no_warning():
    y, p = _animals()
    assert metrics.expected_calibration_error(
        y, p, labels=["bird", "cat", "dog"]
    ) == pytest.approx(0.41, abs=0.005)  # the wrong order's number
    sorted_p = p[:, np.argsort(FILE_ORDER)]  # columns bird, cat, dog
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = metrics.expected_calibration_error(y, sorted_p)
    stated = metrics.expected_calibration_error(y, p, labels=FILE_ORDER)
    assert found == pytest.approx(stated, abs=1e-15)


def test_an_order_the_data_cannot_tell_is_an_error_naming_labels():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(3), size=12)  # too few rows to tell
    y = np.array(["a", "b", "c"])[(rng.uniform(size=(12, 1)) > p.cumsum(1)).sum(1)]
    with pytest.raises(ValueError, match=r"cannot tell.*labels=estimator.classes_"):
        metrics.expected_calibration_error(y, p)
    metrics.expected_calibration_error(y, p, labels=["a", "b", "c"])


def test_integer_labels_keep_the_sorted_order_without_a_check():
    y, p = _animals()
    idx = np.searchsorted(["bird", "cat", "dog"], y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics.expected_calibration_error(idx, p)


def test_binary_string_labels_take_the_second_sorted_label_as_positive():
    rng = np.random.default_rng(1)
    s = rng.uniform(size=400)
    y = np.where(rng.uniform(size=400) < s, "yes", "no")
    assert metrics.expected_calibration_error(y, s) == pytest.approx(
        metrics.expected_calibration_error(y, s, labels=["no", "yes"]), abs=1e-15
    )
    # the probability of "no" given as if it were that of "yes"
    with pytest.raises(ValueError, match=r"\['yes', 'no'\] fits the data"):
        metrics.expected_calibration_error(y, 1.0 - s)


def test_dask_string_labels_need_labels():
    da = pytest.importorskip("dask.array")
    y, p = _animals()
    sorted_p = p[:, np.argsort(FILE_ORDER)]
    dp = da.from_array(sorted_p, chunks=(100, 3))
    with pytest.raises(ValueError, match=r"dask arrays.*labels="):
        metrics.expected_calibration_error(da.from_array(y, chunks=100), dp)
    assert metrics.expected_calibration_error(
        y, dp, labels=["bird", "cat", "dog"]
    ) == pytest.approx(metrics.expected_calibration_error(y, sorted_p), rel=1e-12)
