"""Bad input gets a ValueError naming the argument, on both the numpy path and
the fused compiled path (large inputs), for every metric."""

import numpy as np
import pytest

import sklcalib.metrics._calibration_error as ce
import sklcalib.metrics._statistics as statistics
from sklcalib.metrics import (
    adaptive_calibration_error,
    bin_statistics,
    calibration_report,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    smooth_calibration_error,
)


def seeded_report(y_true, y_prob, **kwargs):
    """calibration_report with its intervals on (the default), seeded so that
    two calls on the same data give the same intervals."""
    return calibration_report(y_true, y_prob, random_state=0, **kwargs)


METRICS = [
    expected_calibration_error,
    adaptive_calibration_error,
    classwise_calibration_error,
    maximum_calibration_error,
    smooth_calibration_error,
    seeded_report,
]
BINNED = [m for m in METRICS if m is not smooth_calibration_error]


def _numeric(result):
    """A metric's value, or a report's numbers (interval ends flattened; the
    verdict's words and absent entries left out)."""
    if not isinstance(result, dict):
        return result
    out = {}
    for key, value in result.items():
        if isinstance(value, tuple):
            out.update({f"{key}[{i}]": v for i, v in enumerate(value)})
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = value
    return out


@pytest.fixture(params=["numpy", "fused"])
def path(request, monkeypatch):
    """Run a test on the numpy path and on the fused compiled path."""
    monkeypatch.setattr(
        statistics, "_FUSED_MIN_SIZE", 0 if request.param == "fused" else 1e18
    )
    return request.param


def good(n=20, k=3, dtype=np.float64):
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(k), size=n).astype(dtype)
    p /= p.sum(axis=1, keepdims=True)
    y = np.arange(n) % k
    return y, p


def with_value(p, value, i=3, j=1):
    p = p.copy()
    p[i, j] = value
    return p


BAD_VALUES = [
    (np.nan, "NaN"),
    (np.inf, "NaN or infinity"),
    (-np.inf, "NaN or infinity"),
]


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("value, message", BAD_VALUES)
def test_non_finite(metric, value, message, path):
    y, p = good()
    with pytest.raises(ValueError, match=f"y_prob contains {message}"):
        metric(y, with_value(p, value))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_negative_and_above_one(metric, dtype, path):
    y, p = good(dtype=dtype)
    neg = p.copy()
    neg[3] = [-0.1, 0.6, 0.5]
    with pytest.raises(ValueError, match="y_prob contains negative"):
        metric(y, neg)
    big = p.copy()
    big[3] = [1.2, -0.1, -0.1]
    with pytest.raises(ValueError, match=r"y_prob contains (values greater|negative)"):
        metric(y, big)
    big[3] = [1.5, 0.0, 0.0]
    with pytest.raises(ValueError, match="y_prob"):
        metric(y, big)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_rows_must_sum_to_one_within_the_tolerance(metric, dtype, path):
    y, p = good(dtype=dtype)
    # sqrt(eps) of the dtype, or float32 round-off over the classes if larger
    tol = max(np.sqrt(np.finfo(dtype).eps), 2 * p.shape[1] * np.finfo(np.float32).eps)
    p64 = p.astype(np.float64)
    inside = p64.copy()
    inside[:, 0] -= 0.3 * tol  # off by less than the tolerance: accepted
    inside = np.clip(inside, 0, 1).astype(dtype)
    metric(y, inside)
    outside = p64.copy()
    outside[5] *= 1 + 4 * tol
    outside = np.clip(outside, 0, 1).astype(dtype)
    with pytest.raises(ValueError, match=r"y_prob rows must sum to 1.*row 5"):
        metric(y, outside)


@pytest.mark.parametrize("metric", METRICS)
def test_float16_rows_summing_to_one_in_float16_are_accepted(metric, path):
    # rows of thirds: their float16 sum is off by 2.4e-4, far above float64's
    # sqrt(eps) (1.5e-8) but within float16's (0.031)
    p = np.full((6, 3), 1 / 3, dtype=np.float16)
    assert abs(p.sum(axis=1, dtype=np.float64)[0] - 1) > 1e-4
    value = _numeric(metric(np.arange(6) % 3, p))
    expected = _numeric(metric(np.arange(6) % 3, np.full((6, 3), 1 / 3)))
    assert value == pytest.approx(expected, abs=1e-3)
    bad = p.copy()
    bad[2, 0] = 0.25
    with pytest.raises(
        ValueError,
        match=r"float32 round-off summed over the columns\); row 2",
    ):
        metric(np.arange(6) % 3, bad)


@pytest.mark.parametrize("metric", METRICS)
def test_shapes(metric):
    y, p = good()
    with pytest.raises(ValueError, match="y_true has 19 samples but y_prob has 20"):
        metric(y[:-1], p)
    with pytest.raises(ValueError, match=r"y_prob must be 1-D .* or 2-D"):
        metric(y, p[:, :, None])
    with pytest.raises(ValueError, match=r"y_prob must be 1-D .* or 2-D"):
        metric(y, np.float64(0.3))
    with pytest.raises(ValueError, match="y_true must be a 1-D"):
        metric(np.stack([y, y], axis=1), p)
    with pytest.raises(ValueError, match="empty"):
        metric(np.array([], dtype=int), np.zeros((0, 3)))
    with pytest.raises(ValueError, match="y_prob must be numeric"):
        metric(y, p.astype(str))
    with pytest.raises(ValueError, match="but y_prob has 3 columns"):
        metric(y % 2, p)  # two labels, three columns


@pytest.mark.parametrize("metric", METRICS)
def test_labels(metric, path):
    y, p = good()
    with pytest.raises(ValueError, match="y_true contains labels not in labels"):
        metric(y, p, labels=[0, 1, 5])
    with pytest.raises(ValueError, match="labels has 2 entries but y_prob has 3"):
        metric(y, p, labels=[0, 1])
    with pytest.raises(ValueError, match="labels contains duplicates"):
        metric(y, p, labels=[0, 1, 1])
    with pytest.raises(ValueError, match=r"y_true.*labels"):
        metric(y.astype(str), p, labels=[0, 1, 2])
    with pytest.raises(ValueError, match="y_true contains NaN"):
        metric(np.where(y == 0, np.nan, y), p)
    # binary 1-D scores with a single label seen need explicit labels
    with pytest.raises(ValueError, match="labels argument"):
        metric(np.ones(20, dtype=int), p[:, 0])
    metric(np.ones(20, dtype=int), p[:, 0], labels=[0, 1])


@pytest.mark.parametrize("metric", METRICS)
def test_sample_weight(metric, path):
    y, p = good()
    with pytest.raises(ValueError, match="sample_weight contains negative"):
        metric(y, p, sample_weight=np.r_[-1.0, np.ones(19)])
    with pytest.raises(ValueError, match="sample_weight has 19 entries"):
        metric(y, p, sample_weight=np.ones(19))
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        metric(y, p, sample_weight=np.r_[np.nan, np.ones(19)])
    with pytest.raises(ValueError, match="sample_weight sums to zero"):
        metric(y, p, sample_weight=np.zeros(20))
    with pytest.raises(ValueError, match="sample_weight must be 1-D"):
        metric(y, p, sample_weight=np.ones((20, 1)))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("scale", [2.0**1020, 2.0**-1073], ids=["huge", "subnormal"])
def test_extreme_weights_give_the_moderate_weights_values(metric, scale, path):
    # weights of 1e308 overflow their sum, subnormal ones lose their digits:
    # both are rescaled by a power of two, so the values are those of the
    # same weights at a moderate scale
    y, p = good()
    u = np.arange(20) % 3 + 1.0
    moderate, extreme = (
        metric(y, p, sample_weight=u),
        metric(y, p, sample_weight=u * scale),
    )
    if isinstance(moderate, dict):
        # the debiased error counts weights as frequencies (n_b - 1): it is
        # not scale-free, and no finite answer exists for 1e308 rows
        moderate, extreme = (
            {k: v for k, v in d.items() if isinstance(v, float) and k != "debiased_ece"}
            for d in (moderate, extreme)
        )
        assert extreme.keys() == moderate.keys()
        for key in moderate:
            np.testing.assert_allclose(
                extreme[key], moderate[key], rtol=1e-12, err_msg=key
            )
    else:
        np.testing.assert_allclose(extreme, moderate, rtol=1e-12)


@pytest.mark.parametrize("metric", BINNED)
@pytest.mark.parametrize("n_bins", [0, -3, 2.5, 3.0, "15", True, None])
def test_n_bins(metric, n_bins):
    y, p = good()
    with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
        metric(y, p, n_bins=n_bins)


@pytest.mark.parametrize("metric", BINNED)
def test_huge_n_bins_is_a_value_error_not_a_memory_error(metric):
    y, p = good()
    with pytest.raises(ValueError, match="n_bins must be at most 1,000,000"):
        metric(y, p, n_bins=10**12)
    metric(y, p, n_bins=10**6)  # the bound itself is allowed


def test_numpy_integer_n_bins_is_accepted():
    y, p = good()
    assert expected_calibration_error(y, p, n_bins=np.int64(5)) == (
        expected_calibration_error(y, p, n_bins=5)
    )


@pytest.mark.parametrize(
    "metric", [expected_calibration_error, classwise_calibration_error]
)
def test_strategy_and_norm(metric):
    y, p = good()
    with pytest.raises(ValueError, match="strategy must be one of"):
        metric(y, p, strategy="equal_mass")
    with pytest.raises(ValueError, match="norm must be one of"):
        metric(y, p, norm="L1")
    with pytest.raises(ValueError, match="norm must be one of"):
        adaptive_calibration_error(y, p, norm=1)
    with pytest.raises(ValueError, match="strategy must be one of"):
        maximum_calibration_error(y, p, strategy=None)


def test_bin_statistics_validation():
    with pytest.raises(ValueError, match="confidence must be finite and within"):
        bin_statistics([0.2, 1.2], [0, 1])
    with pytest.raises(ValueError, match="confidence must be finite and within"):
        bin_statistics([0.2, np.nan], [0, 1])
    with pytest.raises(ValueError, match="correct has shape"):
        bin_statistics([0.2, 0.3], [0, 1, 1])
    with pytest.raises(ValueError, match="correct must hold only 0/1"):
        bin_statistics([0.2, 0.3], [0, 2])
    with pytest.raises(ValueError, match="confidence must be 1-D"):
        bin_statistics([[0.2, 0.3]], [[0, 1]])
    with pytest.raises(ValueError, match="confidence is empty"):
        bin_statistics([], [])
    with pytest.raises(ValueError, match="n_bins"):
        bin_statistics([0.2], [1], n_bins=0)
    with pytest.raises(ValueError, match="strategy"):
        bin_statistics([0.2], [1], strategy="kmeans")
    with pytest.raises(ValueError, match="sample_weight"):
        bin_statistics([0.2], [1], sample_weight=[-1.0])


@pytest.mark.parametrize("metric", METRICS)
def test_no_row_is_dropped_and_results_are_finite(metric, path):
    # confidences 0 and 1 and ties everywhere: still finite and every row counted
    y = np.array([0, 1, 0, 1, 1])
    p = np.array([[1.0, 0.0], [1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.5, 0.5]])
    result = _numeric(metric(y, p))
    values = result.values() if isinstance(result, dict) else [result]
    assert all(np.isfinite(v) for v in values)
    stats = ce.top_label_statistics(y, p, n_bins=4)
    assert stats.counts.sum() == 5


@pytest.mark.filterwarnings("error")  # numpy < 1.25 warned, then compared wrongly
@pytest.mark.parametrize(
    "y_true, labels",
    [(["a", "b"], [0, 1]), ([0, 1], ["a", "b"]), (["a", "b"], [0.5, 1.5])],
)
def test_labels_of_another_kind_than_y_true(y_true, labels):
    y_prob = np.array([[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(ValueError, match="cannot be compared with labels"):
        expected_calibration_error(np.array(y_true), y_prob, labels=labels)
