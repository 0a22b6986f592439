"""calibration_report: every entry against its own function or scikit-learn."""

import importlib.util

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
    "cumulative_kuiper",
    "cumulative_ks",
    "n_samples",
    "confidence_gap",
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
    } | {"brier_ci", "calibration_pvalue", "confidence_gap_ci"}
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
    # without labels=: drawn from p1, the labels show their sorted order
    report = calibration_report(y, p1, random_state=0)
    two = calibration_report(y, np.c_[1 - p1, p1], labels=["no", "yes"], random_state=0)
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


# --- validated once, numbers out, the verdict from its own rows ---------------


def _count_calls(monkeypatch, module_name, function_name):
    """Count the calls of a function wherever sklcalib imported it by name."""
    import importlib
    import sys

    original = getattr(importlib.import_module(module_name), function_name)
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if (
            name.startswith("sklcalib")
            and getattr(module, function_name, None) is original
        ):
            monkeypatch.setattr(module, function_name, counted)
    return calls


@pytest.mark.parametrize("intervals", [None, 0.95])
def test_one_report_validates_its_inputs_once(monkeypatch, data, intervals):
    if importlib.util.find_spec("numba") is not None:
        import sklcalib.metrics._fused  # noqa: F401 (patched where numba is installed)

    y, p, w = data
    targets = _count_calls(monkeypatch, "sklcalib._utils._validation", "check_targets")
    values = _count_calls(
        monkeypatch, "sklcalib._utils._validation", "check_prob_values"
    )
    calibration_report(
        y, p, sample_weight=w, confidence_level=intervals, random_state=0
    )
    assert len(targets) == 1
    assert len(values) == 1


def test_the_reports_intervals_are_the_public_functions(data):
    # the report hands its validated arrays and estimates down: the intervals
    # and the p-value are what calibration_error_interval gives for the seed
    from sklcalib._utils._resampling import stream_seeds
    from sklcalib.metrics import calibration_error_interval

    y, p, w = data
    report = calibration_report(y, p, sample_weight=w, random_state=7)
    seed = int(stream_seeds(7, 1)[0] % 2**32)
    for key in ("ece", "adaptive_ece", "classwise_ece", "debiased_ece", "nll", "brier"):
        ci = calibration_error_interval(
            y, p, metric=key, sample_weight=w, random_state=seed
        )
        assert report[key] == pytest.approx(ci.estimate, rel=1e-12), key
        assert report[f"{key}_ci"] == pytest.approx((ci.low, ci.high), rel=1e-12), key
    assert 0.0 < report["calibration_pvalue"] <= 1.0


def test_the_report_holds_numbers_and_its_text_is_the_table():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.5, 1.0, size=1000)
    y = rng.uniform(size=1000) < p**3  # over-confident
    report = calibration_report(y, p, random_state=0)
    for key, value in report.items():
        assert value is None or isinstance(value, int | float | tuple), key
    text = str(report)
    assert text.splitlines()[0] == report.verdict
    assert report.verdict.startswith("over-confident: ECE ")
    assert "ECE (%)" in text and "debiased L2 ECE (%)" in text
    # the verdict is no longer a key; reading it as one still works, and says so
    assert "verdict" not in report
    with pytest.warns(FutureWarning, match="report.verdict"):
        assert report["verdict"] == report.verdict
    with pytest.raises(KeyError):
        report["no such key"]
    assert calibration_report(y, p, confidence_level=None).verdict is None


def test_n_resamples_is_deprecated_and_ignored():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.5, 1.0, size=200)
    y = rng.uniform(size=200) < p
    with pytest.warns(FutureWarning, match="n_resamples is deprecated"):
        old = calibration_report(y, p, n_resamples=50, random_state=0)
    assert old == calibration_report(y, p, random_state=0)


def test_every_l2_quantity_says_so():
    from sklcalib._utils._metric_display import DISPLAY, REPORT_ROWS

    labels = dict((key, label) for key, label, _ in REPORT_ROWS)
    assert "L2" in labels["ece_l2"] and "L2" in labels["debiased_ece"]
    assert "L2" in DISPLAY["debiased_ece"].label(long=True)
    assert "L2" not in labels["ece"]


def _mixed_model(n, seed):
    """Over-confident above 0.75, under-confident below: both directions."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.5, 1.0, size=n)
    truth = np.where(p > 0.75, p - 0.12, np.minimum(p + 0.12, 1.0))
    return rng.uniform(size=n) < truth, p


def test_the_verdict_follows_from_its_own_rows():
    y, p = _mixed_model(4000, 0)
    report = calibration_report(y, p, random_state=0)
    # significantly miscalibrated, in both directions: no single direction
    assert report["ece_ci"][0] > 0 and report["calibration_pvalue"] < 0.05
    assert min(report["ece_over"], report["ece_under"]) > report["ece"] / 4
    assert report.verdict.startswith("miscalibrated in both directions: ECE ")
    assert "over-confident part" in report.verdict
    # the signed gap is the difference of the parts
    assert report["confidence_gap"] == pytest.approx(
        report["ece_over"] - report["ece_under"], abs=1e-12
    )
    rng = np.random.default_rng(1)
    p = rng.uniform(0.5, 1.0, size=1000)
    for exponent, words in ((3.0, "over-confident"), (0.3, "under-confident")):
        r = calibration_report(rng.uniform(size=1000) < p**exponent, p, random_state=0)
        assert r.verdict.startswith(f"{words}: ECE "), r.verdict
        low, high = r["confidence_gap_ci"]
        assert (low > 0) if words == "over-confident" else (high < 0)
        share = r["ece_over"] if words == "over-confident" else r["ece_under"]
        assert share >= 0.75 * r["ece"]
