"""CalibratedClassifier: folds in parallel (n_jobs), metadata routing as
scikit-learn's CalibratedClassifierCV, and fold estimators missing a class."""

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn import config_context
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, KFold, StratifiedKFold

from sklcalib.calibration import (
    CalibratedClassifier,
    IsotonicCalibrator,
    TemperatureScaler,
)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=300, n_features=6, n_informative=4, n_classes=3,
        n_clusters_per_class=1, random_state=0,
    )  # fmt: skip
    w = np.random.default_rng(0).integers(1, 4, size=len(y)).astype(float)
    return X, y, w


def _clf(estimator, ensemble, **kw):
    return CalibratedClassifier(
        estimator, TemperatureScaler(), cv=3, ensemble=ensemble,
        check_calibration=False, **kw,
    )  # fmt: skip


def _routed_fit(data, ensemble, request):
    """The weighted fit under metadata routing of a LogisticRegression whose
    ``sample_weight`` request is ``request``; returns the estimator and it."""
    X, y, w = data
    with config_context(enable_metadata_routing=True):
        est = LogisticRegression().set_fit_request(sample_weight=request)
        return est, _clf(est, ensemble).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("ensemble", [True, False])
def test_n_jobs_gives_the_same_fit(data, ensemble):
    # the folds on two threads: two worker processes would import
    # scikit-learn and sklcalib (about 7 CPU-s) to check the same order of
    # the results; that a CalibratedClassifier pickled to worker processes
    # fits the same is tests/test_dask.py's cross_val_score on a cluster
    X, y, w = data
    one = _clf(LogisticRegression(), ensemble, n_jobs=1).fit(X, y, sample_weight=w)
    with parallel_backend("threading"):
        two = _clf(LogisticRegression(), ensemble, n_jobs=2)
        two.fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))


@pytest.mark.parametrize("ensemble", [True, False])
def test_routing_requested_weights_match_calibrated_classifier_cv(data, ensemble):
    X, y, w = data
    est, ours = _routed_fit(data, ensemble, True)
    with config_context(enable_metadata_routing=True):
        theirs = CalibratedClassifierCV(
            clone(est), method="temperature", cv=3, ensemble=ensemble
        ).fit(X, y, sample_weight=w)
        np.testing.assert_allclose(
            ours.predict_proba(X), theirs.predict_proba(X), atol=1e-6
        )
    # the weights reached the estimators: unweighted fits differ
    plain = _clf(LogisticRegression(), ensemble).fit(X, y)
    assert np.abs(ours.predict_proba(X) - plain.predict_proba(X)).max() > 1e-4


@pytest.mark.parametrize("ensemble", [True, False])
def test_routing_unset_request_raises_in_both_modes(data, ensemble):
    X, y, w = data
    with config_context(enable_metadata_routing=True):
        with pytest.raises(UnsetMetadataPassedError):
            _clf(LogisticRegression(), ensemble).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("ensemble", [True, False])
def test_routing_declined_weights_reach_only_the_calibrator(data, ensemble):
    X, y, w = data
    _, ours = _routed_fit(data, ensemble, False)
    cv = StratifiedKFold(3)
    if ensemble:
        expected = np.mean(
            [
                TemperatureScaler()
                .fit(m.decision_function(X[te]), y[te], sample_weight=w[te])
                .predict_proba(m.decision_function(X))
                for tr, te in cv.split(X, y)
                for m in [LogisticRegression().fit(X[tr], y[tr])]
            ],
            axis=0,
        )
    else:
        oof = np.empty((len(y), 3))
        for tr, te in cv.split(X, y):
            oof[te] = LogisticRegression().fit(X[tr], y[tr]).decision_function(X[te])
        full = LogisticRegression().fit(X, y)
        expected = (
            TemperatureScaler()
            .fit(oof, y, sample_weight=w)
            .predict_proba(full.decision_function(X))
        )
    np.testing.assert_allclose(ours.predict_proba(X), expected, rtol=1e-8)


@pytest.mark.parametrize("ensemble", [True, False])
def test_groups_are_routed_to_the_splitter(data, ensemble):
    X, y, _ = data
    groups = np.arange(len(y)) % 4
    with config_context(enable_metadata_routing=True):
        ours = CalibratedClassifier(
            LogisticRegression(), TemperatureScaler(), cv=GroupKFold(2),
            ensemble=ensemble, check_calibration=False,
        ).fit(X, y, groups=groups)  # fmt: skip
    splits = list(GroupKFold(2).split(X, y, groups))
    if ensemble:
        for (estimator, _), (train, _) in zip(
            ours.calibrated_classifiers_, splits, strict=True
        ):
            ref = LogisticRegression().fit(X[train], y[train])
            np.testing.assert_allclose(estimator.coef_, ref.coef_)
    else:
        oof = np.empty((len(y), 3))
        for tr, te in splits:
            oof[te] = LogisticRegression().fit(X[tr], y[tr]).decision_function(X[te])
        ((_, calibrator),) = ours.calibrated_classifiers_
        expected = TemperatureScaler().fit(oof, y).temperature_
        np.testing.assert_allclose(calibrator.temperature_, expected, rtol=1e-10)


def test_without_routing_groups_are_refused_by_the_estimator(data):
    X, y, _ = data
    # without routing, fit parameters go to the estimator's fit, as in
    # CalibratedClassifierCV: LogisticRegression has no groups parameter
    with pytest.raises(TypeError, match="groups"):
        _clf(LogisticRegression(), True).fit(X, y, groups=np.zeros(len(y)))


def test_fold_missing_a_class_matches_calibrated_classifier_cv_proba_columns():
    # sorted labels and unshuffled KFold: a training split lacks class 2
    # while every test split holds all classes (the test splits interleave)
    X, y = make_classification(
        n_samples=240, n_features=5, n_informative=3, n_classes=3, random_state=1
    )
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    index = np.arange(len(y))
    train = index[y != 2]
    splits = [(train, index), (index, index)]
    with pytest.warns(UserWarning, match="lacks class"):
        ours = CalibratedClassifier(
            LogisticRegression(), IsotonicCalibrator(), cv=splits,
            check_calibration=False,
        ).fit(X, y)  # fmt: skip
    first = ours.calibrated_classifiers_[0][0]
    # scikit-learn maps the same fold estimator onto the classes: its
    # probability columns are those of classes_ [0, 1], class 2 gets 0
    theirs = CalibratedClassifierCV(
        LogisticRegression(), method="isotonic", cv=splits
    ).fit(X, y)
    assert theirs.calibrated_classifiers_[0].estimator.classes_.tolist() == [0, 1]
    assert first.classes_.tolist() == [0, 1]
    proba = ours.predict_proba(X)
    assert proba.shape == (len(y), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_ensemble_false_needs_a_partition(data):
    X, y, _ = data
    index = np.arange(len(y))
    cv = [(index[:200], index[100:]), (index[100:], index[:150])]
    with pytest.raises(ValueError, match="partition"):
        CalibratedClassifier(
            LogisticRegression(), TemperatureScaler(), cv=cv, ensemble=False
        ).fit(X, y)


@pytest.mark.filterwarnings(
    "ignore:TemperatureScaler has about:sklcalib.calibration.CalibrationWarning"
)
def test_kfold_on_sorted_labels_fits_as_scikit_learn_does(data):
    X, y, _ = data
    order = np.argsort(y, kind="stable")
    # each test split of unshuffled KFold(3) on label-sorted rows holds one or
    # two classes and each training split lacks some: scikit-learn's
    # CalibratedClassifierCV fits, and so does CalibratedClassifier, saying why
    # its probabilities are only partly calibrated
    from sklearn.calibration import CalibratedClassifierCV

    CalibratedClassifierCV(LogisticRegression(), cv=KFold(3)).fit(X[order], y[order])
    with (
        pytest.warns(UserWarning, match=r"a training split lacks class"),
        pytest.warns(UserWarning, match=r"a calibration split lacks class"),
    ):
        clf = CalibratedClassifier(
            LogisticRegression(), TemperatureScaler(), cv=KFold(3)
        ).fit(X[order], y[order])
    proba = clf.predict_proba(X)
    assert proba.shape == (len(y), len(np.unique(y)))
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.filterwarnings(
    "ignore:TemperatureScaler has about:sklcalib.calibration.CalibrationWarning",
    "ignore:a calibration split lacks:UserWarning",
    "ignore:a training split lacks:UserWarning",
)
def test_kfold_with_a_class_in_one_fold_fits_as_scikit_learn_does(data):
    # unshuffled KFold(5) with the rows of one class contiguous: that class is
    # in one held-out part only, so the other parts lack it ("scores has 3
    # columns but y has 2 classes" before); scikit-learn fits, and so do we,
    # each part's calibrator on the classes it holds
    X, y, _ = data
    classes = np.unique(y)
    rare = np.flatnonzero(y == classes[-1])
    order = np.r_[np.setdiff1d(np.arange(len(y)), rare), rare]
    X, y = X[order], y[order]
    CalibratedClassifierCV(LogisticRegression(), cv=KFold(5)).fit(X, y)
    clf = CalibratedClassifier(
        LogisticRegression(), TemperatureScaler(), cv=KFold(5)
    ).fit(X, y)
    proba = clf.predict_proba(X)
    assert np.all(np.isfinite(proba)) and proba.min() > 0
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # the parts that hold the class calibrate it; the others keep the raw
    # probability of the class and calibrate the rest
    kinds = {type(c).__name__ for _, c in clf.calibrated_classifiers_}
    assert kinds == {"PresentClasses", "TemperatureScaler"}
