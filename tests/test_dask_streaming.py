"""Metrics and calibrators on dask arrays: every streamed number and fitted
parameter equals the in-memory one, on the threaded scheduler and on a small
in-process LocalCluster; bad input fails with a ValueError naming the argument.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask is an optional extra")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from _helpers import local_dask_client  # noqa: E402

import sklcalib.metrics._statistics as statistics  # noqa: E402
from sklcalib.calibration import (  # noqa: E402
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattScaler,
    TemperatureScaler,
)
from sklcalib.metrics import (  # noqa: E402
    adaptive_calibration_error,
    calibration_report,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    smooth_calibration_error,
)


@pytest.fixture(scope="module")
def cluster_client():
    with local_dask_client(processes=False, set_as_default=False) as client:
        yield client


@pytest.fixture(params=["threads", "cluster"])
def scheduler(request):
    """Run the test body on the threaded scheduler or on the LocalCluster."""
    if request.param == "threads":
        with dask.config.set(scheduler="threads"):
            yield request.param
    else:
        client = request.getfixturevalue("cluster_client")
        with client.as_current(), dask.config.set(scheduler=client):
            yield request.param


def _problem(n, k, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.4), size=n).astype(dtype)
    p /= p.sum(axis=1, keepdims=True, dtype=dtype)
    sampled = (rng.random((n, 1)) > np.cumsum(p, axis=1)).sum(axis=1)
    return sampled.clip(0, k - 1), p, rng.random(n)


STREAMED = (expected_calibration_error, maximum_calibration_error)
STREAMED += (classwise_calibration_error,)
NORMS = [{"norm": norm} for norm in ("l1", "l2", "max")]


@pytest.mark.parametrize("weighted", [False, True])
def test_streamed_metrics_equal_in_memory(scheduler, weighted):
    y, p, w = _problem(5000, 4, 0)
    w = w if weighted else None
    dp = da.from_array(p, chunks=(400, 2))  # columns in two blocks too
    dy = da.from_array(y, chunks=650)  # other row chunks: rechunked
    dw = None if w is None else da.from_array(w, chunks=400)
    for metric in STREAMED:
        # the maximum calibration error has no norm: computed once
        norms = [{}] if metric is maximum_calibration_error else NORMS
        for kw in norms:
            expected = metric(y, p, n_bins=12, sample_weight=w, **kw)
            streamed = metric(dy, dp, n_bins=12, sample_weight=dw, **kw)
            assert isinstance(streamed, float)
            assert streamed == pytest.approx(expected, rel=1e-12), metric.__name__
    report = calibration_report(y, p, sample_weight=w)
    streamed = calibration_report(dy, dp, sample_weight=dw)
    assert set(streamed) < set(report)
    for key in ("nll", "brier", "ece", "classwise_ece", "mce", "accuracy"):
        assert streamed[key] == pytest.approx(report[key], rel=1e-12), key
    assert streamed["n_samples"] == 5000


def test_in_memory_companions_and_labels(scheduler):
    y, p, w = _problem(3000, 3, 1, np.float32)
    dp = da.from_array(p, chunks=(700, 3))
    # numpy y_true and sample_weight are split along y_prob's blocks
    assert expected_calibration_error(
        y, dp, sample_weight=w, labels=[0, 1, 2]
    ) == pytest.approx(expected_calibration_error(y, p, sample_weight=w), rel=1e-12)
    # binary, 1-D, labels found by a pass over y_true
    yb = (p[:, 0] > 0.3).astype(int) + 7
    dy = da.from_array(yb, chunks=500)
    expected = expected_calibration_error(yb, p[:, 0])
    streamed = expected_calibration_error(dy, dp[:, 0])
    assert streamed == pytest.approx(expected, rel=1e-12)
    # string labels: the column order cannot be checked block by block
    with pytest.raises(ValueError, match=r"string labels.*labels="):
        expected_calibration_error(np.array(["a", "b"])[yb - 7], dp[:, 0])


def test_dask_blocks_of_kernel_chunks_give_the_same_bits(monkeypatch):
    from sklcalib.metrics._accumulator import stream_statistics
    from sklcalib.metrics._fused import chunk_rows, fused_uniform_statistics

    monkeypatch.setattr(statistics, "_FUSED_MIN_SIZE", 0)  # the kernel on every block
    k = 10
    rows = chunk_rows(k)
    y, p, w = _problem(5 * rows + 123, k, 2, np.float32)
    whole = fused_uniform_statistics(p, y, 15, w)
    with dask.config.set(scheduler="threads"):
        acc = stream_statistics(
            da.from_array(y, chunks=rows),
            da.from_array(p, chunks=(rows, k)),
            sample_weight=da.from_array(w, chunks=rows),
            labels=np.arange(k),
            parts=("top",),
        )
    for ours, theirs in zip(acc.top_label_statistics(), whole, strict=True):
        assert ours.tobytes() == theirs.tobytes()


def test_nan_in_one_block_of_a_hundred_is_found():
    y, p, _ = _problem(10_000, 3, 3)
    p[3_650, 1] = np.nan  # block 37 of 100
    dp = da.from_array(p, chunks=(100, 3))
    with dask.config.set(scheduler="threads"):
        for metric in STREAMED:
            with pytest.raises(ValueError, match=r"y_prob contains NaN.*37 of 100"):
                metric(y, dp)
        with pytest.raises(ValueError, match=r"y_prob contains NaN.*37 of 100"):
            calibration_report(y, dp)
        bad = _problem(10_000, 3, 3)[1]
        bad[5_000] = [0.5, 0.5, 0.5]
        with pytest.raises(ValueError, match=r"y_prob rows must sum to 1.*51 of 100"):
            expected_calibration_error(y, da.from_array(bad, chunks=(100, 3)))


def test_bad_dask_inputs():
    y, p, w = _problem(1000, 3, 4)
    dp = da.from_array(p, chunks=(100, 3))
    dy = da.from_array(y, chunks=100)
    unknown = dp[dp[:, 0] >= 0]  # boolean indexing: row chunks unknown
    with dask.config.set(scheduler="threads"):
        with pytest.raises(ValueError, match="y_prob is a dask array of unknown chunk"):
            expected_calibration_error(y, unknown)
        with pytest.raises(ValueError, match="y_true is a dask array of unknown"):
            expected_calibration_error(dy[dy >= 0], dp)
        with pytest.raises(ValueError, match="y_true has 999 entries"):
            expected_calibration_error(dy[:-1], dp)
        with pytest.raises(ValueError, match="sample_weight has 999 entries"):
            expected_calibration_error(y, dp, sample_weight=w[:-1])
        with pytest.raises(ValueError, match="y_prob is not"):
            expected_calibration_error(dy, p)
        with pytest.raises(ValueError, match="sample_weight contains negative"):
            expected_calibration_error(y, dp, sample_weight=-w)
        with pytest.raises(ValueError, match="labels="):
            expected_calibration_error(da.minimum(dy, 1), dp)
        for call in (
            lambda: adaptive_calibration_error(y, dp),
            lambda: expected_calibration_error(y, dp, strategy="quantile"),
            lambda: classwise_calibration_error(dy, dp, strategy="quantile"),
        ):
            with pytest.raises(ValueError, match=r"y_prob is a dask.*'uniform'"):
                call()
        with pytest.raises(ValueError, match=r"smooth ECE.*cannot be computed chunk"):
            smooth_calibration_error(dy, dp)
        # the metrics that need every row go through the shared validation
        from sklcalib.metrics import get_scorer

        with pytest.raises(ValueError, match="cannot be computed chunk by chunk"):
            get_scorer("neg_adaptive_ece")._score_func(dy, dp)


# ---------------------------------------------------------------------------
# calibrators


def _logits(n, k, seed):
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.normal(size=(n, k))
    y = np.argmax(z / 2.0 + rng.gumbel(size=(n, k)), axis=1)  # over-confident
    return z, y


@pytest.mark.parametrize("k", [1, 4])
def test_temperature_fit_streams_to_the_in_memory_temperature(scheduler, k):
    z, y = _logits(6000, max(k, 2), 5)
    if k == 1:
        z, y = z[:, 1] - z[:, 0], y.clip(0, 1)
    expected = TemperatureScaler().fit(z, y)
    chunks = (800,) if k == 1 else (800, k)
    scaler = TemperatureScaler().fit(
        da.from_array(z, chunks=chunks), da.from_array(y, chunks=1000)
    )
    assert scaler.temperature_ == pytest.approx(expected.temperature_, rel=1e-6)
    assert scaler.temperature_ > 1.2  # genuinely cooled
    np.testing.assert_array_equal(scaler.classes_, expected.classes_)
    assert scaler.n_features_in_ == expected.n_features_in_
    proba = scaler.predict_proba(da.from_array(z, chunks=chunks))
    assert isinstance(proba, da.Array)  # lazy
    np.testing.assert_allclose(
        proba.compute(), expected.predict_proba(z), rtol=1e-5, atol=1e-12
    )
    pred = scaler.predict(da.from_array(z, chunks=chunks))
    np.testing.assert_array_equal(pred.compute(), expected.predict(z))


def test_platt_fit_streams_to_the_in_memory_parameters(scheduler):
    z, y = _logits(6000, 2, 6)
    s = 1e3 + z[:, 1] - z[:, 0]  # a large offset: standardisation matters
    expected = PlattScaler().fit(s, y)
    platt = PlattScaler().fit(da.from_array(s, chunks=700), da.from_array(y, 900))
    assert platt.coef_ == pytest.approx(expected.coef_, rel=1e-6)
    assert platt.intercept_ == pytest.approx(expected.intercept_, rel=1e-6)


def test_histogram_fit_streams_to_the_same_bins(scheduler):
    z, y = _logits(5000, 3, 7)
    p = TemperatureScaler().fit(z, y).predict_proba(z)
    for X, cols in ((p, 3), (p[:, :2] / p[:, :2].sum(1, keepdims=True), 2)):
        yy = y if cols == 3 else (y == 1).astype(int)
        expected = HistogramBinningCalibrator(n_bins=9).fit(X, yy)
        hist = HistogramBinningCalibrator(n_bins=9).fit(
            da.from_array(X, chunks=(600, cols)), da.from_array(yy, chunks=600)
        )
        for ours, theirs in zip(hist.bin_values_, expected.bin_values_, strict=True):
            np.testing.assert_array_equal(ours, theirs)
        got = hist.predict_proba(da.from_array(X, chunks=(600, cols))).compute()
        np.testing.assert_array_equal(got, expected.predict_proba(X))


def _weights(n, seed):
    """Integer weights with whole zero-weight blocks of 500 rows."""
    w = np.random.default_rng(seed).integers(0, 4, n).astype(float)
    w[500:1000] = 0.0
    return w


@pytest.mark.parametrize("dask_weights", [True, False])
def test_weighted_streaming_fits_reach_the_weighted_in_memory_fits(
    scheduler, dask_weights
):
    # integer weights: also the fit on the rows repeated, a known answer
    # independent of how either path handles weights
    z, y = _logits(4000, 3, 9)
    w = _weights(4000, 9)
    dw = da.from_array(w, chunks=700) if dask_weights else w
    dz, dy = da.from_array(z, chunks=(500, 3)), da.from_array(y, chunks=500)
    repeated = np.repeat(np.arange(4000), w.astype(int))

    expected = TemperatureScaler().fit(z, y, sample_weight=w)
    scaler = TemperatureScaler().fit(dz, dy, sample_weight=dw)
    assert scaler.temperature_ == pytest.approx(expected.temperature_, rel=1e-6)
    assert scaler.temperature_ == pytest.approx(
        TemperatureScaler().fit(z[repeated], y[repeated]).temperature_, rel=1e-6
    )
    assert scaler.temperature_ != pytest.approx(
        TemperatureScaler().fit(z, y).temperature_, rel=1e-3
    )

    s = 1e3 + z[:, 1] - z[:, 0]
    yb = (y == 1).astype(int)
    expected = PlattScaler().fit(s, yb, sample_weight=w)
    platt = PlattScaler().fit(
        da.from_array(s, chunks=500), da.from_array(yb, 500), sample_weight=dw
    )
    assert platt.coef_ == pytest.approx(expected.coef_, rel=1e-6)
    assert platt.intercept_ == pytest.approx(expected.intercept_, rel=1e-6)

    p = TemperatureScaler().fit(z, y).predict_proba(z)
    expected = HistogramBinningCalibrator(n_bins=9).fit(p, y, sample_weight=w)
    hist = HistogramBinningCalibrator(n_bins=9).fit(
        da.from_array(p, chunks=(500, 3)), dy, sample_weight=dw
    )
    for ours, theirs in zip(hist.bin_values_, expected.bin_values_, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    on_repeats = HistogramBinningCalibrator(n_bins=9).fit(p[repeated], y[repeated])
    for ours, theirs in zip(hist.bin_values_, on_repeats.bin_values_, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_bad_weights_on_dask_are_named():
    z, y = _logits(1000, 3, 10)
    dz, dy = da.from_array(z, chunks=(100, 3)), da.from_array(y, chunks=100)
    w = np.ones(1000)
    with dask.config.set(scheduler="threads"):
        for cls in (TemperatureScaler, HistogramBinningCalibrator):
            with pytest.raises(ValueError, match="sample_weight sums to zero"):
                cls().fit(dz, dy, sample_weight=np.zeros(1000))
            bad = w.copy()
            bad[777] = -1.0
            with pytest.raises(ValueError, match=r"negative.*block 8 of 10"):
                cls().fit(dz, dy, sample_weight=bad)
            with pytest.raises(ValueError, match="sample_weight has 999 entries"):
                cls().fit(dz, dy, sample_weight=w[:-1])
        with pytest.raises(ValueError, match="X is not"):
            TemperatureScaler().fit(z, y, sample_weight=da.from_array(w, 100))
        with pytest.raises(ValueError, match="IsotonicCalibrator cannot be fitted"):
            IsotonicCalibrator().fit(z, y, sample_weight=da.from_array(w, 100))


def test_calibrators_on_bad_dask_input():
    z, y = _logits(1000, 3, 8)
    dz, dy = da.from_array(z, chunks=(100, 3)), da.from_array(y, chunks=100)
    with dask.config.set(scheduler="threads"):
        with pytest.raises(ValueError, match="IsotonicCalibrator cannot be fitted"):
            IsotonicCalibrator().fit(dz, dy)
        with pytest.raises(ValueError, match="strategy='uniform'"):
            HistogramBinningCalibrator(strategy="quantile").fit(dz, dy)
        with pytest.raises(ValueError, match="objective='nll'"):
            TemperatureScaler(objective="ece").fit(dz, dy)
        with pytest.raises(ValueError, match="Only binary"):
            PlattScaler().fit(dz, dy)
        with pytest.raises(ValueError, match="X is not"):
            TemperatureScaler().fit(z, dy)
        with pytest.raises(ValueError, match="unknown chunk sizes"):
            TemperatureScaler().fit(dz[dz[:, 0] > -100], dy)
        bad = z.copy()
        bad[555, 2] = np.inf
        with pytest.raises(ValueError, match=r"infinity.*block 6 of 10"):
            TemperatureScaler().fit(da.from_array(bad, chunks=(100, 3)), dy)
        with pytest.raises(ValueError, match="scores has 3 columns but y has 2"):
            TemperatureScaler().fit(dz, dy.clip(0, 1))


def test_reliability_diagram_and_accumulator_update_stream(scheduler):
    from sklcalib.metrics import CalibrationAccumulator
    from sklcalib.plotting import ReliabilityDisplay

    y, p, w = _problem(2000, 3, 9)
    dy, dp = da.from_array(y, chunks=300), da.from_array(p, chunks=(300, 3))
    for kw in ({}, {"kind": "classwise", "class_index": 2}):
        ours = ReliabilityDisplay.from_predictions(dy, dp, n_bins=8, **kw)
        ref = ReliabilityDisplay.from_predictions(y, p, n_bins=8, **kw)
        np.testing.assert_allclose(ours.prob_true, ref.prob_true, rtol=1e-12)
        np.testing.assert_allclose(ours.prob_pred, ref.prob_pred, rtol=1e-12)
        np.testing.assert_array_equal(ours.counts, ref.counts)
    with pytest.raises(ValueError, match="strategy='uniform'"):
        ReliabilityDisplay.from_predictions(dy, dp, strategy="quantile")
    acc = CalibrationAccumulator(labels=[0, 1, 2]).update(y[:500], p[:500], w[:500])
    acc.update(dy[500:], dp[500:], sample_weight=da.from_array(w[500:], chunks=700))
    whole = calibration_report(y, p, sample_weight=w)
    for key, value in acc.compute().items():
        assert value == pytest.approx(whole[key], rel=1e-12), key
