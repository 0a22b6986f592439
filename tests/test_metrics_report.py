"""calibration_report: every entry against its own function or scikit-learn."""

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

from sklcalib.metrics import (
    adaptive_calibration_error,
    calibration_report,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    smooth_calibration_error,
)

KEYS = {
    "ece",
    "ece_l2",
    "ece_over",
    "ece_under",
    "adaptive_ece",
    "classwise_ece",
    "mce",
    "smooth_ece",
    "nll",
    "brier",
    "accuracy",
    "error",
    "s99_fraction",
    "s99_accuracy",
    "debiased_ece",
    "ece_sweep",
    "skce",
    "n_samples",
}


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(4, 0.2), size=600)
    y = rng.integers(0, 4, 600)
    w = rng.random(600)
    return y, p, w


@pytest.mark.parametrize("weighted", [False, True])
def test_entries_match_the_functions(data, weighted):
    y, p, w = data
    w = w if weighted else None
    kw = {"n_bins": 10, "sample_weight": w}
    report = calibration_report(y, p, **kw)
    # intervals of the population values, the test and the verdict by default
    with_intervals = {
        f"{k}_ci"
        for k in ("ece", "adaptive_ece", "classwise_ece", "debiased_ece", "nll")
    } | {"brier_ci", "calibration_pvalue", "verdict"}
    assert set(report) == KEYS | with_intervals
    assert set(calibration_report(y, p, confidence_level=None, **kw)) == KEYS
    assert report["ece"] == pytest.approx(expected_calibration_error(y, p, **kw))
    assert report["ece_l2"] == pytest.approx(
        expected_calibration_error(y, p, norm="l2", **kw)
    )
    assert report["adaptive_ece"] == pytest.approx(
        adaptive_calibration_error(y, p, **kw)
    )
    assert report["classwise_ece"] == pytest.approx(
        classwise_calibration_error(y, p, **kw)
    )
    assert report["mce"] == pytest.approx(maximum_calibration_error(y, p, **kw))
    assert report["smooth_ece"] == pytest.approx(
        smooth_calibration_error(y, p, sample_weight=w)
    )
    assert report["nll"] == pytest.approx(log_loss(y, p, sample_weight=w))
    onehot = np.eye(4)[y]
    brier = ((p - onehot) ** 2).sum(axis=1)
    assert report["brier"] == pytest.approx(np.average(brier, weights=w))
    acc = accuracy_score(y, p.argmax(axis=1), sample_weight=w)
    assert report["accuracy"] == pytest.approx(acc)
    assert report["error"] == pytest.approx(1 - acc)
    confident = p.max(axis=1) >= 0.99
    assert confident.any()
    frac = np.average(confident, weights=w)
    assert report["s99_fraction"] == pytest.approx(frac)
    right = p.argmax(axis=1) == y
    s99_acc = np.average(right[confident], weights=None if w is None else w[confident])
    assert report["s99_accuracy"] == pytest.approx(s99_acc)
    assert report["ece_over"] + report["ece_under"] == pytest.approx(report["ece"])
    assert report["n_samples"] == 600


def test_over_and_under_confidence_by_hand():
    # bins of width .2: (.4,.6]: conf .6 acc 1 (under by .4);
    # (.6,.8]: conf .75 acc .5 (over by .25, 2 samples); (.8,1]: .9, 1 (under .1)
    p = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    report = calibration_report([0, 1, 1, 1], p, n_bins=5)
    assert report["ece_over"] == pytest.approx(2 * 0.25 / 4)
    assert report["ece_under"] == pytest.approx((0.4 + 0.1) / 4)
    assert report["s99_fraction"] == 0.0
    assert report["s99_accuracy"] is None
    assert report["accuracy"] == 0.75


def test_binary_1d_and_string_labels():
    rng = np.random.default_rng(1)
    p1 = rng.random(300)
    y = np.where(rng.random(300) < p1, "yes", "no")
    # without labels=, the sorted order of the string labels is assumed, and said
    with pytest.warns(UserWarning, match=r"sorted label order \['no', 'yes'\]"):
        report = calibration_report(y, p1, random_state=0)
    two = calibration_report(
        y, np.c_[1 - p1, p1], labels=["no", "yes"], random_state=0
    )
    assert set(report) == set(two)
    for key, value in report.items():
        if key.endswith("_ci"):  # same draws, bin means equal to rounding
            assert value == pytest.approx(two[key], abs=5e-3)
        elif key not in ("calibration_pvalue", "verdict"):
            assert value == two[key], key
    assert report["nll"] == pytest.approx(log_loss(y, p1))
    # two columns are counted: twice scikit-learn's binary Brier score
    assert report["brier"] == pytest.approx(2 * brier_score_loss(y == "yes", p1))


def test_nll_is_finite_with_zero_probability_on_the_true_class():
    p = np.array([[1.0, 0.0], [0.0, 1.0]])
    report = calibration_report([1, 1], p, labels=[0, 1])
    assert np.isfinite(report["nll"])
    assert report["nll"] == pytest.approx(log_loss([1, 1], p, labels=[0, 1]))


@pytest.mark.parametrize("weighted", [False, True])
def test_report_and_functions_share_one_definition(data, weighted):
    # the same code, not a copy of the formula: the same bits, unclipped
    from sklcalib.metrics import ece_sweep

    y, p, w = data
    w = w if weighted else None
    report = calibration_report(y, p, sample_weight=w)
    assert report["ece_sweep"] == ece_sweep(y, p, sample_weight=w)
    assert report["smooth_ece"] == smooth_calibration_error(y, p, sample_weight=w)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_bootstrap_error_of_the_sample_itself_is_the_metric(data, norm):
    # the resampling engine's vectorised error, on the sample's own bin sums,
    # is the metric to the bit (one formula, no clipping)
    from sklcalib.metrics import bin_statistics
    from sklcalib.metrics._plans import binned_error

    y, p, w = data
    conf, correct = p.max(axis=1), p.argmax(axis=1) == y
    stats = bin_statistics(conf, correct, n_bins=10, sample_weight=w)
    cells = np.stack([stats.counts, stats.sum_confidence, stats.sum_correct], -1)
    metric = expected_calibration_error if norm != "max" else maximum_calibration_error
    kw = {"norm": norm} if norm != "max" else {}
    want = metric(y, p, n_bins=10, sample_weight=w, **kw)
    assert float(binned_error(cells[None], norm)[0]) == want


@pytest.mark.parametrize("weighted", [False, True])
def test_brier_of_near_certain_rows_is_exact_not_clamped(weighted):
    # sum p^2 - 2 p_y + 1 cancels to 0 or below for a near-certain correct
    # row, which a max(., 0) hid; the exact value is 1.5 * 2**-80 a row
    from fractions import Fraction

    from sklcalib.metrics import CalibrationAccumulator, bootstrap_interval

    row = [1 - 2.0**-40, 2.0**-41, 2.0**-41]
    p = np.array([row, [row[1], row[2], row[0]], [row[1], row[0], row[2]]])
    y = np.array([0, 2, 1])
    w = np.array([1.0, 2.0, 3.0]) if weighted else None
    exact = float(sum(Fraction(v) ** 2 for v in row[1:]) + Fraction(1 - row[0]) ** 2)
    values = [
        calibration_report(y, p, sample_weight=w, confidence_level=None)["brier"],
        CalibrationAccumulator(labels=[0, 1, 2])
        .update(y, p, sample_weight=w)
        .compute()["brier"],
        bootstrap_interval(
            "brier", y, p, n_resamples=2, random_state=0, sample_weight=w
        ).estimate,
    ]
    np.testing.assert_allclose(values, exact, rtol=1e-12)
