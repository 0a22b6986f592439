"""Inputs that crashed or misled the calibrators, each fixed and held here:
pandas Series scores, netcal's ENIR on a tiny or separable column (and on a
path that merges every score), a class-weight dict scikit-learn refuses, and
EM's prior on a rare class; and one Platt whatever the input type."""

import numpy as np
import pytest
from scipy.special import expit, logit
from sklearn.base import clone
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from sklcalib.calibration import (
    BetaScaler,
    CalibratedClassifier,
    ENIRCalibrator,
    IsotonicCalibrator,
    PlattScaler,
    PriorCorrection,
    QuadraticScaler,
    SplineCalibrator,
    TemperatureScaler,
)

pd = pytest.importorskip("pandas")


@pytest.mark.parametrize(
    "calibrator",
    [
        QuadraticScaler(),
        BetaScaler(),
        PlattScaler(),
        SplineCalibrator(),
        IsotonicCalibrator(),
        TemperatureScaler(),
    ],
    ids=repr,
)
def test_series_of_scores_fit_and_predict_as_arrays(calibrator):
    # a pandas Series has ndim but no reshape: AttributeError before
    rng = np.random.default_rng(0)
    p = rng.uniform(0.02, 0.98, size=300)
    y = (rng.random(300) < p).astype(int)
    s = logit(p) if calibrator._input == "logits" else p
    on_series = clone(calibrator).fit(pd.Series(s), pd.Series(y))
    on_array = clone(calibrator).fit(s, y)
    np.testing.assert_allclose(
        on_series.predict_proba(pd.Series(s)), on_array.predict_proba(s)
    )


def test_enir_on_two_rows_is_the_isotonic_fit():
    # netcal: "zero-size array to reduction operation minimum" before
    enir = ENIRCalibrator().fit([0.2, 0.8], [0, 1])
    np.testing.assert_allclose(enir.predict_proba([0.1, 0.5, 0.9])[:, 1], [0, 0.5, 1])


def test_enir_on_a_separable_column_is_its_isotonic_fit():
    # labels in score order: the near-isotonic path is the isotonic fit
    rng = np.random.default_rng(1)
    p = np.sort(rng.uniform(size=60))
    y = (p > 0.4).astype(int)
    test = rng.uniform(size=50)
    isotonic = IsotonicRegression(out_of_bounds="clip").fit(p, y).predict(test)
    enir = ENIRCalibrator().fit(p, y)
    np.testing.assert_allclose(enir.predict_proba(test)[:, 1], isotonic)


def test_enir_whose_path_merges_every_score_ends_the_path_there():
    # labels falling with the score (15 rows): the path merges everything
    # into one group, where netcal took a minimum over nothing; the fit ends
    # the path there, as netcal does at any other end of it
    p = np.linspace(0.05, 0.95, 15)
    y = np.r_[np.ones(8, int), np.zeros(7, int)]
    y[[3, 12]] = 1 - y[[3, 12]]
    enir = ENIRCalibrator().fit(p, y)
    out = enir.predict_proba(p)[:, 1]
    assert np.all(np.isfinite(out)) and np.all((out >= 0) & (out <= 1))
    # an ensemble of fits that flatten a falling trend: between the extremes
    assert 0.1 < out.mean() < 0.9


def test_netcal_takes_integer_weights_as_repeated_rows_in_any_order():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=80)
    y = (rng.random(80) < p).astype(int)
    w = rng.integers(0, 4, size=80)
    weighted = ENIRCalibrator().fit(p, y, sample_weight=w)
    order = rng.permutation(int(w.sum()))
    repeated = ENIRCalibrator().fit(np.repeat(p, w)[order], np.repeat(y, w)[order])
    np.testing.assert_array_equal(weighted.predict_proba(p), repeated.predict_proba(p))


def test_class_weight_dict_is_read_as_scikit_learn_reads_it():
    y = np.array([0, 0, 0, 1, 1, 2])
    # a key that is no class while a class has none: scikit-learn refuses it
    with pytest.raises(
        ValueError, match=r"The classes, \[2\], are not in class_weight"
    ):
        PriorCorrection.from_class_weight({0: 1.0, 1: 2.0, 5: 3.0}, y)
    # a class without a key weighs 1, as in scikit-learn's fit
    missing = PriorCorrection.from_class_weight({0: 1.0, 1: 2.0}, y)
    np.testing.assert_allclose(missing.train_prior, np.array([3, 4, 1]) / 8)
    X = np.random.default_rng(0).normal(size=(6, 2))
    LogisticRegression(class_weight={0: 1.0, 1: 2.0}).fit(X, y)  # accepted there
    with pytest.raises(ValueError, match="not in class_weight"):
        LogisticRegression(class_weight={0: 1.0, 1: 2.0, 5: 3.0}).fit(X, y)


def _rare_class(n=2000, seed=3):
    """Three Gaussian classes; the deployment data lacks class 2 entirely."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    x = rng.normal(loc=np.array([-2.0, 0.0])[y])
    means = np.array([-2.0, 0.0, 5.0])
    logp = -0.5 * (x[:, None] - means) ** 2
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    return x, y, p / p.sum(axis=1, keepdims=True)


def test_em_prior_of_an_absent_class_is_held_above_zero_and_said():
    _, _, p = _rare_class()
    with pytest.warns(UserWarning, match=r"less than one row's worth.*\[2\]"):
        corr = PriorCorrection(target_prior="em").fit(p)
    # plain maximum likelihood sends it towards 0 (6e-5 after the thousand
    # steps here, 1e-262 on other data); one pseudo-row per class keeps it at
    # the scale of 1 / (n + K)
    assert 1 / (len(p) + 3) <= corr.target_prior_[2] < 10 / len(p)
    assert np.all(np.isfinite(np.log(corr.predict_proba(p))))


def test_calibrated_classifier_with_em_prior_keeps_a_rare_class():
    # a class of 1 % that the logistic model's probabilities under-state:
    # plain EM sent its prior to about 1e-30 in every fold, and passthrough
    # then predicted it at 1e-29 at most; one pseudo-row per class keeps it
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=3000,
        n_classes=3,
        n_informative=3,
        weights=[0.6, 0.39, 0.01],
        random_state=0,
    )
    clf = CalibratedClassifier(
        LogisticRegression(max_iter=1000),
        "passthrough",
        prior=PriorCorrection(target_prior="em"),
        check_calibration=False,
    )
    with pytest.warns(UserWarning, match=r"less than one row's worth.*\[2\]"):
        clf.fit(X, y)
    proba = clf.predict_proba(X)
    assert np.all(np.isfinite(np.log(proba)))
    assert proba[:, 2].max() > 1e-3


@pytest.mark.parametrize("weighted", [False, True])
def test_platt_in_memory_and_on_dask_is_one_fit(weighted):
    # one solver for both inputs (the in-memory fit was scikit-learn's
    # LogisticRegression, the dask one a Newton loop of its own)
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(4)
    s = 3 * rng.normal(size=3000)
    y = (rng.random(3000) < expit(0.8 * s - 0.3)).astype(int)
    w = rng.uniform(0.5, 2.0, size=3000) if weighted else None
    memory = PlattScaler().fit(s, y, sample_weight=w)
    lazy = PlattScaler().fit(
        da.from_array(s, chunks=700),
        da.from_array(y, chunks=700),
        sample_weight=None if w is None else da.from_array(w, chunks=700),
    )
    assert lazy.coef_ == pytest.approx(memory.coef_, rel=1e-10)
    assert lazy.intercept_ == pytest.approx(memory.intercept_, rel=1e-10, abs=1e-12)
    # the objective is scikit-learn's LogisticRegression's, found independently
    ref = LogisticRegression(C=1e4, tol=1e-12, max_iter=10_000)
    ref.fit(s[:, None], y, sample_weight=w)
    assert memory.coef_ == pytest.approx(ref.coef_[0, 0], rel=1e-6)
    assert memory.intercept_ == pytest.approx(ref.intercept_[0], rel=1e-6)
