"""QuadraticScaler and BetaScaler: equal to probmetrics 1.3 and to scikit-learn's
logistic regression, right on data with a known answer, the beta constraints
exact, weights as repeated rows.

Tolerances against probmetrics: it computes ``logit(p)`` of float32
probabilities and stops its solvers early (scikit-learn's L-BFGS at
``tol=1e-4``, SAGA at a relative step of 1e-4), so probabilities agree to
about 1e-4 (L-BFGS) and 1e-3 (SAGA); against scikit-learn run to
``tol=1e-12`` in float64 they agree to 1e-7."""

import warnings

import numpy as np
import pytest
from _helpers import assert_weights_are_repeated_rows, import_probmetrics_calibrators
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from sklcalib.calibration import BetaScaler, QuadraticScaler


def _binary(n, seed, coef=(0.3, 0.7, -0.08)):
    """Scores s and labels drawn from sigmoid(a + b s + c s^2)."""
    rng = np.random.default_rng(seed)
    s = 2 * rng.normal(size=n) + 0.3
    a, b, c = coef
    y = (rng.random(n) < expit(a + b * s + c * s * s)).astype(int)
    return s, y


def _float32_probabilities(s):
    """expit(s) as float32 probabilities (what probmetrics computes on)."""
    return expit(s).astype(np.float32).astype(np.float64)


def _two_columns(p):
    return np.column_stack([1 - p, p])


@pytest.fixture(scope="module")
def probmetrics_calibrators():
    pytest.importorskip(
        "probmetrics", reason="probmetrics 1.3 (the test extra) is the reference"
    )
    calibrators = import_probmetrics_calibrators()  # torchmin's warning filtered
    # Its first RegularizedQuadraticScalingCalibrator compiles the SAGA kernel
    # for each of four penalties, in every worker (11 CPU-s); the tests fit
    # ridge alone, whose kernel the first fit compiles (6 CPU-s).
    calibrators.RegularizedQuadraticScalingCalibrator._warmed_up = True
    return calibrators


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quadratic_equals_probmetrics_unpenalised(probmetrics_calibrators, seed):
    s, y = _binary(2000, seed)
    p = _float32_probabilities(s)
    ours = QuadraticScaler(reg_quadratic=0.0).fit(s, y)
    with warnings.catch_warnings():
        # probmetrics passes penalty=None to scikit-learn's LogisticRegression
        warnings.filterwarnings("ignore", "'penalty' was deprecated", FutureWarning)
        theirs = probmetrics_calibrators.BinaryLogisticCalibrator(type="quadratic")
        theirs.fit(_two_columns(p), y)
    s_test = 2 * np.random.default_rng(seed + 10).normal(size=500)
    np.testing.assert_allclose(
        ours.predict_proba(s_test),
        theirs.predict_proba(_two_columns(_float32_probabilities(s_test))),
        atol=5e-4,
    )


# probmetrics compiles its SAGA kernels with numba on first use (about 20 s
# where its cache cannot be written): with the slow tests
@pytest.mark.slow
@pytest.mark.parametrize(
    ("reg_intercept", "reg_quadratic"), [(5.0, 5.0), (50.0, 200.0), (0.0, 1.0)]
)
def test_quadratic_equals_probmetrics_ridge(
    probmetrics_calibrators, reg_intercept, reg_quadratic
):
    """Our penalties in units of samples on the standardised score are
    probmetrics' ridge strengths on a mean NLL of the raw score."""
    s, y = _binary(2000, 3)
    n = len(s)
    sigma2 = np.mean(s * s)
    ours = QuadraticScaler(reg_intercept=reg_intercept, reg_quadratic=reg_quadratic)
    ours.fit(s, y)
    theirs = probmetrics_calibrators.RegularizedQuadraticScalingCalibrator(
        penalty="ridge",
        lambda_intercept=reg_intercept / n,
        lambda_quadratic=reg_quadratic * sigma2**2 / n,
        print_init_info=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs.fit(_two_columns(_float32_probabilities(s)), y)
    np.testing.assert_allclose(ours.coef_, theirs.w_, atol=3e-3)
    np.testing.assert_allclose(
        ours.predict_proba(s),
        theirs.predict_proba(_two_columns(_float32_probabilities(s))),
        atol=2e-3,
    )


def test_quadratic_equals_sklearn_to_round_off():
    s, y = _binary(3000, 4)
    ours = QuadraticScaler(reg_quadratic=0.0).fit(s, y)
    reference = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10000)
    reference.fit(np.column_stack([s, s * s]), y)
    expected = np.r_[reference.intercept_, reference.coef_.ravel()]
    np.testing.assert_allclose(ours.coef_, expected, rtol=1e-6, atol=1e-8)


def test_quadratic_penalty_is_scale_free():
    """Scaling the scores by 100 rescales b and c and leaves the
    probabilities unchanged: the penalty is on the standardised score."""
    s, y = _binary(300, 5)
    one = QuadraticScaler(reg_intercept=2.0, reg_quadratic=3.0).fit(s, y)
    hundred = QuadraticScaler(reg_intercept=2.0, reg_quadratic=3.0).fit(100 * s, y)
    np.testing.assert_allclose(
        one.predict_proba(s), hundred.predict_proba(100 * s), atol=1e-10
    )


def test_quadratic_known_answer():
    """Labels drawn from sigmoid(0.3 + 0.7 s - 0.08 s^2): with 100000 rows
    the coefficients are recovered to within about three standard errors."""
    s, y = _binary(100000, 6)
    coef = QuadraticScaler().fit(s, y).coef_
    np.testing.assert_allclose(coef, [0.3, 0.7, -0.08], atol=0.03)


def test_quadratic_strong_penalty_is_platt():
    """A huge penalty on the quadratic term leaves Platt scaling of s (with
    the intercept free)."""
    from sklcalib.calibration import PlattScaler

    s, y = _binary(1000, 7)
    quadratic = QuadraticScaler(reg_quadratic=1e12).fit(s, y)
    platt = PlattScaler(C=1e12).fit(s, y)
    np.testing.assert_allclose(
        quadratic.predict_proba(s), platt.predict_proba(s), atol=1e-6
    )


def _beta_data(n, seed, a=2.0, b=0.5, c=0.3):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.001, 0.999, size=n)
    y = (rng.random(n) < expit(a * np.log(p) - b * np.log1p(-p) + c)).astype(int)
    return p, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beta_equals_probmetrics_where_unconstrained(probmetrics_calibrators, seed):
    """probmetrics' beta-feature logistic regression is the same model without
    the constraints a, b >= 0: equal where its fit satisfies them."""
    p, y = _beta_data(3000, seed)
    p = p.astype(np.float32).astype(np.float64)
    ours = BetaScaler().fit(p, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'penalty' was deprecated", FutureWarning)
        theirs = probmetrics_calibrators.BinaryLogisticCalibrator(type="beta")
        theirs.fit(_two_columns(p), y)
    c, a, minus_b = theirs.cal_.coef_.ravel()
    assert a > 0 and -minus_b > 0  # the constraints are inactive here
    # collinear features: their L-BFGS (tol=1e-4) stops a few 1e-3 away in
    # the coefficients, much closer in the probabilities
    np.testing.assert_allclose(ours.coef_, [a, -minus_b, c], atol=1e-2)
    p_test = np.linspace(0.001, 0.999, 300).astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(
        ours.predict_proba(p_test),
        theirs.predict_proba(_two_columns(p_test)),
        atol=5e-4,
    )


def test_beta_equals_sklearn_to_round_off():
    p, y = _beta_data(3000, 3)
    reference = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10000)
    reference.fit(np.column_stack([np.log(p), -np.log1p(-p)]), y)
    expected = np.r_[reference.coef_.ravel(), reference.intercept_]
    np.testing.assert_allclose(BetaScaler().fit(p, y).coef_, expected, rtol=1e-6)


def _constrained_reference(p, y):
    """The constrained NLL minimum by scipy's L-BFGS-B with bounds."""
    X = np.column_stack([np.log(p), -np.log1p(-p), np.ones_like(p)])

    def fun(theta):
        t = X @ theta
        return np.sum(np.logaddexp(0, t) - y * t), X.T @ (expit(t) - y)

    result = minimize(
        fun,
        np.array([1.0, 1.0, 0.0]),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, None), (0, None), (None, None)],
        options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10000},
    )
    return result.x, result.fun


@pytest.mark.parametrize(
    ("a", "b", "c"), [(2.0, -0.8, 0.0), (-0.5, 1.5, 0.2), (-1.0, -1.0, 0.5)]
)
def test_beta_constraints_are_exact(a, b, c):
    """Data whose unconstrained fit breaks a >= 0 or b >= 0: ours is the
    constrained optimum (scipy's bounded L-BFGS-B agrees)."""
    p, y = _beta_data(4000, 8, a=a, b=b, c=c)
    ours = BetaScaler().fit(p, y)
    assert np.all(ours.coef_[:2] >= 0)
    expected, value = _constrained_reference(p, y)
    X = np.column_stack([np.log(p), -np.log1p(-p), np.ones_like(p)])
    t = X @ ours.coef_
    assert np.sum(np.logaddexp(0, t) - y * t) <= value + 1e-7
    np.testing.assert_allclose(ours.coef_, expected, atol=1e-4)


def test_beta_known_answer():
    p, y = _beta_data(100000, 9)
    np.testing.assert_allclose(BetaScaler().fit(p, y).coef_, [2.0, 0.5, 0.3], atol=0.06)


def test_beta_identity_on_calibrated_probabilities():
    """Labels drawn from p itself: a = b = 1, c = 0 (to sampling error)."""
    rng = np.random.default_rng(10)
    p = rng.uniform(0.01, 0.99, size=100000)
    y = (rng.random(len(p)) < p).astype(int)
    np.testing.assert_allclose(BetaScaler().fit(p, y).coef_, [1, 1, 0], atol=0.05)


def test_beta_accepts_zero_and_one():
    p = np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.3, 0.7])
    y = np.array([0, 0, 1, 0, 1, 1, 1, 0])
    proba = BetaScaler().fit(p, y).predict_proba(p)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("cls", [QuadraticScaler, BetaScaler])
def test_integer_weights_are_repeated_rows(cls):
    s, y = _binary(150, 11)
    X = s if cls is QuadraticScaler else expit(s)
    assert_weights_are_repeated_rows(cls(), X, y, atol=1e-8)


@pytest.mark.parametrize("cls", [QuadraticScaler, BetaScaler])
def test_multiclass_targets_are_refused(cls):
    with pytest.raises(ValueError, match="Only binary classification"):
        cls().fit(np.linspace(0.1, 0.9, 9), np.arange(9) % 3)


@pytest.mark.parametrize(
    ("cls", "param", "value"),
    [
        (QuadraticScaler, "reg_intercept", -1.0),
        (QuadraticScaler, "reg_quadratic", np.nan),
        (QuadraticScaler, "max_iter", 0),
        (QuadraticScaler, "tol", "x"),
        (BetaScaler, "reg", -1.0),
        (BetaScaler, "max_iter", 1.5),
        (BetaScaler, "tol", -1.0),
    ],
)
def test_bad_parameters_are_named(cls, param, value):
    with pytest.raises(ValueError, match=param):
        cls(**{param: value}).fit(np.linspace(0.1, 0.9, 8), np.arange(8) % 2)


def test_separated_classes_warn_and_stay_valid():
    from sklearn.exceptions import ConvergenceWarning

    s = np.linspace(-3, 3, 40)
    y = (s > 0).astype(int)
    with pytest.warns(ConvergenceWarning, match="separated"):
        model = QuadraticScaler(reg_quadratic=0.0, max_iter=20).fit(s, y)
    proba = model.predict_proba(s)
    assert np.all(np.isfinite(proba))
    assert np.all(model.predict(s) == y)
    # a penalty on every coefficient keeps BetaScaler finite and converged
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        BetaScaler(reg=1.0).fit(expit(s), y)


@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.01, 500.0),
    st.sampled_from([QuadraticScaler, BetaScaler]),
)
def test_rows_sum_to_one(seed, scale, cls):
    rng = np.random.default_rng(seed)
    s = scale * rng.normal(size=50)
    y = np.r_[0, 1, rng.integers(0, 2, size=48)]
    X = s if cls is QuadraticScaler else expit(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # separable draws warn
        model = cls().fit(X, y)
    s_test = scale * rng.normal(size=30)
    proba = model.predict_proba(s_test if cls is QuadraticScaler else expit(s_test))
    assert np.all(np.isfinite(proba))
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
