"""SMSCalibrator and SVSCalibrator: equal to probmetrics 1.3, right on data
with a known answer, weights as repeated rows, valid probabilities always.

Tolerance against probmetrics: its SMS/SVS work in float32 and stop BFGS at
torchmin's default gradient tolerance (1e-5 on the penalised mean NLL), so
the fitted probabilities agree to a few 1e-3, not to round-off. What is exact
is checked exactly: the temperature of step 1, and that our penalised
objective, evaluated in float64 at both fits, is never above theirs (ours is
the better minimiser of the same problem)."""

import warnings

import numpy as np
import pytest
from _helpers import assert_weights_are_repeated_rows, import_probmetrics_calibrators
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import log_softmax, softmax
from sklearn.base import clone

from sklcalib.calibration import SMSCalibrator, SVSCalibrator
from sklcalib.calibration._sms import mixed_log_probabilities

#: largest difference of a probability from probmetrics' (see module docstring)
PROBMETRICS_ATOL = 5e-3


def _problem(n, k, seed=0, scale=2.0, temperature=2.0):
    """Logits and labels drawn from softmax(A z / temperature + c): a map SMS
    can represent, with a temperature it must find."""
    rng = np.random.default_rng(seed)
    z = scale * rng.normal(size=(n, k)) + rng.normal(size=k)
    A = np.eye(k) + 0.2 * rng.normal(size=(k, k))
    c = 0.5 * rng.normal(size=k)
    truth = softmax(z @ A.T / temperature + c, axis=1)
    y = (truth.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return z, y, truth, (A, c)


def _objective(x, y, W, b, strengths_W, strength_b):
    """Penalised mean NLL of softmax(x W^T + b), in float64."""
    k = x.shape[1]
    nll = -np.mean(log_softmax(x @ W.T + b, axis=1)[np.arange(len(y)), y])
    return nll + np.sum(strengths_W * (W - np.eye(k)) ** 2) + strength_b * b @ b


def _sms_strengths(n, k):
    s = np.full((k, k), k * (k - 1) / n)
    np.fill_diagonal(s, k / n)
    return s, k / n


def _fit_both(ours_cls, their_cls, z, y, **params):
    """Our calibrator fitted on the logits, probmetrics' on their softmax."""
    ours = ours_cls(**params).fit(z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = their_cls(**params).fit(softmax(z, axis=1), y)
    return ours, theirs


def _assert_same_probabilities(ours, theirs, z):
    """The same probabilities on logits z, to probmetrics' optimiser accuracy."""
    np.testing.assert_allclose(
        ours.predict_proba(z),
        theirs.predict_proba(softmax(z, axis=1)),
        atol=PROBMETRICS_ATOL,
    )


@pytest.fixture(scope="module")
def probmetrics_calibrators():
    pytest.importorskip(
        "probmetrics", reason="probmetrics 1.3 (the test extra) is the reference"
    )
    calibrators = import_probmetrics_calibrators()  # torchmin's warning filtered
    return calibrators.SMSCalibrator, calibrators.SVSCalibrator


@pytest.mark.parametrize(("n", "k", "seed"), [(300, 3, 0), (1500, 5, 1), (800, 2, 2)])
def test_sms_equals_probmetrics(probmetrics_calibrators, n, k, seed):
    TheirSMS, _ = probmetrics_calibrators
    z, y, _, _ = _problem(n, k, seed)
    ours, theirs = _fit_both(SMSCalibrator, TheirSMS, z, y)
    # step 1: the same temperature (their bisection reaches float32 accuracy)
    their_temperature = 1.0 / theirs.ts_.cal_.invtemp_
    assert ours.temperature_ == pytest.approx(their_temperature, rel=1e-6)
    # the same probabilities on new logits, to their optimiser's accuracy
    _assert_same_probabilities(ours, theirs, _problem(400, k, seed + 10)[0])
    # unit weights: the same fit (weights count rows: n of them)
    unit = SMSCalibrator().fit(z, y, sample_weight=np.ones(n))
    _assert_same_probabilities(unit, theirs, _problem(400, k, seed + 10)[0])
    # and the same problem, which we solve at least as well
    x = mixed_log_probabilities(z, ours.temperature_, 1.0 / (n + 1))
    strengths = _sms_strengths(n, k)
    ours_value = _objective(x, y, ours.coef_, ours.intercept_, *strengths)
    theirs_value = _objective(x, y, theirs.W_[:, :k], theirs.W_[:, k], *strengths)
    assert ours_value <= theirs_value + 1e-12


@pytest.mark.parametrize(("n", "k", "seed"), [(300, 3, 0), (1500, 6, 1)])
def test_svs_equals_probmetrics(probmetrics_calibrators, n, k, seed):
    _, TheirSVS = probmetrics_calibrators
    z, y, _, _ = _problem(n, k, seed)
    ours, theirs = _fit_both(SVSCalibrator, TheirSVS, z, y)
    _assert_same_probabilities(ours, theirs, _problem(400, k, seed + 10)[0])
    unit = SVSCalibrator().fit(z, y, sample_weight=np.ones(n))
    _assert_same_probabilities(unit, theirs, _problem(400, k, seed + 10)[0])
    x = mixed_log_probabilities(z, ours.temperature_, 1.0 / (n + 1))
    strengths = (np.diag(np.full(k, k / n)), k / n)
    ours_value = _objective(x, y, np.diag(ours.coef_), ours.intercept_, *strengths)
    theirs_value = _objective(x, y, np.diag(theirs.v_), theirs.b_, *strengths)
    assert ours_value <= theirs_value + 1e-12


def test_sms_penalty_parameters_match_probmetrics(probmetrics_calibrators):
    """Non-default strengths and exponents map one to one."""
    TheirSMS, _ = probmetrics_calibrators
    params = dict(
        lambda_intercept=3.0,
        lambda_diagonal=0.5,
        lambda_off_diagonal=10.0,
        rho=0.5,
        tau=0.75,
    )
    z, y, _, _ = _problem(600, 4, 3)
    ours, theirs = _fit_both(SMSCalibrator, TheirSMS, z, y, **params)
    _assert_same_probabilities(ours, theirs, z)


@pytest.mark.parametrize("cls", [SMSCalibrator, SVSCalibrator])
def test_known_answer_large_sample(cls):
    """Labels drawn from softmax(z / 2 + c): with 20000 rows the calibrated
    probabilities are close to the truth and their test NLL to the true
    model's (the family holds the truth up to the small mixture)."""
    rng = np.random.default_rng(5)
    n, k = 20000, 4
    z = 3 * rng.normal(size=(2 * n, k))
    c = np.array([0.5, -0.5, 0.0, 0.3])
    truth = softmax(z / 2 + c, axis=1)
    y = (truth.cumsum(axis=1) > rng.random((2 * n, 1))).argmax(axis=1)
    model = cls().fit(z[:n], y[:n])
    proba = model.predict_proba(z[n:])
    assert np.mean(np.abs(proba - truth[n:])) < 0.01
    rows = np.arange(n)
    nll_model = -np.mean(np.log(proba[rows, y[n:]]))
    nll_truth = -np.mean(np.log(truth[n:][rows, y[n:]]))
    nll_raw = -np.mean(log_softmax(z[n:], axis=1)[rows, y[n:]])
    assert nll_model < nll_truth + 0.005
    assert nll_raw > nll_truth + 0.1  # the raw logits were badly calibrated


def test_sms_recovers_an_off_diagonal_map():
    """A map with off-diagonal structure: SMS beats SVS on held-out NLL and
    comes close to the truth (SMS maps log-probabilities, not the logits the
    labels were drawn from, so the truth is near, not in, its family)."""
    z, y, truth, _ = _problem(30000, 4, 7)
    n = 15000
    sms = SMSCalibrator().fit(z[:n], y[:n])
    svs = SVSCalibrator().fit(z[:n], y[:n])
    rows = np.arange(len(y) - n)

    def nll(proba):
        return -np.mean(np.log(proba[rows, y[n:]]))

    assert nll(sms.predict_proba(z[n:])) < nll(svs.predict_proba(z[n:]))
    assert nll(sms.predict_proba(z[n:])) < nll(truth[n:]) + 0.02


@pytest.mark.parametrize("cls", [SMSCalibrator, SVSCalibrator])
def test_integer_weights_are_repeated_rows(cls):
    z, y, _, _ = _problem(200, 3, 11)
    weighted, repeated = assert_weights_are_repeated_rows(cls(), z, y, atol=1e-8)
    assert weighted.epsilon_ == repeated.epsilon_


@pytest.mark.parametrize("cls", [SMSCalibrator, SVSCalibrator])
def test_strong_penalty_is_temperature_scaling(cls):
    """Huge penalties pin the map at the identity: temperature scaling of the
    mixed probabilities."""
    z, y, _, _ = _problem(500, 3, 12)
    model = cls(lambda_intercept=1e9, lambda_diagonal=1e9).set_params(
        **({"lambda_off_diagonal": 1e9} if cls is SMSCalibrator else {})
    )
    model.fit(z, y)
    expected = np.exp(mixed_log_probabilities(z, model.temperature_, model.epsilon_))
    np.testing.assert_allclose(model.predict_proba(z), expected, atol=1e-6)


def test_binary_scores_are_logits_zero_s():
    z, y, _, _ = _problem(400, 2, 13)
    s = z[:, 1] - z[:, 0]
    for cls in (SMSCalibrator, SVSCalibrator):
        one = cls().fit(s, y)
        two = cls().fit(np.column_stack([np.zeros_like(s), s]), y)
        np.testing.assert_allclose(
            one.predict_proba(s), two.predict_proba(np.column_stack([0 * s, s]))
        )


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("lambda_intercept", -1.0),
        ("lambda_diagonal", np.nan),
        ("lambda_off_diagonal", -0.1),
        ("rho", "a"),
        ("tau", np.inf),
        ("max_iter", 0),
        ("tol", -1.0),
    ],
)
def test_bad_parameters_are_named(param, value):
    z, y, _, _ = _problem(50, 3)
    for cls in (SMSCalibrator, SVSCalibrator):
        if param not in cls().get_params():
            continue
        with pytest.raises(ValueError, match=param):
            cls(**{param: value}).fit(z, y)


def test_non_convergence_warns():
    from sklearn.exceptions import ConvergenceWarning

    z, y, _, _ = _problem(300, 3)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        SMSCalibrator(max_iter=1, tol=0.0).fit(z, y)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 5),
    st.floats(0.01, 300.0),
    st.sampled_from([SMSCalibrator, SVSCalibrator]),
)
def test_rows_sum_to_one_and_are_finite(seed, k, scale, cls):
    """Any logits, from nearly flat to 1e3-sized: valid probabilities, and
    never a zero (the mixture keeps every class possible)."""
    rng = np.random.default_rng(seed)
    z = scale * rng.normal(size=(60, k))
    y = np.r_[np.arange(k), rng.integers(0, k, size=60 - k)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # temperature at its bound on odd draws
        model = clone(cls()).fit(z, y)
    proba = model.predict_proba(scale * rng.normal(size=(40, k)))
    assert np.all(np.isfinite(proba))
    assert np.all(proba > 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


def test_many_classes_use_lbfgs_and_agree_with_newton():
    """Above 1000 parameters (SMS with 32 classes) L-BFGS replaces Newton:
    forcing Newton on the same problem gives the same fit."""
    import sklcalib._utils._solvers as solvers

    z, y, _, _ = _problem(3000, 32, 14)
    y[:32] = np.arange(32)  # every class seen
    lbfgs = SMSCalibrator().fit(z, y)
    assert lbfgs.n_iter_ > 5  # quasi-Newton iterations, not Newton steps
    limit = solvers.NEWTON_MAX_PARAMS
    try:
        solvers.NEWTON_MAX_PARAMS = 10**6
        newton = SMSCalibrator().fit(z, y)
    finally:
        solvers.NEWTON_MAX_PARAMS = limit
    np.testing.assert_allclose(
        lbfgs.predict_proba(z), newton.predict_proba(z), atol=1e-5
    )
