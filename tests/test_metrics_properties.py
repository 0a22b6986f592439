"""Hypothesis properties of the metrics, and the fused compiled path against the
numpy reference path."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import sklcalib.metrics._statistics as statistics
from sklcalib._utils._binning import error_from_stats, top_label
from sklcalib._utils._optional import is_installed
from sklcalib.metrics import (
    adaptive_calibration_error,
    bin_statistics,
    calibration_report,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    smooth_calibration_error,
)
from sklcalib.metrics.binning import BinStatistics

# the compiled path is the optional "fast" extra (numba): its tests skip where
# it is not installed (the core-only CI run); the numpy path serves instead
needs_numba = pytest.mark.skipif(
    not is_installed("numba"), reason="numba (the 'fast' extra) is not installed"
)


@st.composite
def predictions(draw, max_n=40, max_k=5):
    """Valid (y, p) pairs, with exact zeros and ones and repeated rows."""
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(2, max_k))
    raw = draw(
        arrays(
            np.float64,
            (n, k),
            elements=st.one_of(
                st.just(0.0), st.just(1.0), st.floats(0.0, 1.0, width=32)
            ),
        )
    )
    raw[raw.sum(axis=1) == 0, 0] = 1.0
    p = raw / raw.sum(axis=1, keepdims=True)
    y = draw(arrays(np.int64, n, elements=st.integers(0, k - 1)))
    return y, p


def all_metrics(y, p, labels, n_bins):
    return [
        expected_calibration_error(y, p, labels=labels, n_bins=n_bins),
        expected_calibration_error(y, p, labels=labels, n_bins=n_bins, norm="l2"),
        adaptive_calibration_error(y, p, labels=labels, n_bins=n_bins),
        classwise_calibration_error(y, p, labels=labels, n_bins=n_bins),
        maximum_calibration_error(y, p, labels=labels, n_bins=n_bins),
        smooth_calibration_error(y, p, labels=labels),
    ]


@given(predictions(), st.integers(1, 20))
def test_every_metric_is_in_unit_interval(yp, n_bins):
    y, p = yp
    labels = np.arange(p.shape[1])
    for value in all_metrics(y, p, labels, n_bins):
        assert 0.0 <= value <= 1.0
    report = calibration_report(y, p, labels=labels, n_bins=n_bins)
    for key in ("ece", "ece_l2", "adaptive_ece", "classwise_ece", "mce"):
        assert 0.0 <= report[key] <= 1.0
    assert report["ece_over"] + report["ece_under"] == pytest.approx(report["ece"])


def test_errors_are_not_clipped_to_the_unit_interval():
    # a wrong result must show: bin sums that no probability can produce
    # (mean confidence 1.5 against accuracy 0) give 1.5, not a clipped 1.0
    stats = BinStatistics(
        np.array([2.0]), np.array([3.0]), np.array([0.0]), np.array([0.0, 1.0])
    )
    for norm in ("l1", "l2", "max"):
        assert error_from_stats(stats, norm) == 1.5


@pytest.mark.parametrize("n_bins", [2, 15, 1000])
@pytest.mark.parametrize("weighted", [False, True])
def test_worst_case_is_exactly_one(n_bins, weighted):
    # every prediction certain and wrong: the largest possible error, reached
    # exactly (no round-off above 1 that a clip would have hidden)
    rng = np.random.default_rng(n_bins)
    n = 997
    w = rng.random(n) if weighted else None
    for k in (2, 5):
        y = rng.integers(0, k, n)
        p = np.eye(k)[(y + 1) % k]
        kw = {"n_bins": n_bins, "sample_weight": w}
        values = [
            expected_calibration_error(y, p, **kw),
            expected_calibration_error(y, p, norm="l2", **kw),
            adaptive_calibration_error(y, p, **kw),
            maximum_calibration_error(y, p, **kw),
        ]
        if k == 2:  # every column certain and wrong too
            values.append(classwise_calibration_error(y, p, **kw))
        assert values == [1.0] * len(values)


@given(predictions(), st.integers(1, 20), st.randoms(use_true_random=False))
def test_invariant_to_row_order(yp, n_bins, random):
    y, p = yp
    labels = np.arange(p.shape[1])
    perm = np.array(random.sample(range(len(y)), len(y)))
    before = all_metrics(y, p, labels, n_bins)
    after = all_metrics(y[perm], p[perm], labels, n_bins)
    conf = p.max(axis=1)
    if np.unique(conf).shape[0] < conf.shape[0]:
        # with tied confidences across a group boundary the equal-mass groups
        # depend on the input order (stable sort); compare the rest
        before.pop(2)
        after.pop(2)
    np.testing.assert_allclose(before, after, rtol=1e-9, atol=1e-12)


@given(
    st.lists(
        st.tuples(st.integers(1, 8), st.integers(0, 8)).filter(lambda t: t[1] <= t[0]),
        min_size=1,
        max_size=6,
    ),
    st.integers(1, 20),
)
def test_zero_when_confidence_equals_accuracy(groups, n_bins):
    """Groups of m identical rows [c, 1 - c], c = j/m >= 1/2, with exactly j
    rows of class 0: the accuracy of every bin equals its mean confidence."""
    rows, labels = [], []
    for m, j in groups:
        j = max(j, m - j)  # top label is class 0: c >= 1/2
        c = j / m
        rows += [[c, 1 - c]] * m
        labels += [0] * j + [1] * (m - j)
    p, y = np.array(rows), np.array(labels)
    kw = {"labels": [0, 1], "n_bins": n_bins}
    assert expected_calibration_error(y, p, **kw) == pytest.approx(0, abs=1e-12)
    assert expected_calibration_error(y, p, norm="l2", **kw) == pytest.approx(
        0, abs=1e-12
    )
    assert maximum_calibration_error(y, p, **kw) == pytest.approx(0, abs=1e-12)
    assert classwise_calibration_error(y, p, **kw) == pytest.approx(0, abs=1e-12)


@given(st.lists(st.integers(2, 4), min_size=1, max_size=3, unique=True))
def test_adaptive_zero_when_each_group_is_calibrated(numerators):
    """Equal-mass groups of 4 rows aligned with the confidence levels."""
    m = 4
    rows, labels = [], []
    for j in sorted(numerators):
        c = max(j, m - j) / m
        rows += [[c, 1 - c]] * m
        labels += [0] * int(c * m) + [1] * (m - int(c * m))
    p, y = np.array(rows), np.array(labels)
    n_groups = len(numerators)
    assert adaptive_calibration_error(
        y, p, labels=[0, 1], n_bins=n_groups
    ) == pytest.approx(0, abs=1e-12)


# ---------------------------------------------------- fused path vs numpy


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 3, 7, 100])
@pytest.mark.parametrize("weighted", [False, True])
def test_fused_kernel_equals_numpy_reference(dtype, k, weighted):
    from sklcalib.metrics._fused import fused_top_label, fused_uniform_statistics

    rng = np.random.default_rng(k)
    n = 3001
    p = rng.dirichlet(np.full(k, 0.3), size=n).astype(dtype)
    p[:10] = 0.0
    p[:10, 0] = 1.0  # confidence exactly 1
    p[:5, 1] = -0.0  # a valid probability with its sign bit set
    p[10:20, :2] = 0.5  # ties: first column wins
    p[10:20, 2:] = 0.0
    edges = np.linspace(0, 1, 16)
    if k == 2:
        p[20:30] = [edges[10], 1 - edges[10]]  # confidence exactly on an edge
    p[30:40] = 1.0 / k  # all equal
    y = rng.integers(0, k, n)
    w = rng.random(n) if weighted else None
    conf, correct = fused_top_label(p, y)
    ref_conf, ref_correct = top_label(p, y)
    np.testing.assert_array_equal(conf, ref_conf)
    np.testing.assert_array_equal(correct, ref_correct)
    fused = fused_uniform_statistics(p, y, 15, w)
    ref = bin_statistics(ref_conf, ref_correct, n_bins=15, sample_weight=w)
    for a, b in zip(fused, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)


@needs_numba
def test_metrics_take_the_fused_path_for_large_inputs(monkeypatch):
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(10), size=500).astype(np.float32)
    y = rng.integers(0, 10, 500)
    monkeypatch.setattr(statistics, "_FUSED_MIN_SIZE", 1e18)
    ref = [f(y, p) for f in (expected_calibration_error, adaptive_calibration_error)]
    monkeypatch.setattr(statistics, "_FUSED_MIN_SIZE", 0)
    fused = [f(y, p) for f in (expected_calibration_error, adaptive_calibration_error)]
    np.testing.assert_allclose(fused, ref, rtol=1e-12)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_from_bits_is_exact(dtype):
    from sklcalib.metrics._fused import _bit_view, _float_from_bits

    info = np.finfo(dtype)
    values = np.array(
        [0.0, 1.0, 0.5, 1 / 3, 0.1, info.tiny, info.smallest_subnormal, 0.999999],
        dtype=dtype,
    )
    values = np.concatenate([values, np.random.default_rng(0).random(50).astype(dtype)])
    bits, _, mant_bits, bias = _bit_view(values[None, :])
    for b, v in zip(bits[0], values, strict=True):
        assert _float_from_bits(b, mant_bits, bias) == np.float64(v)
