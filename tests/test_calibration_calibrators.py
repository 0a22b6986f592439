"""Every calibrator on an over-confident model, against references, and on
bad input."""

import sys

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_softmax, softmax
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from sklcalib.calibration import (
    BBQCalibrator,
    BetaCalibrator,
    BetaScaler,
    DirichletCalibrator,
    ENIRCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScaler,
    PlattScaler,
    QuadraticScaler,
    SMSCalibrator,
    SVSCalibrator,
    TemperatureScaler,
    VectorScaler,
)
from sklcalib.metrics import expected_calibration_error

LOGIT_CALIBRATORS = [TemperatureScaler(), VectorScaler(), MatrixScaler()]
PROBABILITY_CALIBRATORS = [
    HistogramBinningCalibrator(),
    HistogramBinningCalibrator(strategy="quantile"),
    IsotonicCalibrator(),
    BBQCalibrator(),
    ENIRCalibrator(),
    BetaCalibrator(),
]
NETCAL_CALIBRATORS = [BBQCalibrator, ENIRCalibrator, BetaCalibrator]


def _nll(y, proba):
    return -np.mean(np.log(np.maximum(proba[np.arange(len(y)), y], 1e-300)))


@pytest.fixture(scope="module")
def overconfident():
    """An almost unregularised logistic regression on overlapping 3-class
    data, its logits scaled by 3: held-out calibration and test scores."""
    X, y = make_classification(
        n_samples=6000, n_features=20, n_informative=8, n_classes=3,
        n_clusters_per_class=1, flip_y=0.0, class_sep=0.7, random_state=0,
    )  # fmt: skip
    model = LogisticRegression(C=1e4, max_iter=5000).fit(X[:2000], y[:2000])
    logits = 3.0 * model.decision_function(X[2000:])
    return {
        "cal": (logits[:2000], y[2000:4000]),
        "test": (logits[2000:], y[4000:]),
    }


def _scores(calibrator, logits):
    return logits if calibrator._input == "logits" else softmax(logits, axis=1)


@pytest.mark.parametrize(
    "calibrator",
    LOGIT_CALIBRATORS + PROBABILITY_CALIBRATORS,
    ids=lambda c: repr(c),
)
def test_every_calibrator_lowers_held_out_ece(calibrator, overconfident):
    (cal_logits, y_cal), (test_logits, y_test) = (
        overconfident["cal"],
        overconfident["test"],
    )
    before = expected_calibration_error(y_test, softmax(test_logits, axis=1))
    assert before > 0.1  # the model is clearly over-confident
    calibrator = clone(calibrator).fit(_scores(calibrator, cal_logits), y_cal)
    proba = calibrator.predict_proba(_scores(calibrator, test_logits))
    after = expected_calibration_error(y_test, proba)
    assert after < before
    if isinstance(
        calibrator, TemperatureScaler | HistogramBinningCalibrator | IsotonicCalibrator
    ):
        assert after < before / 2
    if isinstance(calibrator, VectorScaler | MatrixScaler):
        assert _nll(y_test, proba) < _nll(y_test, softmax(test_logits, axis=1))


def test_platt_lowers_binary_ece():
    X, y = make_classification(n_samples=4000, flip_y=0.2, random_state=3)
    model = LogisticRegression(C=1e4).fit(X[:1000], y[:1000])
    s = 4.0 * model.decision_function(X[1000:])
    (s_cal, y_cal), (s_test, y_test) = (s[:1500], y[1000:2500]), (s[1500:], y[2500:])
    before = expected_calibration_error(y_test, expit(s_test))
    platt = PlattScaler().fit(s_cal, y_cal)
    after = expected_calibration_error(y_test, platt.predict_proba(s_test))
    assert after < before / 2


def test_platt_is_the_maximum_likelihood_sigmoid():
    rng = np.random.default_rng(0)
    s = 1000 * rng.normal(size=500)  # large scores: standardised internally
    y = (rng.uniform(size=500) < expit(0.002 * s - 0.5)).astype(int)

    def nll(params):
        t = params[0] * s / 1000 + params[1]
        return np.mean(np.logaddexp(0, t) - y * t)

    a, b = minimize(nll, [1.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    platt = PlattScaler().fit(s, y)
    np.testing.assert_allclose(
        [platt.coef_ * 1000, platt.intercept_], [a, b], rtol=1e-3
    )
    # two-column logits use their difference
    two = PlattScaler().fit(np.column_stack([-s / 2, s / 2]), y)
    np.testing.assert_allclose(two.coef_, platt.coef_, rtol=1e-6)
    with pytest.raises(ValueError, match="Only binary"):
        PlattScaler().fit(np.ones((6, 3)), [0, 1, 2, 0, 1, 2])


def _finite_difference_check(calibrator, n_classes=3):
    """The analytic NLL gradient: the fit reaches a stationary point."""
    rng = np.random.default_rng(1)
    z = 2 * rng.normal(size=(400, n_classes))
    y = (rng.uniform(size=(400, 1)) > np.cumsum(softmax(z / 2, 1), 1)).sum(1)
    calibrator.fit(z, y)
    return z, y


def test_vector_scaling_reaches_the_nll_minimum():
    scaler = VectorScaler()
    z, y = _finite_difference_check(scaler)

    def nll(params):
        return _nll(y, softmax(z * params[:3] + params[3:], axis=1))

    fitted = np.r_[scaler.coef_, scaler.intercept_]
    # central differences of the NLL vanish at the fitted parameters
    for i in range(6):
        step = np.zeros(6)
        step[i] = 1e-5
        slope = (nll(fitted + step) - nll(fitted - step)) / 2e-5
        assert abs(slope) < 1e-5
    # the target-agnostic truth here is w = 1/2, b = 0 (labels ~ softmax(z/2))
    np.testing.assert_allclose(scaler.coef_, 0.5, atol=0.15)


@pytest.mark.parametrize("reg", [0.0, 0.1])
def test_matrix_scaling_reaches_the_penalised_nll_minimum(reg):
    scaler = MatrixScaler(reg=reg)
    z, y = _finite_difference_check(scaler)
    off = ~np.eye(3, dtype=bool)

    def objective(params):
        W, b = params[:9].reshape(3, 3), params[9:]
        return _nll(y, softmax(z @ W.T + b, axis=1)) + reg * np.sum(W[off] ** 2)

    fitted = np.r_[scaler.coef_.ravel(), scaler.intercept_]
    for i in range(12):
        step = np.zeros(12)
        step[i] = 1e-5
        slope = (objective(fitted + step) - objective(fitted - step)) / 2e-5
        assert abs(slope) < 1e-5
    if reg > 0:  # the penalty shrinks the off-diagonal terms
        unpenalised = MatrixScaler().fit(z, y).coef_
        assert np.sum(scaler.coef_[off] ** 2) < np.sum(unpenalised[off] ** 2)


def test_isotonic_matches_scikit_learn_one_vs_rest():
    rng = np.random.default_rng(2)
    proba = softmax(3 * rng.normal(size=(300, 3)), axis=1)
    y = np.array([rng.choice(3, p=p) for p in softmax(np.log(proba) / 3, axis=1)])
    iso = IsotonicCalibrator().fit(proba, y)
    columns = np.column_stack(
        [
            IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)
            .fit(proba[:, k], y == k)
            .predict(proba[:, k])
            for k in range(3)
        ]
    )
    expected = columns / columns.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(iso.predict_proba(proba), expected)


def test_one_vs_rest_all_zero_rows_become_uniform():
    # each class is seen only at p_k >= 0.5 and not seen up to p_k = 0.45, so
    # every isotonic regression is 0 on (1/3, 1/3, 1/3): a row of zeros
    proba = np.array([[0.5, 0.45, 0.05], [0.05, 0.5, 0.45], [0.45, 0.05, 0.5]])
    y = np.array(["a", "b", "c"])
    iso = IsotonicCalibrator().fit(proba, y)
    middle = np.full((1, 3), 1 / 3)
    assert [m.predict(middle[:, 0])[0] for m in iso.calibrators_] == [0, 0, 0]
    np.testing.assert_allclose(iso.predict_proba(middle), 1 / 3)
    np.testing.assert_allclose(iso.predict_proba(proba), np.eye(3))


def test_histogram_binning_frequencies_and_empty_bins():
    p1 = np.array([0.05, 0.1, 0.15, 0.6, 0.7, 0.95, 0.9, 0.99])
    y = np.array([0, 0, 1, 1, 0, 1, 1, 1])
    hb = HistogramBinningCalibrator(n_bins=4).fit(p1, y)
    # bins (0, .25] (.25, .5] (.5, .75] (.75, 1]: frequencies 1/3, empty, 1/2, 1
    np.testing.assert_allclose(hb.bin_values_[0], [1 / 3, 0.375, 0.5, 1.0])
    np.testing.assert_allclose(
        hb.predict_proba(np.array([0.0, 0.25, 0.3, 0.75, 1.0]))[:, 1],
        [1 / 3, 1 / 3, 0.375, 0.5, 1.0],
    )
    quantile = HistogramBinningCalibrator(n_bins=2, strategy="quantile").fit(p1, y)
    edges = quantile.bin_edges_[0]
    assert edges[0] == 0 and edges[-1] == 1 and len(edges) == 3
    # median edge 0.65: (0, .65] holds y 0, 0, 1, 1; (.65, 1] holds 0, 1, 1, 1
    np.testing.assert_allclose(quantile.bin_values_[0], [0.5, 0.75])


def test_netcal_adapters_are_clone_safe():
    # that importing them loads neither netcal nor torch: test_package.py
    bbq = BBQCalibrator(score_function="AIC")
    assert clone(bbq).get_params() == {"score_function": "AIC", "equal_intervals": True}
    assert not hasattr(bbq, "calibrators_")


@pytest.mark.parametrize("cls", NETCAL_CALIBRATORS)
def test_netcal_missing_names_the_extra(cls, monkeypatch):
    monkeypatch.setitem(sys.modules, "netcal", None)
    monkeypatch.delitem(sys.modules, "netcal.binning", raising=False)
    monkeypatch.delitem(sys.modules, "netcal.scaling", raising=False)
    with pytest.raises(ImportError, match=r'pip install "sklcalib\[netcal\]"'):
        cls().fit(np.array([0.2, 0.8, 0.4, 0.6]), [0, 1, 0, 1])


@pytest.mark.parametrize("cls", NETCAL_CALIBRATORS)
def test_netcal_output_is_silenced_locally(cls, monkeypatch, capfd):
    # netcal prints progress and warnings: they must not reach the terminal,
    # and silencing them must not swap the process's sys.stdout/sys.stderr
    # (another thread printing meanwhile would lose its output)
    streams = []
    original = cls._make_netcal

    def spy(self, netcal_module):
        model = original(self, netcal_module)
        fit = model.fit

        def recording_fit(*args, **kwargs):
            streams.append((sys.stdout, sys.stderr))
            return fit(*args, **kwargs)

        model.fit = recording_fit
        return model

    monkeypatch.setattr(cls, "_make_netcal", spy)
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(3), size=150)
    before = (sys.stdout, sys.stderr)
    cls().fit(p, np.arange(150) % 3)
    assert streams and all(s == before for s in streams)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_netcal_warnings_become_python_warnings():
    # a column whose class never occurs: netcal prints "WARNING: ..." (the
    # adapters no longer hand netcal such a column: it calibrates to 0)
    from sklcalib.calibration._netcal import netcal_quietly

    p = np.random.default_rng(2).uniform(size=60)
    with netcal_quietly("binning", "BBQCalibrator") as binning:
        with pytest.warns(UserWarning, match="netcal: Not all class labels"):
            binning.BBQ().fit(p, np.zeros(60, dtype=np.int64))


@pytest.mark.parametrize("cls", NETCAL_CALIBRATORS)
def test_netcal_binary_matches_netcal(cls):
    import netcal.binning
    import netcal.scaling

    rng = np.random.default_rng(4)
    p1 = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p1**2).astype(np.int64)
    native = {
        BBQCalibrator: netcal.binning.BBQ,
        ENIRCalibrator: netcal.binning.ENIR,
        BetaCalibrator: netcal.scaling.BetaCalibration,
    }[cls]()
    native.fit(p1.copy(), y)
    ours = cls().fit(p1, np.where(y == 1, "yes", "no"))
    # the adapter hands netcal the rows sorted by score (netcal's fits depend
    # on their order through its sums, at round-off)
    np.testing.assert_allclose(
        ours.predict_proba(p1)[:, 1], native.transform(p1.copy()), atol=1e-6
    )
    order = np.argsort(p1)
    native.fit(p1[order], y[order])
    np.testing.assert_allclose(
        ours.predict_proba(p1)[:, 1], native.transform(p1.copy()), rtol=1e-12
    )
    assert list(ours.classes_) == ["no", "yes"]


ALL = [*LOGIT_CALIBRATORS, *PROBABILITY_CALIBRATORS, PlattScaler()]


def _valid(calibrator, n=30):
    rng = np.random.default_rng(0)
    k = 2 if isinstance(calibrator, PlattScaler) else 3
    logits = rng.normal(size=(n, k))
    y = np.arange(n) % k
    # scores that carry information about y (the true class's logit is raised):
    # on pure noise TemperatureScaler's best T is infinite and it warns so
    logits[np.arange(n), y] += 1.0
    return _scores(calibrator, logits), y


@pytest.mark.parametrize("calibrator", ALL, ids=lambda c: repr(c))
def test_bad_input(calibrator):
    calibrator = clone(calibrator)
    X, y = _valid(calibrator)
    with pytest.raises(NotFittedError):
        calibrator.predict_proba(X)
    with pytest.raises(NotFittedError):
        calibrator.predict(X)
    for bad in (np.nan, np.inf, -np.inf):
        broken = X.copy()
        broken[3, 1] = bad
        with pytest.raises(ValueError, match=r"NaN|infinity"):
            calibrator.fit(broken, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        calibrator.fit(X, y[:-1])
    with pytest.raises(ValueError, match="at least two classes"):
        calibrator.fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match=r"0 sample|empty"):
        calibrator.fit(X[:0], y[:0])
    calibrator.fit(X, y)
    broken = X.copy()
    broken[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        calibrator.predict_proba(broken)
    with pytest.raises(ValueError, match="features"):
        calibrator.predict_proba(np.hstack([X, X[:, :1]]))
    if not isinstance(calibrator, PlattScaler):
        two = X[:, :2] / (
            1 if calibrator._input == "logits" else X[:, :2].sum(1, keepdims=True)
        )
        with pytest.raises(ValueError, match="columns but y has"):
            clone(calibrator).fit(two, y)


@pytest.mark.parametrize("calibrator", PROBABILITY_CALIBRATORS, ids=lambda c: repr(c))
def test_probability_calibrators_reject_non_probabilities(calibrator):
    X, y = _valid(calibrator)
    with pytest.raises(ValueError, match="scores contains values greater than 1"):
        clone(calibrator).fit(X * 2, y)
    with pytest.raises(ValueError, match="scores contains negative values"):
        clone(calibrator).fit(X - 0.5, y)
    with pytest.raises(ValueError, match="sum to 1"):
        clone(calibrator).fit(X * 0.9, y)
    fitted = clone(calibrator).fit(X, y)
    with pytest.raises(ValueError, match="greater than 1"):
        fitted.predict_proba(X * 2)
    # one-column binary probabilities are not checked for a row sum
    binary = clone(calibrator).fit(X[:, 0], y % 2)
    assert binary.predict_proba(X[:, 0]).shape == (len(X), 2)


# logits of magnitude 1e4 on purpose: MatrixScaler's L-BFGS may stop on a
# failed line search there and says so; the test asks for finite output only
@pytest.mark.filterwarnings(
    "ignore:MatrixScaler did not converge:sklearn.exceptions.ConvergenceWarning"
)
@pytest.mark.parametrize("calibrator", [*LOGIT_CALIBRATORS, PlattScaler()], ids=repr)
def test_logits_of_magnitude_1e4_are_finite(calibrator):
    rng = np.random.default_rng(3)
    k = 2 if isinstance(calibrator, PlattScaler) else 4
    logits = 1e4 * rng.normal(size=(200, k))
    y = np.argmax(logits + 1e4 * rng.gumbel(size=(200, k)), axis=1)
    fitted = clone(calibrator).fit(logits, y)
    proba = fitted.predict_proba(logits)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(np.isfinite(log_softmax(np.log(np.maximum(proba, 1e-300)), axis=1)))


@pytest.mark.parametrize(
    ("calibrator", "match"),
    [
        (HistogramBinningCalibrator(n_bins=0), "n_bins"),
        (HistogramBinningCalibrator(strategy="kmeans"), "strategy"),
        (MatrixScaler(reg=-1.0), "reg"),
        (VectorScaler(max_iter=0), "max_iter"),
        (PlattScaler(C=0), "C"),
        (BBQCalibrator(score_function="XIC"), "score_function"),
        (ENIRCalibrator(quick_init="yes"), "quick_init"),
    ],
    ids=repr,
)
def test_invalid_parameters_are_named(calibrator, match):
    X, y = _valid(calibrator)
    with pytest.raises(ValueError, match=match):
        calibrator.fit(X, y)


@pytest.mark.parametrize("cls", NETCAL_CALIBRATORS)
def test_netcal_print_and_tqdm_restored_after_fit(cls):
    # netcal is silenced only while sklcalib runs it: netcal used directly
    # afterwards prints and shows its progress bars as it always does
    import builtins

    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(3), size=90)
    cls().fit(p, np.arange(90) % 3).predict_proba(p)
    modules = [m for n, m in sys.modules.items() if n.split(".")[0] == "netcal"]
    assert modules
    for module in modules:
        assert getattr(module, "print", builtins.print) is builtins.print
        bar = vars(module).get("tqdm")
        assert bar is None or isinstance(bar, type) or callable(bar)
        assert not hasattr(bar, "keywords"), module.__name__  # no partial left


def test_beta_calibrator_fits_from_threads_agree():
    # netcal/pyro keep global state: concurrent fits must be serialised
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(6)
    datasets = []
    for k in range(8):
        p = rng.dirichlet(np.ones(3) * (k + 1), size=200)
        datasets.append((p, rng.integers(0, 3, size=200)))
    serial = [BetaCalibrator().fit(p, y).predict_proba(p) for p, y in datasets]

    def fit(data):
        p, y = data
        return BetaCalibrator().fit(p, y).predict_proba(p)

    for _ in range(3):
        with ThreadPoolExecutor(max_workers=4) as pool:
            threaded = list(pool.map(fit, datasets))
        for a, b in zip(serial, threaded, strict=True):
            np.testing.assert_array_equal(a, b)


def _every_calibrator():
    import sklcalib.calibration as calibration

    classes = [getattr(calibration, name) for name in calibration.__all__]
    return [c() for c in classes if isinstance(c, type) and hasattr(c, "_input")]


@pytest.mark.parametrize("calibrator", _every_calibrator(), ids=repr)
def test_torch_tensors_that_require_grad_are_detached(calibrator):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    binary = not calibrator.__sklearn_tags__().classifier_tags.multi_class
    k = 2 if binary else 3
    logits = 2 * rng.normal(size=(120, k))
    y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)
    X = logits if calibrator._input == "logits" else softmax(logits, axis=1)
    if isinstance(calibrator, PlattScaler):
        X = X[:, 1] - X[:, 0]
    tensor = torch.tensor(X, requires_grad=True)
    weights = {}
    if not isinstance(calibrator, tuple(NETCAL_CALIBRATORS)):  # no weights
        weights = {"sample_weight": torch.ones(120, dtype=torch.float64)}
        weights["sample_weight"].requires_grad_(True)
    fitted = clone(calibrator).fit(tensor, torch.tensor(y), **weights)
    reference = clone(calibrator).fit(X, y, **{k: np.ones(120) for k in weights})
    np.testing.assert_array_equal(
        fitted.predict_proba(tensor), reference.predict_proba(X)
    )


@pytest.mark.parametrize(
    "cls",
    [
        VectorScaler,
        MatrixScaler,
        BetaScaler,
        QuadraticScaler,
        DirichletCalibrator,
        SMSCalibrator,
        SVSCalibrator,
    ],
)
@pytest.mark.parametrize(
    ("param", "bad"),
    [
        ("max_iter", 0),
        ("max_iter", True),
        ("max_iter", 2.5),
        ("tol", -1.0),
        ("tol", np.nan),
        ("tol", "1e-8"),
    ],
)
# the valid max_iter=1 of the last fit stops before convergence, as it should
@pytest.mark.filterwarnings(
    r"ignore:\w+ did not converge in max_iter=1 :sklearn.exceptions.ConvergenceWarning"
)
def test_iterative_calibrators_check_max_iter_and_tol_at_fit(cls, param, bad):
    # one shared check: the same refusals, each naming the parameter
    p = np.random.default_rng(0).uniform(0.05, 0.95, size=40)
    y = np.arange(40) % 2
    with pytest.raises(ValueError, match=param):
        cls(**{param: bad}).fit(p, y)
    cls(**{param: 1}).fit(p, y)  # and a valid value fits


@pytest.mark.parametrize(
    ("calibrator", "advice"),
    [
        (VectorScaler(max_iter=1), "L-BFGS iterations); increase max_iter."),
        (MatrixScaler(max_iter=1), "increase max_iter or reg."),
        (SMSCalibrator(max_iter=1), "increase max_iter or the lambda_"),
        (SVSCalibrator(max_iter=1), "increase max_iter or the lambda_"),
        (DirichletCalibrator(max_iter=1), "steps; increase max_iter or reg_lambda."),
        (QuadraticScaler(max_iter=1), "steps: the classes are (nearly) separated"),
        (BetaScaler(max_iter=1), "steps: the classes are (nearly) separated"),
    ],
    ids=repr,
)
def test_solver_limit_warns_once_at_the_callers_line(calibrator, advice):
    # one wording from the shared solver module (the iteration limit, then
    # what it means or what to change), shown at the user's call
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    binary = isinstance(calibrator, QuadraticScaler | BetaScaler)
    k = 2 if binary else 3
    logits = 4 * rng.normal(size=(300, k))
    y = np.array([rng.choice(k, p=p) for p in softmax(logits / 2, axis=1)])
    X = logits if calibrator._input == "logits" else softmax(logits, axis=1)
    with pytest.warns(ConvergenceWarning) as record:
        calibrator.fit(X, y)
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith(f"{type(calibrator).__name__} did not converge in ")
    assert "max_iter=1 Newton steps" in message
    assert advice in message
    assert record[0].filename == __file__
