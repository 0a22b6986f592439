"""ReliabilityDisplay: its numbers (not its pixels)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB

from sklcalib.metrics import (
    bin_statistics,
    classwise_calibration_error,
    expected_calibration_error,
)
from sklcalib.plotting import ReliabilityDisplay, clopper_pearson


@pytest.fixture(scope="module")
def data():
    # string labels drawn from p: they show their sorted order to be the
    # columns' without labels= (test_metrics_label_order.py)
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(3, 0.4), size=400)
    idx = (rng.uniform(size=(400, 1)) > p.cumsum(axis=1)).sum(axis=1).clip(0, 2)
    return np.array(["a", "b", "c"])[idx], p


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_top_label_bins_equal_bin_statistics(data, strategy):
    y, p = data
    display = ReliabilityDisplay.from_predictions(y, p, n_bins=8, strategy=strategy)
    idx = np.searchsorted(["a", "b", "c"], y)
    stats = bin_statistics(
        p.max(axis=1), p.argmax(axis=1) == idx, n_bins=8, strategy=strategy
    )
    mask = stats.counts > 0
    np.testing.assert_allclose(display.counts, stats.counts[mask])
    np.testing.assert_allclose(
        display.prob_pred, stats.sum_confidence[mask] / stats.counts[mask]
    )
    np.testing.assert_allclose(
        display.prob_true, stats.sum_correct[mask] / stats.counts[mask]
    )
    np.testing.assert_array_equal(display.edges, stats.edges)
    assert display.counts.sum() == len(y)
    assert display.calibration_error == pytest.approx(
        expected_calibration_error(y, p, n_bins=8, strategy=strategy)
    )
    assert f"ECE = {display.calibration_error:.3f}" in display.line_.get_label()


def test_classwise_bins(data):
    y, p = data
    display = ReliabilityDisplay.from_predictions(
        y, p, n_bins=6, kind="classwise", class_index=1
    )
    stats = bin_statistics(p[:, 1], y == "b", n_bins=6)
    mask = stats.counts > 0
    np.testing.assert_allclose(display.counts, stats.counts[mask])
    np.testing.assert_allclose(
        display.prob_true, stats.sum_correct[mask] / stats.counts[mask]
    )
    assert display.class_label == "b"
    assert "class b" in display.ax_.get_xlabel()
    # the mean of the per-class errors is the classwise ECE
    per_class = [
        ReliabilityDisplay.from_predictions(
            y, p, n_bins=6, kind="classwise", class_index=k
        ).calibration_error
        for k in range(3)
    ]
    assert np.mean(per_class) == pytest.approx(
        classwise_calibration_error(y, p, n_bins=6)
    )


def test_clopper_pearson_intervals(data):
    y, p = data
    display = ReliabilityDisplay.from_predictions(y, p, n_bins=10, confidence_level=0.9)
    assert np.all(display.ci_low <= display.prob_true)
    assert np.all(display.prob_true <= display.ci_high)
    successes = np.rint(display.prob_true * display.counts).astype(int)
    for k, n, low, high in zip(
        successes,
        display.counts.astype(int),
        display.ci_low,
        display.ci_high,
        strict=True,
    ):
        ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        assert low == pytest.approx(ci.low, abs=1e-10)
        assert high == pytest.approx(ci.high, abs=1e-10)
    # all-right and all-wrong bins reach 1 and 0
    low, high = clopper_pearson([0, 5], [5, 5])
    assert low[0] == 0.0 and high[1] == 1.0


def test_draws_on_the_given_ax_and_returns_the_display(data):
    y, p = data
    fig, (ax1, ax2) = plt.subplots(1, 2)
    display = ReliabilityDisplay.from_predictions(y, p, ax=ax2, name="model")
    assert isinstance(display, ReliabilityDisplay)
    assert display.ax_ is ax2
    assert display.figure_ is fig
    assert display.line_ in ax2.lines
    assert not ax1.lines
    np.testing.assert_allclose(display.line_.get_xdata(), display.prob_pred)
    np.testing.assert_allclose(display.line_.get_ydata(), display.prob_true)
    assert display.line_.get_label().startswith("model (top-label ECE = ")
    # histogram: fractions of samples on a twin axis; gap bars span acc..conf
    heights = [bar.get_height() for bar in display.hist_]
    np.testing.assert_allclose(heights, display.counts / display.counts.sum())
    gap = [(bar.get_y(), bar.get_y() + bar.get_height()) for bar in display.gap_]
    np.testing.assert_allclose(
        gap, np.column_stack([display.prob_true, display.prob_pred])
    )
    # plot() again on another axis, without the extras
    again = display.plot(ax=ax1, show_histogram=False, show_gap=False)
    assert again is display and display.ax_ is ax1
    assert display.hist_ax_ is None and display.gap_ is None


def test_from_estimator():
    X, y = load_iris(return_X_y=True)
    model = GaussianNB().fit(X, y)
    display = ReliabilityDisplay.from_estimator(model, X, y, n_bins=5)
    expected = ReliabilityDisplay.from_predictions(
        y, model.predict_proba(X), n_bins=5, labels=model.classes_
    )
    np.testing.assert_allclose(display.prob_true, expected.prob_true)
    assert display.line_.get_label().startswith("GaussianNB")
    binary = (y == 2).astype(int)
    model = LogisticRegression().fit(X, binary)
    display = ReliabilityDisplay.from_estimator(model, X, binary, kind="classwise")
    assert display.class_label == 1  # positive class by default for binary


def test_bad_input(data):
    y, p = data
    with pytest.raises(ValueError, match="kind must be one of"):
        ReliabilityDisplay.from_predictions(y, p, kind="per-class")
    with pytest.raises(ValueError, match="class_index must be a column index"):
        ReliabilityDisplay.from_predictions(y, p, kind="classwise")
    with pytest.raises(ValueError, match="class_index must be a column index"):
        ReliabilityDisplay.from_predictions(y, p, kind="classwise", class_index=3)
    with pytest.raises(ValueError, match="class_index is only used"):
        ReliabilityDisplay.from_predictions(y, p, class_index=0)
    with pytest.raises(ValueError, match="confidence_level"):
        ReliabilityDisplay.from_predictions(y, p, confidence_level=1.5)
    for level in ["0.9", None, True]:  # a TypeError before
        with pytest.raises(ValueError, match="confidence_level must be a number"):
            ReliabilityDisplay.from_predictions(y, p, confidence_level=level)
    with pytest.raises(ValueError, match="n_bins"):
        ReliabilityDisplay.from_predictions(y, p, n_bins=0)
    with pytest.raises(ValueError, match="y_prob contains NaN"):
        ReliabilityDisplay.from_predictions(y, np.full_like(p, np.nan))
    with pytest.raises(ValueError, match="predict_proba"):
        ReliabilityDisplay.from_estimator(object(), p, y)


def test_public_names():
    import sklcalib.plotting

    public = ["CumulativeDisplay", "ReliabilityDisplay", "share_histogram_axis"]
    assert sklcalib.plotting.__all__ == public
    namespace = {}
    exec("from sklcalib.plotting import *", namespace)
    assert {n for n in namespace if not n.startswith("__")} == set(public)


def test_side_by_side_histograms_share_one_scale():
    import matplotlib.pyplot as plt

    from sklcalib.plotting import share_histogram_axis

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=400)
    peaked = np.full((400, 3), 1 / 3)  # every sample in one bin: a 100 % bar
    spread = rng.dirichlet(np.ones(3), size=400)
    fig, axes = plt.subplots(1, 2)
    try:
        a = ReliabilityDisplay.from_predictions(y, peaked, ax=axes[0])
        b = ReliabilityDisplay.from_predictions(y, spread, ax=axes[1])
        # each alone is scaled to its own fullest bin
        assert a.hist_ax_.get_ylim() != b.hist_ax_.get_ylim()
        top = share_histogram_axis([a, b])
        assert top == pytest.approx(1.0)
        assert a.hist_ax_.get_ylim() == b.hist_ax_.get_ylim() == (0.0, 3.0)
    finally:
        plt.close(fig)


def test_legend_says_which_ece_a_binary_diagram_shows():
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(1)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    fig, axes = plt.subplots(1, 2)
    try:
        top = ReliabilityDisplay.from_predictions(y, p, ax=axes[0], name="m")
        one = ReliabilityDisplay.from_predictions(
            y, p, ax=axes[1], name="m", kind="classwise"
        )
        assert "top-label ECE" in top.line_.get_label()
        assert "ECE of class 1" in one.line_.get_label()
        assert "class 1" in axes[1].get_xlabel()
    finally:
        plt.close(fig)
