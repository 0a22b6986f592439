"""CumulativeDisplay: its numbers are those of the cumulative statistics, its
slopes the mean miscalibration of the rows in a score range."""

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="plots need the plot extra")
import matplotlib.pyplot as plt

from sklcalib.metrics import (
    cumulative_calibration_error,
    cumulative_calibration_test,
)
from sklcalib.plotting import CumulativeDisplay


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < np.where(p > 0.6, p - 0.15, p)).astype(int)
    return y, p, rng


def test_numbers_are_the_cumulative_statistics():
    y, p, rng = _data()
    w = rng.uniform(0.5, 2.0, size=p.shape[0])
    display = CumulativeDisplay.from_predictions(y, p, sample_weight=w)
    test = cumulative_calibration_test(y, p, sample_weight=w)
    assert display.statistic == pytest.approx(test.statistic, rel=1e-12)
    assert display.pvalue == pytest.approx(test.pvalue, rel=1e-9)
    assert display.sd[-1] == pytest.approx(test.sigma, rel=1e-12)
    order = np.argsort(p)
    expected = np.cumsum((w * (y - p))[order]) / w.sum()
    np.testing.assert_allclose(display.cumulative, expected, atol=1e-12)
    np.testing.assert_allclose(display.fraction, np.cumsum(w[order]) / w.sum())
    assert np.all(np.diff(display.sd) >= 0)


def test_slope_is_the_mean_miscalibration_of_the_range():
    y, p, _ = _data()
    display = CumulativeDisplay.from_predictions(y, p, secant=(0.6, 1.0))
    rows = (p > 0.6) & (p <= 1.0)
    assert display.slope(0.6, 1.0) == pytest.approx(np.mean(y[rows] - p[rows]))
    assert display.secant_ is not None
    assert "slope over scores (0.6, 1]" in display.secant_.get_label()
    low = (p > 0.0) & (p <= 0.6)
    assert display.slope(0.0, 0.6) == pytest.approx(np.mean(y[low] - p[low]))


def test_ties_are_grouped_in_the_path():
    p = np.repeat([0.2, 0.5, 0.8], 100)
    y = (np.random.default_rng(1).uniform(size=300) < p).astype(int)
    display = CumulativeDisplay.from_predictions(y, p)
    np.testing.assert_allclose(display.scores, [0.2, 0.5, 0.8])
    np.testing.assert_allclose(display.fraction, [1 / 3, 2 / 3, 1.0])
    assert display.statistic == pytest.approx(cumulative_calibration_error(y, p))


def test_top_label_and_classwise_plots():
    rng = np.random.default_rng(2)
    prob = rng.dirichlet(np.ones(3), size=600)
    y = (prob.cumsum(1) < rng.uniform(size=(600, 1))).sum(1).clip(max=2)
    top = CumulativeDisplay.from_predictions(y, prob)
    assert top.mode == "top_label"
    assert "confidence" in top.ax_.get_xlabel()
    cw = CumulativeDisplay.from_predictions(y, prob, mode="classwise", class_index=2)
    assert cw.class_label == 2
    assert cw.statistic == pytest.approx(
        cumulative_calibration_error((y == 2).astype(int), prob[:, 2])
    )
    with pytest.raises(ValueError, match="class_index is only used"):
        CumulativeDisplay.from_predictions(y, prob, class_index=1)
    with pytest.raises(ValueError, match="class_index"):
        CumulativeDisplay.from_predictions(y, prob, mode="classwise")


def test_bad_slopes():
    y, p, _ = _data(200)
    display = CumulativeDisplay.from_predictions(y, p, show_band=False)
    assert display.band_ is None
    with pytest.raises(ValueError, match="low must be below high"):
        display.slope(0.5, 0.5)
    with pytest.raises(ValueError, match="No row has a score"):
        display.slope(1.0, 2.0)


def test_from_estimator():
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    display = CumulativeDisplay.from_estimator(model, X, y)
    assert display.line_.get_label().startswith("Pipeline (Kuiper = ")
    with pytest.raises(ValueError, match="predict_proba"):
        CumulativeDisplay.from_estimator(object(), X, y)
    with pytest.raises(ValueError, match="labels are taken"):
        CumulativeDisplay.from_estimator(model, X, y, labels=[0, 1])


def test_dask_is_refused_naming_the_in_memory_route():
    da = pytest.importorskip("dask.array", reason="dask is the dask extra")
    y, p, _ = _data(100)
    with pytest.raises(ValueError, match=r"sorts all the rows") as info:
        CumulativeDisplay.from_predictions(da.from_array(y, chunks=50), p)
    assert ".compute()" in str(info.value)
