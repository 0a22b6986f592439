"""Dirichlet, ensemble temperature, scaling-binning and Venn–ABERS
calibrators against independent references (scipy fits of their objectives,
the authors' packages, brute-force isotonic fits), and
CalibratedClassifier's "passthrough" and default calibrator."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import LinearConstraint, minimize
from scipy.special import log_softmax, softmax
from sklearn.base import clone
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from sklcalib.calibration import (
    CalibratedClassifier,
    DirichletCalibrator,
    EnsembleTemperatureScaler,
    IsotonicCalibrator,
    ScalingBinningCalibrator,
    TemperatureScaler,
    VennAbersCalibrator,
)


def _drawn(n, k, seed, scale=3.0):
    """Over-confident logits: labels drawn from softmax(z / scale)."""
    rng = np.random.default_rng(seed)
    logits = scale * rng.normal(size=(n, k))
    y = np.array([rng.choice(k, p=p) for p in softmax(logits / scale, axis=1)])
    return logits, y


def _nll(y, proba):
    return -np.mean(np.log(proba[np.arange(len(y)), y]))


# --- Dirichlet ---------------------------------------------------------------


def _odir_reference(log_p, y, lam, mu):
    """The ODIR objective written out independently, minimised by scipy's
    BFGS with finite-difference gradients from W = I, b = 0."""
    n, k = log_p.shape

    def objective(params):
        W, b = params[: k * k].reshape(k, k), params[k * k :]
        z = np.einsum("ij,nj->ni", W, log_p) + b
        nll = -np.mean(log_softmax(z, axis=1)[np.arange(n), y])
        off = sum(W[i, j] ** 2 for i in range(k) for j in range(k) if i != j)
        return nll + lam / (k * (k - 1)) * off + mu / k * np.sum(b**2)

    x0 = np.r_[np.eye(k).ravel(), np.zeros(k)]
    result = minimize(objective, x0, method="BFGS", options={"gtol": 1e-9})
    return objective, result


@pytest.mark.parametrize(("lam", "mu"), [(1e-3, None), (0.5, 2.0), (0.0, 0.0)])
def test_dirichlet_reaches_the_odir_minimum_of_scipy(lam, mu):
    logits, y = _drawn(400, 3, seed=0)
    proba = softmax(logits, axis=1)
    fitted = DirichletCalibrator(reg_lambda=lam, reg_mu=mu).fit(proba, y)
    objective, ref = _odir_reference(np.log(proba), y, lam, lam if mu is None else mu)
    ours = objective(np.r_[fitted.coef_.ravel(), fitted.intercept_])
    assert ours <= ref.fun + 1e-9
    np.testing.assert_allclose(fitted.coef_.ravel(), ref.x[:9], atol=2e-4)
    np.testing.assert_allclose(fitted.intercept_, ref.x[9:], atol=2e-4)
    np.testing.assert_allclose(
        fitted.predict_proba(proba),
        softmax(np.log(proba) @ fitted.coef_.T + fitted.intercept_, axis=1),
    )


def test_dirichlet_binary_column_and_zero_probabilities():
    logits, y = _drawn(300, 2, seed=1)
    proba = softmax(logits, axis=1)
    proba[:5] = [1.0, 0.0]  # log 0 -> log of the smallest normal, finite
    one = DirichletCalibrator().fit(proba[:, 1], y)
    two = DirichletCalibrator().fit(proba, y)
    np.testing.assert_allclose(
        one.predict_proba(proba[:, 1]), two.predict_proba(proba), atol=1e-6
    )
    assert np.all(np.isfinite(two.predict_proba(proba)))


def test_dirichlet_regularisation_shrinks_to_the_identity():
    logits, y = _drawn(200, 4, seed=2)
    proba = softmax(logits, axis=1)
    off = ~np.eye(4, dtype=bool)
    weak = DirichletCalibrator(reg_lambda=1e-4).fit(proba, y)
    strong = DirichletCalibrator(reg_lambda=100.0, reg_mu=100.0).fit(proba, y)
    assert np.abs(strong.coef_[off]).max() < np.abs(weak.coef_[off]).max()
    assert np.abs(strong.intercept_).max() < np.abs(weak.intercept_).max()


@pytest.mark.parametrize(
    ("params", "match"),
    [({"reg_lambda": -1e-3}, "reg_lambda"), ({"reg_mu": -1.0}, "reg_mu")],
)
def test_dirichlet_negative_regularisation_is_named(params, match):
    logits, y = _drawn(50, 3, seed=0)
    with pytest.raises(ValueError, match=match):
        DirichletCalibrator(**params).fit(softmax(logits, axis=1), y)


# --- ensemble temperature scaling -------------------------------------------


def test_ets_is_no_worse_than_a_scipy_fit_of_the_mixture():
    logits, y = _drawn(600, 4, seed=3)
    logits = logits * 2  # more over-confident than temperature alone fixes
    ets = EnsembleTemperatureScaler().fit(logits, y)
    assert ets.temperature_ == pytest.approx(
        TemperatureScaler().fit(logits, y).temperature_
    )
    assert np.all(ets.weights_ >= 0)
    assert ets.weights_.sum() == pytest.approx(1.0)

    k = logits.shape[1]
    rows = np.arange(len(y))
    parts = np.column_stack(
        [
            softmax(logits / ets.temperature_, axis=1)[rows, y],
            softmax(logits, axis=1)[rows, y],
            np.full(len(y), 1 / k),
        ]
    )

    def mixture_nll(w):
        return -np.mean(np.log(parts @ w))

    # the exact gradient and Hessian, and the sum as a linear constraint: with
    # quasi-Newton updates (of the objective or of a dict constraint) trust-constr
    # warned "delta_grad == 0.0" once its steps stopped changing the gradient
    def mixture_grad(w):
        return -np.mean(parts / (parts @ w)[:, None], axis=0)

    def mixture_hess(w):
        scaled = parts / (parts @ w)[:, None]
        return scaled.T @ scaled / len(parts)

    ref = minimize(
        mixture_nll,
        np.full(3, 1 / 3),
        jac=mixture_grad,
        hess=mixture_hess,
        method="trust-constr",
        bounds=[(0, 1)] * 3,
        constraints=[LinearConstraint(np.ones((1, 3)), 1.0, 1.0)],
        options={"gtol": 1e-12, "xtol": 1e-12, "maxiter": 5000},
    )
    assert mixture_nll(ets.weights_) <= ref.fun + 1e-9
    assert _nll(y, ets.predict_proba(logits)) == pytest.approx(
        mixture_nll(ets.weights_)
    )


def test_ets_on_calibrated_logits_keeps_them():
    # logits whose labels are drawn from their own softmax: T ~ 1, and the
    # mixture's NLL is at most that of temperature scaling alone
    logits, y = _drawn(3000, 3, seed=4, scale=1.0)
    ets = EnsembleTemperatureScaler().fit(logits, y)
    assert ets.temperature_ == pytest.approx(1.0, abs=0.1)
    ts = TemperatureScaler().fit(logits, y)
    assert (
        _nll(y, ets.predict_proba(logits)) <= _nll(y, ts.predict_proba(logits)) + 1e-12
    )


# --- scaling-binning -----------------------------------------------------------


def test_scaling_binning_matches_uncertainty_calibration():
    calibration = pytest.importorskip("calibration")  # uncertainty-calibration
    from calibration import utils

    logits, y = _drawn(900, 3, seed=5)
    proba = softmax(logits, axis=1)
    proba = np.clip(proba, 1e-5, 1)  # away from both packages' clipping
    proba /= proba.sum(axis=1, keepdims=True)
    ref = calibration.PlattBinnerMarginalCalibrator(len(y), num_bins=10)
    ref.train_calibration(proba, y)
    expected = ref.calibrate(proba)
    ours = ScalingBinningCalibrator(n_bins=10).fit(proba, y)
    columns = []
    for k, model in enumerate(ours.calibrators_):
        platt, edges, _ = model
        # the scaling step: the maximum-likelihood sigmoid of the log-odds
        # (the package's own LogisticRegression stops at tol=1e-4, so it is
        # checked against a tight unpenalised fit)
        log_odds = np.log(proba[:, k] / (1 - proba[:, k]))[:, None]
        tight = LogisticRegression(C=1e12, tol=1e-12, max_iter=10_000)
        tight.fit(log_odds, y == k)
        assert platt.coef_ == pytest.approx(tight.coef_[0, 0], rel=1e-5)
        assert platt.intercept_ == pytest.approx(tight.intercept_[0], abs=1e-5)
        # the binning step, exactly the package's on the same scaled values
        scaled = ours._scaled(platt, proba[:, k])
        bins = utils.get_equal_bins(scaled, num_bins=10)
        np.testing.assert_array_equal(edges, bins)
        np.testing.assert_allclose(
            ours._predict_column(model, proba[:, k]),
            utils.get_discrete_calibrator(scaled, bins)(scaled),
            rtol=1e-12,
        )
        columns.append(ours._predict_column(model, proba[:, k]))
    columns = np.column_stack(columns)
    # end to end: the packages differ by the package's Platt tolerance
    np.testing.assert_allclose(columns, expected, atol=2e-4)
    np.testing.assert_allclose(
        ours.predict_proba(proba), columns / columns.sum(1, keepdims=True)
    )
    assert all(len(np.unique(columns[:, k])) <= 10 for k in range(3))


# --- Venn-ABERS ------------------------------------------------------------------


def _binary(n, seed, decimals=None):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    if decimals is not None:
        p = np.round(p, decimals)  # ties, within and across the two sets
    y = (rng.uniform(size=n) < p**1.5).astype(int)
    return p, y


@pytest.mark.parametrize(("n", "decimals"), [(40, 1), (500, 2), (3000, None)])
def test_venn_abers_matches_the_venn_abers_package(n, decimals):
    venn_abers = pytest.importorskip("venn_abers")
    p, y = _binary(n, seed=n, decimals=decimals)
    t, _ = _binary(2 * n, seed=n + 1, decimals=decimals)
    t = np.r_[t, 0.0, 1.0, p[:10]]
    ref = venn_abers.VennAbers().fit(np.column_stack([1 - p, p]), y)
    ref_proba, ref_interval = ref.predict_proba(np.column_stack([1 - t, t]))
    ours = VennAbersCalibrator().fit(p, y)
    p0, p1 = ours.predict_interval(t)
    np.testing.assert_allclose(p0, ref_interval[:, 0], atol=1e-9, rtol=0)
    np.testing.assert_allclose(p1, ref_interval[:, 1], atol=1e-9, rtol=0)
    np.testing.assert_allclose(ours.predict_proba(t), ref_proba, atol=1e-9, rtol=0)


def _brute_force(p, y, t, label, weights=None):
    """Isotonic regression with the test point added, at the test point."""
    w = np.ones(len(p)) if weights is None else weights
    iso = IsotonicRegression().fit(np.r_[p, t], np.r_[y, label], np.r_[w, 1.0])
    return iso.predict([t])[0]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 12), st.integers(0, 1), st.integers(0, 3)
        ),  # score (few values: ties), label, weight
        min_size=2,
        max_size=30,
    ),
    st.integers(0, 12),
)
def test_venn_abers_is_two_isotonic_fits_per_test_point(rows, test):
    scores = np.array([r[0] for r in rows]) / 12.0
    y = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows], dtype=float)
    if len(np.unique(y)) < 2 or w.sum() == 0 or len(np.unique(y[w > 0])) < 2:
        return
    t = test / 12.0
    if np.any(scores == t):
        return  # ties: the extreme placements are tested against venn-abers
    p0, p1 = VennAbersCalibrator().fit(scores, y, sample_weight=w).predict_interval([t])
    keep = w > 0
    assert p0[0] == pytest.approx(_brute_force(scores[keep], y[keep], t, 0, w[keep]))
    assert p1[0] == pytest.approx(_brute_force(scores[keep], y[keep], t, 1, w[keep]))
    assert p0[0] <= p1[0]


def test_venn_abers_compiled_kernel_equals_the_interpreted_one():
    pytest.importorskip("numba", reason="the compiled kernel needs numba")
    from sklcalib.calibration._venn_abers_core import venn_abers_table

    p, y = _binary(3000, seed=11, decimals=3)
    w = np.random.default_rng(12).integers(0, 3, size=len(y)).astype(float)
    for weights in (None, w):
        compiled = venn_abers_table(p, y, weights, compiled=True)
        interpreted = venn_abers_table(p, y, weights, compiled=False)
        for a, b in zip(compiled, interpreted, strict=True):
            np.testing.assert_array_equal(a, b)


def test_venn_abers_multiclass_is_one_vs_rest_renormalised():
    logits, y = _drawn(600, 3, seed=6)
    proba = softmax(logits, axis=1)
    ours = VennAbersCalibrator().fit(proba, y)
    p0, p1 = ours.predict_interval(proba[:50])
    assert p0.shape == p1.shape == (50, 3)
    for k in range(3):
        binary = VennAbersCalibrator().fit(proba[:, k], (y == k).astype(int))
        low, high = binary.predict_interval(proba[:50, k])
        np.testing.assert_allclose(p0[:, k], low)
        np.testing.assert_allclose(p1[:, k], high)
    merged = p1 / (1 - p0 + p1)
    np.testing.assert_allclose(
        ours.predict_proba(proba[:50]), merged / merged.sum(1, keepdims=True)
    )


def test_venn_abers_is_calibrated_on_data_with_a_known_answer():
    rng = np.random.default_rng(7)
    p = rng.uniform(size=20000)
    y = (rng.uniform(size=20000) < p**2).astype(int)  # true P(y=1|p) = p^2
    va = VennAbersCalibrator().fit(p[:10000], y[:10000])
    grid = np.linspace(0.1, 0.9, 9)
    np.testing.assert_allclose(va.predict_proba(grid)[:, 1], grid**2, atol=0.05)
    p0, p1 = va.predict_interval(grid)
    # an isotonic block holds ~100 of the 10 000 points: width ~1/100
    assert np.all(p0 <= p1) and np.all(p1 - p0 < 0.05)


# --- CalibratedClassifier: default and passthrough ---------------------------


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    return X, y


def test_default_calibrator_is_a_fresh_temperature_scaler(data):
    X, y = data
    a = CalibratedClassifier(LogisticRegression())
    b = CalibratedClassifier(LogisticRegression())
    assert a.calibrator is None
    a.set_params(calibrator=TemperatureScaler(objective="ece"))
    assert b.get_params()["calibrator"] is None  # b's default untouched
    b.fit(X, y)
    assert all(
        type(c) is TemperatureScaler and c.objective == "nll"
        for _, c in b.calibrated_classifiers_
    )
    fresh = CalibratedClassifier(LogisticRegression(), TemperatureScaler()).fit(X, y)
    np.testing.assert_allclose(b.predict_proba(X), fresh.predict_proba(X))


def test_passthrough_returns_the_estimators_probabilities(data):
    X, y = data
    clf = CalibratedClassifier(LogisticRegression(), "passthrough").fit(X, y)
    own = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), own.predict_proba(X))
    np.testing.assert_array_equal(clf.predict(X), own.predict(X))
    assert clf.calibrated_classifiers_[0][1] is None


# isotonic and Venn-ABERS on the ~100 rows per class of a split of a split: the
# calibration check's size warning is expected (the search compares them)
@pytest.mark.filterwarnings(
    "ignore:IsotonicCalibrator has about:sklcalib.calibration.CalibrationWarning",
    "ignore:VennAbersCalibrator has about:sklcalib.calibration.CalibrationWarning",
)
def test_search_compares_calibrators_with_none(data):
    X, y = data
    search = GridSearchCV(
        CalibratedClassifier(LogisticRegression(), cv=3),
        {
            "calibrator": [
                "passthrough",
                None,
                IsotonicCalibrator(),
                VennAbersCalibrator(),
            ]
        },
        scoring="neg_log_loss",
        cv=3,
    ).fit(X, y)
    assert len(search.cv_results_["mean_test_score"]) == 4
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_passthrough_needs_predict_proba(data):
    from sklearn.svm import LinearSVC

    X, y = data
    with pytest.raises(ValueError, match="passthrough"):
        CalibratedClassifier(LinearSVC(), "passthrough").fit(X, y)
    with pytest.raises(
        ValueError, match=r"calibrator: unknown name 'none'.*passthrough"
    ):
        CalibratedClassifier(LogisticRegression(), "none").fit(X, y)


@pytest.mark.parametrize(
    "calibrator",
    [
        DirichletCalibrator(),
        EnsembleTemperatureScaler(),
        ScalingBinningCalibrator(),
        VennAbersCalibrator(),
    ],
    ids=repr,
)
# the calibrators are fitted on a split of a small, easy problem whose logistic
# regression is close to calibrated: the calibration check may warn that a
# flexible one has few rows or does not beat the raw scores; expected here
@pytest.mark.filterwarnings(
    "ignore:VennAbersCalibrator has about:sklcalib.calibration.CalibrationWarning",
    "ignore:ScalingBinningCalibrator has about:sklcalib.calibration.CalibrationWarning",
    "ignore:ScalingBinningCalibrator makes the probabilities worse:"
    "sklcalib.calibration.CalibrationWarning",
)
def test_new_calibrators_inside_calibrated_classifier(data, calibrator):
    X, y = data
    clf = CalibratedClassifier(LogisticRegression(), clone(calibrator), cv=3)
    proba = clf.fit(X, y).predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_venn_abers_out_of_range_slopes_are_reported_not_clipped(monkeypatch):
    # the slopes lie in [0, 1] up to rounding; a computed 1.3 or NaN is a
    # defect to report, which np.clip turned into a plausible probability
    import sklcalib.calibration._venn_abers_core as core

    rng = np.random.default_rng(3)
    p = rng.uniform(size=50)
    y = (rng.uniform(size=50) < p).astype(int)
    slopes = core._gap_slopes
    for bad in (1.3, np.nan, -0.2):

        def broken(*args, bad=bad, **kwargs):
            out = slopes(*args, **kwargs)
            out[len(out) // 2] = bad
            return out

        monkeypatch.setattr(core, "_gap_slopes", broken)
        with pytest.raises(RuntimeError, match=r"Venn-ABERS .* not probabilities"):
            VennAbersCalibrator().fit(p, y)
    # rounding excursions are put back into [0, 1]
    monkeypatch.setattr(
        core, "_gap_slopes", lambda *a, **k: np.clip(slopes(*a, **k), 0, 1) + 1e-13
    )
    va = VennAbersCalibrator().fit(p, y)
    assert va.predict_proba(p).max() <= 1.0


@pytest.mark.parametrize("calibrator", ["BBQCalibrator", "ENIRCalibrator"])
def test_one_vs_rest_output_outside_unit_interval_is_reported(calibrator, monkeypatch):
    import sklcalib.calibration as calibration

    cls = getattr(calibration, calibrator)
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3), size=90)
    y = np.arange(90) % 3
    model = cls().fit(p, y)
    monkeypatch.setattr(cls, "_predict_column", lambda self, m, s: s * 0 + 1.5)
    with pytest.raises(RuntimeError, match=f"{calibrator} returned values"):
        model.predict_proba(p)
