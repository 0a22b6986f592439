"""What the metrics accept and how they say no: rows written with a few
decimals (accepted, renormalised, said), half-precision tensors and pandas
nullable frames at every entry point, a weight of 0 equal to no row and
weights free of their scale, and specific messages for one-hot labels,
logits and a one-column input of many labels."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sklcalib import metrics
from sklcalib._utils._scores import (
    looks_like_probabilities,
    rounding_tolerance,
    written_decimals,
)


def _drawn(n=400, k=3, seed=0, concentration=1.0):
    """Probabilities and labels drawn from them (calibrated by construction)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, concentration), size=n)
    y = (rng.uniform(size=(n, 1)) > p.cumsum(axis=1)).sum(axis=1).clip(0, k - 1)
    return y, p


#: every public entry point of the metrics that takes (y_true, y_prob)
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
        "adaptive_ece", y, p, n_resamples=20, random_state=0, **k
    ),
    "compare": lambda y, p, **k: metrics.compare_calibration(
        y, p, p, n_resamples=20, random_state=0, **k
    ),
    "accumulator": lambda y, p, **k: (
        metrics.CalibrationAccumulator(labels=[0, 1, 2])
        .update(y, p, k.get("sample_weight"))
        .compute()
    ),
    "cumulative": lambda y, p, **k: metrics.cumulative_calibration_error(y, p, **k),
}


def _value(result):
    """A comparable number of any entry point's result."""
    if isinstance(result, dict):
        return result["ece"]
    for field in ("estimate", "statistic", "difference"):
        if hasattr(result, field):
            return getattr(result, field)
    return result


# --- rows written with a few decimals ----------------------------------------


@pytest.mark.parametrize("decimals", [6, 4, 2])
@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_rounded_rows_are_renormalised_and_said(decimals, name):
    y, p = _drawn()
    rounded = np.round(p, decimals)
    assert np.abs(rounded.sum(axis=1) - 1).max() > 7.2e-7  # refused before
    with pytest.warns(UserWarning, match=f"written with {decimals} decimals"):
        got = ENTRY_POINTS[name](y, rounded)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        renormalised = rounded / rounded.sum(axis=1, keepdims=True)
        want = ENTRY_POINTS[name](y, renormalised)
    assert _value(got) == pytest.approx(_value(want), rel=1e-9, abs=1e-12)


def test_rounded_float32_text_is_accepted_on_the_fused_path(monkeypatch):
    import sklcalib.metrics._statistics as statistics

    pytest.importorskip("numba")
    monkeypatch.setattr(statistics, "_FUSED_MIN_SIZE", 0)
    y, p = _drawn(k=10, concentration=0.3)
    rounded = np.round(p, 2).astype(np.float32)  # a float32 CSV read back
    with pytest.warns(UserWarning, match="written with 2 decimals"):
        got = metrics.expected_calibration_error(y, rounded)
    renormalised = rounded / rounded.sum(axis=1, keepdims=True, dtype=np.float64)
    assert got == pytest.approx(
        metrics.expected_calibration_error(y, renormalised), rel=1e-12
    )


def test_rows_off_by_more_than_their_rounding_are_refused_without_logits_hint():
    y, p = _drawn()
    rounded = np.round(p, 2)
    rounded[7] = [0.5, 0.3, 0.1]  # sums to 0.9: no rounding explains it
    with pytest.raises(ValueError, match=r"2 decimals.*row 7 sums to 0\.9") as err:
        metrics.expected_calibration_error(y, rounded)
    assert "logit" not in str(err.value) and "softmax" not in str(err.value)
    # full-precision rows off by more than round-off: refused as before
    bad = p.copy()
    bad[3] *= 1.001
    with pytest.raises(ValueError, match="row 3 sums to"):
        metrics.expected_calibration_error(y, bad)


def test_the_rounding_rule():
    assert written_decimals(np.array([0.25, 0.07, 1.0])) == 2
    assert written_decimals(np.array([0.123456, 0.5])) == 6
    assert written_decimals(np.array([1 / 3, 2 / 3])) is None
    assert written_decimals(np.array([0.1], dtype=np.float16)) is None
    # float32 values of a 4-decimal text keep their decimals
    assert written_decimals(np.array([0.1234, 0.0001], dtype=np.float32)) == 4
    assert rounding_tolerance(2, 3) == pytest.approx(0.015)
    assert looks_like_probabilities(np.array([[0.33, 0.33, 0.33]]))
    # one decimal each: up to 0.15 off for three columns, no more
    assert looks_like_probabilities(np.array([[0.3, 0.3, 0.3]]))
    assert not looks_like_probabilities(np.array([[0.3, 0.3, 0.2]]))
    assert not looks_like_probabilities(np.array([[-1.0, 2.0]]))
    assert looks_like_probabilities(np.array([0.2, 0.9]))  # 1-D: the range only


# --- half precision and pandas nullable dtypes --------------------------------


def _inputs(kind, y, p):
    if kind == "torch float16":
        torch = pytest.importorskip("torch")
        return y, torch.tensor(p, dtype=torch.float16)
    if kind == "torch bfloat16":
        torch = pytest.importorskip("torch")
        return y, torch.tensor(p, dtype=torch.bfloat16)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(p).astype("Float64")
    return pd.Series(y, dtype="Int64"), frame


@pytest.mark.parametrize("kind", ["torch float16", "torch bfloat16", "Float64 frame"])
@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_half_precision_and_nullable_frames_at_every_entry_point(kind, name):
    y, p = _drawn()
    yy, pp = _inputs(kind, y, p)
    got = ENTRY_POINTS[name](yy, pp)
    if kind == "Float64 frame":  # the same numbers
        assert _value(got) == pytest.approx(_value(ENTRY_POINTS[name](y, p)))
    else:
        assert np.isfinite(_value(got))


def test_a_missing_value_of_a_nullable_frame_is_named():
    pd = pytest.importorskip("pandas")
    y, p = _drawn()
    frame = pd.DataFrame(p).astype("Float64")
    frame.iloc[4, 1] = pd.NA
    with pytest.raises(ValueError, match="y_prob contains NaN"):
        metrics.expected_calibration_error(y, frame)


# --- weight 0 is no row; weights are free of their scale ----------------------

#: metrics whose equal-mass bins, bandwidths or row counts used to see rows of
#: weight 0, and the others
WEIGHTED = {
    "ece": metrics.expected_calibration_error,
    "adaptive": metrics.adaptive_calibration_error,
    "quantile_classwise": lambda y, p, **k: metrics.classwise_calibration_error(
        y, p, strategy="quantile", **k
    ),
    "debiased": metrics.debiased_calibration_error,
    "debiased_classwise": lambda y, p, **k: metrics.debiased_calibration_error(
        y, p, mode="classwise", **k
    ),
    "sweep": metrics.ece_sweep,
    "smooth": metrics.smooth_calibration_error,
    "skce": metrics.kernel_calibration_error,
}


def _comparable(result):
    if isinstance(result, dict):
        out = {}
        for key, value in result.items():
            if isinstance(value, tuple):
                out.update({f"{key}[{i}]": v for i, v in enumerate(value)})
            elif isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = value
        return out
    return {"value": result}


def _assert_same(a, b, rtol=1e-9, atol=1e-12):
    a, b = _comparable(a), _comparable(b)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=rtol, atol=atol, err_msg=key)


@given(
    seed=st.integers(0, 2**16),
    n_zero=st.integers(1, 40),
    name=st.sampled_from(sorted(WEIGHTED)),
)
def test_rows_of_weight_zero_equal_absence(seed, n_zero, name):
    rng = np.random.default_rng(seed)
    y, p = _drawn(n=120, seed=seed)
    w = rng.uniform(0.5, 2.0, size=120)
    zero = rng.choice(120, size=n_zero, replace=False)
    w[zero] = 0.0
    keep = w > 0
    metric = WEIGHTED[name]
    _assert_same(
        metric(y, p, sample_weight=w, labels=[0, 1, 2]),
        metric(y[keep], p[keep], sample_weight=w[keep], labels=[0, 1, 2]),
    )


@given(
    seed=st.integers(0, 2**16),
    scale=st.sampled_from([1e-6, 1 / 120, 0.5, 3.0, 1e6]),
    name=st.sampled_from(sorted(WEIGHTED)),
)
def test_metrics_are_invariant_to_a_constant_rescaling_of_the_weights(
    seed, scale, name
):
    rng = np.random.default_rng(seed)
    y, p = _drawn(n=120, seed=seed)
    w = rng.integers(0, 4, size=120).astype(float)
    w[0] = 1.0  # some weight
    metric = WEIGHTED[name]
    _assert_same(
        metric(y, p, sample_weight=w), metric(y, p, sample_weight=w * scale), rtol=1e-9
    )


def test_report_and_intervals_see_no_row_of_weight_zero():
    # the case: the debiased ECE doubled (0.037 vs 0.073)
    y, p = _drawn(n=300, seed=4)
    w = np.ones(300)
    w[::3] = 0.0
    keep = w > 0
    with_zeros = metrics.calibration_report(y, p, sample_weight=w, random_state=0)
    without = metrics.calibration_report(
        y[keep], p[keep], sample_weight=w[keep], random_state=0
    )
    _assert_same(with_zeros, without)
    assert with_zeros["n_samples"] == 200
    for metric in ("adaptive_ece", "debiased_ece"):
        a = metrics.calibration_error_interval(
            y, p, metric=metric, sample_weight=w, random_state=0
        )
        b = metrics.calibration_error_interval(
            y[keep], p[keep], metric=metric, sample_weight=w[keep], random_state=0
        )
        assert (a.estimate, a.low, a.high) == pytest.approx((b.estimate, b.low, b.high))


@pytest.mark.parametrize(
    "metric", ["ece", "adaptive_ece", "smooth_ece", "ece_sweep", "nll", "debiased_ece"]
)
def test_resampling_entry_points_see_no_row_of_weight_zero(metric):
    y, p = _drawn(n=200, seed=5)
    w = np.random.default_rng(5).uniform(0.5, 2.0, size=200)
    w[::4] = 0.0
    keep = w > 0
    q = p**2 / (p**2).sum(axis=1, keepdims=True)
    calls = {
        "test": lambda y, p, q, w: metrics.calibration_test(
            y, p, metric=metric, sample_weight=w, n_resamples=30, random_state=0
        ),
        "bootstrap": lambda y, p, q, w: metrics.bootstrap_interval(
            metric, y, p, sample_weight=w, n_resamples=30, random_state=0
        ),
        "compare": lambda y, p, q, w: metrics.compare_calibration(
            y, p, q, metric=metric, sample_weight=w, n_resamples=30, random_state=0
        ),
    }
    for name, call in calls.items():
        a, b = call(y, p, q, w), call(y[keep], p[keep], q[keep], w[keep])
        for x, z in zip(a, b, strict=True):
            np.testing.assert_allclose(x, z, rtol=1e-12, err_msg=name)


# --- messages -----------------------------------------------------------------


def test_one_hot_y_true_is_named():
    y, p = _drawn()
    with pytest.raises(ValueError, match=r"one-hot.*np.argmax\(y_true, axis=1\)"):
        metrics.expected_calibration_error(np.eye(3)[y], p)


@pytest.mark.parametrize("name", ["ece", "report", "interval", "compare", "skce"])
def test_logits_get_a_softmax_hint(name):
    y, p = _drawn()
    with pytest.raises(ValueError, match=r"negative values.*logits.*softmax"):
        ENTRY_POINTS[name](y, np.log(p))
    with pytest.raises(ValueError, match=r"greater than 1.*logits.*softmax"):
        ENTRY_POINTS[name](y, 3.0 + np.log(p) - np.log(p).min())


def test_logits_get_the_hint_on_the_fused_path(monkeypatch):
    import sklcalib.metrics._statistics as statistics

    pytest.importorskip("numba")
    monkeypatch.setattr(statistics, "_FUSED_MIN_SIZE", 0)
    y, p = _drawn()
    with pytest.raises(ValueError, match=r"negative values.*softmax"):
        metrics.expected_calibration_error(y, np.log(p))


def test_one_column_of_many_labels_says_how_it_was_read():
    y, p = _drawn()
    with pytest.raises(ValueError, match=r"one column.*probability of the second"):
        metrics.expected_calibration_error(y, p[:, :1])


def test_compare_names_a_nan_weight():
    y, p = _drawn()
    w = np.ones(len(y))
    w[3] = np.nan
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        metrics.compare_calibration(
            y, p, p**2 / (p**2).sum(1, keepdims=True), sample_weight=w
        )
