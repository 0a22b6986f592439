"""SegmentCalibrator: segment-specific miscalibration drawn by construction is
removed (the audit's worst-segment statistic back at its null level, where a
global calibrator leaves it), segments without information are left to the
global map or to no calibration, and the estimator's plumbing (weights,
clone, pickle, validation, unseen levels). MCGrad 0.1.5 is the oracle of the
last tests (skipped without it)."""

import contextlib
import pickle
import warnings

import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.base import clone

from sklcalib._utils._optional import is_installed
from sklcalib.calibration import PlattScaler, SegmentCalibrator
from sklcalib.calibration._segment_boosting import BoostSettings
from sklcalib.metrics import multicalibration_audit

_NO_MCGRAD = "mcgrad 0.1.5 absent: install it with pip install --no-deps mcgrad==0.1.5"

# shallow, early-stopped boosting for the LightGBM kernel tests: a few dozen
# rounds on 2 000 rows
_BOOST_SETTINGS = BoostSettings(
    max_iter=60,
    learning_rate=0.1,
    max_depth=3,
    min_samples_leaf=50,
    validation_fraction=0.2,
    n_iter_no_change=5,
    random_state=0,
)
try:
    from mcgrad.methods import MCGrad
    from mcgrad.metrics import MulticalibrationError
except ImportError:  # pragma: no cover - depends on the environment
    MCGrad = MulticalibrationError = None
needs_mcgrad = pytest.mark.skipif(MCGrad is None, reason=_NO_MCGRAD)
needs_lightgbm = pytest.mark.skipif(
    not is_installed("lightgbm"), reason="LightGBM absent: the sklearn backend only"
)


def _opposite(n, seed):
    """A model over-confident in segment "a" (true logit half the score) and
    under-confident in "b" (true logit 1.6 times it), with an intercept shift
    in a third segment: no single map of the score can fix both."""
    rng = np.random.default_rng(seed)
    group = rng.choice(np.array(["a", "b", "c"], dtype=object), size=n)
    z = rng.normal(0, 2, size=n)
    true = np.where(group == "a", 0.5 * z, np.where(group == "b", 1.6 * z, z + 0.5))
    y = (rng.uniform(size=n) < expit(true)).astype(int)
    return z, y, group


def _audit(y, p, segments):
    return multicalibration_audit(y, p, segments, n_resamples=200, random_state=0)


def _log_loss(y, proba):
    return float(-np.mean(np.log(proba[np.arange(len(y)), y])))


@pytest.fixture(scope="module")
def opposite():
    return _opposite(4000, 1), _opposite(4000, 2)


def test_logistic_repairs_what_global_cannot(opposite):
    (z, y, g), (zt, yt, gt) = opposite
    glob = PlattScaler().fit(z, y).predict_proba(zt)
    seg = SegmentCalibrator(method="logistic").fit(z, y, segments=g)
    proba = seg.predict_proba(zt, segments=gt)
    before, after = _audit(yt, glob[:, 1], gt), _audit(yt, proba[:, 1], gt)
    # the global map leaves the worst segment far beyond the null's 95 % level
    assert before.statistic > 1.5 * before.null_quantile and before.pvalue < 0.01
    # the segment map brings it back to the null's level, and the log-loss down
    assert after.statistic <= after.null_quantile
    assert _log_loss(yt, proba) < _log_loss(yt, glob) - 0.01
    assert seg.alpha_ in SegmentCalibrator()._check_params()


@pytest.mark.parametrize(
    "backend",
    ["sklearn", pytest.param("lightgbm", marks=needs_lightgbm)],
)
def test_boosting_repairs_what_global_cannot(opposite, backend):
    (z, y, g), (zt, yt, gt) = opposite
    glob = PlattScaler().fit(z, y).predict_proba(zt)
    seg = SegmentCalibrator(method="boosting", backend=backend, max_iter=150)
    proba = seg.fit(z, y, segments=g).predict_proba(zt, segments=gt)
    before, after = _audit(yt, glob[:, 1], gt), _audit(yt, proba[:, 1], gt)
    assert seg.backend_ == backend and 0 < seg.n_iter_ <= 150
    # the global map's worst segment is found at p < 0.01; not the boosting's
    assert after.statistic < 0.6 * before.statistic
    assert before.pvalue < 0.01 < after.pvalue
    assert _log_loss(yt, proba) < _log_loss(yt, glob) - 0.01


def test_auto_chooses_a_segment_map_when_segments_matter(opposite):
    (z, y, g), _ = opposite
    seg = SegmentCalibrator(backend="sklearn", max_iter=60).fit(z, y, segments=g)
    assert seg.method_ in ("logistic", "boosting")
    results = seg.cv_results_
    assert results["candidate"][:2] == ["passthrough", "global (platt)"]
    assert results["status"][results["candidate"].index(seg.method_)] == "chosen"
    # the chosen map is better than "passthrough" by its cross-validation
    assert results["delta_log_loss"][results["candidate"].index(seg.method_)] < -0.01


def test_auto_does_no_harm_when_segments_carry_nothing():
    rng = np.random.default_rng(3)
    n = 3000
    z = rng.normal(0, 2, size=n)
    y = (rng.uniform(size=n) < expit(z)).astype(int)  # calibrated everywhere
    noise = rng.choice(["u", "v", "w", "x"], size=n)
    seg = SegmentCalibrator(backend="sklearn", max_iter=60).fit(z, y, segments=noise)
    assert seg.method_ in ("passthrough", "global")
    zt = rng.normal(0, 2, size=n)
    yt = (rng.uniform(size=n) < expit(zt)).astype(int)
    proba = seg.predict_proba(zt, segments=rng.choice(["u", "v", "w", "x"], size=n))
    raw = np.column_stack([1 - expit(zt), expit(zt)])
    assert _log_loss(yt, proba) <= _log_loss(yt, raw) + 0.002


def test_logistic_on_uninformative_segments_stays_close_to_global():
    rng = np.random.default_rng(4)
    n = 3000
    z = rng.normal(0, 2, size=n)
    y = (rng.uniform(size=n) < expit(0.7 * z)).astype(int)  # globally off only
    noise = rng.choice(["u", "v", "w"], size=n)
    seg = SegmentCalibrator(method="logistic").fit(z, y, segments=noise)
    platt = PlattScaler().fit(z, y)
    zt = np.linspace(-4, 4, 9)
    for level in ("u", "v", "w"):
        got = seg.predict_proba(zt, segments=np.full(9, level))[:, 1]
        assert np.max(np.abs(got - platt.predict_proba(zt)[:, 1])) < 0.03


def test_without_segments_the_logistic_map_is_platt_scaling():
    rng = np.random.default_rng(5)
    z = rng.normal(0, 2, size=2000)
    y = (rng.uniform(size=2000) < expit(0.6 * z - 0.3)).astype(int)
    seg = SegmentCalibrator(method="logistic").fit(z, y)
    platt = PlattScaler().fit(z, y)
    np.testing.assert_allclose(seg.predict_proba(z), platt.predict_proba(z), atol=1e-5)


def _multiclass(n, seed, K=4):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], size=n)
    Z = rng.normal(0, 1.5, size=(n, K))
    scale = np.where(g == "a", 0.4, np.where(g == "b", 1.8, 1.0))[:, None]
    P = softmax(scale * Z, axis=1)
    y = (P.cumsum(axis=1) < rng.uniform(size=n)[:, None]).sum(axis=1)
    return Z, y, g


def test_multiclass_logistic_repairs_the_top_label():
    Z, y, g = _multiclass(4000, 1)
    Zt, yt, gt = _multiclass(4000, 2)
    seg = SegmentCalibrator(method="logistic").fit(Z, y, segments=g)
    proba = seg.predict_proba(Zt, segments=gt)
    raw = softmax(Zt, axis=1)
    before, after = _audit(yt, raw, gt), _audit(yt, proba, gt)
    assert before.mode == "top_label" and before.statistic > 3 * before.null_quantile
    assert after.statistic <= after.null_quantile
    assert _log_loss(yt, proba) < _log_loss(yt, raw) - 0.03


def test_multiclass_boosting_reduces_the_top_label_error():
    Z, y, g = _multiclass(3000, 1, K=3)
    Zt, yt, gt = _multiclass(3000, 2, K=3)
    seg = SegmentCalibrator(method="boosting", backend="sklearn", max_iter=80)
    proba = seg.fit(Z, y, segments=g).predict_proba(Zt, segments=gt)
    raw = softmax(Zt, axis=1)
    assert _audit(yt, proba, gt).statistic < 0.7 * _audit(yt, raw, gt).statistic
    assert _log_loss(yt, proba) < _log_loss(yt, raw)


def test_probabilities_and_logits_give_the_same_map(opposite):
    (z, y, g), _ = opposite
    from_logits = SegmentCalibrator(method="logistic", alphas=(1e-3,))
    from_proba = clone(from_logits)
    a = from_logits.fit(z, y, segments=g).predict_proba(z[:50], segments=g[:50])
    p = expit(z)
    b = from_proba.fit(p, y, segments=g).predict_proba(p[:50], segments=g[:50])
    assert from_proba.response_ == "probabilities"
    np.testing.assert_allclose(a, b, atol=1e-6)
    # float32 scores and (n, 2) probabilities are accepted
    two = np.column_stack([1 - p, p]).astype(np.float32)
    c = (
        clone(from_logits)
        .fit(two, y, segments=g)
        .predict_proba(two[:50], segments=g[:50])
    )
    np.testing.assert_allclose(a, c, atol=1e-4)


def test_integer_weights_repeat_rows(opposite):
    (z, y, g), _ = opposite
    z, y, g = z[:1500], y[:1500], g[:1500]
    w = np.random.default_rng(0).integers(0, 3, size=1500)
    rows = np.repeat(np.arange(1500), w)
    cal = SegmentCalibrator(method="logistic", alphas=(1e-3,))
    weighted = clone(cal).fit(z, y, segments=g, sample_weight=w)
    repeated = clone(cal).fit(z[rows], y[rows], segments=g[rows])
    np.testing.assert_allclose(
        weighted.predict_proba(z, segments=g),
        repeated.predict_proba(z, segments=g),
        atol=1e-6,
    )


def test_unseen_levels_and_missing_values_get_the_baseline():
    import pandas as pd

    z, y, g = _opposite(3000, 6)
    age = np.random.default_rng(6).uniform(18, 80, size=3000)
    frame = pd.DataFrame({"group": g, "age": age})
    cal = SegmentCalibrator(method="logistic").fit(z, y, segments=frame)
    assert any(name.startswith("age=bin") for name in cal.feature_names_)
    new = pd.DataFrame(
        {"group": ["zzz", None, np.nan, "a"], "age": [30.0, 30.0, 30.0, np.nan]}
    )
    proba = cal.predict_proba(np.ones(4), segments=new)
    assert np.all(np.isfinite(proba))
    # an unseen level and a missing value are the same baseline
    np.testing.assert_allclose(proba[0], proba[1])
    np.testing.assert_allclose(proba[1], proba[2])
    # a 2-D object array works as the frame does
    arr = np.column_stack([g, age]).astype(object)
    from_array = clone(cal).fit(z, y, segments=arr)
    np.testing.assert_allclose(
        from_array.predict_proba(z[:20], segments=arr[:20]),
        cal.predict_proba(z[:20], segments=frame.iloc[:20]),
        atol=1e-8,
    )


def test_clone_and_pickle(opposite):
    (z, y, g), _ = opposite
    cal = SegmentCalibrator(method="boosting", backend="sklearn", max_iter=20)
    cal.fit(z, y, segments=g)
    again = pickle.loads(pickle.dumps(cal))
    np.testing.assert_array_equal(
        again.predict_proba(z[:30], segments=g[:30]),
        cal.predict_proba(z[:30], segments=g[:30]),
    )
    fresh = clone(cal)
    assert not hasattr(fresh, "method_") and fresh.get_params() == cal.get_params()
    assert set(cal.predict(z[:30], segments=g[:30])) <= {0, 1}


@pytest.mark.parametrize(
    "params, name",
    [
        ({"method": "trees"}, "method"),
        ({"alphas": (0.0,)}, "alphas"),
        ({"alphas": []}, "alphas"),
        ({"learning_rate": 0}, "learning_rate"),
        ({"max_depth": 0}, "max_depth"),
        ({"validation_fraction": 0.9}, "validation_fraction"),
        ({"backend": "xgboost"}, "backend"),
        ({"global_calibrator": "nonsense"}, "global_calibrator"),
        ({"cv": 1}, "cv"),
    ],
)
def test_bad_parameters_are_refused_at_fit(params, name):
    z, y, g = _opposite(200, 0)
    with pytest.raises(ValueError, match=name):
        SegmentCalibrator(**params).fit(z, y, segments=g)


def test_bad_inputs_are_refused():
    z, y, g = _opposite(300, 0)
    with pytest.raises(ValueError, match="segments has 299 rows"):
        SegmentCalibrator(method="logistic").fit(z, y, segments=g[:-1])
    cal = SegmentCalibrator(method="logistic").fit(z, y, segments=g)
    with pytest.raises(ValueError, match="segments is None"):
        cal.predict_proba(z)
    with pytest.raises(ValueError, match="segments has 2 columns"):
        cal.predict_proba(z, segments=np.column_stack([g, g]))
    with pytest.raises(ValueError, match="at least two classes"):
        SegmentCalibrator().fit(z, np.zeros(300), segments=g)
    with pytest.raises(ValueError, match="infinite"):
        SegmentCalibrator().fit(z, y, segments=np.full(300, np.inf))


# ---------------------------------------------------------------------------
# MCGrad as oracle
# ---------------------------------------------------------------------------
def _survey(n, seed):
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    region = rng.choice(4, size=n)
    age = rng.choice(5, size=n)
    sex = rng.integers(0, 2, size=n)
    true = (
        np.array([0.8, 1.0, 1.3, 0.9])[region] * x
        + np.array([0.0, 0.3, -0.3, 0.2])[region]
        + np.array([-0.4, -0.1, 0.0, 0.2, 0.4])[age]
        + 0.2 * sex
    )
    y = (rng.uniform(size=n) < expit(true)).astype(int)
    frame = pd.DataFrame(
        {
            "region": np.array(list("nsew"), dtype=object)[region],
            "age": np.array(["18", "30", "45", "60", "75"], dtype=object)[age],
            "sex": np.where(sex == 1, "f", "m").astype(object),
        }
    )
    return x, y, frame  # the model's logit is x: it saw no demographic column


@contextlib.contextmanager
def _quiet():
    """mcgrad 0.1.5 calls pandas with ``inplace=`` (deprecated in pandas 3)
    and warns about its own rescaling; neither is about sklcalib."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*inplace keyword.*")
        warnings.filterwarnings("ignore", message=".*Unshrink is not close to 1.*")
        yield


def _mce_sigma(y, p, frame):
    df = frame.copy()
    df["label"], df["score"] = y, p
    with _quiet():
        return float(
            MulticalibrationError(
                df, "label", "score", categorical_segment_columns=list(frame.columns)
            ).mce_sigma
        )


@needs_mcgrad
@pytest.mark.slow
def test_worst_segment_no_worse_than_mcgrad():
    z, y, frame = _survey(8000, 0)
    zt, yt, ft = _survey(8000, 1)
    cal = SegmentCalibrator(method="logistic").fit(z, y, segments=frame)
    ours = cal.predict_proba(zt, segments=ft)[:, 1]
    df = frame.copy()
    df["score"], df["label"] = expit(z), y
    model = MCGrad(random_state=0)
    with _quiet():
        model.fit(df, "score", "label", categorical_feature_column_names=list(frame))
        dft = ft.copy()
        dft["score"] = expit(zt)
        theirs = model.predict(dft, "score", categorical_feature_column_names=list(ft))
    raw = _mce_sigma(yt, expit(zt), ft)
    ours_sigma, theirs_sigma = _mce_sigma(yt, ours, ft), _mce_sigma(yt, theirs, ft)
    assert raw > 5  # miscalibrated by construction
    assert ours_sigma <= theirs_sigma + 0.5
    ll = lambda p: float(-np.mean(yt * np.log(p) + (1 - yt) * np.log(1 - p)))  # noqa: E731
    assert ll(ours) <= ll(np.clip(theirs, 1e-12, 1 - 1e-12)) + 0.002


# ---------------------------------------------------------------------------
# CalibratedClassifier(segments=...) and select_calibrator(segments=...)
# ---------------------------------------------------------------------------
def _frame(n, seed, calibrated=False):
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.normal(0, 2, size=n)
    region = rng.choice(np.array(["north", "south", "east"], dtype=object), size=n)
    slope = np.where(region == "north", 0.5, np.where(region == "south", 1.6, 1.0))
    true = x if calibrated else slope * x
    y = (rng.uniform(size=n) < expit(true)).astype(int)
    return pd.DataFrame({"x": x, "region": region}), y


def _blind_model():
    """A logistic regression that sees x only, not the region."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    keep_x = ColumnTransformer([("x", "passthrough", ["x"])])
    return make_pipeline(keep_x, LogisticRegression())


def test_calibrated_classifier_passes_the_segment_columns():
    from sklcalib.calibration import CalibratedClassifier

    X, y = _frame(4000, 0)
    Xt, yt = _frame(4000, 1)
    seg = CalibratedClassifier(
        _blind_model(),
        SegmentCalibrator(method="logistic"),
        cv=3,
        segments=["region"],
    ).fit(X, y)
    plain = CalibratedClassifier(_blind_model(), "platt", cv=3).fit(X, y)
    assert len(seg.calibrated_classifiers_) == 3
    ours = _audit(yt, seg.predict_proba(Xt)[:, 1], Xt[["region"]])
    glob = _audit(yt, plain.predict_proba(Xt)[:, 1], Xt[["region"]])
    assert glob.statistic > 1.4 * glob.null_quantile and glob.pvalue < 0.01
    assert ours.statistic <= ours.null_quantile
    # column indices select the same column; ensemble=False pools the folds
    by_index = CalibratedClassifier(
        _blind_model(), SegmentCalibrator(method="logistic"), cv=3, segments=[1]
    ).fit(X, y)
    np.testing.assert_allclose(by_index.predict_proba(Xt), seg.predict_proba(Xt))
    pooled = CalibratedClassifier(
        _blind_model(),
        SegmentCalibrator(method="logistic"),
        cv=3,
        ensemble=False,
        segments=["region"],
    ).fit(X, y)
    assert len(pooled.calibrated_classifiers_) == 1
    assert _audit(yt, pooled.predict_proba(Xt)[:, 1], Xt[["region"]]).statistic <= (
        ours.null_quantile
    )


def test_calibrated_classifier_segments_refuses_what_it_cannot_do():
    from sklearn.linear_model import LogisticRegression

    from sklcalib.calibration import CalibratedClassifier, PriorCorrection

    X, y = _frame(300, 0)
    with pytest.raises(ValueError, match="segment-aware calibrator"):
        CalibratedClassifier(_blind_model(), "temperature", segments=["region"]).fit(
            X, y
        )
    with pytest.raises(ValueError, match="no column"):
        CalibratedClassifier(_blind_model(), segments=["nope"]).fit(X, y)
    with pytest.raises(ValueError, match="prior"):
        CalibratedClassifier(
            _blind_model(), segments=["region"], prior=PriorCorrection()
        ).fit(X, y)
    with pytest.raises(ValueError, match="column names"):
        CalibratedClassifier(LogisticRegression(), segments=["x"]).fit(
            X[["x"]].to_numpy(), y
        )


def test_select_calibrator_with_segments():
    from sklcalib.calibration import select_calibrator

    (z, y, g), _ = _opposite(3000, 1), None
    found = select_calibrator(
        z, y, segments=g, candidates=["passthrough", "temperature"], response="logits"
    )
    assert isinstance(found, SegmentCalibrator)
    assert found.method_ in ("logistic", "boosting")
    assert found.cv_results_["candidate"][1] == "global (temperature)"
    rng = np.random.default_rng(8)
    zc = rng.normal(0, 2, size=3000)
    yc = (rng.uniform(size=3000) < expit(zc)).astype(int)
    calm = select_calibrator(
        zc, yc, segments=rng.choice(["u", "v"], size=3000), candidates=["temperature"]
    )
    assert calm.method_ in ("passthrough", "global")
    with pytest.raises(ValueError, match="at most one global"):
        select_calibrator(z, y, segments=g, candidates=["temperature", "platt"])


@pytest.mark.slow
def test_auto_with_segments_leaves_a_calibrated_model_alone():
    from sklearn.frozen import FrozenEstimator

    from sklcalib.calibration import CalibratedClassifier

    X, y = _frame(3000, 2, calibrated=True)
    model = _blind_model().fit(*_frame(3000, 3, calibrated=True))
    clf = CalibratedClassifier(FrozenEstimator(model), "auto", segments=["region"]).fit(
        X, y
    )
    ((_, calibrator),) = clf.calibrated_classifiers_
    assert calibrator.global_search_ is not None
    assert calibrator.method_ in ("passthrough", "global")


@needs_mcgrad
@pytest.mark.slow
def test_the_benchmark_table_fast_variant():
    """benchmarks/bench_segment_calibration.py on 6,000 rows, one seed: the
    rows of its docs table are produced, and the segment maps leave the
    worst segment below the uncalibrated and best global rows."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_segment_calibration as bench

    with _quiet():
        rows, null_q = bench.run(6000, 1, 1, 1)
    text = bench.table(rows, null_q, 6000, 1, 1, 1)
    assert "MCGrad" in text and "segment logistic" in text
    for name in ("segment logistic", "segment auto"):
        assert rows[name]["audit"][0] < rows["best global"]["audit"][0]
        assert rows[name]["ll"][0] < rows["none"]["ll"][0]


def test_approximate_leave_one_out_matches_the_exact_one():
    # the logistic map's ridge strength (two classes) and its score in
    # method="auto" come from one fit per strength, its leave-one-out losses
    # approximated by one Newton step: against the n refits it replaces
    from sklcalib.calibration._segment_logistic import alo_losses, fit_logistic

    rng = np.random.default_rng(0)
    n = 150
    z = rng.normal(0, 2, (n, 1))
    S = (rng.integers(0, 3, (n, 1)) == np.arange(3)).astype(float)
    true = 0.7 * z[:, 0] + S @ np.array([0.5, -0.5, 0.0])
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-true))).astype(int)
    w = np.full(n, 1 / n)
    for lam in (1e-1, 1e-2):
        fitted, _ = fit_logistic(z, S, y, w, lam)
        approx = alo_losses(z, S, y, w, fitted)
        exact = np.empty(n)
        for i in range(n):
            keep = np.arange(n) != i
            # the same penalty per row as the full fit
            left, _ = fit_logistic(z[keep], S[keep], y[keep], w[keep], lam)
            e = left.logits(z[i : i + 1], S[i : i + 1])[0, 0]
            exact[i] = np.logaddexp(0, e) - y[i] * e
        assert abs(approx.mean() - exact.mean()) < 5e-3 * exact.mean()
        assert np.corrcoef(approx, exact)[0, 1] > 0.99
        # and far from the in-sample loss it corrects
        eta = fitted.logits(z, S)[:, 0]
        in_sample = np.mean(np.logaddexp(0, eta) - y * eta)
        assert exact.mean() - in_sample > 5 * abs(approx.mean() - exact.mean())


def test_pattern_design_is_the_dense_design():
    # the binary map's products by the rows' distinct indicator patterns
    # (per-pattern sums): the same matrix as the dense columns [z, 1, S, S zs]
    from scipy import sparse

    from sklcalib.calibration._segment_logistic import (
        _design,
        _PatternDesign,
        _SparseDesign,
        alo_logits,
        fit_logistic,
    )

    rng = np.random.default_rng(1)
    n, z_scale = 3000, 1.7
    codes = [rng.integers(-1, k, n) for k in (7, 3, 2)]  # -1: the baseline
    S = np.hstack([c[:, None] == np.arange(c.max() + 1) for c in codes]).astype(float)
    z = rng.normal(0, 2, (n, 1))
    D = np.hstack([z, np.ones_like(z), S, S * (z / z_scale)])
    P = _PatternDesign.of(z, S, z_scale)
    assert isinstance(_design(z, S, z_scale), _PatternDesign)
    assert P.U == len(np.unique(S, axis=0)) <= 8 * 4 * 3
    theta, r, v = rng.normal(size=D.shape[1]), rng.normal(size=n), rng.uniform(size=n)
    np.testing.assert_allclose(P @ theta, D @ theta, atol=1e-12)
    np.testing.assert_allclose(P.T @ r, D.T @ r, rtol=1e-10, atol=1e-10)
    H = (D * v[:, None]).T @ D
    np.testing.assert_allclose(P.gram(v), H, rtol=1e-10, atol=1e-10)
    H_inv = np.linalg.inv(H + np.eye(len(H)))
    np.testing.assert_allclose(
        P.leverages(H_inv), np.einsum("ij,ij->i", D @ H_inv, D), rtol=1e-9
    )
    # the fit and its leave-one-out margins, against the sparse design
    true = 0.7 * z[:, 0] + S @ rng.normal(0, 0.5, S.shape[1])
    y = (rng.uniform(size=n) < expit(true)).astype(int)
    w = np.full(n, 1 / n)
    by_pattern, _ = fit_logistic(z, S, y, w, 1e-3)
    Ds = np.hstack([z, np.ones_like(z), S, S * (z / by_pattern.z_scale)])
    Ds = _SparseDesign(sparse.csr_matrix(Ds))
    rows, _ = fit_logistic(z, S, y, w, 1e-3, design=Ds)
    np.testing.assert_allclose(by_pattern.d, rows.d, atol=1e-9)
    np.testing.assert_allclose(
        alo_logits(z, S, y, w, by_pattern),
        alo_logits(z, S, y, w, rows, design=Ds),
        atol=1e-9,
    )
    # the fit's own factor of its Hessian at the solution: the same
    # leave-one-out margins as the Hessian built and inverted again
    fitted, theta, state = fit_logistic(z, S, y, w, 1e-3, return_state=True)
    assert state is not None and state.factor is not None
    np.testing.assert_allclose(
        alo_logits(z, S, y, w, fitted, state=state),
        alo_logits(z, S, y, w, fitted),
        rtol=1e-12,
        atol=1e-12,
    )
    # the next strength started from this solution: its data term reused,
    # the same fit as computing it again there
    _, theta_again = fit_logistic(z, S, y, w, 1e-4, theta0=theta)
    _, theta_reused = fit_logistic(z, S, y, w, 1e-4, theta0=theta, start=state)
    np.testing.assert_array_equal(theta_reused, theta_again)
    # not 0/1 (halves, a 2 or a NaN among the indicators), or as many
    # patterns as rows: no pattern design
    assert _PatternDesign.of(z, S * 0.5, z_scale) is None
    for bad in (2.0, np.nan):
        S_bad = S.copy()
        S_bad[3, 0] = bad
        assert _PatternDesign.of(z, S_bad, z_scale) is None
    assert _PatternDesign.of(z, rng.integers(0, 2, (n, 30)).astype(float), 1) is None


@pytest.mark.parametrize("width", [1, 7, 8, 12, 17])
def test_distinct_rows_are_numpys_unique_rows(width):
    # the pattern design's rows by lexsort of 64-bit words: the same first
    # rows and inverse, in the same (byte) order, as np.unique of the rows
    from sklcalib.calibration._segment_logistic import _distinct_rows

    rng = np.random.default_rng(width)
    rows = rng.integers(0, 4, (500, width)).astype(np.uint8) * 85
    rows[rng.uniform(size=500) < 0.5] = rows[0]  # many repeats
    keys = rows.view(np.dtype((np.void, width))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    got_first, got_inverse = _distinct_rows(rows)
    np.testing.assert_array_equal(got_first, first)
    np.testing.assert_array_equal(got_inverse, inverse.ravel())


@pytest.mark.parametrize("K", [1, 3])
def test_rescaling_recovers_a_known_temperature(K):
    # the final rescaling a eta + b: labels drawn from a known rescaling of
    # the logits give it back, and it is the minimum of the weighted
    # log-loss (scipy's solver from the same start agrees)
    from scipy.optimize import minimize
    from scipy.special import log_softmax

    from sklcalib.calibration._segment_boosting import fit_rescaling

    rng = np.random.default_rng(2)
    n = 40_000
    eta = rng.normal(0, 2, (n, K))
    a_true, b_true = 0.6, (0.3 if K == 1 else 0.0)
    if K == 1:
        y = (rng.uniform(size=n) < expit(a_true * eta[:, 0] + b_true)).astype(int)
    else:
        P = softmax(a_true * eta, axis=1)
        y = (rng.uniform(size=(n, 1)) > np.cumsum(P, axis=1)).sum(axis=1)
    w = rng.uniform(0.5, 1.5, n)
    w /= w.sum()
    a, b = fit_rescaling(eta, y, w, K == 1)
    assert abs(a - a_true) < 0.03 and abs(b - b_true) < 0.05

    def loss(theta):
        e = theta[0] * eta + (theta[1] if K == 1 else 0.0)
        if K == 1:
            return np.dot(w, np.logaddexp(0, e[:, 0]) - y * e[:, 0])
        return -np.dot(w, log_softmax(e, axis=1)[np.arange(n), y])

    ref = minimize(
        loss,
        np.array([1.0, 0.0]),
        method="Nelder-Mead",
        options={"xatol": 1e-8, "fatol": 1e-12},
    )
    assert loss([a, b]) <= ref.fun + 1e-10


@needs_lightgbm
def test_lightgbm_bins_the_sparse_rows_as_the_dense_ones():
    # the boosting's datasets are built from CSR rows (LightGBM bins a sparse
    # matrix by its nonzeros): the same bins and trees as from the dense
    # rows, missing and zero values of a raw numeric column included
    import lightgbm as lgb

    from sklcalib.calibration._segment_boosting import LightGBMData, boost_lightgbm

    rng = np.random.default_rng(3)
    n = 3000
    codes = rng.integers(-1, 6, n)  # -1: the column's baseline, no indicator
    S = (codes[:, None] == np.arange(6)).astype(float)
    raw = np.round(rng.normal(size=n), 1)  # exact zeros among them
    raw[rng.uniform(size=n) < 0.1] = np.nan
    z = rng.normal(0, 2, size=(n, 1))
    slope = np.where(codes == 2, 0.5, 1.0) + 0.3 * np.nan_to_num(raw > 0)
    y = (rng.uniform(size=n) < expit(slope * z[:, 0])).astype(np.int64)
    features = np.hstack([S, raw[:, None], z])
    sparse_data = LightGBMData(features, z, y, np.ones(n))
    assert sparse_data.X.nnz < features.size / 2
    np.testing.assert_array_equal(sparse_data.X.toarray(), features)

    class Dense(LightGBMData):
        def dataset(self, rows, reference=None):
            return lgb.Dataset(
                features[rows],
                label=y[rows],
                init_score=z[rows, 0],
                reference=reference,
                params=self.params,
                free_raw_data=False,
            )

    order = rng.permutation(n)
    settings = _BOOST_SETTINGS
    got = boost_lightgbm(sparse_data, order[:2000], order[2000:], settings, 1)
    want = boost_lightgbm(
        Dense(features, z, y, np.ones(n)), order[:2000], order[2000:], settings, 1
    )
    assert got[1] == want[1] > 0
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])


@needs_lightgbm
@pytest.mark.parametrize("K", [1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_lightgbm_boosting_is_lightgbms_own_log_loss_boosting(K, weighted):
    # the custom objective (the weighted log-loss's gradients and Hessians,
    # labels and weights read from the data object: the datasets carry
    # neither; a shortcut for unit weights) boosts as LightGBM's own binary /
    # multiclass objective given the labels, the weights and the logits as
    # init_score, the reference here
    import lightgbm as lgb

    from sklcalib.calibration._segment_boosting import LightGBMData, boost_lightgbm

    rng = np.random.default_rng(4 + K)
    n = 3000
    S = (rng.integers(0, 5, n)[:, None] == np.arange(5)).astype(float)
    z = rng.normal(0, 2, (n, K))
    scale = np.where(S[:, 0] > 0, 0.5, 1.2)[:, None]
    if K == 1:
        y = (rng.uniform(size=n) < expit(scale[:, 0] * z[:, 0])).astype(np.int64)
    else:
        P = softmax(scale * z, axis=1)
        y = (P.cumsum(axis=1) < rng.uniform(size=n)[:, None]).sum(axis=1)
    w = rng.uniform(0.2, 3.0, n) if weighted else np.ones(n)
    features = np.hstack([S, z])
    rows = rng.permutation(n)[:2000]
    settings = _BOOST_SETTINGS._replace(validation_fraction=0.0, max_iter=15)
    _, rounds, eta_fit, _ = boost_lightgbm(
        LightGBMData(features, z, y, w), rows, None, settings, 1
    )
    assert rounds == 15
    tr = np.sort(rows)  # the rows' order of the datasets
    params = {
        "objective": "binary" if K == 1 else "multiclass",
        "learning_rate": 0.1,
        "max_depth": 3,
        "num_leaves": 8,
        "min_data_in_leaf": 50,
        "lambda_l2": 1.0,
        "min_sum_hessian_in_leaf": 1.0,
        "force_col_wise": True,
        "deterministic": True,
        "num_threads": 1,
        "verbosity": -1,
    }
    if K > 1:
        params["num_class"] = K
    reference = lgb.train(
        params,
        lgb.Dataset(
            features[tr],
            label=y[tr],
            weight=w[tr],
            init_score=z[tr].ravel(order="F"),
            params={"verbosity": -1},
        ),
        num_boost_round=15,
    )
    want = z[rows] + reference.predict(features[rows], raw_score=True).reshape(-1, K)
    np.testing.assert_allclose(eta_fit, want, rtol=1e-6, atol=1e-6)
    assert np.abs(eta_fit - z[rows]).max() > 0.1  # the rounds moved the logits
    if weighted:  # and the weights count: the same rows unweighted boost otherwise
        _, _, ones, _ = boost_lightgbm(
            LightGBMData(features, z, y, np.ones(n)), rows, None, settings, 1
        )
        assert np.abs(ones - eta_fit).max() > 1e-3


@needs_lightgbm
def test_lightgbm_predicts_on_the_fits_threads(opposite, monkeypatch):
    # LightGBM predicts on every core unless told otherwise: the boosted
    # map's prediction passes the fit's n_jobs
    import lightgbm as lgb

    from sklcalib.calibration._segment_boosting import LightGBMBoost

    (z, y, g), _ = opposite
    seg = SegmentCalibrator(method="boosting", backend="lightgbm").fit(z, y, segments=g)
    assert seg.n_iter_ > 0 and seg.map_.n_jobs == 1
    seen = []
    predict = lgb.Booster.predict

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("num_threads"))
        return predict(self, *args, **kwargs)

    monkeypatch.setattr(lgb.Booster, "predict", spy)
    proba = seg.predict_proba(z[:50], segments=g[:50])
    two = LightGBMBoost(seg.map_.booster, seg.n_iter_, n_jobs=2)
    features = np.hstack(
        [seg._segment_features(g[:50], 50, reset=False)[1], z[:50, None]]
    )
    np.testing.assert_array_equal(
        two.correction(features, 1), seg.map_.correction(features, 1)
    )
    assert seen == [1, 2, 1]
    assert proba.shape == (50, 2)


@needs_lightgbm
@pytest.mark.parametrize("K", [1, 3])
def test_lightgbm_running_scores_are_the_boosters_predictions(K):
    # the folds and the final fit read the corrected logits of the fitted and
    # held-out rows from LightGBM's running scores instead of predicting:
    # they must be the booster's own predictions from the logits, in the
    # callers' row order (shuffled rows), with and without early stopping
    from sklcalib.calibration._segment_boosting import LightGBMData, boost_lightgbm

    rng = np.random.default_rng(K)
    n = 3000
    X = rng.normal(size=(n, 3))
    z = rng.normal(0, 2, size=(n, K))
    scale = np.where(X[:, 0] > 0, 0.5, 1.5)[:, None]
    if K == 1:
        y = (rng.uniform(size=n) < expit(scale[:, 0] * z[:, 0])).astype(np.int64)
    else:
        P = softmax(scale * z, axis=1)
        y = (P.cumsum(axis=1) < rng.uniform(size=n)[:, None]).sum(axis=1)
    features = np.hstack([X, z])
    data = LightGBMData(features, z, y, np.ones(n))
    order = rng.permutation(n)
    fit_rows, eval_rows = order[:2000], order[2000:]
    for fraction in (0.2, 0.0):  # early-stopped, and all the rounds
        settings = _BOOST_SETTINGS._replace(validation_fraction=fraction)
        boost, rounds, eta_fit, eta_eval = boost_lightgbm(
            data, fit_rows, eval_rows, settings, 1
        )
        assert rounds > 0
        np.testing.assert_allclose(
            eta_fit, z[fit_rows] + boost.correction(features[fit_rows], K), atol=1e-9
        )
        np.testing.assert_allclose(
            eta_eval,
            z[eval_rows] + boost.correction(features[eval_rows], K),
            atol=1e-9,
        )


@needs_lightgbm
def test_auto_screens_boosting_out_and_scores_platt_without_refits(opposite):
    # segment-specific slopes and intercepts: the logistic map is the truth,
    # so boosting loses on the first fold and its other folds are not fitted;
    # Platt scaling's leave-one-out score agrees with its 5-fold refits
    (z, y, g), _ = opposite
    seg = SegmentCalibrator(method="auto").fit(z, y, segments=g)
    r = seg.cv_results_
    status = dict(zip(r["candidate"], r["status"], strict=True))
    assert seg.method_ == "logistic"
    assert status["boosting"].startswith("screened out")
    assert np.isnan(r["mean_log_loss"][r["candidate"].index("boosting")])
    refits = SegmentCalibrator(method="auto", global_calibrator=PlattScaler())
    r2 = refits.fit(z, y, segments=g).cv_results_
    platt_alo = r["mean_log_loss"][r["candidate"].index("global (platt)")]
    platt_cv = r2["mean_log_loss"][r2["candidate"].index("global (PlattScaler)")]
    assert abs(platt_alo - platt_cv) < 2e-3 * platt_cv


def test_encoder_fit_transform_is_fit_then_transform():
    from sklcalib.calibration._segment_encoding import SegmentEncoder

    rng = np.random.default_rng(0)
    n = 3000
    cat = rng.choice(
        np.array(["a", "b", "c", "rare"], dtype=object),
        size=n,
        p=[0.5, 0.3, 0.195, 0.005],
    )
    cat[:40] = None
    num = rng.normal(size=n)
    num[:30] = np.nan
    ints = rng.integers(0, 4, size=n)
    # numbers as text (binned: more than 20 of them), and a mix of types
    # whose text coincides ("1" and 1 are one level)
    text = np.array([str(v) for v in rng.integers(0, 60, n)], dtype=object)
    text[::17] = None
    mixed = rng.choice(np.array([1, "1", 2.5, "x", None], dtype=object), size=n)
    columns = np.empty((n, 5), dtype=object)
    columns[:, 0], columns[:, 1], columns[:, 2] = cat, num, ints
    columns[:, 3], columns[:, 4] = text, mixed
    enc = SegmentEncoder(20, 5, 20)
    X, raw_cols = enc.fit_transform(columns, n)
    Y, raw_cols2 = (
        SegmentEncoder(20, 5, 20).fit(columns, n).transform(columns, n, raw=True)
    )
    np.testing.assert_array_equal(X, Y)
    assert raw_cols == raw_cols2
    names = enc.feature_names_
    assert len(set(names)) == len(names)
    assert {"x4=1", "x4=2.5", "x4=x", "x4=missing"} <= set(names)
    assert X[:, names.index("x4=1")].sum() == sum(str(v) == "1" for v in mixed)
    assert sum(n.startswith("x3=bin") for n in names) == 5
    # and the fit keeps no reference to the rows it saw
    assert not enc._fit_codes


@pytest.mark.parametrize("storage", ["pyarrow", "python"])
def test_encoder_reads_pandas_strings_as_their_text(storage):
    # the fit factorises a column of pandas' string dtype as pandas' own
    # array: the same indicators, raw values and names as its object column,
    # numbers as text binned and missing values included
    pd = pytest.importorskip("pandas")
    if storage == "pyarrow":
        pytest.importorskip("pyarrow")
    from sklcalib.calibration._segment_encoding import SegmentEncoder

    rng = np.random.default_rng(5)
    n = 3000
    dtype = pd.StringDtype(storage)
    frame = pd.DataFrame(
        {
            "num": pd.array([f"{v:.2f}" for v in rng.normal(size=n)], dtype=dtype),
            "few": pd.array([str(v) for v in rng.integers(0, 4, n)], dtype=dtype),
            "cat": pd.array(rng.choice(["a", "b", None], n).tolist(), dtype=dtype),
        }
    )
    frame.loc[::11, "num"] = pd.NA
    enc = SegmentEncoder(50, 5, 20, 32)
    X, raw = enc.fit_transform(frame, n)
    ref = SegmentEncoder(50, 5, 20, 32)
    X_ref, raw_ref = ref.fit_transform(frame.astype(object), n)
    np.testing.assert_array_equal(X, X_ref)
    assert raw == raw_ref and enc.feature_names_ == ref.feature_names_
    assert "num=bin0" in enc.feature_names_ and "cat=missing" in enc.feature_names_
    np.testing.assert_array_equal(enc.transform(frame, n, raw=True)[0], X)


def _pairwise(n, seed):
    """A model off by a shift of its logit that depends on two binary columns
    at once (+1 where they agree, -1 where they differ): each column alone
    carries nothing, so a sum of per-column terms cannot repair it."""
    rng = np.random.default_rng(seed)
    a = rng.choice(np.array(["no", "yes"], dtype=object), size=n)
    b = rng.choice(np.array(["off", "on"], dtype=object), size=n)
    z = rng.normal(0, 1.5, size=n)
    shift = np.where((a == "yes") == (b == "on"), 1.0, -1.0)
    y = (rng.uniform(size=n) < expit(z + shift)).astype(int)
    return z, y, np.column_stack([a, b])


def test_pair_cells_repair_a_correction_of_two_columns_at_once():
    z, y, seg = _pairwise(6000, 0)
    cells = np.array([["no", "off"], ["no", "on"], ["yes", "off"], ["yes", "on"]])
    truth = expit(np.array([1.0, -1.0, -1.0, 1.0]))  # at z = 0
    cal = SegmentCalibrator(method="logistic").fit(z, y, segments=seg)
    assert "x0=yes&x1=on" in cal.feature_names_
    got = cal.predict_proba(np.zeros(4), segments=cells)[:, 1]
    np.testing.assert_allclose(got, truth, atol=0.04)
    # without the pairs, the map sees no per-column effect: all near 1/2
    flat = SegmentCalibrator(method="logistic", max_pair_cells=0)
    flat.fit(z, y, segments=seg)
    assert not any("&" in name for name in flat.feature_names_)
    off = flat.predict_proba(np.zeros(4), segments=cells)[:, 1]
    assert np.max(np.abs(off - 0.5)) < 0.08
    zt, yt, st = _pairwise(6000, 1)
    assert (
        _log_loss(yt, cal.predict_proba(zt, segments=st))
        < _log_loss(yt, flat.predict_proba(zt, segments=st)) - 0.05
    )


def test_pair_cells_follow_the_encoder_rules():
    from sklcalib.calibration._segment_encoding import SegmentEncoder

    rng = np.random.default_rng(3)
    n = 2000
    small = rng.choice(np.array(["p", "q"], dtype=object), size=n)
    other = rng.choice(np.array(["u", "v", "w"], dtype=object), size=n)
    many = rng.integers(0, 40, size=n).astype(str).astype(object)
    # the cell (q, w) is rare: no indicator of its own
    other[(small == "q") & (other == "w")] = "v"
    other[np.flatnonzero(small == "q")[:5]] = "w"
    cols = np.column_stack([small, other, many])
    enc = SegmentEncoder(50, 5, 20, max_pair_cells=64)
    X, _ = enc.fit_transform(cols, n)
    pairs = [f for f in enc.feature_names_ if "&" in f]
    # 2 x 3 = 6 cells kept but the rare one; 40 levels times 2 or 3 > 64
    assert sorted(pairs) == sorted(
        f"x0={a}&x1={b}" for a in "pq" for b in "uvw" if (a, b) != ("q", "w")
    )
    at = {f: j for j, f in enumerate(enc.feature_names_)}
    rows = (small == "p") & (other == "u")
    assert np.all(X[rows, at["x0=p&x1=u"]] == 1.0)
    assert np.all(X[~rows, at["x0=p&x1=u"]] == 0.0)
    # a level unseen at fit: no pair indicator on that row, as for the levels
    new = np.array([["p", "zzz", "1"], ["q", "u", "1"]], dtype=object)
    Y = enc.transform(new, 2)
    assert Y[0, [at[f] for f in pairs]].sum() == 0.0
    assert Y[1, at["x0=q&x1=u"]] == 1.0
    assert Y.shape[1] == len(enc.feature_names_)


def test_blend_is_the_mean_of_the_two_maps_logits(opposite):
    (z, y, g), (zt, yt, gt) = opposite
    params = {"backend": "sklearn", "max_iter": 30}
    blend = SegmentCalibrator(method="blend", **params).fit(z, y, segments=g)
    logistic = SegmentCalibrator(method="logistic", **params).fit(z, y, segments=g)
    boosting = SegmentCalibrator(method="boosting", **params).fit(z, y, segments=g)
    p, q = (c.predict_proba(zt, segments=gt) for c in (logistic, boosting))
    mean = 0.5 * (np.log(p[:, 1] / p[:, 0]) + np.log(q[:, 1] / q[:, 0]))
    got = blend.predict_proba(zt, segments=gt)
    assert blend.method_ == "blend"
    np.testing.assert_allclose(got[:, 1], expit(mean), atol=1e-9)
    # the log-sum-exp is convex: every row's loss is at most the mean of the
    # two maps' losses
    rows = [-np.log(r[np.arange(len(yt)), yt]) for r in (got, p, q)]
    assert np.all(rows[0] <= 0.5 * (rows[1] + rows[2]) + 1e-12)


def test_multiclass_blend_repairs_the_top_label():
    (z, y, g), (zt, yt, gt) = _multiclass(4000, 0), _multiclass(4000, 1)
    blend = SegmentCalibrator(method="blend", response="logits")
    proba = blend.fit(z, y, segments=g).predict_proba(zt, segments=gt)
    glob = SegmentCalibrator(method="logistic", response="logits").fit(z, y)
    base = glob.predict_proba(zt)
    assert _log_loss(yt, proba) < _log_loss(yt, base) - 0.02
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def _slope_and_pair_bed(n):
    """A slope per segment of column a and a pair effect of columns a and b
    with 6 x 12 cells (more than the pair indicators take), and the generator
    to draw further from."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 6, size=n)
    b = rng.integers(0, 12, size=n)
    z = rng.normal(0, 2, size=n)
    true = z * (0.6 + 0.15 * a) + np.where((a + b) % 3 == 0, 0.8, -0.2)
    y = (rng.uniform(size=n) < expit(true)).astype(int)
    return z, y, np.column_stack([a, b]).astype(str), rng


@needs_lightgbm
def test_auto_keeps_the_blend_when_trees_add_to_the_logistic_map():
    # a slope per segment (the logistic map's form) and a pair effect of two
    # columns with many cells the pair indicators leave out (6 x 12 > 64):
    # the logistic map and the trees each repair a part, and auto keeps the
    # blend, whose test log-loss is below both maps'
    z, y, seg, _ = _slope_and_pair_bed(12000)
    fit, test = slice(0, 8000), slice(8000, None)
    auto = SegmentCalibrator().fit(z[fit], y[fit], segments=seg[fit])
    assert auto.method_ == "blend", auto.cv_results_["status"]
    losses = {
        m: _log_loss(
            y[test],
            SegmentCalibrator(method=m)
            .fit(z[fit], y[fit], segments=seg[fit])
            .predict_proba(z[test], segments=seg[test]),
        )
        for m in ("logistic", "boosting", "blend")
    }
    assert losses["blend"] < min(losses["logistic"], losses["boosting"])


def test_a_clear_case_takes_the_blend_from_its_first_fold(monkeypatch):
    # the logistic map beats Platt scaling and the raw scores by many
    # standard errors: the boosting is fitted on the first fold only, and
    # auto takes the blend, as it does with every fold fitted
    from sklcalib.calibration import _segment

    z, y, seg, _ = _slope_and_pair_bed(16000)
    quick = SegmentCalibrator().fit(z, y, segments=seg)
    r = quick.cv_results_
    status = dict(zip(r["candidate"], r["status"], strict=True))
    assert quick.method_ == "blend"
    assert "clear case" in status["boosting"] and "clear case" in quick.reason_
    monkeypatch.setattr(_segment, "CLEAR_SE", np.inf)  # never clear
    full = SegmentCalibrator().fit(z, y, segments=seg)
    r = full.cv_results_
    assert full.method_ == "blend"
    assert np.isfinite(r["mean_log_loss"][r["candidate"].index("blend")])
    # the same maps: the final fits do not depend on the folds
    np.testing.assert_allclose(
        quick.predict_proba(z, segments=seg), full.predict_proba(z, segments=seg)
    )


@needs_lightgbm
def test_on_a_large_set_the_blend_replaces_the_logistic_map_by_its_first_fold(
    monkeypatch,
):
    from sklcalib.calibration import _segment

    # the bed of the test above; "large" lowered to its rows: the boosting is
    # fitted on the first fold only, and the blend replaces the logistic map
    # by their paired losses there
    n = 8000
    z, y, seg, rng = _slope_and_pair_bed(n)
    monkeypatch.setattr(_segment, "LARGE_ROWS", 5000)
    auto = SegmentCalibrator().fit(z, y, segments=seg)
    r = auto.cv_results_
    status = dict(zip(r["candidate"], r["status"], strict=True))
    assert status["boosting"].startswith("scored on the first fold only")
    assert auto.method_ == "blend" and "large set" in auto.reason_
    # segments without signal: the logistic map is not even chosen
    noise = rng.integers(0, 3, size=(n, 2)).astype(str)
    y0 = (rng.uniform(size=n) < expit(z)).astype(int)
    assert SegmentCalibrator().fit(z, y0, segments=noise).method_ in (
        "passthrough",
        "global",
    )


def _shift_bed(n, seed, wave=False):
    """Logits N(0, 1.5) off by a small intercept shift per level of the first
    of two four-level columns (or, ``wave``, by a wave of the logit that no
    segment explains: a global miscalibration Platt scaling cannot repair)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 4, size=(n, 2))
    z = rng.normal(0, 1.5, n)
    true = z + (0.6 * np.sin(2 * z) if wave else 0.12 * (g[:, 0] - 1.5))
    y = (rng.uniform(size=n) < expit(true)).astype(int)
    return z, y, g.astype(str)


def _statuses(cal):
    r = cal.cv_results_
    return dict(zip(r["candidate"], r["status"], strict=True))


def test_a_tie_stops_the_boosting_and_the_blend_replaces_the_logistic_map(
    monkeypatch,
):
    # a small shift per segment: on the first two folds neither boosted
    # candidate beats the logistic map by more than a standard error, so the
    # other folds are not fitted; the blend, lower there, replaces the chosen
    # logistic map, the choice of every fold fitted
    from sklcalib.calibration import _segment

    z, y, g = _shift_bed(3000, 1)
    quick = SegmentCalibrator().fit(z, y, segments=g)
    status = _statuses(quick)
    assert status["boosting"].startswith("screened out: on the first 2 folds")
    assert quick.method_ == "blend" and "after a tie" in quick.reason_
    monkeypatch.setattr(_segment, "TIE_FOLDS", np.inf)  # never a tie
    full = SegmentCalibrator().fit(z, y, segments=g)
    assert _statuses(full)["boosting"] == "evaluated"
    assert full.method_ == "blend"
    np.testing.assert_allclose(
        quick.predict_proba(z, segments=g), full.predict_proba(z, segments=g)
    )


def test_the_boosting_faces_the_simpler_maps_when_the_logistic_map_loses():
    # a wave of the logit that no segment explains: the logistic map is no
    # better than the raw scores, so the blend (half of it) gives way to the
    # boosting, whose trees follow the wave
    z, y, g = _shift_bed(3000, 0, wave=True)
    cal = SegmentCalibrator().fit(z, y, segments=g)
    r = cal.cv_results_
    mean = dict(zip(r["candidate"], r["mean_log_loss"], strict=True))
    assert mean["logistic"] >= min(mean["passthrough"], mean["global (platt)"])
    assert _statuses(cal)["blend"] == "evaluated"
    assert cal.method_ == "boosting"
    assert mean["boosting"] < mean["blend"]


def test_a_first_fold_at_round_zero_screens_the_boosting_out():
    # steps far too long: no round improves the first fold's stopping rows,
    # so the boosting there is the rescaled logit, and it and the blend are
    # left out after that fold
    z, y, g = _shift_bed(6000, 2)
    cal = SegmentCalibrator(learning_rate=3.0).fit(z, y, segments=g)
    status = _statuses(cal)
    assert "stopped at round 0" in status["boosting"]
    assert "stopped at round 0" in status["blend"]
    assert cal.method_ == "logistic"
