"""The three equal-mass binnings, side by side on data with a tie across a
group boundary and a size (11) that three bins do not divide: what each one
is, checked against the reference it reproduces, and that they differ."""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from sklcalib._utils._binning import (
    bin_index,
    equal_mass_edges,
    quantile_groups,
    quantile_value_edges,
    right_edge_index,
)
from sklcalib.calibration import HistogramBinningCalibrator
from sklcalib.metrics import bin_statistics

# 0.4 three times: sorted positions 3, 4, 5 straddle the first boundary (4)
VALUES = np.array([0.1, 0.2, 0.3, 0.4, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
TIES = VALUES == 0.4
N_BINS = 3


def test_rank_groups_are_array_split_of_the_stable_sort():
    # the metrics' strategy="quantile" (AdaECE), AdaFocal, the sweep
    groups, _, sizes = quantile_groups(VALUES, N_BINS)
    expected = np.empty(len(VALUES), dtype=np.intp)
    for g, part in enumerate(np.array_split(np.argsort(VALUES, kind="stable"), 3)):
        expected[part] = g
    np.testing.assert_array_equal(groups, expected)
    np.testing.assert_array_equal(sizes, [4, 4, 3])  # always n_bins groups
    assert len(np.unique(groups[TIES])) == 2  # a tie split by rank
    stats = bin_statistics(VALUES, np.ones(len(VALUES)), n_bins=3, strategy="quantile")
    np.testing.assert_array_equal(stats.counts, [4, 4, 3])


def test_midpoint_edges_are_kumars_get_equal_bins():
    # the debiased ECE and scaling-binning
    edges = equal_mass_edges(VALUES, N_BINS)
    np.testing.assert_allclose(edges, [0.4, 0.65, 1.0])
    idx = right_edge_index(VALUES, edges)
    assert len(np.unique(idx[TIES])) == 1  # the tie shares a bin
    np.testing.assert_array_equal(np.bincount(idx), [6, 2, 3])
    kumar = pytest.importorskip("calibration")  # uncertainty-calibration
    np.testing.assert_allclose(
        edges, kumar.utils.get_equal_bins(list(VALUES), num_bins=N_BINS)
    )


def test_quantile_edges_are_scikit_learns_calibration_curve_bins():
    # HistogramBinningCalibrator(strategy="quantile")
    edges = quantile_value_edges(VALUES, N_BINS)
    idx = bin_index(VALUES, edges)
    assert len(np.unique(idx[TIES])) == 1  # the tie shares a bin
    np.testing.assert_array_equal(np.bincount(idx), [6, 1, 4])
    # per-bin frequencies equal scikit-learn's on any labels
    y = np.array([0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1])
    prob_true, _ = calibration_curve(y, VALUES, n_bins=N_BINS, strategy="quantile")
    np.testing.assert_allclose(
        np.bincount(idx, weights=y) / np.bincount(idx), prob_true, rtol=1e-12
    )
    hb = HistogramBinningCalibrator(n_bins=N_BINS, strategy="quantile").fit(VALUES, y)
    np.testing.assert_allclose(hb.bin_edges_[0], edges)
    np.testing.assert_allclose(hb.bin_values_[0], prob_true, rtol=1e-12)


def test_the_three_definitions_differ_on_the_same_data():
    rank = np.bincount(quantile_groups(VALUES, N_BINS)[0])
    midpoint = np.bincount(right_edge_index(VALUES, equal_mass_edges(VALUES, N_BINS)))
    value = np.bincount(bin_index(VALUES, quantile_value_edges(VALUES, N_BINS)))
    assert len({tuple(rank), tuple(midpoint), tuple(value)}) == 3
