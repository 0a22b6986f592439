"""TemperatureScaler: exact NLL optimum, agreement with scikit-learn's
temperature scaling, the ECE grid search, boundaries and properties."""

import warnings

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, softmax
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_digits, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB

from sklcalib._utils._scores import binary_logits
from sklcalib.calibration import DEFAULT_GRID, TEMPERATURE_BOUNDS, TemperatureScaler
from sklcalib.calibration._temperature import ece_over_grid, fit_temperature_ece
from sklcalib.metrics import expected_calibration_error


def _overconfident_logits(n=2000, n_classes=5, scale=4.0, seed=0):
    """Labels drawn from softmax(z); the model reports scale * z."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, n_classes))
    y = (rng.uniform(size=(n, 1)) > np.cumsum(softmax(z, axis=1), axis=1)).sum(1)
    return scale * z, y


def _nll(logits, y, temperature):
    return -np.mean(log_softmax(logits / temperature, axis=1)[np.arange(len(y)), y])


def _bounded_search_temperature(logits, y):
    """Reference: a tight bounded scalar search on log T."""
    low, high = np.log(TEMPERATURE_BOUNDS)
    result = minimize_scalar(
        lambda log_t: _nll(logits, y, np.exp(log_t)),
        bounds=(low, high),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return np.exp(result.x)


@pytest.mark.parametrize(
    ("n_classes", "scale", "seed"),
    [(2, 3.0, 0), (5, 4.0, 1), (10, 0.5, 2), (3, 20.0, 3)],
)
def test_nll_objective_reaches_the_exact_optimum(n_classes, scale, seed):
    logits, y = _overconfident_logits(n_classes=n_classes, scale=scale, seed=seed)
    fitted = TemperatureScaler().fit(logits, y).temperature_
    reference = _bounded_search_temperature(logits, y)
    np.testing.assert_allclose(fitted, reference, rtol=1e-4)
    # the NLL at our T is not above the reference's (up to rounding)
    assert _nll(logits, y, fitted) <= _nll(logits, y, reference) * (1 + 1e-12)
    # over-confident logits are cooled by about their scale
    if scale > 1:
        assert fitted > 1


def test_agrees_with_scikit_learn_temperature_scaling():
    X, y = make_classification(
        n_samples=1500, n_features=20, n_informative=10, n_classes=4,
        flip_y=0.1, random_state=0,
    )  # fmt: skip
    model = LogisticRegression(C=100.0, max_iter=2000).fit(X[:700], y[:700])
    sk = CalibratedClassifierCV(FrozenEstimator(model), method="temperature")
    sk.fit(X[700:], y[700:])
    sk_temperature = 1.0 / float(sk.calibrated_classifiers_[0].calibrators[0].beta_)
    ours = TemperatureScaler().fit(model.decision_function(X[700:]), y[700:])
    np.testing.assert_allclose(ours.temperature_, sk_temperature, rtol=1e-5)
    np.testing.assert_allclose(
        ours.predict_proba(model.decision_function(X[:700])),
        sk.predict_proba(X[:700]),
        atol=1e-8,
    )


def test_binary_scores_are_logits_zero_and_s():
    X, y = make_classification(n_samples=1200, flip_y=0.2, random_state=1)
    model = LogisticRegression(C=100.0).fit(X[:600], y[:600])
    s = model.decision_function(X[600:])
    one_d = TemperatureScaler().fit(s, y[600:])
    two_cols = TemperatureScaler().fit(np.column_stack([np.zeros_like(s), s]), y[600:])
    np.testing.assert_allclose(one_d.temperature_, two_cols.temperature_, rtol=1e-10)
    assert one_d.n_features_in_ == 1
    np.testing.assert_allclose(
        one_d.predict_proba(s)[:, 1], 1 / (1 + np.exp(-s / one_d.temperature_))
    )
    # scikit-learn uses the logits [-s, s]: the same map, T twice ours
    sk = CalibratedClassifierCV(FrozenEstimator(model), method="temperature")
    sk.fit(X[600:], y[600:])
    sk_temperature = 1.0 / float(sk.calibrated_classifiers_[0].calibrators[0].beta_)
    np.testing.assert_allclose(sk_temperature, 2 * one_d.temperature_, rtol=1e-5)
    np.testing.assert_allclose(
        one_d.predict_proba(s), sk.predict_proba(X[600:]), atol=1e-8
    )


def test_temperature_is_capped_at_the_documented_bounds():
    logits, _ = _overconfident_logits(n=500, n_classes=4)
    # perfectly separable: the NLL keeps falling as T -> 0
    best = np.argmax(logits, axis=1)
    with pytest.warns(ConvergenceWarning, match="lower bound.*held-out"):
        scaler = TemperatureScaler().fit(logits, best)
    assert scaler.temperature_ == TEMPERATURE_BOUNDS[0]
    # anti-informative: the NLL keeps falling as T -> inf
    worst = np.argmin(logits, axis=1)
    with pytest.warns(ConvergenceWarning, match="upper bound.*probability calibrator"):
        scaler = TemperatureScaler().fit(logits, worst)
    assert scaler.temperature_ == TEMPERATURE_BOUNDS[1]


def test_ece_objective_equals_a_brute_force_grid_search():
    logits, y = _overconfident_logits(n=1500, n_classes=4, scale=3.0, seed=5)
    eces = [
        expected_calibration_error(y, softmax(logits / t, axis=1), n_bins=15)
        for t in DEFAULT_GRID
    ]
    expected = DEFAULT_GRID[int(np.argmin(eces))]
    assert TemperatureScaler(objective="ece").fit(logits, y).temperature_ == expected
    assert expected > 1  # the grid search cools over-confident logits too


def test_ece_objective_custom_grid_and_n_bins_and_ties():
    logits, y = _overconfident_logits(n=800, n_classes=3, scale=3.0, seed=6)
    grid = [5.0, 0.5, 2.0, 3.0]  # unsorted on purpose
    eces = {
        t: expected_calibration_error(y, softmax(logits / t, axis=1), n_bins=5)
        for t in grid
    }
    expected = min(sorted(eces), key=eces.get)
    fitted = TemperatureScaler(objective="ece", grid=grid, n_bins=5).fit(logits, y)
    assert fitted.temperature_ == expected
    # constant logits: every T gives the same ECE, the smallest T wins
    flat = np.zeros((60, 3))
    labels = np.arange(60) % 3
    tied = TemperatureScaler(objective="ece", grid=[4.0, 0.7, 2.0]).fit(flat, labels)
    assert tied.temperature_ == 0.7


def _grid_cases():
    """Seeded logits that stress the per-T shortcut: float32, exact and
    one-ulp ties at the maximum, rounded logits, confidences on bin edges,
    binary scores, weights with zeros."""
    for seed in range(24):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(50, 400)), int(rng.choice([2, 3, 10]))
        z = rng.normal(size=(n, k)) * rng.choice([0.01, 1.0, 5.0, 60.0])
        kind = seed % 6
        if kind == 1:
            z = z.astype(np.float32)
        elif kind == 2:  # exact ties and one-ulp gaps at the maximum
            z[::3, 1] = z[::3, 0] = np.maximum(z[::3, 0], z[::3, 1])
            z[1::3, 1] = np.nextafter(z[1::3, 0], np.inf)
        elif kind == 3:  # many ties; flat rows put the confidence on 1 / k
            z = np.round(z, 0)
            z[::5] = 0.0
        elif kind == 4:  # binary decision scores, as the scaler widens them
            z = binary_logits(z[:, :1].astype(rng.choice([np.float32, np.float64])))
        y = rng.integers(0, z.shape[1], n)
        w = None
        if seed % 4 == 1:
            w = rng.exponential(size=n)
            w[rng.uniform(size=n) < 0.2] = 0.0
        grid = DEFAULT_GRID if seed % 3 else np.sort(rng.uniform(0.05, 20, 37))
        yield z, y, w, grid, int(rng.choice([5, 10, 15]))


def test_ece_grid_shortcut_equals_the_metric_to_the_last_bit():
    # the grid search computes only the confidences per T: every ECE must be
    # the metric's own value on softmax(logits / T), bit for bit
    for z, y, w, grid, n_bins in _grid_cases():
        labels = np.arange(z.shape[1])
        reference = [
            expected_calibration_error(
                y,
                softmax(z / t, axis=1),
                n_bins=n_bins,
                labels=labels,
                sample_weight=w,
            )
            for t in grid
        ]
        fast = ece_over_grid(z, y, grid, n_bins, w)
        np.testing.assert_array_equal(fast, reference)
        assert (
            fit_temperature_ece(z, y, grid=grid, n_bins=n_bins, sample_weight=w)
            == (grid[int(np.argmin(reference))])
        )


def test_ece_grid_overflowing_logits_fail_as_the_metric_does():
    z = np.array([[1e308, -1e308], [0.0, 1.0]])
    # (the same message as before the shortcut; overflow warnings silenced)
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="y_prob"):
        ece_over_grid(z, np.array([0, 1]), DEFAULT_GRID, 15)


def y_sorted(indices, scaler):
    return scaler.classes_[indices]


# optima at a temperature bound warn; here that is expected
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@given(
    logits=arrays(
        np.float64,
        st.integers(2, 6).flatmap(lambda k: st.tuples(st.integers(k, 40), st.just(k))),
        elements=st.floats(-1e4, 1e4, allow_nan=False),
    ),
    seed=st.integers(0, 2**16),
)
# a curvature so small that Newton's step overflowed (found by hypothesis)
@example(logits=np.array([[0.0, 746.0], [1.81975227e-158, 0.0]]), seed=0)
def test_predict_proba_keeps_the_argmax_and_sums_to_one(logits, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(len(logits)) % logits.shape[1]  # every class present
    rng.shuffle(y)
    scaler = TemperatureScaler().fit(logits, y)
    assert TEMPERATURE_BOUNDS[0] <= scaler.temperature_ <= TEMPERATURE_BOUNDS[1]
    proba = scaler.predict_proba(logits)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    # the top logit keeps the top probability (a tie only where the logits
    # differ by less than float64 resolves after division by T)
    rows = np.arange(len(logits))
    top = np.argmax(logits, axis=1)
    assert np.all(proba[rows, top] == proba.max(axis=1))
    distinct = np.sort(proba, axis=1)[:, -2] < proba.max(axis=1)
    assert np.array_equal(
        scaler.predict(logits)[distinct], y_sorted(top, scaler)[distinct]
    )


# optima at a temperature bound warn; here that is expected
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_logits_of_magnitude_1e4_give_finite_output():
    logits, y = _overconfident_logits(n=300, n_classes=3, scale=1e4, seed=7)
    for objective in ("nll", "ece"):
        scaler = TemperatureScaler(objective=objective).fit(logits, y)
        proba = scaler.predict_proba(logits)
        assert np.all(np.isfinite(proba)) and np.isfinite(scaler.temperature_)
    nll = TemperatureScaler().fit(logits, y)
    np.testing.assert_allclose(
        nll.temperature_, _bounded_search_temperature(logits, y), rtol=1e-4
    )
    float32 = TemperatureScaler().fit(logits.astype(np.float32), y)
    np.testing.assert_allclose(float32.temperature_, nll.temperature_, rtol=1e-4)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"objective": "brier"}, "objective"),
        ({"n_bins": 0}, "n_bins"),
        ({"n_bins": 2.5}, "n_bins"),
        ({"objective": "ece", "grid": []}, "grid"),
        ({"objective": "ece", "grid": [1.0, -2.0]}, "grid"),
        ({"objective": "ece", "grid": [[1.0, 2.0]]}, "grid"),
    ],
)
def test_invalid_parameters_are_named(params, match):
    logits, y = _overconfident_logits(n=50, n_classes=3)
    scaler = TemperatureScaler(**params)
    with pytest.raises(ValueError, match=match):
        scaler.fit(logits, y)


def test_compiled_kernel_matches_the_numpy_reference():
    pytest.importorskip("numba", reason="the compiled kernel is the 'fast' extra")
    from sklcalib.calibration import _temperature as core
    from sklcalib.calibration._temperature_fused import exp_nonpositive

    rng = np.random.default_rng(8)
    x = -np.abs(rng.normal(size=5000)) * rng.choice([1e-3, 1.0, 30.0, 300.0], 5000)
    x[:3] = [0.0, -700.0, -1e6]
    # below -700 the kernel floors at exp(-700) ~ 1e-304: 0 next to a row's 1
    floored = np.maximum(x, -700.0)
    np.testing.assert_allclose(exp_nonpositive(x), np.exp(floored), rtol=1e-13)
    logits, y = _overconfident_logits(n=3000, n_classes=7, scale=5.0, seed=9)
    logits[0] = 1e4 * np.sign(logits[0])  # extreme rows too
    for beta in (1e-4, 0.2, 1.0, 30.0, 1e4):
        fused = core.nll_derivatives(logits, y, fused=True)(beta)
        reference = core.nll_derivatives(logits, y, fused=False)(beta)
        np.testing.assert_allclose(fused, reference, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        core.fit_temperature_nll(logits, y, fused=True),
        core.fit_temperature_nll(logits, y, fused=False),
        rtol=1e-10,
    )


def test_large_inputs_start_from_a_subsample_and_stay_exact():
    # above 4 * SUBSAMPLE_ROWS rows: subsample start, compiled kernel
    logits, y = _overconfident_logits(n=25_000, n_classes=40, scale=2.5, seed=10)
    fitted = TemperatureScaler().fit(logits, y).temperature_
    np.testing.assert_allclose(
        fitted, _bounded_search_temperature(logits, y), rtol=1e-6
    )


@pytest.mark.parametrize("n, weighted", [(3000, False), (3000, True), (21_000, False)])
def test_the_solver_reports_the_nll_at_one_and_at_the_fit(n, weighted):
    # what the harm check of CalibratedClassifier reads instead of two softmax
    # passes: scikit-learn's log-loss of softmax(z) and of softmax(z / T);
    # 21 000 rows start from a subsample, so T = 1 takes a pass of its own
    from sklearn.metrics import log_loss

    from sklcalib.calibration._temperature_nll import fit_temperature_nll

    logits, y = _overconfident_logits(n=n, n_classes=4, scale=2.5, seed=3)
    w = np.random.default_rng(0).uniform(0, 2, n) if weighted else None
    temperature, (at_one, at_fit) = fit_temperature_nll(
        logits, y, sample_weight=w, return_nll=True
    )
    assert temperature == fit_temperature_nll(logits, y, sample_weight=w)
    labels = np.arange(4)
    np.testing.assert_allclose(
        at_one, log_loss(y, softmax(logits, axis=1), sample_weight=w, labels=labels)
    )
    best = log_loss(
        y, softmax(logits / temperature, axis=1), sample_weight=w, labels=labels
    )
    # the last pass is within 1e-5 relative of the fit: above it by round-off
    # or the squared step
    assert best * (1 - 1e-12) <= at_fit <= best * (1 + 1e-9)
    assert at_fit < at_one  # over-confident logits: the fit gains


# ----------------------------------------------------------------------
# scores a temperature cannot fix are reported, not fitted silently
# ----------------------------------------------------------------------
@pytest.mark.parametrize("objective", ["nll", "ece"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_probabilities_instead_of_logits_warn(objective, dtype):
    logits, y = _overconfident_logits(n=600, n_classes=4, scale=2.0)
    proba = softmax(logits, axis=1).astype(dtype)
    with pytest.warns(UserWarning, match="look like probabilities.*Pass the"):
        TemperatureScaler(objective=objective).fit(proba, y)
    # their logarithm is what to pass: softmax(log p) = p
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted = TemperatureScaler(objective=objective).fit(np.log(proba), y)
    if objective == "nll":
        assert fitted.temperature_ == pytest.approx(2.0, rel=0.15)


def test_gaussian_nb_log_probabilities_warn_at_the_bound():
    # GaussianNB's log-probabilities on digits reach -1e9: the NLL still
    # falls at T = 1e4
    X, y = load_digits(return_X_y=True)
    model = GaussianNB().fit(X[:900], y[:900])
    log_proba = model.predict_log_proba(X[900:1350])
    with pytest.warns(ConvergenceWarning, match="upper bound.*GaussianNB"):
        scaler = TemperatureScaler().fit(log_proba, y[900:1350])
    assert scaler.temperature_ == TEMPERATURE_BOUNDS[1]


def test_ordinary_logits_fit_without_warnings():
    logits, y = _overconfident_logits(n=600, n_classes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for objective in ("nll", "ece"):
            TemperatureScaler(objective=objective).fit(logits, y)
        # one column of binary scores in [0, 1] is a margin, not probabilities
        rng = np.random.default_rng(0)
        s = rng.uniform(size=2000)
        y_binary = rng.uniform(size=2000) < 1 / (1 + np.exp(-s / 0.1))
        fitted = TemperatureScaler().fit(s, y_binary)
    assert fitted.temperature_ == pytest.approx(0.1, rel=0.3)


def test_default_grid_is_read_only():
    # every TemperatureScaler's default: writing to it would change them all
    with pytest.raises(ValueError, match="read-only"):
        DEFAULT_GRID[0] = 5.0
