"""Binned calibration metrics: hand-computed cases and independent references.

References: netcal 1.4 (``netcal.metrics.ECE`` / ``MCE``) and torchmetrics
(``multiclass_calibration_error`` / ``binary_calibration_error``, norms l1, l2,
max).

Edge convention. sklcalib bins are right-closed ``(lower, upper]`` (the first
also holding 0), sklcalib's documented convention. Both references bin left-closed
``[lower, upper)``: netcal through ``np.histogramdd`` (last bin closed,
and it clips inputs to [eps, 1 - eps]), torchmetrics through
``torch.bucketize(right=True)``, which even gives a confidence of exactly 1 a
bin of its own. The two conventions coincide when the reference receives every
positive confidence moved one ulp down (``np.nextafter(x, 0)``): a value on an
edge then lands in the lower bin, every other value stays in its bin, and the
bin means move by at most one ulp. The edge tests below use exactly that
mapping, on bin edges representable in the dtype under test.
"""

import numpy as np
import pytest
import torch
from netcal.metrics import ECE as NetcalECE
from netcal.metrics import MCE as NetcalMCE
from scipy.special import softmax
from torchmetrics.functional.classification import (
    binary_calibration_error,
    multiclass_calibration_error,
)

from sklcalib.metrics import (
    adaptive_calibration_error,
    bin_statistics,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)

HAND_PROB = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
HAND_Y = np.array([0, 1, 1, 1])


def random_probs(rng, n, k, dtype=np.float64, concentration=1.0):
    p = rng.dirichlet(np.full(k, concentration), size=n)
    return p.astype(dtype)


def calibrated_sample(rng, n, k):
    """Labels drawn from the predicted distribution itself."""
    p = random_probs(rng, n, k, concentration=0.5)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return np.minimum(y, k - 1), p


def shift_top(p):
    """Move each row's top probability one ulp down (see the module docstring)."""
    shifted = p.copy()
    rows, top = np.arange(p.shape[0]), p.argmax(axis=1)
    shifted[rows, top] = np.nextafter(p[rows, top], p.dtype.type(0))
    return shifted


def tm_ece(p, y, n_bins, norm):
    p = shift_top(p)
    return float(
        multiclass_calibration_error(
            torch.from_numpy(p),
            torch.from_numpy(y),
            num_classes=p.shape[1],
            n_bins=n_bins,
            norm=norm,
        )
    )


def netcal_metric(cls, p, y, n_bins):
    if p.ndim == 2:
        p = shift_top(p)
    return float(cls(bins=n_bins).measure(p, y))


# ---------------------------------------------------------------- by hand


def test_hand_computed_uniform():
    # conf .9 (right), .8 (wrong), .7 (right), .6 (right); 5 bins of width .2:
    # .6 and .8 lie on edges and go to the lower bins (.4, .6] and (.6, .8]
    # bin (.4,.6]: conf .6 acc 1; bin (.6,.8]: conf .75 acc .5; bin (.8,1]: .9, 1
    assert expected_calibration_error(HAND_Y, HAND_PROB, n_bins=5) == pytest.approx(
        (0.4 + 2 * 0.25 + 0.1) / 4
    )
    assert maximum_calibration_error(HAND_Y, HAND_PROB, n_bins=5) == pytest.approx(0.4)
    l2 = np.sqrt((0.4**2 + 2 * 0.25**2 + 0.1**2) / 4)
    assert expected_calibration_error(
        HAND_Y, HAND_PROB, n_bins=5, norm="l2"
    ) == pytest.approx(l2)


def test_hand_computed_adaptive_and_classwise():
    # two equal-mass groups {.6, .7} (acc 1) and {.8, .9} (acc .5)
    assert adaptive_calibration_error(HAND_Y, HAND_PROB, n_bins=2) == pytest.approx(
        0.35
    )
    # class 0 column [.9 .8 .3 .4] vs [1 0 0 0]: bins (.2,.4]: 2x gap .35,
    # (.6,.8]: gap .8, (.8,1]: gap .1 -> 0.4; class 1 column [.1 .2 .7 .6] vs
    # [0 1 1 1]: [0,.2]: 2x gap .35, (.6,.8]: .3, (.4,.6]: .4 -> 0.35
    assert classwise_calibration_error(HAND_Y, HAND_PROB, n_bins=5) == pytest.approx(
        (0.4 + 0.35) / 2
    )


def test_adaptive_groups_follow_array_split_and_count_every_sample():
    conf = np.array([0.5, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95])  # 7 samples, 3 groups
    correct = np.array([1, 0, 1, 1, 0, 1, 1])
    stats = bin_statistics(conf, correct, n_bins=3, strategy="quantile")
    # array_split(7, 3) -> sizes 3, 2, 2 (larger first); the two samples at the
    # minimum confidence stay in (Mukhoti's code would drop them)
    np.testing.assert_array_equal(stats.counts, [3, 2, 2])
    np.testing.assert_allclose(stats.sum_confidence, [1.6, 1.5, 1.85])
    np.testing.assert_array_equal(stats.sum_correct, [2, 1, 2])


def test_quantile_ties_use_stable_sort():
    conf = np.full(4, 0.7)
    correct = np.array([1, 1, 0, 0])
    stats = bin_statistics(conf, correct, n_bins=2, strategy="quantile")
    # a stable sort keeps the input order among ties: [1, 1] then [0, 0]
    np.testing.assert_array_equal(stats.sum_correct, [2, 0])


def test_uniform_edges_are_right_closed_in_float64():
    edges = np.linspace(0, 1, 16)
    conf = np.concatenate([[0.0, 1.0], edges[1:-1]])
    stats = bin_statistics(conf, np.ones_like(conf), n_bins=15)
    np.testing.assert_array_equal(stats.edges, edges)
    # 0 and edges[1] in bin 0; edges[b] in bin b - 1; 1.0 in the last bin
    expected = np.ones(15)  # edges[14] is in bin 13, 1.0 in bin 14
    expected[0] = 2
    np.testing.assert_array_equal(stats.counts, expected)
    assert stats.sum_confidence[0] == edges[1]
    assert stats.sum_confidence[14] == 1.0


def test_binary_1d_equals_two_columns_and_labels_of_any_type():
    rng = np.random.default_rng(0)
    p1 = rng.random(300)
    y = np.where(rng.random(300) < p1, "spam", "ham")
    p2 = np.column_stack([1 - p1, p1])
    for metric in (
        expected_calibration_error,
        adaptive_calibration_error,
        maximum_calibration_error,
        classwise_calibration_error,
    ):
        # string labels without labels=: drawn from p1, they show the sorted order
        one_column = metric(y, p1)
        assert one_column == pytest.approx(
            metric(y, p2, labels=["ham", "spam"]), abs=1e-12
        )


def test_labels_fix_the_column_order():
    rng = np.random.default_rng(1)
    p = random_probs(rng, 200, 3)
    y = rng.integers(0, 3, 200)
    names = np.array(["c", "a", "b"])
    # column j is the class names[j]: relabelling consistently changes nothing
    assert expected_calibration_error(
        names[y], p, labels=names
    ) == expected_calibration_error(y, p)
    assert classwise_calibration_error(
        names[y], p, labels=names
    ) == classwise_calibration_error(y, p)


def test_labels_keep_columns_of_classes_missing_from_y_true():
    rng = np.random.default_rng(2)
    p = random_probs(rng, 100, 4)
    y = rng.integers(0, 3, 100)  # class 3 never occurs
    ece = expected_calibration_error(y, p, labels=[0, 1, 2, 3])
    assert ece == expected_calibration_error(y, p, labels=np.arange(4))
    # classwise averages over the 4 columns, the 4th against all-zero outcomes
    cw = classwise_calibration_error(y, p, labels=[0, 1, 2, 3])
    per_class = [_pairs_ece(p[:, k], y == k, 15) for k in range(4)]
    assert cw == pytest.approx(np.mean(per_class))
    with pytest.raises(ValueError, match="labels"):
        classwise_calibration_error(y, p)  # 3 labels seen, 4 columns


def test_sample_weight_equals_repetition():
    rng = np.random.default_rng(3)
    p = random_probs(rng, 50, 3)
    y = rng.integers(0, 3, 50)
    w = rng.integers(0, 4, 50)
    w[0] = 1
    rep_p, rep_y = np.repeat(p, w, axis=0), np.repeat(y, w)
    for norm in ("l1", "l2", "max"):
        assert expected_calibration_error(
            y, p, sample_weight=w, norm=norm
        ) == pytest.approx(expected_calibration_error(rep_y, rep_p, norm=norm))
    assert classwise_calibration_error(
        y, p, sample_weight=w, labels=[0, 1, 2]
    ) == pytest.approx(classwise_calibration_error(rep_y, rep_p, labels=[0, 1, 2]))


# ---------------------------------------------------------------- references


@pytest.mark.parametrize("n_bins", [5, 15])
@pytest.mark.parametrize("kind", ["random", "calibrated", "peaked"])
def test_against_torchmetrics_and_netcal(kind, n_bins):
    rng = np.random.default_rng(10 + n_bins)
    if kind == "calibrated":
        y, p = calibrated_sample(rng, 2000, 5)
    else:
        p = random_probs(rng, 2000, 5, concentration=0.1 if kind == "peaked" else 1)
        y = rng.integers(0, 5, 2000)
    p = p.astype(np.float32)
    p /= p.sum(axis=1, keepdims=True)
    tol = {"rel": 1e-5, "abs": 1e-6}  # float32 sums in torchmetrics
    for norm in ("l1", "l2", "max"):
        ours = expected_calibration_error(y, p, n_bins=n_bins, norm=norm)
        assert ours == pytest.approx(tm_ece(p, y, n_bins, norm), **tol), norm
    ece = expected_calibration_error(y, p, n_bins=n_bins)
    mce = maximum_calibration_error(y, p, n_bins=n_bins)
    p64 = p.astype(np.float64)
    assert ece == pytest.approx(netcal_metric(NetcalECE, p64, y, n_bins), **tol)
    assert mce == pytest.approx(netcal_metric(NetcalMCE, p64, y, n_bins), **tol)


@pytest.mark.parametrize(("n_bins", "per_bin"), [(5, 40), (10, 30), (15, 20)])
def test_adaptive_and_classwise_against_netcal(n_bins, per_bin):
    """Adaptive ECE against netcal's equal-mass ECE (``equal_intervals=False``)
    and classwise ECE against the mean of netcal's ECE of every column against
    its one-vs-rest event. netcal splits equal-mass bins at quantiles: with
    distinct confidences and n a multiple of n_bins its groups are exactly the
    ``array_split`` groups."""
    rng = np.random.default_rng(n_bins)
    n, k = n_bins * per_bin, 4
    p = softmax(2 * rng.normal(size=(n, k)), axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)  # y ~ p
    conf = p.max(axis=1)
    assert np.unique(conf).shape[0] == n
    correct = (p.argmax(axis=1) == y).astype(int)
    netcal_adaptive = NetcalECE(bins=n_bins, equal_intervals=False).measure(
        conf, correct
    )
    assert adaptive_calibration_error(y, p, n_bins=n_bins) == pytest.approx(
        float(netcal_adaptive), rel=1e-12
    )
    netcal_classwise = np.mean(
        [
            float(NetcalECE(bins=n_bins).measure(p[:, j].copy(), (y == j).astype(int)))
            for j in range(k)
        ]
    )
    assert classwise_calibration_error(y, p, n_bins=n_bins) == pytest.approx(
        netcal_classwise, rel=1e-12
    )


def test_binary_against_references():
    rng = np.random.default_rng(4)
    p1 = rng.random(1000).astype(np.float32)
    y = (rng.random(1000) < p1**1.5).astype(int)
    p2 = np.column_stack([1 - p1, p1])
    for norm in ("l1", "l2", "max"):
        assert expected_calibration_error(y, p1, norm=norm) == pytest.approx(
            tm_ece(p2, y, 15, norm), rel=1e-5, abs=1e-6
        )
    # netcal reads a binary problem as (probability of the event, event): fed
    # the top-label pairs it gives the top-label ECE, fed (p, y) the
    # positive-class ECE (our column-1 binning)
    conf = np.maximum(p1, 1 - p1).astype(np.float64)
    correct = ((p1 > 0.5) == (y == 1)).astype(int)
    assert expected_calibration_error(y, p1) == pytest.approx(
        netcal_metric(NetcalECE, conf, correct, 15), rel=1e-5, abs=1e-6
    )
    assert _pairs_ece(p1, y == 1, 15) == pytest.approx(
        netcal_metric(NetcalECE, p1.astype(np.float64), y, 15), rel=1e-5, abs=1e-6
    )


def _pairs_ece(conf, correct, n_bins, norm="l1"):
    stats = bin_statistics(conf, correct, n_bins=n_bins)
    mask = stats.counts > 0
    gap = (
        np.abs(stats.sum_confidence[mask] - stats.sum_correct[mask])
        / stats.counts[mask]
    )
    frac = stats.counts[mask] / stats.counts.sum()
    if norm == "l1":
        return float(frac @ gap)
    if norm == "l2":
        return float(np.sqrt(frac @ gap**2))
    return float(gap.max())


@pytest.mark.parametrize("n_bins", [4, 8, 16])
def test_edges_against_torchmetrics_with_one_ulp_shift(n_bins):
    """Confidences exactly 0, exactly 1 and exactly on bin edges (float32)."""
    rng = np.random.default_rng(n_bins)
    edges = np.linspace(0, 1, n_bins + 1).astype(np.float32)  # exact in float32
    conf = np.concatenate(
        [np.zeros(7), np.ones(9), np.repeat(edges, 5), rng.random(40)]
    ).astype(np.float32)
    correct = (rng.random(conf.shape[0]) < 0.6).astype(np.float32)
    shifted = np.where(conf > 0, np.nextafter(conf, np.float32(0)), conf)
    for norm in ("l1", "l2", "max"):
        ref = float(
            binary_calibration_error(
                torch.from_numpy(shifted),
                torch.from_numpy(correct.astype(np.int64)),
                n_bins=n_bins,
                norm=norm,
            )
        )
        assert _pairs_ece(conf, correct, n_bins, norm) == pytest.approx(
            ref, rel=1e-5, abs=1e-6
        )


def test_edges_differ_from_torchmetrics_without_the_shift():
    # a documented, deliberate difference: 0.5 lies in (0.25, 0.5] for us
    # and in [0.5, 0.75) for torchmetrics
    conf = np.array([0.5, 0.6], dtype=np.float32)
    correct = np.array([1, 0])
    ours = _pairs_ece(conf, correct, 4)
    theirs = float(
        binary_calibration_error(
            torch.from_numpy(conf), torch.from_numpy(correct), n_bins=4
        )
    )
    assert ours == pytest.approx((0.5 + 0.6) / 2)  # two bins, gaps .5 and .6
    assert theirs == pytest.approx(abs(0.55 - 0.5))  # one bin
    assert ours != pytest.approx(theirs)


@pytest.mark.parametrize("n_bins", [10, 15])
def test_edges_against_netcal_float64(n_bins):
    """netcal uses the same float64 edges ``np.linspace(0, 1, b + 1)``."""
    rng = np.random.default_rng(100 + n_bins)
    edges = np.linspace(0, 1, n_bins + 1)
    conf = np.concatenate(
        [np.zeros(5), np.ones(6), np.repeat(edges, 4), rng.random(30)]
    )
    correct = (rng.random(conf.shape[0]) < 0.5).astype(int)
    correct[:3] = 1  # both outcomes at confidence 0 and 1
    correct[5:8] = 0
    shifted = np.where(conf > 0, np.nextafter(conf, 0), conf)
    for cls, norm in ((NetcalECE, "l1"), (NetcalMCE, "max")):
        ref = netcal_metric(cls, shifted, correct, n_bins)
        assert _pairs_ece(conf, correct, n_bins, norm) == pytest.approx(
            ref, rel=1e-9, abs=1e-12
        )


def test_multiclass_probabilities_on_edges_against_torchmetrics():
    # rows whose top probability is exactly 0.5 / 0.75 / 1.0 (edges for 4 bins)
    p = np.array(
        [
            [0.5, 0.25, 0.25],
            [0.25, 0.5, 0.25],
            [0.75, 0.125, 0.125],
            [0.0, 0.0, 1.0],
            [0.0, 1.0, 0.0],
            [0.625, 0.25, 0.125],
        ],
        dtype=np.float32,
    )
    y = np.array([0, 2, 0, 2, 0, 1])
    for norm in ("l1", "l2", "max"):  # tm_ece shifts the top probabilities
        assert expected_calibration_error(y, p, n_bins=4, norm=norm) == pytest.approx(
            tm_ece(p, y, 4, norm), rel=1e-5, abs=1e-6
        )
    # by hand: bins (.25,.5]: conf .5,.5 acc 1,0; (.5,.75]: .75 (1), .625 (0);
    # (.75,1]: 1.0 (1), 1.0 (0)
    expected = (2 * abs(0.5 - 0.5) + 2 * abs(0.6875 - 0.5) + 2 * abs(1 - 0.5)) / 6
    assert expected_calibration_error(y, p, n_bins=4) == pytest.approx(expected)


# the string labels take the generic path without labels= on purpose; drawn
# from p, they show their sorted order to be the columns' (see
# test_metrics_label_order.py)
def test_integer_labels_lookup_and_generic_paths_agree():
    rng = np.random.default_rng(6)
    p = random_probs(rng, 300, 3)
    idx = (rng.uniform(size=(300, 1)) > p.cumsum(axis=1)).sum(axis=1)
    small = np.array([-5, 3, 7])  # encoded with an O(n) lookup table
    huge = np.array([-5, 3, 10**12])  # range too wide: binary search
    as_str = np.array(["-5", "3", "x"])  # generic path
    values = [
        expected_calibration_error(labels[idx], p)
        for labels in (small, huge, as_str, small.astype(np.uint8) + 10)
    ]
    assert values[1:] == values[:1] * 3
    with pytest.raises(ValueError, match=r"not in labels.*\[8\]"):
        expected_calibration_error(np.r_[small[idx][:-1], 8], p, labels=small)


@pytest.mark.parametrize(
    "module",
    [
        "sklcalib.metrics.binning",
        "sklcalib.metrics._calibration_error",
        "sklcalib.metrics._smooth",
        "sklcalib.metrics._calibration_report",
        "sklcalib.metrics._scorers",
        "sklcalib.plotting",
    ],
)
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(
        importlib.import_module(module),
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted > 0
    assert result.failed == 0
