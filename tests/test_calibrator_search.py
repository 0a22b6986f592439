"""CalibratorSearchCV: one estimator for the selection rule, cloneable as
GridSearchCV is, that never errs on a valid set, never separates, keeps the
uncorrected scores as a row beside a prior correction, and honours the folds
(and groups) it is given."""

import math
import pickle
import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GroupKFold, KFold

import sklcalib.calibration as calibration
from sklcalib.calibration import (
    CalibratedClassifier,
    CalibrationWarning,
    CalibratorSearchCV,
    PriorCorrection,
    TemperatureScaler,
    select_calibrator,
)


def _multiclass(n, k, seed, scale=1.5):
    """Logits and labels drawn from their own softmax: calibrated."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, scale, size=(n, k))
    y = (softmax(z, axis=1).cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return z, y


def _binary(n, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    logit = rng.normal(0.0, scale, size=n)
    return logit, (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)


def test_an_estimator_as_grid_search_is():
    logit, y = _binary(1500, 0)
    search = CalibratorSearchCV(["passthrough", "temperature"], response="logits")
    assert clone(search).get_params() == search.get_params()
    search.fit(3 * logit, y)
    assert search.best_candidate_ == "temperature"
    assert search.cv_results_["candidate"][search.best_index_] == "temperature"
    assert search.cv_results_["status"][search.best_index_] == "chosen"
    # the refit is the chosen candidate fitted on all the scores
    direct = TemperatureScaler().fit(3 * logit, y)
    assert search.best_estimator_.temperature_ == pytest.approx(direct.temperature_)
    np.testing.assert_allclose(
        search.predict_proba(3 * logit[:7]), direct.predict_proba(3 * logit[:7])
    )
    np.testing.assert_array_equal(
        search.predict(3 * logit[:7]), direct.predict(3 * logit[:7])
    )
    again = pickle.loads(pickle.dumps(search))
    np.testing.assert_allclose(again.predict_proba(logit), search.predict_proba(logit))
    # clone gives an unfitted copy with the same parameters
    assert not hasattr(clone(search), "best_estimator_")
    with pytest.raises(
        ValueError, match="scores has 2 columns; the search was fitted on 1"
    ):
        search.predict_proba(np.zeros((3, 2)))


def test_the_result_s_old_attributes_are_deprecated_not_gone():
    logit, y = _binary(600, 1)
    sel = select_calibrator(logit, y, candidates=["passthrough", "platt"])
    with pytest.warns(FutureWarning, match="'name' is deprecated"):
        assert sel.name == sel.best_candidate_
    with pytest.warns(FutureWarning, match="'cv_results' is deprecated"):
        assert sel.cv_results is sel.cv_results_
    with pytest.warns(FutureWarning, match="'calibrator' is deprecated"):
        assert sel.calibrator is sel.best_estimator_
    with pytest.warns(FutureWarning, match="CalibratorSelection is deprecated"):
        assert calibration.CalibratorSelection is CalibratorSearchCV


def test_valid_small_and_many_class_sets_never_raise():
    # 20 classes, 200 rows (about 10 a class): today's folds, cv=5 stratified,
    # refused most of them; every such set is valid, so the answer is the raw
    # scores with the reason
    for seed in range(5):
        z, y = _multiclass(200, 20, seed)
        sel = select_calibrator(z, y, response="logits")
        assert sel.best_candidate_ == "passthrough"
        assert "too few rows" in sel.reason_
        assert sel.n_splits_ == 0
        np.testing.assert_allclose(sel.predict_proba(z), softmax(z, axis=1), atol=1e-15)
    # a handful of rows, and a class of one row
    z, y = _multiclass(7, 3, 0)
    y[:] = [0, 0, 0, 1, 1, 1, 2]
    for kwargs in ({}, {"min_events_per_parameter": 0}):
        sel = select_calibrator(z, y, response="logits", **kwargs)
        assert sel.predict_proba(z).shape == (7, 3)
    assert (
        select_calibrator([-1.0, 2.0], [0, 1], response="logits").best_candidate_
        == "passthrough"
    )


def test_separated_scores_keep_the_raw_probabilities():
    # every calibration row is right and confident (a small, easy set): the
    # cross-validated log-loss of temperature scaling runs to 0 as T -> 0 and
    # the first misclassified test row would cost everything; the size rule
    # counts the rows the scores get wrong as events and keeps the raw scores
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 15)
    z = rng.normal(size=(45, 3)) + 6 * np.eye(3)[y]
    assert np.all(z.argmax(axis=1) == y)
    sel = select_calibrator(z, y, response="logits")
    assert sel.best_candidate_ == "passthrough"
    assert "misclassif" in sel.reason_
    # without the guard temperature scaling separates: T near its lower bound
    free = select_calibrator(
        z,
        y,
        candidates=["passthrough", "temperature"],
        response="logits",
        min_events_per_parameter=0,
    )
    if free.best_candidate_ == "temperature":
        assert free.best_estimator_.temperature_ < 0.05
    # the binary analogue: a threshold (not 0) separates the classes
    s = np.r_[rng.uniform(-3, 1, 30), rng.uniform(1.5, 5, 30)]
    yb = np.r_[np.zeros(30, int), np.ones(30, int)]
    assert select_calibrator(s, yb, response="logits").best_candidate_ == "passthrough"


def test_no_probability_is_exactly_zero_or_one():
    z, y = _multiclass(2000, 3, 4)
    sel = select_calibrator(50 * z, y, response="logits")  # softmax underflows
    assert sel.best_candidate_ != "passthrough"
    proba = sel.predict_proba(np.array([[900.0, 0.0, -900.0], [0.0, 0.0, 0.0]]))
    assert proba.min() > 0 and proba.max() < 1
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_integer_folds_are_shuffled_k_fold_and_splitters_are_honoured():
    z, y = _multiclass(600, 3, 5)
    sel = select_calibrator(z, y, candidates=["passthrough"], response="logits")
    assert sel.n_splits_ == 0  # nothing to cross-validate
    sel = select_calibrator(
        z, y, candidates=["passthrough", "temperature"], response="logits"
    )
    folds = KFold(5, shuffle=True, random_state=0).split(z)
    for f, (_, test) in enumerate(folds):
        raw = log_loss(y[test], softmax(z[test], axis=1), labels=range(3))
        assert sel.cv_results_[f"split{f}_log_loss"][0] == pytest.approx(raw, rel=1e-9)
    groups = np.arange(600) // 20
    sel = select_calibrator(
        z,
        y,
        candidates=["passthrough", "temperature"],
        cv=GroupKFold(4),
        groups=groups,
        response="logits",
    )
    for f, (_, test) in enumerate(GroupKFold(4).split(z, y, groups)):
        raw = log_loss(y[test], softmax(z[test], axis=1), labels=range(3))
        assert sel.cv_results_[f"split{f}_log_loss"][0] == pytest.approx(raw, rel=1e-9)


def test_calibrated_many_class_scores_keep_passthrough():
    # stratified folds reward per-class intercepts fitted to the sample's
    # class frequencies (vector scaling, SVS): 35 % passthrough at K = 20 on
    # 5000 rows; shuffled k-fold is honest about them (the Monte Carlo of
    # benchmarks/auto_selection_montecarlo.py measures the rate)
    kept = sum(
        select_calibrator(
            *_multiclass(1000, 10, 100 + seed), response="logits"
        ).best_candidate_
        == "passthrough"
        for seed in range(8)
    )
    assert kept >= 7


def _titanic_net_seed0():
    """The tabular benchmark's titanic split of seed 0 (``sklcalib benchmark
    --suite tabular``): the cross-entropy network's probabilities of survival
    on the 262 validation and 262 test rows, with their labels."""
    from pathlib import Path

    path = Path(__file__).parent / "data" / "titanic_net_seed0.csv"
    split, y, p = np.loadtxt(path, delimiter=",", skiprows=1, dtype=str, unpack=True)
    y, p = y.astype(int), p.astype(float)
    val, test = split == "val", split == "test"
    return (p[val], y[val]), (p[test], y[test])


def test_a_gain_that_few_rows_carry_keeps_the_raw_scores():
    # titanic/net, seed 0: quadratic scaling beats the raw scores by 1.5
    # standard errors of the five fold differences, so the one-SE rule alone
    # took it, and it raised the test log-loss by 0.022 nats (the tabular
    # page's committed run); row by row the gain is 0.76 standard errors:
    # the do-no-harm step keeps the raw scores
    (p_val, y_val), (p_test, y_test) = _titanic_net_seed0()
    sel = select_calibrator(p_val, y_val)
    r = sel.cv_results_
    q = r["candidate"].index("quadratic")
    assert r["within_one_se"][q] and not r["within_one_se"][0]
    assert -r["delta_log_loss"][q] > r["delta_se"][q]  # the fold rule: taken
    assert 0 < -r["delta_log_loss_rows"][q] < r["delta_se_rows"][q]
    assert sel.best_candidate_ == "passthrough"
    assert "per-row paired differences" in sel.reason_
    raw = log_loss(y_test, p_test)
    assert log_loss(y_test, sel.predict_proba(p_test)) == pytest.approx(raw)
    # what the step avoided: the candidate of the fold rule, on the test rows
    best = select_calibrator(p_val, y_val, rule="best")
    assert best.best_candidate_ == "quadratic"
    assert log_loss(y_test, best.predict_proba(p_test)) > raw + 0.01


@pytest.mark.parametrize("seed", range(4))
def test_the_row_step_only_ever_keeps_the_raw_scores(seed):
    # the one-SE rule names a candidate; the row-by-row step either takes it
    # (its per-row gain over passthrough beyond one standard error) or keeps
    # passthrough, never a third candidate
    logit, y = _binary(300, seed)
    sel = select_calibrator((1.0 + 0.4 * seed) * logit, y, response="logits")
    r = sel.cv_results_
    within = [i for i, w in enumerate(r["within_one_se"]) if w]
    one_se = min(within, key=lambda i: (r["n_parameters"][i], i))
    assert sel.best_index_ in (one_se, r["candidate"].index("passthrough"))
    i = sel.best_index_
    if r["candidate"][i] != "passthrough":
        assert -r["delta_log_loss_rows"][i] > r["delta_se_rows"][i]
    elif r["candidate"][one_se] != "passthrough":
        gain = -r["delta_log_loss_rows"][one_se]
        assert gain <= r["delta_se_rows"][one_se]
        assert "per-row paired differences" in sel.reason_


def test_passthrough_returns_the_raw_probabilities_unchanged():
    # renormalising every row moved a float32 model's probabilities by
    # round-off, which the tabular benchmark's paired test then marked as a
    # significant change of "auto" against no calibration; only rows with a
    # value within the epsilon of 0 or 1 are floored
    z, y = _multiclass(600, 4, 3)
    proba = softmax(z, axis=1).astype(np.float32)
    sel = select_calibrator(proba, y)
    assert sel.best_candidate_ == "passthrough"
    test = softmax(_multiclass(50, 4, 4)[0], axis=1).astype(np.float32)
    test[0] = [1.0, 0.0, 0.0, 0.0]
    out = sel.predict_proba(test)
    np.testing.assert_array_equal(out[1:], test[1:].astype(np.float64))
    assert 0.0 < out[0].min() and out[0].max() < 1.0
    assert out[0].sum() == pytest.approx(1.0, abs=1e-15)


def _rare_positive(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    logit = X @ [1.5, -1.0, 0.5] - 2.5
    return X, (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)


def test_a_prior_correction_that_does_harm_is_a_row_and_a_warning():
    # a calibrated model of a rare class "corrected" as if it had been trained
    # on balanced classes: the correction pushes every probability down
    X, y = _rare_positive(4000, 6)
    model = LogisticRegression().fit(X[:2000], y[:2000])
    wrong = PriorCorrection(train_prior=[0.5, 0.5], target_prior=[0.98, 0.02])
    frozen = FrozenEstimator(model)
    with pytest.warns(
        CalibrationWarning, match="PriorCorrection makes the probabilities worse"
    ):
        auto = CalibratedClassifier(frozen, "auto", prior=wrong).fit(X[2000:], y[2000:])
    r = auto.cv_results_
    # the uncorrected scores are "passthrough", the correction alone "prior"
    assert r["candidate"][:2] == ["passthrough", "prior"]
    assert r["delta_log_loss"][0] == 0.0
    assert r["delta_log_loss"][1] > 0.01
    assert auto.selected_calibrator_ != "prior"
    if auto.selected_calibrator_ == "passthrough":
        np.testing.assert_allclose(
            auto.predict_proba(X[:5]), model.predict_proba(X[:5]), rtol=1e-12
        )
    # the explicit recipe warns too, with or without a calibrator behind it
    # (temperature scaling cannot undo the shift: it does harm as well)
    for calibrator, expected in (
        ("passthrough", {"PriorCorrection"}),
        ("temperature", {"PriorCorrection", "TemperatureScaler"}),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            CalibratedClassifier(frozen, calibrator, prior=wrong).fit(
                X[2000:], y[2000:]
            )
        harmed = {
            str(w.message).split()[0]
            for w in caught
            if issubclass(w.category, CalibrationWarning)
        }
        assert harmed == expected
    # a right correction does not warn
    right = PriorCorrection(train_prior=[0.5, 0.5])
    balanced = LogisticRegression(class_weight="balanced").fit(X[:2000], y[:2000])
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        CalibratedClassifier(FrozenEstimator(balanced), "passthrough", prior=right).fit(
            X[2000:], y[2000:]
        )


def test_auto_honours_the_splitter_and_routed_groups():
    X, y = _rare_positive(1200, 7)
    y = (X[:, 0] + np.random.default_rng(7).normal(size=1200) > 0).astype(int)
    groups = np.arange(1200) // 40
    with config_context(enable_metadata_routing=True):
        cv = GroupKFold(3)
        model = LogisticRegression().fit(X[:600], y[:600])
        frozen = CalibratedClassifier(FrozenEstimator(model), "auto", cv=cv).fit(
            X, y, groups=groups
        )
        for train, test in frozen.selection_.cv:
            assert not set(groups[train]) & set(groups[test])
        est = LogisticRegression().set_fit_request(sample_weight=False)
        for ensemble in (True, False):
            clf = CalibratedClassifier(est, "auto", cv=cv, ensemble=ensemble)
            clf.fit(X, y, groups=groups)
            order = np.concatenate([t for _, t in cv.split(X, y, groups)])
            rows = order if ensemble else np.arange(len(y))
            for train, test in clf.selection_.cv:
                assert not set(groups[rows[train]]) & set(groups[rows[test]])


def test_requires_grad_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    z, y = _multiclass(300, 3, 8)
    leaf = torch.tensor(2 * z, requires_grad=True)
    sel = select_calibrator(leaf, torch.tensor(y), response="logits")
    np.testing.assert_allclose(
        sel.predict_proba(leaf),
        select_calibrator(2 * z, y, response="logits").predict_proba(2 * z),
    )
    assert math.isfinite(sel.cv_results_["mean_log_loss"][0])


class _CountingTemperature(TemperatureScaler):
    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight=sample_weight)


def test_the_ensemble_harm_check_fits_nothing_more():
    from sklearn.dummy import DummyClassifier

    X, y = _rare_positive(1500, 9)
    counts = {}
    for check in (True, False):
        _CountingTemperature.fits = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            CalibratedClassifier(
                LogisticRegression(), _CountingTemperature(), check_calibration=check
            ).fit(X, y)
        counts[check] = _CountingTemperature.fits
    assert counts == {True: 5, False: 5}
    # and it still finds a calibrator that does harm (one ignoring the scores)
    with pytest.warns(CalibrationWarning, match="on the 5 held-out parts"):
        CalibratedClassifier(LogisticRegression(), DummyClassifier()).fit(X, y)


class _FixedLogits(ClassifierMixin, BaseEstimator):
    """A model whose logits are its features."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=np.float64)

    def predict_proba(self, X):
        return softmax(np.asarray(X, dtype=np.float64), axis=1)


def _counting_harm_checks(monkeypatch):
    import sklcalib.calibration._meta as meta

    calls = []
    original = meta.harm_check

    def counting(*args, **kwargs):
        calls.append(type(args[0]).__name__)
        return original(*args, **kwargs)

    monkeypatch.setattr(meta, "harm_check", counting)
    return calls


@pytest.mark.filterwarnings("ignore:MatrixScaler has about 5 parameter")
def test_the_auto_check_of_a_frozen_model_refits_only_where_it_can_warn(
    monkeypatch,
):
    from sklcalib.calibration import IsotonicCalibrator, MatrixScaler

    calls = _counting_harm_checks(monkeypatch)
    X, y = _rare_positive(4000, 10)
    frozen = FrozenEstimator(LogisticRegression().fit(X[:1000], y[:1000]))
    # a calibrated model and one temperature on 3000 rows: the in-sample fit
    # plus twice its optimism is far inside the 1 % margin, no refit ...
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        auto = CalibratedClassifier(frozen, TemperatureScaler()).fit(X[1000:], y[1000:])
    assert calls == []
    off = CalibratedClassifier(frozen, TemperatureScaler(), check_calibration=False)
    np.testing.assert_array_equal(
        auto.predict_proba(X[:50]), off.fit(X[1000:], y[1000:]).predict_proba(X[:50])
    )
    # ... while True refits, and so do "auto" for a non-parametric calibrator
    # and for a parametric one on few rows
    CalibratedClassifier(frozen, TemperatureScaler(), check_calibration=True).fit(
        X[1000:], y[1000:]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        CalibratedClassifier(frozen, IsotonicCalibrator()).fit(X[1000:], y[1000:])
        CalibratedClassifier(frozen, TemperatureScaler()).fit(
            X[1000:1060], y[1000:1060]
        )
    assert calls == ["TemperatureScaler", "IsotonicCalibrator", "TemperatureScaler"]
    # where the refits find harm, "auto" warns as True does: matrix scaling of
    # 4 classes on 120 rows
    z, labels = _multiclass(120, 4, 11)
    model = FrozenEstimator(_FixedLogits().fit(z, labels))
    for check in (True, "auto"):
        with pytest.warns(CalibrationWarning, match="makes the probabilities worse"):
            CalibratedClassifier(model, MatrixScaler(), check_calibration=check).fit(
                z, labels
            )


def test_the_auto_check_agrees_with_the_full_one():
    # a seeded fast variant of benchmarks/bench_harm_check_agreement.py
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_harm_check_agreement as bench

    from sklcalib.calibration import VectorScaler

    skipped = 0
    for n_classes, scale, n in ((2, 3.0, 2000), (4, 1.0, 150), (4, 0.3, 2000)):
        _, _, disagreed, skip = bench.run_bed(
            n_classes,
            scale,
            VectorScaler() if n_classes > 2 else TemperatureScaler(),
            n,
            reps=2,
        )
        assert disagreed == 0
        skipped += skip
    assert skipped >= 2  # the large sets skip their refits
