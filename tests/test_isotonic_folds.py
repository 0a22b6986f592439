"""The isotonic kernel of the harm check and the selection: for every split it
gives the very numbers ``IsotonicCalibrator`` fitted on the split's training
rows predicts on its held-out rows (scikit-learn's IsotonicRegression is the
reference), while sorting each column once for all splits."""

import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold

import sklcalib.calibration._select as select
from sklcalib.calibration import (
    CalibratedClassifier,
    CalibratorSearchCV,
    IsotonicCalibrator,
)
from sklcalib.calibration._isotonic_folds import isotonic_fold_proba


def _bed(seed, n, k, kind):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * rng.uniform(0.5, 3.0)
    if kind == "ties":
        logits = np.round(logits, 1)
    proba = softmax(logits, axis=1)
    if kind == "near ties":
        # scores 4e-16 apart: scikit-learn merges runs of them into thresholds
        # less than its merge gap (1e-15) above the run's first score
        proba[:, -1] = 0.3 + rng.integers(0, 12, size=n) * 4e-16
        rest = proba[:, :-1]
        proba[:, :-1] = rest * (1 - proba[:, -1:]) / rest.sum(axis=1, keepdims=True)
    y = (proba.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return proba, y, rng


@pytest.mark.parametrize("kind", ["plain", "ties", "near ties"])
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("splitter", ["kfold", "shuffle"])
def test_kernel_equals_the_calibrator_fitted_per_split(kind, k, splitter):
    for seed, weighted in [(0, False), (1, True)]:  # weights of 0 included
        proba, y, rng = _bed(seed, 200, k, kind)
        w = rng.choice([0.0, 0.5, 1.0, 2.5], size=len(y)) if weighted else None
        if splitter == "kfold":
            splits = list(
                StratifiedKFold(5, shuffle=True, random_state=seed).split(proba, y)
            )
        else:  # held-out parts that overlap and miss rows: the general path
            splits = list(
                ShuffleSplit(4, test_size=0.3, random_state=seed).split(proba)
            )
        got = isotonic_fold_proba(proba, y, k, w, splits)
        assert got is not None
        for (train, test), held_out in zip(splits, got, strict=True):
            fitted = IsotonicCalibrator().fit(
                proba[train], y[train], None if w is None else w[train]
            )
            np.testing.assert_array_equal(held_out, fitted.predict_proba(proba[test]))
            if k == 2:  # scikit-learn's regression on the positive column
                reference = IsotonicRegression(
                    out_of_bounds="clip", y_min=0.0, y_max=1.0
                ).fit(
                    proba[train, 1],
                    y[train] == 1,
                    sample_weight=None if w is None else w[train],
                )
                np.testing.assert_allclose(
                    held_out[:, 1], reference.predict(proba[test, 1]), atol=1e-12
                )


def test_kernel_leaves_a_split_without_a_class_to_the_calibrator():
    proba, y, _ = _bed(0, 60, 3, "plain")
    y[:5] = 2
    y[5:] = np.where(y[5:] == 2, 0, y[5:])
    splits = [(np.arange(5, 60), np.arange(5)), (np.arange(55), np.arange(55, 60))]
    assert isotonic_fold_proba(proba, y, 3, None, splits) is None


def test_without_scipys_isotonic_regression_every_split_takes_the_general_path(
    monkeypatch,
):
    # scipy < 1.12 (the declared minimum is older) has no isotonic_regression
    from sklcalib.calibration import _isotonic_folds

    proba, y, _ = _bed(0, 60, 3, "plain")
    splits = [(np.arange(30, 60), np.arange(30)), (np.arange(30), np.arange(30, 60))]
    assert isotonic_fold_proba(proba, y, 3, None, splits) is not None
    monkeypatch.setattr(_isotonic_folds, "isotonic_regression", None)
    assert isotonic_fold_proba(proba, y, 3, None, splits) is None


def test_search_table_is_the_same_with_and_without_the_kernel(monkeypatch):
    proba, y, rng = _bed(1, 500, 3, "ties")
    w = rng.uniform(0.5, 2.0, size=len(y))

    def table():
        search = CalibratorSearchCV(["passthrough", "isotonic"], cv=5)
        search.fit(proba, y, sample_weight=w)
        return {
            key: v for key, v in search.cv_results_.items() if key.startswith("split")
        }

    fast = table()
    monkeypatch.setattr(select, "_is_plain_isotonic", lambda candidate: False)
    slow = table()
    assert fast.keys() == slow.keys()
    for key in fast:
        np.testing.assert_array_equal(fast[key], slow[key])


def test_harm_check_on_isotonic_warns_as_before(monkeypatch):
    # isotonic regression on 40 rows of calibrated scores: its held-out
    # probabilities of 0 and 1 make the log-loss worse, and the check says so
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 2))
    y = (rng.random(400) < 1 / (1 + np.exp(-X[:, 0]))).astype(int)
    frozen = FrozenEstimator(LogisticRegression().fit(X[:300], y[:300]))

    def messages():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            CalibratedClassifier(frozen, IsotonicCalibrator(), cv=KFold(5)).fit(
                X[300:340], y[300:340]
            )
        return [str(w.message) for w in caught if "worse" in str(w.message)]

    fast = messages()
    monkeypatch.setattr(select, "_is_plain_isotonic", lambda candidate: False)
    assert fast == messages()
    assert fast  # the check has something to say here
