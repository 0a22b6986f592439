"""PriorCorrection: a known prior shift undone exactly (Bayes' rule on
Gaussian classes), class weights undone exactly (a saturated logistic model),
and EM's prior equal to the likelihood's maximum with one pseudo-row per
class and near the truth."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import minimize
from scipy.special import softmax
from scipy.stats import norm
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from sklcalib.calibration import (
    CalibratedClassifier,
    IsotonicCalibrator,
    PriorCorrection,
    TemperatureScaler,
)

MEANS = np.array([-1.5, 0.0, 1.5])


def _posteriors(x, prior):
    """Exact posteriors of unit-variance Gaussian classes under ``prior``."""
    joint = norm.pdf(x[:, None], loc=MEANS) * prior
    return joint / joint.sum(axis=1, keepdims=True)


def _sample(n, prior, seed):
    rng = np.random.default_rng(seed)
    y = rng.choice(len(prior), size=n, p=prior)
    return rng.normal(MEANS[y], 1.0), y


def test_a_known_prior_shift_is_undone_exactly():
    x = np.linspace(-4, 4, 101)
    train, target = np.array([0.6, 0.3, 0.1]), np.array([0.1, 0.2, 0.7])
    corr = PriorCorrection(train_prior=train, target_prior=target)
    got = corr.fit(_posteriors(x, train), [0, 1, 2] * 33 + [0, 1]).predict_proba(
        _posteriors(x, train)
    )
    np.testing.assert_allclose(got, _posteriors(x, target), rtol=1e-12)
    np.testing.assert_allclose(corr.ratio_, target / train)


def test_binary_one_column_and_logit_shift():
    p = np.array([0.2, 0.5, 0.9])
    corr = PriorCorrection(train_prior=[1, 1], target_prior=[3, 1]).fit(p, [0, 1, 1])
    odds = p / (1 - p) / 3  # prior odds 1 -> 1/3
    np.testing.assert_allclose(corr.predict_proba(p)[:, 1], odds / (1 + odds))
    logit = np.log(p / (1 - p))
    np.testing.assert_allclose(
        corr.shift_logits(logit), np.log(odds), rtol=1e-12, atol=1e-12
    )


def test_class_weights_are_undone_exactly_on_a_saturated_model():
    # one categorical feature, one-hot and unpenalised: each cell's fitted
    # probability is the (weighted) class frequency in the cell, so the
    # correction of the weighted fit is the unweighted fit to solver tolerance
    rng = np.random.default_rng(0)
    cell = rng.integers(0, 4, size=3000)
    rate = np.array([0.05, 0.1, 0.2, 0.4])[cell]
    y = (rng.uniform(size=3000) < rate).astype(int)
    X = cell[:, None]

    def model(**kw):
        return make_pipeline(
            OneHotEncoder(),
            LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000, **kw),
        )

    weighted = model(class_weight="balanced").fit(X, y)
    plain = model().fit(X, y)
    corr = PriorCorrection.from_class_weight("balanced", y)
    assert corr.train_prior == [0.5, 0.5]
    p_w = weighted.predict_proba(X)
    corrected = corr.fit(p_w, y).predict_proba(p_w)
    assert np.abs(p_w - plain.predict_proba(X)).max() > 0.2  # a real shift
    np.testing.assert_allclose(corrected, plain.predict_proba(X), atol=1e-6)
    # scale_pos_weight: the same correction for the same weights
    w = (y == 0).sum() / (y == 1).sum()
    spw = PriorCorrection.from_scale_pos_weight(w, y)
    np.testing.assert_allclose(spw.train_prior, [0.5, 0.5])
    np.testing.assert_allclose(spw.target_prior, corr.target_prior)


def test_em_recovers_a_known_prior_and_is_the_likelihood_maximum():
    train, target = np.array([1 / 3, 1 / 3, 1 / 3]), np.array([0.15, 0.25, 0.6])
    x, _ = _sample(20_000, target, 1)
    p = _posteriors(x, train)
    corr = PriorCorrection(train_prior=train, target_prior="em").fit(p)
    assert corr.n_iter_ > 1
    # near the truth (sampling error of 20 000 rows: ~0.005)
    np.testing.assert_allclose(corr.target_prior_, target, atol=0.015)

    # equal to the maximum of the likelihood plus one pseudo-row per class
    # (log prior_k each: the mode under a uniform Dirichlet(2) prior), found
    # independently
    def penalised_nll(theta):
        prior = softmax(theta)
        return -np.log((p * prior / train).sum(axis=1)).sum() - np.log(prior).sum()

    res = minimize(penalised_nll, np.zeros(3), method="BFGS", options={"gtol": 1e-8})
    np.testing.assert_allclose(corr.target_prior_, softmax(res.x), atol=1e-6)
    # the corrected probabilities are the posteriors under the estimate
    np.testing.assert_allclose(
        corr.predict_proba(p), _posteriors(x, corr.target_prior_), rtol=1e-9
    )


def test_target_fit_is_the_label_frequencies():
    x, y = _sample(500, np.array([0.2, 0.3, 0.5]), 2)
    p = _posteriors(x, np.full(3, 1 / 3))
    corr = PriorCorrection().fit(p, y)
    np.testing.assert_allclose(corr.target_prior_, np.bincount(y) / len(y))
    np.testing.assert_allclose(corr.train_prior_, np.full(3, 1 / 3))


def test_pipeline_step_and_prior_option_of_calibrated_classifier():
    x, y = _sample(3000, np.array([0.7, 0.2, 0.1]), 3)
    p = _posteriors(x, np.full(3, 1 / 3))
    pipe = make_pipeline(PriorCorrection(), IsotonicCalibrator()).fit(p, y)
    manual = IsotonicCalibrator().fit(PriorCorrection().fit_transform(p, y), y)
    corrected = PriorCorrection().fit(p, y).predict_proba(p)
    np.testing.assert_allclose(pipe.predict_proba(p), manual.predict_proba(corrected))

    # CalibratedClassifier(prior=...): a frozen model trained on balanced
    # classes, corrected to the calibration data's frequencies
    X = x[:, None]
    model = LogisticRegression(class_weight="balanced").fit(X, y)
    frozen = FrozenEstimator(model)
    only = CalibratedClassifier(
        frozen, "passthrough", prior=PriorCorrection(), check_calibration=False
    ).fit(X, y)
    expected = PriorCorrection().fit(model.predict_proba(X), y)
    np.testing.assert_allclose(
        only.predict_proba(X), expected.predict_proba(model.predict_proba(X))
    )
    # a logit calibrator after the correction sees the shifted logits
    temp = CalibratedClassifier(
        frozen, TemperatureScaler(), prior=PriorCorrection(), check_calibration=False
    ).fit(X, y)
    shifted = expected.shift_logits(model.decision_function(X))
    direct = TemperatureScaler().fit(shifted, y)
    np.testing.assert_allclose(temp.predict_proba(X), direct.predict_proba(shifted))
    # and the correction lowers the log-loss of the balanced model
    from sklearn.metrics import log_loss

    assert log_loss(y, only.predict_proba(X)) < log_loss(y, model.predict_proba(X))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"train_prior": [1, 1]}, "one value per class"),
        ({"train_prior": [1, 0, 1]}, "positive"),
        ({"target_prior": "guess"}, "target_prior"),
        ({"train_prior": "balanced"}, "train_prior"),
        ({"max_iter": 0}, "max_iter"),
    ],
)
def test_bad_parameters_are_named(kwargs, match):
    p = np.full((6, 3), 1 / 3)
    with pytest.raises(ValueError, match=match):
        PriorCorrection(**kwargs).fit(p, [0, 1, 2, 0, 1, 2])


def test_fit_without_labels_needs_em_or_a_given_target():
    p = np.full((4, 2), 0.5)
    with pytest.raises(ValueError, match="needs y"):
        PriorCorrection().fit(p)
    corr = PriorCorrection(target_prior=[0.2, 0.8]).fit(p)
    assert corr.classes_.tolist() == [0, 1]
    assert clone(corr).get_params() == corr.get_params()


def test_prior_option_in_ensemble_mode_matches_the_fold_by_fold_recipe():
    from sklearn.model_selection import StratifiedKFold

    x, y = _sample(900, np.array([0.7, 0.2, 0.1]), 4)
    X = x[:, None]
    model = LogisticRegression(class_weight="balanced")
    clf = CalibratedClassifier(
        model, TemperatureScaler(), cv=3, prior=PriorCorrection(),
        check_calibration=False,
    ).fit(X, y)  # fmt: skip
    expected = 0
    for train, test in StratifiedKFold(3).split(X, y):
        est = clone(model).fit(X[train], y[train])
        prior = PriorCorrection().fit(est.predict_proba(X[test]), y[test])
        temp = TemperatureScaler().fit(
            prior.shift_logits(est.decision_function(X[test])), y[test]
        )
        expected = expected + temp.predict_proba(
            prior.shift_logits(est.decision_function(X))
        )
    np.testing.assert_allclose(clf.predict_proba(X), expected / 3, rtol=1e-9)


_priors = st.lists(
    st.floats(min_value=0.01, max_value=1.0), min_size=3, max_size=3
).map(lambda v: np.asarray(v) / np.sum(v))


@given(
    logits=hnp.arrays(
        np.float64, (5, 3), elements=st.floats(min_value=-20, max_value=20)
    ),
    train=_priors,
    target=_priors,
)
def test_correction_properties(logits, train, target):
    # a probability vector out, the identity for equal priors, and the way
    # back undoes the way there
    p = softmax(logits, axis=1)
    y = [0, 1, 2, 0, 1]
    there = PriorCorrection(train_prior=train, target_prior=target).fit(p, y)
    q = there.predict_proba(p)
    np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(q >= 0)
    back = PriorCorrection(train_prior=target, target_prior=train).fit(q, y)
    np.testing.assert_allclose(back.predict_proba(q), p, rtol=1e-7, atol=1e-300)
    same = PriorCorrection(train_prior=train, target_prior=train).fit(p, y)
    np.testing.assert_allclose(same.predict_proba(p), p, rtol=1e-12, atol=1e-300)
    # the logit shift is the same map
    np.testing.assert_allclose(
        softmax(there.shift_logits(logits), axis=1), q, rtol=1e-7, atol=1e-300
    )
