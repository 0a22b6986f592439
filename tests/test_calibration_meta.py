"""CalibratedClassifier: scikit-learn's CalibratedClassifierCV semantics for
any calibrator, prefit models, grid searches and NetClassifier."""

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import LinearSVC

from sklcalib.calibration import (
    CalibratedClassifier,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScaler,
    PlattScaler,
    TemperatureScaler,
)

# CalibratedClassifier checks each calibrator on its calibration set and warns
# (CalibrationWarning) when the set is small for it or when it makes the
# cross-validated log-loss worse; tests of the fitting mechanics below provoke
# that on purpose and filter it by message
_FEW_ROWS = "ignore:{} has about:sklcalib.calibration.CalibrationWarning"
# a logistic regression's logits are close to calibrated already: a temperature
# fitted on some folds can lose to the raw scores on the others
_NO_GAIN = (
    "ignore:TemperatureScaler makes the probabilities worse:"
    "sklcalib.calibration.CalibrationWarning"
)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=900, n_features=10, n_informative=6, n_classes=3,
        n_clusters_per_class=1, class_sep=0.8, random_state=0,
    )  # fmt: skip
    return X, np.array(["red", "green", "blue"])[y]


@pytest.mark.filterwarnings(_NO_GAIN)
@pytest.mark.parametrize("ensemble", [True, False])
def test_temperature_matches_calibrated_classifier_cv(data, ensemble):
    X, y = data
    model = LogisticRegression(C=100.0, max_iter=2000)
    ours = CalibratedClassifier(model, TemperatureScaler(), cv=3, ensemble=ensemble)
    theirs = CalibratedClassifierCV(
        model, method="temperature", cv=3, ensemble=ensemble
    )
    ours.fit(X, y)
    theirs.fit(X, y)
    assert list(ours.classes_) == list(theirs.classes_)
    assert len(ours.calibrated_classifiers_) == (3 if ensemble else 1)
    np.testing.assert_allclose(
        ours.predict_proba(X), theirs.predict_proba(X), atol=1e-6
    )
    assert np.array_equal(ours.predict(X), theirs.predict(X))


@pytest.mark.filterwarnings(_NO_GAIN)
def test_ensemble_false_fits_one_calibrator_on_out_of_fold_scores(data):
    X, y = data
    model = LogisticRegression(max_iter=2000)
    clf = CalibratedClassifier(model, TemperatureScaler(), cv=4, ensemble=False)
    clf.fit(X, y)
    ((estimator, calibrator),) = clf.calibrated_classifiers_
    oof = cross_val_predict(
        clone(model), X, y, cv=StratifiedKFold(4), method="decision_function"
    )
    expected = TemperatureScaler().fit(oof, y).temperature_
    np.testing.assert_allclose(calibrator.temperature_, expected, rtol=1e-10)
    # the estimator is refitted on all data
    full = clone(model).fit(X, y)
    np.testing.assert_allclose(estimator.coef_, full.coef_)


def test_prefit_model_through_frozen_estimator(data):
    X, y = data
    model = LogisticRegression(C=100.0, max_iter=2000).fit(X[:400], y[:400])
    coef = model.coef_.copy()
    clf = CalibratedClassifier(FrozenEstimator(model), TemperatureScaler(), cv=5)
    clf.fit(X[400:], y[400:])
    # "auto" ensemble is False for a frozen model: all data calibrates it
    ((estimator, calibrator),) = clf.calibrated_classifiers_
    assert estimator.estimator is model
    np.testing.assert_array_equal(model.coef_, coef)  # not refitted
    direct = TemperatureScaler().fit(model.decision_function(X[400:]), y[400:])
    np.testing.assert_allclose(calibrator.temperature_, direct.temperature_)
    np.testing.assert_allclose(
        clf.predict_proba(X[:400]),
        direct.predict_proba(model.decision_function(X[:400])),
    )
    assert clf.n_features_in_ == X.shape[1]


@pytest.mark.filterwarnings(_FEW_ROWS.format("IsotonicCalibrator"))
def test_response_method_follows_the_calibrator(data):
    X, y = data
    binary = y != "blue"
    Xb, yb = X[binary], y[binary]
    model = LogisticRegression(max_iter=2000)
    logits = CalibratedClassifier(model, PlattScaler(), cv=3).fit(Xb, yb)
    # decision_function: one binary score column
    assert all(cal.n_features_in_ == 1 for _, cal in logits.calibrated_classifiers_)
    probs = CalibratedClassifier(model, IsotonicCalibrator(), cv=3).fit(Xb, yb)
    # predict_proba: two probability columns
    assert all(cal.n_features_in_ == 2 for _, cal in probs.calibrated_classifiers_)
    for clf in (logits, probs):
        proba = clf.predict_proba(Xb)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        assert list(clf.classes_) == ["green", "red"]


@pytest.mark.filterwarnings(_FEW_ROWS.format("HistogramBinningCalibrator"))
def test_estimators_without_the_preferred_response(data):
    X, y = data
    # GaussianNB has no decision_function: the log of its probabilities
    nb = CalibratedClassifier(GaussianNB(), MatrixScaler(), cv=3).fit(X, y)
    np.testing.assert_allclose(nb.predict_proba(X).sum(axis=1), 1.0)
    frozen = FrozenEstimator(GaussianNB().fit(X, y))
    direct = CalibratedClassifier(frozen, TemperatureScaler()).fit(X, y)
    log_p = np.log(np.maximum(frozen.predict_proba(X), np.finfo(float).tiny))
    expected = TemperatureScaler().fit(log_p, y).predict_proba(log_p)
    np.testing.assert_allclose(direct.predict_proba(X), expected)
    # LinearSVC has no predict_proba: the softmax of its decision function
    svc = CalibratedClassifier(LinearSVC(), HistogramBinningCalibrator(), cv=3)
    proba = svc.fit(X, y).predict_proba(X)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_calibration_improves_log_loss_of_an_overconfident_model():
    X, y = make_classification(
        n_samples=2000, n_features=20, n_informative=4, flip_y=0.2, random_state=2
    )
    model = LogisticRegression(C=1e4, max_iter=5000)
    raw = model.fit(X[:1000], y[:1000]).predict_proba(X[1000:])
    clf = CalibratedClassifier(model, TemperatureScaler(), cv=5).fit(X[:1000], y[:1000])
    calibrated = clf.predict_proba(X[1000:])

    def nll(p):
        return -np.mean(np.log(p[np.arange(1000), y[1000:]]))

    assert nll(calibrated) < nll(raw)


# 10 bins on the 150 rows per class of a calibration split of a split
@pytest.mark.filterwarnings(_FEW_ROWS.format("HistogramBinningCalibrator"), _NO_GAIN)
def test_grid_search_over_calibrator_and_estimator_parameters(data):
    X, y = data
    clf = CalibratedClassifier(
        LogisticRegression(max_iter=2000), HistogramBinningCalibrator(), cv=3
    )
    search = GridSearchCV(
        clf,
        {"calibrator__n_bins": [5, 10], "estimator__C": [0.1, 1.0]},
        scoring="neg_log_loss",
        cv=2,
    ).fit(X, y)
    assert search.best_params_["calibrator__n_bins"] in (5, 10)
    assert len(search.cv_results_["params"]) == 4
    best = search.best_estimator_
    assert best.calibrator.n_bins == search.best_params_["calibrator__n_bins"]
    assert all(
        cal.n_bins == best.calibrator.n_bins for _, cal in best.calibrated_classifiers_
    )
    # the default calibrator is shared but never fitted in place
    default = CalibratedClassifier(LogisticRegression(max_iter=2000), cv=3).fit(X, y)
    assert not hasattr(default.calibrator, "temperature_")
    assert isinstance(default.calibrated_classifiers_[0][1], TemperatureScaler)


def test_invalid_input_is_named(data):
    X, y = data
    model = LogisticRegression()
    with pytest.raises(ValueError, match="ensemble"):
        CalibratedClassifier(model, ensemble="sometimes").fit(X, y)
    with pytest.raises(ValueError, match="calibrator: unknown name 'temp'"):
        CalibratedClassifier(model, calibrator="temp").fit(X, y)
    with pytest.raises(ValueError, match="estimator"):
        CalibratedClassifier(None).fit(X, y)
    rare = y.copy()
    rare[:2] = "purple"
    with pytest.raises(ValueError, match="only 2 samples"):
        CalibratedClassifier(model, cv=3).fit(X, rare)
    with pytest.raises(ValueError, match="two classes"):
        CalibratedClassifier(model).fit(X, np.full(len(y), "red"))


def test_net_classifier_logits_are_calibrated(data):
    pytest.importorskip("torch", reason="NetClassifier is the optional torch extra")
    from sklcalib.net import NetClassifier

    X, y = data
    X = X.astype(np.float32)
    net = NetClassifier(module__hidden_units=(16,), max_epochs=5, random_state=0)
    net.fit(X[:500], y[:500])
    clf = CalibratedClassifier(FrozenEstimator(net), TemperatureScaler()).fit(
        X[500:], y[500:]
    )
    ((_, calibrator),) = clf.calibrated_classifiers_
    logits = net.decision_function(X[500:])
    assert calibrator.n_features_in_ == logits.shape[1] == 3
    np.testing.assert_allclose(
        clf.predict_proba(X[500:]),
        softmax(logits.astype(np.float64) / calibrator.temperature_, axis=1),
        rtol=1e-6,
    )
    assert list(clf.classes_) == list(net.classes_)


# -- branches of CalibratedClassifier ------------------------------------------


def _three_classes():
    return make_classification(
        n_samples=150, n_features=5, n_informative=3, n_classes=3, random_state=2
    )


def test_estimator_without_scores_is_refused():
    class PredictOnly(LogisticRegression):
        def __getattribute__(self, name):
            if name in ("decision_function", "predict_proba"):
                raise AttributeError(name)
            return super().__getattribute__(name)

    X, y = _three_classes()
    with pytest.raises(ValueError, match="decision_function or a predict_proba"):
        CalibratedClassifier(PredictOnly(), IsotonicCalibrator()).fit(X, y)


# isotonic regression on 150 rows, to compare with a direct fit
@pytest.mark.filterwarnings(_FEW_ROWS.format("IsotonicCalibrator"))
@pytest.mark.parametrize("n_classes", [2, 3])
def test_probability_calibrator_gets_the_softmax_of_decision_scores(n_classes):
    # LinearSVC has no predict_proba: a probability calibrator is fitted on
    # softmax(decision_function) (the sigmoid of a binary margin)
    X, y = make_classification(
        n_samples=150,
        n_features=5,
        n_informative=3,
        n_classes=n_classes,
        random_state=3,
    )
    svc = LinearSVC().fit(X, y)
    scores = svc.decision_function(X)
    if n_classes == 2:
        scores = np.column_stack([np.zeros_like(scores), scores])
    expected = IsotonicCalibrator().fit(softmax(scores, axis=1), y)
    clf = CalibratedClassifier(FrozenEstimator(svc), IsotonicCalibrator()).fit(X, y)
    np.testing.assert_allclose(
        clf.predict_proba(X), expected.predict_proba(softmax(scores, axis=1))
    )


@pytest.mark.filterwarnings(_FEW_ROWS.format("IsotonicCalibrator"))
def test_a_split_missing_a_class_is_named():
    X, y = _three_classes()
    index = np.arange(len(y))
    no_two = index[y != 2]
    # the training split lacks class 2: its estimator is mapped onto all the
    # classes (probability 0 for class 2), as scikit-learn does, with a warning
    with pytest.warns(UserWarning, match=r"lacks class\(es\) \[2\]"):
        clf = CalibratedClassifier(
            LogisticRegression(), IsotonicCalibrator(), cv=[(no_two, index)]
        ).fit(X, y)
    ((estimator, _),) = clf.calibrated_classifiers_
    assert estimator.classes_.tolist() == [0, 1]
    mapped = np.column_stack([estimator.predict_proba(X), np.zeros(len(y))])
    expected = IsotonicCalibrator().fit(mapped, y).predict_proba(mapped)
    np.testing.assert_allclose(clf.predict_proba(X), expected)
    # the held-out split lacks class 2: the calibrator is fitted on the columns
    # of classes 0 and 1 (renormalised), class 2 keeps the estimator's
    # probability and the others share the rest, with a warning
    with pytest.warns(UserWarning, match=r"calibration split lacks class\(es\) \[2\]"):
        clf = CalibratedClassifier(
            LogisticRegression(), IsotonicCalibrator(), cv=[(index, no_two)]
        ).fit(X, y)
    ((estimator, _),) = clf.calibrated_classifiers_
    raw = estimator.predict_proba(X)
    two = raw[no_two][:, :2] / raw[no_two][:, :2].sum(axis=1, keepdims=True)
    iso = IsotonicCalibrator().fit(two, y[no_two])
    expected = raw.copy()
    kept = raw[:, :2].sum(axis=1, keepdims=True)
    expected[:, :2] = iso.predict_proba(raw[:, :2] / kept) * kept
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-12)


def test_check_calibration_docstring_states_the_warning_rule():
    # the parameter's description and the warning's own docstring give one rule
    from sklcalib.calibration import CalibratedClassifier, CalibrationWarning

    text = " ".join(CalibratedClassifier.__doc__.split())
    rule = " ".join(CalibrationWarning.__doc__.split())
    for phrase in (
        "times the standard error of the paired fold differences",
        "1 % of the raw log-loss",
    ):
        assert phrase in rule
        assert phrase in text[text.index("check_calibration :") :]


def test_the_harm_rule():
    # the rule itself (its false-alarm rate on a calibrated model is measured
    # by benchmarks/bench_harm_warning.py): worse than the raw fold log-losses
    # by more than the Student quantile times the standard error of the
    # paired differences, and by more than 1 % of the raw log-loss
    from scipy.stats import t

    from sklcalib.calibration._select import harm_message

    raw = np.array([0.50, 0.52, 0.48, 0.51, 0.49])
    noise = np.array([0.01, -0.01, 0.005, -0.005, 0.0])
    se = noise.std(ddof=1) / np.sqrt(5)
    just_above = t.ppf(0.975, 4) * se * 1.01
    assert harm_message("X", raw + just_above + noise, raw) is not None
    assert harm_message("X", raw + 0.99 * t.ppf(0.975, 4) * se + noise, raw) is None
    # a consistent difference below 1 % of the raw log-loss is not harm
    assert harm_message("X", raw + 0.004, raw) is None
    assert "+0.0060" in harm_message("X", raw + 0.006, raw)
    # leave-one-out replicates: the standard error is folds - 1 times larger
    assert harm_message("X", raw + just_above + noise, raw, jackknife=True) is None
    assert harm_message("X", raw + 4.1 * just_above + noise, raw, jackknife=True)
