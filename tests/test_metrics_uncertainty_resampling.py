"""Bootstrap intervals, the consistency test and paired comparisons."""

import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import log_loss

import sklcalib._utils._resampling as resampling
from sklcalib.metrics import (
    bootstrap_interval,
    calibration_report,
    calibration_test,
    classwise_calibration_error,
    compare_calibration,
    expected_calibration_error,
    maximum_calibration_error,
)
from sklcalib.metrics._intervals import INTERVAL_METRICS
from sklcalib.metrics._plans import bootstrap_plan, consistency_plan


def _data(seed, n=300, k=4, calibrated=True, sharpen=1.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 1.5
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    source = p if calibrated else p**sharpen / (p**sharpen).sum(axis=1, keepdims=True)
    u = rng.uniform(size=(n, 1))
    y = np.minimum((u > source.cumsum(axis=1)).sum(axis=1), k - 1)
    return y, p


def _totals(plan):
    return resampling.full_sums(plan.codes, plan.values, plan.n_cells)


@pytest.mark.parametrize(
    "name, params, reference",
    [
        ("ece", {}, expected_calibration_error),
        ("ece", {"norm": "l2", "n_bins": 7}, expected_calibration_error),
        ("mce", {}, maximum_calibration_error),
        ("classwise_ece", {"n_bins": 10}, classwise_calibration_error),
        ("nll", {}, None),
        ("brier", {}, None),
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_plan_on_the_full_data_is_the_metric(name, params, reference, weighted):
    y, p = _data(0)
    w = (
        np.random.default_rng(1).uniform(0.2, 3.0, size=y.shape[0])
        if weighted
        else None
    )
    plan = bootstrap_plan(name, y, p, {**params, "sample_weight": w})
    got = float(plan.finalize(_totals(plan)))
    if name == "nll":
        expected = log_loss(y, p, sample_weight=w)
    elif name == "brier":
        expected = calibration_report(y, p, sample_weight=w)["brier"]
    else:
        expected = reference(y, p, sample_weight=w, **params)
    assert got == pytest.approx(expected, abs=1e-12)


def test_compiled_kernels_draw_and_add_exactly_as_numpy(monkeypatch):
    y, p = _data(2, n=200, k=3)
    seeds = resampling.stream_seeds(0, 20)
    monkeypatch.setattr(resampling, "_ROW_BLOCK", 64)  # several blocks
    plans = [bootstrap_plan("classwise_ece", y, p, {})]
    tests = [consistency_plan(m, y, p, {}) for m in ("ece", "classwise_ece")]
    numpy_boot = [
        resampling.bootstrap_sums(q.codes, q.values, q.n_cells, seeds) for q in plans
    ]
    numpy_test = [resampling.consistency_sums(q, seeds) for q in tests]
    monkeypatch.setattr(resampling, "_COMPILED_MIN_WORK", 0)
    for q, expected in zip(plans, numpy_boot, strict=True):
        got = resampling.bootstrap_sums(q.codes, q.values, q.n_cells, seeds)
        np.testing.assert_array_equal(got, expected)
    for q, expected in zip(tests, numpy_test, strict=True):
        np.testing.assert_array_equal(resampling.consistency_sums(q, seeds), expected)


def test_top_label_shortcut_is_the_class_draw():
    y, p = _data(14, n=500, k=5)
    p[:5] = [0.2, 0.2, 0.2, 0.2, 0.2]  # ties: the first maximum is the top label
    plan = consistency_plan("ece", y, p, {})
    u = resampling.uniforms(resampling.stream_seeds(1, 30), 500)
    drawn = resampling.drawn_classes(u, plan.cumulative)
    hits = resampling.top_label_hits(u, plan.top_label_bounds)
    np.testing.assert_array_equal(hits, drawn == np.argmax(p, axis=1))


def test_resampled_indices_are_uniform(monkeypatch):
    monkeypatch.setattr(resampling, "_ROW_BLOCK", 7)  # drawn block by block
    idx = resampling.uniform_indices(resampling.stream_seeds(0, 200), 50)
    counts = np.bincount(idx.ravel(), minlength=50)
    assert scipy.stats.chisquare(counts).pvalue > 1e-3
    # every resample holds each row ~ Poisson(1) times
    per_row = np.apply_along_axis(np.bincount, 1, idx, minlength=50)
    assert per_row.mean() == 1.0
    assert per_row.var() == pytest.approx(1 - 1 / 50, rel=0.1)


@pytest.mark.parametrize(
    "metric, method",
    [
        ("ece", "percentile"),
        ("classwise_ece", "percentile"),
        ("adaptive_ece", "percentile"),
        ("nll", "bca"),
        ("brier", "bca"),
        ("classwise_ece", "bca"),
    ],
)
def test_interval_agrees_with_scipy_bootstrap(metric, method):
    from sklcalib.metrics._registry import METRICS

    y, p = _data(3, n=250, k=3, calibrated=False, sharpen=2.0)
    func = METRICS[metric]
    n_resamples = 2000 if metric != "adaptive_ece" else 400
    ours = bootstrap_interval(
        metric, y, p, n_resamples=n_resamples, method=method, random_state=0
    )
    ref = scipy.stats.bootstrap(
        (np.arange(y.shape[0]),),
        lambda i: func(y[i], p[i], labels=[0, 1, 2]),
        vectorized=False,
        n_resamples=n_resamples,
        method="BCa" if method == "bca" else "percentile",
        random_state=1,
    )
    # bounds agree to a fraction of the standard error: the Monte-Carlo error
    # of a 2.5 % quantile of B draws is ~0.05 SE at B = 2000 (~0.12 SE at
    # B = 400); BCa's levels move with the estimated bias too (scipy's own
    # runs with different seeds differ by up to ~0.3 SE on these data)
    se = ref.standard_error
    tol = 0.3 * se if method == "percentile" and n_resamples > 1000 else 0.6 * se
    assert ours.estimate == func(y, p)
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=tol)
    assert ours.standard_error == pytest.approx(se, rel=0.15)


def test_bca_levels_are_scipys_on_the_same_distribution():
    # the ECE's BCa lower level lands far in the tail (the ECE is biased up),
    # where two Monte-Carlo runs differ a lot: compare the formula on scipy's
    # own bootstrap distribution instead
    from sklcalib.metrics._bootstrap import _interval, _Resampler

    y, p = _data(3, n=250, k=3, calibrated=False, sharpen=2.0)
    ref = scipy.stats.bootstrap(
        (np.arange(y.shape[0]),),
        lambda i: expected_calibration_error(y[i], p[i], labels=[0, 1, 2]),
        vectorized=False,
        n_resamples=300,
        method="BCa",
        random_state=1,
    )
    sampler = _Resampler("ece", y, p, {})
    got = _interval(
        ref.bootstrap_distribution, sampler.estimate, 0.95, "bca", sampler.jackknife
    )
    np.testing.assert_allclose(got, tuple(ref.confidence_interval), rtol=1e-12)


def test_basic_interval_reflects_the_percentile_one():
    y, p = _data(4)
    pct = bootstrap_interval("brier", y, p, n_resamples=300, random_state=5)
    basic = bootstrap_interval(
        "brier", y, p, n_resamples=300, random_state=5, method="basic"
    )
    assert basic.low == pytest.approx(2 * pct.estimate - pct.high)
    assert basic.high == pytest.approx(2 * pct.estimate - pct.low)


def test_callable_metric_and_reproducibility():
    y, p = _data(5, n=120)

    def top1_error(y_true, y_prob):
        return float(np.mean(np.argmax(y_prob, axis=1) != y_true))

    a = bootstrap_interval(top1_error, y, p, n_resamples=200, random_state=3)
    b = bootstrap_interval(top1_error, y, p, n_resamples=200, random_state=3)
    np.testing.assert_array_equal(a.bootstrap_distribution, b.bootstrap_distribution)
    c = bootstrap_interval(
        top1_error, y, p, n_resamples=200, random_state=np.random.default_rng(3)
    )
    assert c.bootstrap_distribution.shape == (200,)
    # the error rate is a mean: its bootstrap SE is the binomial one
    err = top1_error(y, p)
    assert a.standard_error == pytest.approx(np.sqrt(err * (1 - err) / 120), rel=0.2)


def test_bca_jackknife_of_a_plan_equals_leave_one_out():
    y, p = _data(6, n=60)
    from sklcalib.metrics._bootstrap import _Resampler

    fast = _Resampler("ece", y, p, {}).jackknife()
    slow = [
        expected_calibration_error(np.delete(y, i), np.delete(p, i, axis=0))
        for i in range(60)
    ]
    np.testing.assert_allclose(fast, slow, atol=1e-12)


def test_calibration_test_size_and_power():
    rng = np.random.default_rng(7)
    rejections_null, rejections_over = 0, 0
    n_datasets = 200
    for seed in range(n_datasets):
        y, p = _data(1000 + seed, n=150, k=3)
        rejections_null += (
            calibration_test(y, p, n_resamples=99, random_state=seed)[1] <= 0.05
        )
        y, p = _data(5000 + seed, n=150, k=3, calibrated=False, sharpen=0.4)
        rejections_over += (
            calibration_test(y, p, n_resamples=99, random_state=seed)[1] <= 0.05
        )
    # the test is exact under the null: P(p <= 0.05) <= 0.05; 200 datasets
    # put the observed rate within [0.01, 0.10] with probability > 0.99
    assert 0.01 <= rejections_null / n_datasets <= 0.10
    # labels from flatter probabilities than predicted: over-confidence
    assert rejections_over / n_datasets > 0.8
    del rng


@pytest.mark.parametrize("metric", ["classwise_ece", "nll", "brier", "smooth_ece"])
def test_calibration_test_other_metrics(metric):
    y, p = _data(8, n=200)
    res = calibration_test(y, p, metric=metric, n_resamples=60, random_state=0)
    assert res.null_distribution.shape == (60,)
    assert res.pvalue > 0.01
    y, p = _data(9, n=200, calibrated=False, sharpen=0.3)
    assert (
        calibration_test(y, p, metric=metric, n_resamples=60, random_state=0)[1] < 0.05
    )


def test_calibration_test_null_matches_a_slow_redraw():
    # the fixed-bin route gives the metric on labels drawn from y_prob
    y, p = _data(10, n=80, k=3)
    res = calibration_test(y, p, n_resamples=5, random_state=2)
    seeds = resampling.stream_seeds(2, 5)
    cumulative = p.cumsum(axis=1)
    for b in range(5):
        k = resampling.drawn_classes(
            resampling.uniforms(seeds[b : b + 1], 80), cumulative
        )
        expected = expected_calibration_error(k[0], p, labels=[0, 1, 2])
        assert res.null_distribution[b] == pytest.approx(expected, abs=1e-12)


def test_compare_calibration_is_paired_and_antisymmetric():
    y, p = _data(11, n=400)
    flat = (p + 0.5) / (p + 0.5).sum(axis=1, keepdims=True)
    ab = compare_calibration(y, p, flat, n_resamples=300, random_state=0)
    ba = compare_calibration(y, flat, p, n_resamples=300, random_state=0)
    assert ab.difference == pytest.approx(-ba.difference)
    assert ab.low == pytest.approx(-ba.high) and ab.high == pytest.approx(-ba.low)
    assert ab.pvalue == ba.pvalue
    assert ab.difference < 0 and ab.high < 0 and ab.pvalue < 0.01
    same = compare_calibration(y, p, p, n_resamples=50, random_state=0)
    assert same.difference == 0 and same.low <= 0 <= same.high
    assert same.pvalue == 1.0
    assert ab.low <= ab.difference <= ab.high


@given(
    seed=st.integers(0, 2**16),
    n=st.integers(2, 40),
    k=st.integers(2, 4),
    metric=st.sampled_from(["ece", "mce", "classwise_ece", "nll", "brier"]),
)
@settings(max_examples=25, deadline=None)
def test_bootstrap_properties(seed, n, k, metric):
    y, p = _data(seed, n=n, k=k)
    labels = np.arange(k)
    ci = bootstrap_interval(
        metric, y, p, n_resamples=30, random_state=seed, labels=labels
    )
    assert ci.low <= ci.high
    assert np.all(np.isfinite(ci.bootstrap_distribution))
    if metric not in ("nll", "brier"):
        assert np.all(
            (ci.bootstrap_distribution >= 0) & (ci.bootstrap_distribution <= 1)
        )
    # every resample is a metric of some multiset of the rows: with one row
    # repeated n times it is that row's value, so the range is bounded by the
    # metric's range on the data's rows
    assert ci.low >= ci.bootstrap_distribution.min() - 1e-12


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda y, p: bootstrap_interval("ece", y, p, n_resamples=0), "n_resamples"),
        (lambda y, p: bootstrap_interval("ece", y, p, n_resamples=2.5), "n_resamples"),
        (
            lambda y, p: bootstrap_interval("ece", y, p, confidence_level=1.0),
            "confidence_level",
        ),
        (
            lambda y, p: bootstrap_interval("ece", y, p, confidence_level=0),
            "confidence_level",
        ),
        (lambda y, p: bootstrap_interval("ece", y, p, method="bc"), "method"),
        (lambda y, p: bootstrap_interval("ecee", y, p), "metric"),
        (lambda y, p: bootstrap_interval("ece", y, p, n_bins=0), "n_bins"),
        (lambda y, p: bootstrap_interval("ece", y, p[:-1]), "y_true"),
        (lambda y, p: bootstrap_interval("ece", y, p * 2), "y_prob"),
        (lambda y, p: calibration_test(y, p, n_resamples=0), "n_resamples"),
        (lambda y, p: calibration_test(y, p, metric="x"), "metric"),
        (lambda y, p: compare_calibration(y, p, p[:-1]), "y_prob_b"),
        (
            lambda y, p: compare_calibration(y, p, p, confidence_level=2),
            "confidence_level",
        ),
        (lambda y, p: compare_calibration(y, p, p, metric="x"), "metric"),
    ],
)
def test_bad_input(call, match):
    y, p = _data(12, n=30)
    with pytest.raises(ValueError, match=match):
        call(y, p)


def test_report_new_entries_and_intervals():
    from sklcalib.metrics import (
        debiased_calibration_error,
        ece_sweep,
        kernel_calibration_error,
    )

    y, p = _data(13, n=300)
    w = np.random.default_rng(0).uniform(0.5, 2, size=300)
    plain = calibration_report(y, p, sample_weight=w, n_bins=10, confidence_level=None)
    assert "ece_ci" not in plain and plain.verdict is None
    assert plain["debiased_ece"] == debiased_calibration_error(
        y, p, sample_weight=w, n_bins=10
    )
    assert plain["ece_sweep"] == pytest.approx(ece_sweep(y, p, sample_weight=w))
    assert plain["skce"] == kernel_calibration_error(y, p, sample_weight=w)
    intervals = dict(confidence_level=0.9, random_state=0)
    report = calibration_report(y, p, sample_weight=w, n_bins=10, **intervals)
    again = calibration_report(y, p, sample_weight=w, n_bins=10, **intervals)
    for key in INTERVAL_METRICS:
        low, high = report[f"{key}_ci"]
        assert low <= report[key] <= high
        assert report[f"{key}_ci"] == again[f"{key}_ci"]
    # the intervals are calibration_error_interval's (of the population value)
    from sklcalib.metrics import calibration_error_interval

    ci = calibration_error_interval(
        y,
        p,
        confidence_level=0.9,
        n_bins=10,
        sample_weight=w,
        random_state=int(resampling.stream_seeds(0, 1)[0] % 2**32),
    )
    assert report["ece_ci"] == (ci.low, ci.high)
    assert "smooth_ece_ci" not in report  # no interval of its population value
    assert 0 < report["calibration_pvalue"] <= 1 and report.verdict
    with pytest.raises(ValueError, match="confidence_level"):
        calibration_report(y, p, confidence_level=95)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_display_bootstrap_band(strategy):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sklcalib.plotting import ReliabilityDisplay

    y, p = _data(15, n=400)
    display = ReliabilityDisplay.from_predictions(
        y,
        p,
        n_bins=5,
        strategy=strategy,
        band="bootstrap",
        n_resamples=200,
        random_state=0,
    )
    # reference: the per-bin accuracy recomputed on the same resampled rows
    seeds = resampling.stream_seeds(0, 200)
    idx = resampling.uniform_indices(seeds, 400)
    conf, correct = p.max(axis=1), p.argmax(axis=1) == y
    if strategy == "uniform":
        bins = np.clip(np.searchsorted(np.linspace(0, 1, 6), conf) - 1, 0, 4)
    else:
        bins = np.empty(400, dtype=int)
        bins[np.argsort(conf, kind="stable")] = np.repeat(np.arange(5), 80)
    acc = np.full((200, 5), np.nan)
    for b in range(200):
        for k in range(5):
            rows = idx[b][bins[idx[b]] == k]
            if rows.size:
                acc[b, k] = correct[rows].mean()
    with warnings.catch_warnings():  # a bin no sample falls in is all-NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(acc, [0.025, 0.975], axis=0)
    np.testing.assert_allclose(display.band_low, low[display.nonempty], atol=1e-12)
    np.testing.assert_allclose(display.band_high, high[display.nonempty], atol=1e-12)
    assert display.band_ is not None
    plt.close("all")
    with pytest.raises(ValueError, match="band"):
        ReliabilityDisplay.from_predictions(y, p, band="jackknife")
    with pytest.raises(ValueError, match="n_resamples"):
        ReliabilityDisplay.from_predictions(y, p, band="bootstrap", n_resamples=0)


def test_plan_and_recomputation_resample_the_same_rows(monkeypatch):
    # the fast route (per-bin sums) and recomputing the metric on the
    # resampled rows give the same bootstrap distribution
    monkeypatch.setattr(resampling, "_ROW_BLOCK", 50)  # several blocks
    y, p = _data(16, n=230)

    def ece(y_true, y_prob):
        return expected_calibration_error(y_true, y_prob, labels=[0, 1, 2, 3])

    fast = bootstrap_interval("ece", y, p, n_resamples=40, random_state=4)
    slow = bootstrap_interval(ece, y, p, n_resamples=40, random_state=4)
    np.testing.assert_allclose(
        fast.bootstrap_distribution, slow.bootstrap_distribution, atol=1e-12
    )


def test_report_on_dask_says_what_it_lacks():
    # the non-streamable entries are not dropped silently: asking for one
    # raises a KeyError that says why
    da = pytest.importorskip("dask.array")  # dask is a test dependency
    y, p = _data(17, n=100)
    report = calibration_report(da.from_array(y), da.from_array(p))
    assert report["ece"] == pytest.approx(calibration_report(y, p)["ece"])
    for key in ("smooth_ece", "adaptive_ece", "skce", "ece_ci", "verdict"):
        assert key not in report and key in report.unavailable
        with pytest.raises(KeyError, match="not available on dask input"):
            report[key]
    with pytest.raises(KeyError, match="nonsense"):
        report["nonsense"]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"mode": "classwise", "n_bins": 7},
        {"mode": "top_label", "n_bins": 10},
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("compiled", [False, True])
def test_debiased_consistency_test_shares_its_bins(
    params, weighted, compiled, monkeypatch
):
    # the debiased error's equal-mass bins depend on the scores only: its
    # consistency test adds each draw's outcomes to fixed bins (a plan)
    # instead of recomputing the error, with the same null distribution as
    # the recomputation of the same draws
    from sklcalib.metrics import debiased_calibration_error

    if compiled:
        monkeypatch.setattr(resampling, "_COMPILED_MIN_WORK", 0)
    y, p = _data(21, n=400, k=4, calibrated=False, sharpen=1.6)
    p[:3] = 0.25  # ties: the first maximum is the top label
    w = np.random.default_rng(2).uniform(0.2, 3.0, size=400) if weighted else None
    params = {**params, "sample_weight": w}
    assert consistency_plan("debiased_ece", y, p, params) is not None
    fast = calibration_test(
        y, p, metric="debiased_ece", n_resamples=60, random_state=3, **params
    )

    def recomputed(y_true, y_prob, **kwargs):
        return debiased_calibration_error(y_true, y_prob, **kwargs)

    slow = calibration_test(
        y, p, metric=recomputed, n_resamples=60, random_state=3, **params
    )
    assert fast.statistic == slow.statistic
    np.testing.assert_allclose(
        fast.null_distribution, slow.null_distribution, rtol=1e-10, atol=1e-12
    )
    assert fast.pvalue == slow.pvalue
    assert np.ptp(fast.null_distribution) > 0


def test_debiased_consistency_plan_binary_1d():
    from sklcalib.metrics import debiased_calibration_error

    rng = np.random.default_rng(4)
    p = rng.uniform(size=300)
    y = rng.uniform(size=300) < p**1.5
    for mode in ("top_label", "classwise"):
        fast = calibration_test(
            y, p, metric="debiased_ece", mode=mode, n_resamples=40, random_state=0
        )
        slow = calibration_test(
            y,
            p,
            metric=lambda a, b, **k: debiased_calibration_error(a, b, **k),
            mode=mode,
            n_resamples=40,
            random_state=0,
        )
        np.testing.assert_allclose(
            fast.null_distribution, slow.null_distribution, rtol=1e-10, atol=1e-12
        )


def test_bca_says_why_it_is_undefined_for_a_biased_statistic():
    # a calibrated model: every resample's ECE lies above the estimate (the
    # plug-in's upward bias), so the BCa bias correction is infinite; the
    # bootstrap distribution is not degenerate, and no RuntimeWarning leaks
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_coverage as bed

    y, p = bed.binary_bed(np.random.default_rng(18), 300, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="lie above the estimate") as info:
            bootstrap_interval(
                "ece", y, p, method="bca", n_resamples=200, random_state=0
            )
    assert "degenerate" not in str(info.value)
    assert "calibration_error_interval" in str(info.value)
    boot = bootstrap_interval("ece", y, p, n_resamples=200, random_state=0)
    assert np.all(boot.bootstrap_distribution > boot.estimate)


@pytest.mark.parametrize(
    "name, params",
    [
        ("adaptive_ece", {}),
        ("adaptive_ece", {"norm": "l2", "n_bins": 7}),
        ("ece", {"strategy": "quantile", "n_bins": 10}),
        ("mce", {"strategy": "quantile"}),
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("compiled", [False, True])
def test_equal_mass_consistency_test_shares_its_bins(
    name, params, weighted, compiled, monkeypatch
):
    # rank groups of the confidences do not move under label draws: the
    # consistency test of the adaptive ECE (and of quantile-binned ECE/MCE)
    # adds each draw's outcomes to fixed groups, with the null distribution of
    # recomputing the metric on the same draws
    from sklcalib.metrics._registry import resolve_metric

    if compiled:
        monkeypatch.setattr(resampling, "_COMPILED_MIN_WORK", 0)
    y, p = _data(23, n=400, k=4, calibrated=False, sharpen=1.6)
    p[:3] = 0.25  # ties: the first maximum is the top label, a stable sort
    w = np.random.default_rng(2).uniform(0.2, 3.0, size=400) if weighted else None
    params = {**params, "sample_weight": w}
    assert consistency_plan(name, y, p, params) is not None
    assert bootstrap_plan(name, y, p, params) is None  # a resample moves them
    func = resolve_metric(name)
    fast = calibration_test(y, p, metric=name, n_resamples=60, random_state=3, **params)
    slow = calibration_test(
        y,
        p,
        metric=lambda a, b, **kw: func(a, b, **kw),
        n_resamples=60,
        random_state=3,
        **params,
    )
    assert fast.statistic == slow.statistic
    np.testing.assert_allclose(
        fast.null_distribution, slow.null_distribution, rtol=1e-10, atol=1e-12
    )
    assert fast.pvalue == slow.pvalue
