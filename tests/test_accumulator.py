"""CalibrationAccumulator: equal to the one-shot metrics, mergeable in any
order and grouping, picklable (that the fused kernel's sums do not depend on
the number of threads: tests/test_numba_optional.py)."""

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sklcalib.metrics._statistics as statistics
from sklcalib.metrics import (
    CalibrationAccumulator,
    calibration_report,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)

KEYS = ("ece", "ece_l2", "ece_over", "ece_under", "mce", "classwise_ece", "nll")
KEYS += ("brier", "accuracy", "error")


def _problem(n, k, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.3), size=n).astype(dtype)
    p /= p.sum(axis=1, keepdims=True, dtype=dtype)
    # half the labels drawn from the model itself, half uniformly
    y = np.where(
        rng.random(n) < 0.5,
        (rng.random((n, 1)) > np.cumsum(p, axis=1)).sum(axis=1).clip(0, k - 1),
        rng.integers(0, k, n),
    )
    return y, p, rng.random(n)


def _assert_same(result, report):
    for key in KEYS:
        np.testing.assert_allclose(result[key], report[key], rtol=1e-12, err_msg=key)
    assert result["n_samples"] == report["n_samples"]


@pytest.fixture(params=["numpy", "fused"])
def path(request, monkeypatch):
    monkeypatch.setattr(
        statistics, "_FUSED_MIN_SIZE", 0 if request.param == "fused" else 1e18
    )
    return request.param


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pieces_equal_the_report(path, weighted, dtype):
    y, p, w = _problem(3000, 4, 0, dtype)
    w = w if weighted else None
    acc = CalibrationAccumulator(n_bins=10, labels=np.arange(4))
    for rows in np.array_split(np.arange(3000), 7):
        acc.update(y[rows], p[rows], None if w is None else w[rows])
    _assert_same(acc.compute(), calibration_report(y, p, n_bins=10, sample_weight=w))
    kw = {"n_bins": 10, "sample_weight": w}
    assert acc.compute()["ece"] == pytest.approx(
        expected_calibration_error(y, p, **kw), rel=1e-12
    )
    assert acc.compute()["mce"] == pytest.approx(
        maximum_calibration_error(y, p, **kw), rel=1e-12
    )
    assert acc.compute()["classwise_ece"] == pytest.approx(
        classwise_calibration_error(y, p, **kw), rel=1e-12
    )


def test_binary_1d_and_string_labels():
    y, p, _ = _problem(500, 2, 1)
    labels = np.array(["no", "yes"])
    acc = CalibrationAccumulator(labels=labels)
    acc.update(labels[y[:200]], p[:200, 1]).update(labels[y[200:]], p[200:, 1])
    _assert_same(acc.compute(), calibration_report(labels[y], p[:, 1], labels=labels))


def test_a_piece_may_miss_classes_and_weigh_zero():
    y, p, w = _problem(400, 3, 2)
    w[:100] = 0.0
    acc = CalibrationAccumulator(labels=[0, 1, 2])
    first = y[:100] == 0
    acc.update(y[:100][first], p[:100][first], w[:100][first])
    acc.update(y[:100][~first], p[:100][~first], w[:100][~first])
    acc.update(y[100:], p[100:], w[100:])
    _assert_same(acc.compute(), calibration_report(y, p, sample_weight=w))


def test_a_bad_piece_raises_and_leaves_the_state_alone():
    y, p, _ = _problem(200, 3, 3)
    acc = CalibrationAccumulator(labels=[0, 1, 2]).update(y[:100], p[:100])
    before = pickle.dumps(acc)
    bad = p[100:].copy()
    bad[5, 0] = np.nan
    with pytest.raises(ValueError, match="y_prob contains NaN"):
        acc.update(y[100:], bad)
    with pytest.raises(ValueError, match="not in labels"):
        acc.update(np.full(100, 7), p[100:])
    assert pickle.dumps(acc) == before


def test_bad_construction_and_merges():
    with pytest.raises(ValueError, match="labels is required"):
        CalibrationAccumulator(labels=None)
    with pytest.raises(ValueError, match="n_bins"):
        CalibrationAccumulator(n_bins=0, labels=[0, 1])
    with pytest.raises(ValueError, match="duplicates"):
        CalibrationAccumulator(labels=[0, 0])
    acc = CalibrationAccumulator(labels=[0, 1])
    with pytest.raises(ValueError, match="n_bins=15 and n_bins=10"):
        acc.merge(CalibrationAccumulator(n_bins=10, labels=[0, 1]))
    with pytest.raises(ValueError, match="labels"):
        acc.merge(CalibrationAccumulator(labels=[1, 0]))
    with pytest.raises(ValueError, match="labels"):
        acc.merge(CalibrationAccumulator(labels=[0, 1, 2]))
    with pytest.raises(ValueError, match="CalibrationAccumulator"):
        acc.merge({"ece": 0.1})
    with pytest.raises(ValueError, match="empty"):
        acc.compute()
    with pytest.raises(ValueError, match="sums to zero"):
        acc.update([0, 1], [0.2, 0.7], sample_weight=[0.0, 0.0]).compute()


def _split_accumulators(y, p, w, cuts):
    bounds = [0, *sorted(cuts), len(y)]
    accs = []
    for lo, hi in itertools.pairwise(bounds):
        acc = CalibrationAccumulator(n_bins=7, labels=[0, 1, 2])
        if hi > lo:
            acc.update(y[lo:hi], p[lo:hi], w[lo:hi])
        accs.append(acc)
    return accs


def _state(acc):
    return np.concatenate([acc._top.ravel(), acc._classwise.ravel(), acc._scores])


@given(
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(0, 120), min_size=2, max_size=5),
    order=st.randoms(use_true_random=False),
)
def test_merge_of_splits_is_the_whole_in_any_order(seed, cuts, order):
    y, p, w = _problem(120, 3, seed)
    whole = CalibrationAccumulator(n_bins=7, labels=[0, 1, 2]).update(y, p, w)
    accs = _split_accumulators(y, p, w, cuts)
    order.shuffle(accs)
    merged = CalibrationAccumulator(n_bins=7, labels=[0, 1, 2])
    for acc in accs:
        merged.merge(acc)
    assert merged.n_samples_ == 120
    np.testing.assert_allclose(_state(merged), _state(whole), rtol=1e-12, atol=1e-12)
    _assert_same(merged.compute(), whole.compute())


@given(seed=st.integers(0, 2**16), cuts=st.lists(st.integers(0, 90), min_size=2))
def test_merge_is_associative_and_commutative(seed, cuts):
    y, p, w = _problem(90, 3, seed)
    a, b, c = _split_accumulators(y, p, w, cuts[:2])
    copy = pickle.loads
    left = copy(pickle.dumps(a)).merge(copy(pickle.dumps(b))).merge(c)
    right = copy(pickle.dumps(a)).merge(copy(pickle.dumps(b)).merge(c))
    swapped = copy(pickle.dumps(c)).merge(copy(pickle.dumps(b))).merge(a)
    for other in (right, swapped):
        np.testing.assert_allclose(_state(left), _state(other), rtol=1e-12, atol=1e-12)


@given(seed=st.integers(0, 2**16), n=st.integers(1, 50))
def test_pickle_round_trip_keeps_every_bit(seed, n):
    y, p, w = _problem(n, 3, seed)
    acc = CalibrationAccumulator(n_bins=5, labels=[0, 1, 2]).update(y, p, w)
    back = pickle.loads(pickle.dumps(acc))
    assert back.compute() == acc.compute()
    assert back.n_bins == 5 and back.labels_.tolist() == [0, 1, 2]
    # the copy keeps accumulating like the original
    assert back.update(y, p, w).compute() == acc.update(y, p, w).compute()


# ---------------------------------------------------------------------------
# deterministic reductions of the fused kernel


# that they do not depend on numba's thread count: tests/test_numba_optional.py


def test_chunk_rows_is_a_power_of_two_of_about_a_mebibyte():
    from sklcalib.metrics._fused import chunk_rows

    for k in (1, 2, 10, 100, 1000, 10**6):
        rows = chunk_rows(k)
        assert rows >= 1 and rows & (rows - 1) == 0
        assert rows * k <= max(2**18, k)
        assert 2 * rows * k > 2**18 or rows == 1
