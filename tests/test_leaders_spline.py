"""SplineCalibrator: equal to probmetrics 1.3's CDF spline on scores without
ties, right on data with a known answer, order-free on ties, one fit for
equal weights and repeated rows for integer ones up to O(1/n), valid
probabilities always.

Tolerance against probmetrics: it casts the scores to float32 and
accumulates them in float32, so the calibrated values agree to about 1e-6
(1e-5 asserted); where its value leaves [clip, 1 - clip] ours is the clipped
value (a documented deviation: the reference returns probabilities outside
[0, 1] there)."""

import numpy as np
import pytest
from _helpers import assert_weights_are_repeated_rows, import_probmetrics_calibrators
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import softmax

from sklcalib.calibration import SplineCalibrator


def _float32(x):
    return x.astype(np.float32).astype(np.float64)


def _data(n, seed, power=1.5):
    """Scores without ties (float32-representable) and labels ~ p**power."""
    rng = np.random.default_rng(seed)
    p = _float32(rng.uniform(0.01, 0.99, size=n))
    y = (rng.random(n) < p**power).astype(int)
    return p, y


@pytest.fixture(scope="module")
def probmetrics_calibrators():
    pytest.importorskip(
        "probmetrics", reason="probmetrics 1.3 (the test extra) is the reference"
    )
    return import_probmetrics_calibrators()  # torchmin's warning filtered


@pytest.mark.parametrize("runout", ["natural", "parabolic", "cubic"])
@pytest.mark.parametrize(("n", "n_knots"), [(500, 6), (5000, 6), (3000, 10)])
def test_equals_probmetrics(probmetrics_calibrators, runout, n, n_knots):
    p, y = _data(n, n_knots)
    ours = SplineCalibrator(n_knots=n_knots, runout=runout).fit(p, y)
    theirs = probmetrics_calibrators.CDFSplineCalibrator(
        spline_method=runout, splines=n_knots
    ).fit(np.column_stack([1 - p, p]), y)
    np.testing.assert_allclose(ours.scores_[0], theirs.calib_scores_)
    np.testing.assert_allclose(ours.values_[0], theirs.calib_acc_, atol=1e-5)
    grid = _float32(np.linspace(0.0, 1.0, 501))
    mine = ours.predict_proba(grid)[:, 1]
    reference = theirs.predict_proba(np.column_stack([1 - grid, grid]))[:, 1]
    np.testing.assert_allclose(
        mine, np.clip(reference, ours.clip, 1 - ours.clip), atol=1e-5
    )


def test_multiclass_equals_probmetrics_one_vs_rest(probmetrics_calibrators):
    rng = np.random.default_rng(3)
    logits = 2 * rng.normal(size=(4000, 3))
    proba = _float32(softmax(logits, axis=1))
    proba /= proba.sum(axis=1, keepdims=True)
    truth = softmax(logits / 2, axis=1)
    y = (truth.cumsum(axis=1) > rng.random((4000, 1))).argmax(axis=1)
    ours = SplineCalibrator().fit(proba, y)
    theirs = probmetrics_calibrators.MulticlassOneVsRestCalibrator(
        probmetrics_calibrators.CDFSplineCalibrator()
    ).fit(proba, y)
    test = _float32(softmax(2 * rng.normal(size=(500, 3)), axis=1))
    test /= test.sum(axis=1, keepdims=True)
    raw = np.column_stack(
        [
            cal.predict_proba(np.column_stack([1 - test[:, k], test[:, k]]))[:, 1]
            for k, cal in enumerate(theirs.bin_calibs_)
        ]
    )
    inside = np.all((raw > 1e-6) & (raw < 1 - 1e-6), axis=1)
    assert inside.mean() > 0.8
    np.testing.assert_allclose(
        ours.predict_proba(test)[inside],
        theirs.predict_proba(test)[inside],
        atol=1e-5,
    )


def test_known_answer_over_confident_scores():
    """Labels drawn from p**2: the calibrated curve is close to p**2 (away
    from the ends, where the natural spline's straight run-out bends it)."""
    p, y = _data(100000, 4, power=2.0)
    grid = np.linspace(0.1, 0.9, 17)
    calibrated = SplineCalibrator().fit(p, y).predict_proba(grid)[:, 1]
    np.testing.assert_allclose(calibrated, grid**2, atol=0.02)


def test_known_answer_calibrated_scores_stay():
    """Labels drawn from p: the calibrated curve is close to the identity."""
    p, y = _data(100000, 5, power=1.0)
    grid = np.linspace(0.05, 0.95, 19)
    calibrated = SplineCalibrator().fit(p, y).predict_proba(grid)[:, 1]
    np.testing.assert_allclose(calibrated, grid, atol=0.02)


def test_ties_do_not_depend_on_row_order():
    """Tied scores (a coarse model) get the mean of their values, whatever
    the order of the rows."""
    rng = np.random.default_rng(6)
    p = rng.integers(1, 20, size=2000) / 20.0
    y = (rng.random(2000) < p).astype(int)
    model = SplineCalibrator().fit(p, y)
    assert len(model.scores_[0]) == len(np.unique(p))
    order = rng.permutation(len(p))
    shuffled = SplineCalibrator().fit(p[order], y[order])
    np.testing.assert_allclose(shuffled.values_[0], model.values_[0], atol=1e-12)


def test_equal_weights_are_the_unweighted_fit():
    """The fit has no term that depends on the number of rows: any common
    weight (1, 1.5, 1 / n, 1e6) gives the unweighted fit, exactly."""
    p, y = _data(300, 7)
    plain = SplineCalibrator().fit(p, y).predict_proba(p)
    for w in [1.0, 1.5, 1.0 / len(y), 1e6]:
        weighted = SplineCalibrator().fit(p, y, sample_weight=np.full(len(y), w))
        np.testing.assert_allclose(weighted.predict_proba(p), plain, atol=1e-13)


@pytest.mark.parametrize(("n", "bound"), [(300, 5e-3), (3000, 3e-4)])
def test_integer_weights_are_repeated_rows_up_to_the_rank_grid(n, bound):
    """A repeated row is a tie, spread over the tied ranks; the weighted row
    is one point at their middle: the fits agree to O(1/n), far closer than
    either is to the unweighted fit (the weights matter)."""
    p, y = _data(n, 7)
    weighted, _ = assert_weights_are_repeated_rows(SplineCalibrator(), p, y, atol=bound)
    plain = SplineCalibrator().fit(p, y)
    assert np.abs(plain.predict_proba(p) - weighted.predict_proba(p)).max() > 10 * bound


def test_real_weights_zero_is_removed_and_scale_free():
    p, y = _data(400, 8)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(y))
    w[::5] = 0.0
    weighted = SplineCalibrator().fit(p, y, sample_weight=w)
    kept = w > 0
    removed = SplineCalibrator().fit(p[kept], y[kept], sample_weight=w[kept])
    scaled = SplineCalibrator().fit(p, y, sample_weight=3.7 * w)
    np.testing.assert_allclose(weighted.predict_proba(p), removed.predict_proba(p))
    np.testing.assert_allclose(weighted.predict_proba(p), scaled.predict_proba(p))
    # close to the unit-weight fit when the weights are nearly equal
    near = SplineCalibrator().fit(p, y, sample_weight=np.full(len(y), 1.0 + 1e-9))
    unit = SplineCalibrator().fit(p, y)
    np.testing.assert_allclose(near.predict_proba(p), unit.predict_proba(p), atol=0.01)


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("n_knots", 2),
        ("n_knots", 4.5),
        ("runout", "linear"),
        ("clip", 0.5),
        ("clip", -1),
    ],
)
def test_bad_parameters_are_named(param, value):
    p, y = _data(50, 9)
    with pytest.raises(ValueError, match=param):
        SplineCalibrator(**{param: value}).fit(p, y)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 4),
    st.integers(5, 80),
    st.sampled_from(["natural", "parabolic", "cubic"]),
)
def test_rows_sum_to_one_and_stay_clipped(seed, k, n, runout):
    rng = np.random.default_rng(seed)
    proba = softmax(3 * rng.normal(size=(n, k)), axis=1)
    # coarse scores: ties included
    proba = np.round(proba, 2)
    proba /= proba.sum(axis=1, keepdims=True)
    y = np.r_[np.arange(k), rng.integers(0, k, size=n - k)]
    X = proba[:, 1] if k == 2 else proba
    model = SplineCalibrator(runout=runout).fit(X, y)
    test = softmax(3 * rng.normal(size=(30, k)), axis=1)
    out = model.predict_proba(test[:, 1] if k == 2 else test)
    assert np.all(np.isfinite(out))
    assert np.all(out > 0)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    if k == 2:
        assert np.all((out >= model.clip) & (out <= 1 - model.clip))


def test_huge_weights_are_scaled_weights():
    """Integer weights of 1e12 (1e14 repeated rows) fit as the same weights
    scaled down: one formulation, no expansion into rows."""
    p, y = _data(200, 10)
    w = np.random.default_rng(3).integers(1, 4, size=len(y)).astype(float)
    huge = SplineCalibrator().fit(p, y, sample_weight=1e12 * w)
    small = SplineCalibrator().fit(p, y, sample_weight=w / 7)
    np.testing.assert_allclose(
        huge.predict_proba(p), small.predict_proba(p), atol=1e-12
    )
