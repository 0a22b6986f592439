"""Cumulative calibration statistics, their limit laws and Spiegelhalter's
test: known answers and properties (the comparisons with mcgrad and MAPIE are
in test_metrics_cumulative_references.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad

from sklcalib._utils._brownian import (
    _reflection_max_abs_sf,
    _reflection_range_sf,
    _theta_max_abs_cdf,
    _theta_range_cdf,
    brownian_max_abs_sf,
    brownian_range_sf,
)
from sklcalib.metrics import (
    cumulative_calibration_error,
    cumulative_calibration_test,
    spiegelhalter_test,
)


def _binary(n, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, size=n)
    y = (rng.uniform(size=n) < np.clip(p + shift, 0, 1)).astype(np.int64)
    return y, p, rng.uniform(0.2, 3.0, size=n)


def test_spiegelhalter_weighted_is_the_weighted_z():
    y, p, w = _binary(500, 3)
    res = spiegelhalter_test(y, p, sample_weight=w)
    num = np.sum(w * (y - p) * (1 - 2 * p))
    den = np.sqrt(np.sum(w**2 * (1 - 2 * p) ** 2 * p * (1 - p)))
    assert res.statistic == pytest.approx(num / den, rel=1e-12)
    again = spiegelhalter_test(y, p, sample_weight=5 * w)
    assert again.statistic == pytest.approx(res.statistic, rel=1e-12)


# --- the limit laws ----------------------------------------------------------


def test_limit_laws_have_the_known_means():
    # E[range of B on [0, 1]] = 2 sqrt(2 / pi), E[max |B|] = sqrt(pi / 2)
    range_mean = quad(brownian_range_sf, 0, np.inf, limit=200)[0]
    max_abs_mean = quad(brownian_max_abs_sf, 0, np.inf, limit=200)[0]
    assert range_mean == pytest.approx(2 * np.sqrt(2 / np.pi), rel=1e-9)
    assert max_abs_mean == pytest.approx(np.sqrt(np.pi / 2), rel=1e-9)


def test_both_series_agree_where_they_meet():
    x = np.linspace(1.0, 2.5, 31)
    np.testing.assert_allclose(
        1 - _theta_range_cdf(x), _reflection_range_sf(x), rtol=1e-13
    )
    np.testing.assert_allclose(
        1 - _theta_max_abs_cdf(x), _reflection_max_abs_sf(x), rtol=1e-13
    )


def test_limit_laws_keep_their_relative_precision_far_in_the_tail():
    # P(R > x) ~ 8 Phi_c(x) and P(M > x) ~ 4 Phi_c(x) for large x
    from scipy.special import ndtr

    for x in (10.0, 20.0, 30.0):
        assert brownian_range_sf(x) == pytest.approx(8 * ndtr(-x), rel=1e-10)
        assert brownian_max_abs_sf(x) == pytest.approx(4 * ndtr(-x), rel=1e-10)
    assert brownian_range_sf(0.0) == 1.0 and brownian_range_sf(np.inf) == 0.0


# --- properties --------------------------------------------------------------


@given(st.integers(0, 2**31), st.integers(2, 40))
def test_ties_are_grouped(seed, n):
    # rows with tied scores may come in any order: the statistic is the same,
    # and it equals the statistic of the groups (outcomes summed)
    rng = np.random.default_rng(seed)
    levels = rng.uniform(size=4)
    p = levels[rng.integers(0, 4, size=n)]
    y = (rng.uniform(size=n) < p).astype(int)
    perm = rng.permutation(n)
    a = cumulative_calibration_error(y, p, labels=[0, 1])
    b = cumulative_calibration_error(y[perm], p[perm], labels=[0, 1])
    assert a == pytest.approx(b, abs=1e-12)
    order = np.argsort(levels)
    sums = np.array([np.sum(y[p == v] - v) for v in levels[order]]) / n
    path = np.concatenate([[0.0], np.cumsum(sums)])
    assert a == pytest.approx(path.max() - path.min(), abs=1e-12)


@given(st.integers(0, 2**31))
def test_integer_weights_are_repeated_rows_for_the_error(seed):
    rng = np.random.default_rng(seed)
    n = 30
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    w = rng.integers(0, 4, size=n)
    w[0] = 1
    for statistic in ("kuiper", "ks"):
        weighted = cumulative_calibration_error(
            y, p, sample_weight=w, statistic=statistic, labels=[0, 1]
        )
        repeated = cumulative_calibration_error(
            np.repeat(y, w), np.repeat(p, w), statistic=statistic, labels=[0, 1]
        )
        assert weighted == pytest.approx(repeated, abs=1e-12)


def test_weights_are_scale_free_and_zero_weight_is_no_row():
    y, p, w = _binary(400, 11)
    w[::7] = 0.0
    a = cumulative_calibration_test(y, p, sample_weight=w)
    b = cumulative_calibration_test(y, p, sample_weight=1e-3 * w)
    keep = w > 0
    c = cumulative_calibration_test(y[keep], p[keep], sample_weight=w[keep])
    for other in (b, c):
        assert a.statistic == pytest.approx(other.statistic, rel=1e-12)
        assert a.sigma == pytest.approx(other.sigma, rel=1e-12)
        assert a.pvalue == pytest.approx(other.pvalue, rel=1e-9)


def test_float32_scores_are_accepted():
    y, p, _ = _binary(1000, 5)
    p32 = p.astype(np.float32)
    a = cumulative_calibration_test(y, p32)
    b = cumulative_calibration_test(y, p32.astype(np.float64))
    assert a == b


def test_top_label_and_classwise_are_the_binary_statistic_of_their_columns():
    rng = np.random.default_rng(0)
    prob = rng.dirichlet(np.ones(4), size=500)
    y = np.array([rng.choice(4, p=row) for row in prob])
    conf, pred = prob.max(axis=1), prob.argmax(axis=1)
    top = cumulative_calibration_test(y, prob)
    assert top.mode == "top_label"
    ref = cumulative_calibration_test((pred == y).astype(int), conf)
    assert top.statistic == ref.statistic and top.pvalue == ref.pvalue
    cw = cumulative_calibration_test(y, prob, mode="classwise", statistic="ks")
    per_class = [
        cumulative_calibration_test((y == k).astype(int), prob[:, k], statistic="ks")
        for k in range(4)
    ]
    np.testing.assert_allclose(cw.statistic, [r.statistic for r in per_class])
    np.testing.assert_allclose(cw.class_pvalues, [r.pvalue for r in per_class])
    assert cw.pvalue == pytest.approx(min(1.0, 4 * min(cw.class_pvalues)))
    error = cumulative_calibration_error(y, prob, mode="classwise", statistic="ks")
    assert error == pytest.approx(np.mean(cw.statistic))


@pytest.mark.parametrize("mode", ["top_label", "classwise"])
def test_weighted_multiclass_is_the_weighted_binary_statistic_of_its_columns(mode):
    rng = np.random.default_rng(3)
    n = 600
    prob = rng.dirichlet(np.ones(3), size=n)
    y = np.array([rng.choice(3, p=row) for row in prob])
    w = rng.uniform(0.1, 4.0, size=n)
    w[::9] = 0.0
    if mode == "top_label":
        columns = [((prob.argmax(1) == y).astype(int), prob.max(1))]
    else:
        columns = [((y == k).astype(int), prob[:, k]) for k in range(3)]
    for statistic in ("kuiper", "ks"):
        res = cumulative_calibration_test(
            y, prob, mode=mode, statistic=statistic, sample_weight=w
        )
        ref = [
            cumulative_calibration_test(
                o, s, statistic=statistic, sample_weight=w, labels=[0, 1]
            )
            for o, s in columns
        ]
        np.testing.assert_allclose(
            np.atleast_1d(res.statistic), [r.statistic for r in ref], rtol=1e-12
        )
        np.testing.assert_allclose(
            np.atleast_1d(res.sigma), [r.sigma for r in ref], rtol=1e-12
        )
        # the weights matter: unweighted is another number
        plain = cumulative_calibration_test(y, prob, mode=mode, statistic=statistic)
        assert not np.allclose(plain.statistic, res.statistic)
        # a constant rescaling and dropping the zero-weight rows change nothing
        keep = w > 0
        for other in (
            cumulative_calibration_test(
                y, prob, mode=mode, statistic=statistic, sample_weight=7.5 * w
            ),
            cumulative_calibration_test(
                y[keep],
                prob[keep],
                mode=mode,
                statistic=statistic,
                sample_weight=w[keep],
                labels=[0, 1, 2],
            ),
        ):
            np.testing.assert_allclose(other.statistic, res.statistic, rtol=1e-12)
            assert other.pvalue == pytest.approx(res.pvalue, rel=1e-9)


@given(st.integers(0, 2**31), st.sampled_from(["top_label", "classwise"]))
@settings(max_examples=20, deadline=None)
def test_multiclass_integer_weights_are_repeated_rows_for_the_error(seed, mode):
    rng = np.random.default_rng(seed)
    n = 40
    prob = rng.dirichlet(np.ones(3), size=n)
    y = rng.integers(0, 3, size=n)
    w = rng.integers(0, 4, size=n)
    w[:3] = 1
    for statistic in ("kuiper", "ks"):
        weighted = cumulative_calibration_error(
            y, prob, sample_weight=w, statistic=statistic, mode=mode, labels=[0, 1, 2]
        )
        repeated = cumulative_calibration_error(
            np.repeat(y, w),
            np.repeat(prob, w, axis=0),
            statistic=statistic,
            mode=mode,
            labels=[0, 1, 2],
        )
        assert weighted == pytest.approx(repeated, abs=1e-12)


def test_report_on_dask_lacks_the_cumulative_errors_and_says_why():
    da = pytest.importorskip("dask.array", reason="dask is the dask extra")
    from sklcalib.metrics import calibration_report

    y, p, _ = _binary(200, 4)
    report = calibration_report(
        da.from_array(y, chunks=50), da.from_array(p, chunks=50)
    )
    for key in ("cumulative_kuiper", "cumulative_ks"):
        assert key not in report and key in report.unavailable
        with pytest.raises(KeyError, match="in-memory sample"):
            report[key]


def test_binary_two_columns_and_string_labels():
    y, p, _ = _binary(300, 2)
    a = cumulative_calibration_test(y, p)
    b = cumulative_calibration_test(
        np.where(y == 1, "yes", "no"), np.column_stack([1 - p, p]), labels=["no", "yes"]
    )
    assert a.statistic == pytest.approx(b.statistic, rel=1e-12)
    top = cumulative_calibration_test(y, p, mode="top_label")
    conf = np.maximum(p, 1 - p)
    correct = ((p > 0.5).astype(int) == y).astype(int)
    assert top.statistic == pytest.approx(
        cumulative_calibration_error(correct, conf, labels=[0, 1]), rel=1e-12
    )


def test_mde_and_repr():
    y, p, _ = _binary(1000, 1)
    res = cumulative_calibration_test(y, p, mde_sigmas=3)
    assert res.mde == pytest.approx(3 * res.sigma)
    assert res.sigma == pytest.approx(np.sqrt(np.sum(p * (1 - p))) / 1000)
    assert repr(res).startswith("CumulativeTestResult(kind='kuiper', mode='binary'")


def test_scores_all_certain():
    # sigma = 0: a statistic of 0 has p-value 1, a positive one p-value 0
    p = np.array([0.0, 1.0, 0.0, 1.0])
    ok = cumulative_calibration_test([0, 1, 0, 1], p)
    assert ok.scaled_statistic == 0.0 and ok.pvalue == 1.0
    bad = cumulative_calibration_test([1, 1, 0, 1], p)
    assert bad.scaled_statistic == np.inf and bad.pvalue == 0.0
    sp = spiegelhalter_test([1, 1, 0, 1], p)
    assert sp.statistic == np.inf and sp.pvalue == 0.0


# --- bad input ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"statistic": "range"}, "statistic must be one of"),
        ({"mode": "binary"}, "mode must be one of"),
        ({"mde_sigmas": 0}, "mde_sigmas must be > 0"),
        ({"sample_weight": [1.0, -1.0, 1.0]}, "negative"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cumulative_calibration_test([0, 1, 1], [0.2, 0.6, 0.7], **kwargs)


def test_bad_probabilities_and_multiclass_spiegelhalter():
    with pytest.raises(ValueError, match="y_prob contains NaN"):
        cumulative_calibration_error([0, 1], [0.2, np.nan])
    with pytest.raises(ValueError, match="greater than 1"):
        cumulative_calibration_error([0, 1], [0.2, 1.5])
    with pytest.raises(ValueError, match="spiegelhalter_test is for binary"):
        spiegelhalter_test([0, 1, 2], np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="alternative must be one of"):
        spiegelhalter_test([0, 1], [0.2, 0.7], alternative="up")


def test_dask_is_refused_naming_the_in_memory_route():
    da = pytest.importorskip("dask.array", reason="dask is the dask extra")
    p = da.from_array(np.array([0.2, 0.6, 0.7]), chunks=2)
    for func in (
        cumulative_calibration_error,
        cumulative_calibration_test,
        spiegelhalter_test,
    ):
        with pytest.raises(ValueError, match=r"sorts all the rows|in memory") as info:
            func(np.array([0, 1, 1]), p)
        assert "y_prob.compute()" in str(info.value)


# --- size (seeded fast variant of benchmarks/bench_cumulative.py) -------------


def test_size_binary_and_top_label():
    # a calibrated model (labels drawn from its own probabilities) is
    # rejected at the 5 % level about 5 % of the time; 400 binary and 150
    # top-label simulations, bands of about three binomial standard errors
    rng = np.random.default_rng(20261128)
    rejected = {"kuiper": 0, "ks": 0}
    for _ in range(400):
        p = rng.uniform(size=1000)
        y = (rng.uniform(size=1000) < p).astype(int)
        for statistic in rejected:
            res = cumulative_calibration_test(y, p, statistic=statistic, labels=[0, 1])
            rejected[statistic] += res.pvalue <= 0.05
    for count in rejected.values():
        assert 6 <= count <= 36  # 1.5 % to 9 % of 400
    top = 0
    for _ in range(150):
        prob = rng.dirichlet(np.full(10, 0.3), size=5000)
        u = rng.uniform(size=(5000, 1))
        y = (prob.cumsum(axis=1) < u).sum(axis=1).clip(max=9)
        top += cumulative_calibration_test(y, prob, labels=range(10)).pvalue <= 0.05
    assert 1 <= top <= 17  # 0.7 % to 11 % of 150


def test_scorers_and_registry():
    from sklearn.datasets import load_breast_cancer, load_iris
    from sklearn.model_selection import cross_val_score
    from sklearn.naive_bayes import GaussianNB

    from sklcalib.metrics import (
        CALIBRATION_SCORERS,
        bootstrap_interval,
        cumulative_ks_scorer,
        cumulative_kuiper_scorer,
        get_scorer,
    )

    X, y = load_iris(return_X_y=True)
    model = GaussianNB().fit(X, y)
    proba = model.predict_proba(X)
    assert cumulative_kuiper_scorer(model, X, y) == -cumulative_calibration_error(
        y, proba
    )
    assert get_scorer("neg_cumulative_ks")(
        model, X, y
    ) == -cumulative_calibration_error(y, proba, statistic="ks")
    assert CALIBRATION_SCORERS["neg_cumulative_ks"] is cumulative_ks_scorer
    X, y = load_breast_cancer(return_X_y=True)
    scoring = get_scorer("neg_cumulative_kuiper")
    scores = cross_val_score(GaussianNB(), X, y, cv=3, scoring=scoring)
    assert np.all(scores <= 0)
    ci = bootstrap_interval(
        "cumulative_kuiper",
        y,
        GaussianNB().fit(X, y).predict_proba(X),
        n_resamples=20,
        random_state=0,
    )
    assert ci.low <= ci.high
