"""select_calibrator and CalibratedClassifier(calibrator="auto"): known answers
on data whose labels are drawn from a model's own probabilities."""

import math

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import KFold

import sklcalib.calibration as calibration
from sklcalib.calibration import (
    CalibratedClassifier,
    CalibrationWarning,
    IsotonicCalibrator,
    TemperatureScaler,
    select_calibrator,
)


def _binary(n, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    logit = rng.normal(0.0, scale, size=n)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return logit, y


def _multiclass(n, seed, k=4, scale=1.5):
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, scale, size=(n, k))
    p = softmax(z, axis=1)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(p, axis=1)).sum(axis=1)
    return z, y


def test_calibrated_binary_model_keeps_passthrough():
    logit, y = _binary(3000, 0)
    sel = select_calibrator(logit, y, response="logits")
    assert sel.best_candidate_ == "passthrough"
    assert sel.best_estimator_ is None
    np.testing.assert_allclose(
        sel.predict_proba(logit)[:, 1], 1 / (1 + np.exp(-logit)), rtol=1e-12
    )


@pytest.mark.parametrize(
    "draw, seed, temperature", [(_binary, 1, 3.0), (_multiclass, 3, 2.5)]
)
def test_overconfident_model_gets_temperature_near_the_truth(draw, seed, temperature):
    scores, y = draw(3000, seed)
    sel = select_calibrator(temperature * scores, y, response="logits")
    assert sel.best_candidate_ == "temperature"
    # the scores are the true logits times T: the true temperature is T
    assert sel.best_estimator_.temperature_ == pytest.approx(temperature, rel=0.1)


def test_calibrated_multiclass_model_keeps_passthrough():
    z, y = _multiclass(3000, 2)
    assert select_calibrator(z, y, response="logits").best_candidate_ == "passthrough"


def test_the_one_se_rule_is_what_keeps_passthrough():
    # Monte Carlo over seeded calibrated models: without the rule ("best")
    # a calibrator with a lower mean fold log-loss by chance is taken often;
    # with it, passthrough is kept (could fail if the margin did nothing)
    kept_rule = kept_best = 0
    for seed in range(30):
        logit, y = _binary(600, 100 + seed)
        cands = ["passthrough", "temperature", "isotonic", "venn_abers"]
        kw = dict(candidates=cands, response="logits")
        kept_rule += select_calibrator(logit, y, **kw).best_candidate_ == "passthrough"
        kept_best += select_calibrator(logit, y, rule="best", **kw).best_candidate_ == (
            "passthrough"
        )
    assert kept_rule >= 27  # measured: 28 of 30
    assert kept_best <= 24  # measured: 20 of 30


def test_cv_results_match_an_independent_computation():
    z, y = _multiclass(900, 4)
    sel = select_calibrator(
        2 * z, y, candidates=["passthrough", "temperature"], response="logits"
    )
    r = sel.cv_results_
    folds = list(KFold(5, shuffle=True, random_state=0).split(z))
    raw = [
        log_loss(y[te], softmax(2 * z[te], axis=1), labels=range(4)) for _, te in folds
    ]
    temp = [
        log_loss(
            y[te],
            TemperatureScaler().fit(2 * z[tr], y[tr]).predict_proba(2 * z[te]),
            labels=range(4),
        )
        for tr, te in folds
    ]
    i_raw, i_t = (
        r["candidate"].index("passthrough"),
        r["candidate"].index("temperature"),
    )
    for f in range(5):
        assert r[f"split{f}_log_loss"][i_raw] == pytest.approx(raw[f], rel=1e-9)
        assert r[f"split{f}_log_loss"][i_t] == pytest.approx(temp[f], rel=1e-7)
    d = np.array(temp) - np.array(raw)
    assert r["delta_log_loss"][i_t] == pytest.approx(d.mean(), rel=1e-7)
    assert r["delta_se"][i_t] == pytest.approx(d.std(ddof=1) / math.sqrt(5), rel=1e-6)
    assert r["mean_log_loss"][i_raw] == pytest.approx(np.mean(raw), rel=1e-9)
    assert r["std_log_loss"][i_raw] == pytest.approx(np.std(raw), rel=1e-9)
    assert {"mean_brier", "std_brier", "mean_ece", "std_ece"} <= set(r)
    assert "temperature" in sel.summary() and "passthrough" in sel.summary()


def test_small_sets_keep_flexible_candidates_out():
    logit, y = _binary(120, 5)
    sel = select_calibrator(logit, y, response="logits")
    r = sel.cv_results_
    for name in ("isotonic", "venn_abers"):
        status = r["status"][r["candidate"].index(name)]
        assert status.startswith("too few rows")
        assert math.isnan(r["mean_log_loss"][r["candidate"].index(name)])
    sel = select_calibrator(logit, y, response="logits", min_events_per_parameter=0)
    statuses = sel.cv_results_["status"]
    assert not any(s.startswith("too few rows") for s in statuses)


def test_probabilities_and_logits_give_the_same_choice():
    logit, y = _binary(2000, 6)
    p = 1 / (1 + np.exp(-3 * logit))
    by_proba = select_calibrator(p, y)  # read as probabilities
    assert by_proba.response_ == "probabilities"
    assert (
        by_proba.best_candidate_
        == select_calibrator(3 * logit, y, response="logits").best_candidate_
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"candidates": ["nope"]}, "unknown name"),
        ({"candidates": ["platt"], "multiclass": True}, "binary problems"),
        ({"candidates": "temperature"}, "list"),
        ({"rule": "two_se"}, "rule"),
        ({"response": "odds"}, "response"),
        ({"cv": 1}, "cv"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    multiclass = kwargs.pop("multiclass", False)
    scores, y = _multiclass(200, 8) if multiclass else _binary(200, 8)
    with pytest.raises(ValueError, match=match):
        select_calibrator(scores, y, **kwargs)


def test_nan_scores_are_refused():
    logit, y = _binary(100, 9)
    logit[3] = np.nan
    with pytest.raises(ValueError, match="scores contains NaN"):
        select_calibrator(logit, y)


class _ScaledLogistic(ClassifierMixin, BaseEstimator):
    """The true logistic model of ``_logistic_data`` with its logits
    multiplied by ``scale`` (``fit`` only records the classes)."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return self.scale * (np.asarray(X) @ _COEF)

    def predict_proba(self, X):
        z = self.decision_function(X)
        return softmax(np.column_stack([np.zeros_like(z), z]), axis=1)


_COEF = np.array([1.5, -1.0, 0.5])


def _logistic_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    logit = X @ _COEF
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y


def test_auto_keeps_a_calibrated_model():
    X, y = _logistic_data(3000, 10)
    clf = CalibratedClassifier(LogisticRegression(), "auto", cv=5).fit(X, y)
    assert clf.selected_calibrator_ == "passthrough"
    ((_, calibrator),) = clf.calibrated_classifiers_
    assert calibrator is None
    full = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), full.predict_proba(X))


def test_auto_on_a_frozen_overconfident_model_is_temperature_on_all_data():
    X, y = _logistic_data(4000, 11)
    model = _ScaledLogistic(scale=3.0).fit(X[:1000], y[:1000])
    clf = CalibratedClassifier(FrozenEstimator(model), "auto").fit(X[1000:], y[1000:])
    assert clf.selected_calibrator_ == "temperature"
    assert clf.calibrated_classifiers_[0][1].temperature_ == pytest.approx(3, rel=0.1)
    assert set(clf.cv_results_["candidate"]) >= {"passthrough", "temperature", "platt"}
    direct = TemperatureScaler().fit(model.decision_function(X[1000:]), y[1000:])
    np.testing.assert_allclose(
        clf.predict_proba(X[:5]),
        direct.predict_proba(model.decision_function(X[:5])),
        rtol=1e-10,
    )


@pytest.mark.parametrize("ensemble", [True, False])
def test_auto_in_both_ensemble_modes(ensemble):
    X, y = _logistic_data(1500, 12)
    clf = CalibratedClassifier(
        _ScaledLogistic(scale=4.0), "auto", cv=3, ensemble=ensemble
    )
    clf.fit(X, y)
    assert clf.selected_calibrator_ == "temperature"
    assert len(clf.calibrated_classifiers_) == (3 if ensemble else 1)
    assert all(isinstance(c, TemperatureScaler) for _, c in clf.calibrated_classifiers_)


def test_benchmark_path_runs_auto():
    from sklcalib.benchmark.tabular import available_calibrators, make_calibrator

    assert "auto" in available_calibrators()
    X, y = _logistic_data(1200, 13)
    model = LogisticRegression().fit(X[:600], y[:600])
    clf = CalibratedClassifier(FrozenEstimator(model), make_calibrator("auto"))
    clf.fit(X[600:], y[600:])
    assert clf.selected_calibrator_ in clf.cv_results_["candidate"]


def test_harm_warning_for_a_calibrator_worse_than_the_raw_scores():
    X, y = _logistic_data(1500, 14)
    model = LogisticRegression().fit(X[:500], y[:500])
    frozen = FrozenEstimator(model)
    # a "calibrator" that ignores the scores: far worse than the raw model
    with pytest.warns(CalibrationWarning, match="worse on its own calibration"):
        CalibratedClassifier(frozen, DummyClassifier()).fit(X[500:], y[500:])
    # temperature scaling of a calibrated model: no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        CalibratedClassifier(frozen, TemperatureScaler()).fit(X[500:], y[500:])
        CalibratedClassifier(frozen, DummyClassifier(), check_calibration=False).fit(
            X[500:], y[500:]
        )


def test_size_warning_for_a_flexible_calibrator_on_few_rows():
    X, y = _logistic_data(400, 15)
    model = LogisticRegression().fit(X[:200], y[:200])
    with pytest.warns(CalibrationWarning, match="parameter"):
        CalibratedClassifier(FrozenEstimator(model), IsotonicCalibrator()).fit(
            X[200:], y[200:]
        )


def test_digits_validation_split_skips_the_flexible_candidates():
    # the example of the user guide: 359 validation rows, 10 classes
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    # the size rule looks at the class counts only: the split's labels with
    # scores drawn from a calibrated model stand for the model's scores
    _, y = load_digits(return_X_y=True)
    _, y_te = train_test_split(y, test_size=0.4, random_state=0, stratify=y)
    y_val, _ = train_test_split(y_te, test_size=0.5, random_state=0, stratify=y_te)
    assert len(y_val) == 359
    z = np.random.default_rng(0).normal(size=(359, 10)) + 3 * np.eye(10)[y_val]
    sel = select_calibrator(z, y_val, response="logits")
    r = sel.cv_results_
    status = dict(zip(r["candidate"], r["status"], strict=True))
    evaluated = {c for c, s in status.items() if not s.startswith("too few rows")}
    present = {"passthrough", "temperature", "vector"} | (
        {"svs"} if hasattr(calibration, "SVSCalibrator") else set()
    )
    assert evaluated == present
    assert all(len(line) <= 100 for line in sel.summary().splitlines())


def _markdown_tables(text):
    """The rows (header first) of each markdown table of ``text``."""
    tables = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.splitlines() if ln.startswith("| ")]
        if lines:
            tables.append(
                [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
            )
    return tables


def _list_table(text, first_header):
    """The rows (header first) of the reST list-table whose first header
    cell is ``first_header``."""
    block = text[text.index(f"   * - {first_header}\n") :].split("\n\n")[0]
    rows = []
    for line in block.splitlines():
        if line.startswith("   * - "):
            rows.append([line[len("   * - ") :].strip()])
        elif line.startswith("     - "):
            rows[-1].append(line[len("     - ") :].strip())
    return rows


def test_the_guides_monte_carlo_tables_are_the_committed_run():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    run = (root / "benchmarks" / "auto_selection_montecarlo.md").read_text()
    choices, small = _markdown_tables(run)
    mc = _montecarlo()
    assert choices[0] == list(mc.CHOICE_HEADER)
    assert small[0] == list(mc.SMALL_HEADER)
    assert len(choices) == 1 + len(list(mc.choice_beds()))
    assert len(small) == 1 + len(mc.SMALL_BEDS)
    guide = (root / "docs" / "user_guide" / "post_hoc.rst").read_text()
    assert _list_table(guide, "classes")[1:] == choices[1:]
    assert _list_table(guide, "bed")[1:] == small[1:]


def _montecarlo():
    """benchmarks/auto_selection_montecarlo.py as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks"
    spec = importlib.util.spec_from_file_location(
        "auto_selection_montecarlo", path / "auto_selection_montecarlo.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_monte_carlo_seeded_and_fast():
    # the guide's Monte Carlo on a few seeds: small and separable sets never
    # raise, never lose more than 0.01 nats to the raw scores and give no
    # probability of exactly 0 or 1 (calibrated many-class scores keeping
    # passthrough: test_calibrator_search.py)
    mc = _montecarlo()
    beds = [
        ("calibrated, many classes", 20, 200, 0.0, 10),
        ("sharp (margin 6)", 3, 44, 6.0, 10),
        ("sharp (margin 6)", 2, 44, 6.0, 10),
    ]
    for row in mc.small_rows(4, beds):
        *_, raised, _, _, largest, exact = row
        assert raised == "0" and exact == "0", row
        assert float(largest) <= 0.01, row
