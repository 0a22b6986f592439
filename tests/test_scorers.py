"""The calibration scorers in scikit-learn's model selection tools."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer
from sklearn.model_selection import (
    GridSearchCV,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
)
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from sklcalib.metrics import (
    CALIBRATION_SCORERS,
    adaptive_calibration_error,
    adaptive_ece_scorer,
    classwise_calibration_error,
    classwise_ece_scorer,
    ece_scorer,
    expected_calibration_error,
    get_scorer,
    maximum_calibration_error,
    mce_scorer,
    smooth_calibration_error,
    smooth_ece_scorer,
)

PAIRS = [
    (ece_scorer, expected_calibration_error),
    (adaptive_ece_scorer, adaptive_calibration_error),
    (classwise_ece_scorer, classwise_calibration_error),
    (mce_scorer, maximum_calibration_error),
    (smooth_ece_scorer, smooth_calibration_error),
]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])
    return X, names[y]


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[:, :8], y


@pytest.mark.parametrize("scorer, metric", PAIRS)
def test_scorer_is_the_negated_metric(iris, scorer, metric):
    X, y = iris
    model = GaussianNB().fit(X, y)
    expected = -metric(y, model.predict_proba(X), labels=model.classes_)
    assert scorer(model, X, y) == pytest.approx(expected)
    # what make_scorer builds when it is given the labels explicitly
    reference = make_scorer(
        metric,
        greater_is_better=False,
        response_method="predict_proba",
        labels=model.classes_,
    )
    assert scorer(model, X, y) == pytest.approx(reference(model, X, y))


def test_names_and_get_scorer(iris):
    X, y = iris
    model = GaussianNB().fit(X, y)
    assert set(CALIBRATION_SCORERS) == {
        "neg_ece",
        "neg_adaptive_ece",
        "neg_classwise_ece",
        "neg_mce",
        "neg_smooth_ece",
        "neg_debiased_ece",
        "neg_ece_sweep",
        "neg_kernel_calibration_error",
        "neg_cumulative_kuiper",
        "neg_cumulative_ks",
    }
    for name, scorer in CALIBRATION_SCORERS.items():
        got = get_scorer(name)
        assert got is not scorer  # a copy, as sklearn.metrics.get_scorer
        assert got(model, X, y) == scorer(model, X, y)
    assert get_scorer("accuracy")(model, X, y) == pytest.approx(model.score(X, y))
    assert get_scorer("neg_log_loss")(model, X, y) < 0
    with pytest.raises(ValueError, match="neg_eece"):
        get_scorer("neg_eece")


def test_binary_scorer_gets_the_positive_column_and_the_labels(cancer):
    X, y = cancer
    model = LogisticRegression().fit(X, y)
    p = model.predict_proba(X)
    assert ece_scorer(model, X, y) == pytest.approx(-expected_calibration_error(y, p))
    # a test split holding a single class still knows both columns
    only_ones = y == 1
    score = ece_scorer(model, X[only_ones], y[only_ones])
    assert score == pytest.approx(
        -expected_calibration_error(y[only_ones], p[only_ones], labels=[0, 1])
    )


def test_fold_missing_a_class_keeps_the_columns_of_classes_(iris):
    X, y = iris
    model = LogisticRegression(max_iter=500).fit(X, y)
    test = y != "virginica"  # the test split lacks a class the model knows
    p = model.predict_proba(X[test])
    for scorer, metric in PAIRS:
        assert scorer(model, X[test], y[test]) == pytest.approx(
            -metric(y[test], p, labels=model.classes_)
        )
    # whereas a plain make_scorer cannot tell which column is which
    plain = make_scorer(
        expected_calibration_error,
        greater_is_better=False,
        response_method="predict_proba",
    )
    with pytest.raises(ValueError, match="labels"):
        plain(model, X[test], y[test])


def test_sample_weight_reaches_the_metric(iris):
    X, y = iris
    model = GaussianNB().fit(X, y)
    w = np.random.default_rng(0).random(len(y))
    expected = -expected_calibration_error(
        y, model.predict_proba(X), sample_weight=w, labels=model.classes_
    )
    assert ece_scorer(model, X, y, sample_weight=w) == pytest.approx(expected)


def test_cross_val_score_with_string_labels(iris):
    X, y = iris
    scores = cross_val_score(GaussianNB(), X, y, scoring=ece_scorer, cv=3)
    assert scores.shape == (3,)
    assert np.all((scores <= 0) & (scores >= -1))
    by_name = cross_val_score(GaussianNB(), X, y, scoring=get_scorer("neg_ece"), cv=3)
    np.testing.assert_array_equal(scores, by_name)


def test_cross_validate_multi_metric(cancer):
    X, y = cancer
    scoring = {**CALIBRATION_SCORERS, "accuracy": get_scorer("accuracy")}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    result = cross_validate(
        DecisionTreeClassifier(max_depth=3, random_state=0),
        X,
        y,
        cv=cv,
        scoring=scoring,
    )
    for name in CALIBRATION_SCORERS:
        values = result[f"test_{name}"]
        assert values.shape == (3,)
        assert np.all(np.isfinite(values)), name
        if name != "neg_kernel_calibration_error":  # unbiased: can be > 0
            assert np.all((values <= 0) & (values >= -1)), name
    # the scores are the metrics of each fold
    for k, (train, test) in enumerate(cv.split(X, y)):
        model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(
            X[train], y[train]
        )
        p = model.predict_proba(X[test])
        assert result["test_neg_ece"][k] == pytest.approx(
            -expected_calibration_error(y[test], p, labels=model.classes_)
        )


def test_grid_search_refits_on_ece(iris):
    X, y = iris
    search = GridSearchCV(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
        {"logisticregression__C": [0.01, 1.0, 100.0]},
        scoring={"neg_ece": ece_scorer, "accuracy": get_scorer("accuracy")},
        refit="neg_ece",
        cv=3,
    )
    search.fit(X, y)
    ece = search.cv_results_["mean_test_neg_ece"]
    assert search.best_index_ == int(np.argmax(ece))
    assert search.best_score_ == pytest.approx(ece.max())
    assert set(search.predict(X)) <= set(y)


def test_scorers_pickle_and_clone_with_estimators(iris):
    X, y = iris
    model = GaussianNB().fit(X, y)
    for scorer, _ in PAIRS:
        again = pickle.loads(pickle.dumps(scorer))
        assert again(model, X, y) == scorer(model, X, y)


def test_binary_string_labels_in_cross_val_score(cancer):
    X, y = cancer
    names = np.array(["no", "yes"])[y]
    scores = cross_val_score(LogisticRegression(), X, names, scoring=ece_scorer, cv=3)
    expected = cross_val_score(LogisticRegression(), X, y, scoring=ece_scorer, cv=3)
    # relabelling the classes consistently changes nothing
    np.testing.assert_allclose(scores, expected)
    assert get_scorer(None) is None  # as sklearn.metrics.get_scorer


def test_get_scorer_names_lists_every_name_get_scorer_takes(iris):
    from sklearn.metrics import get_scorer_names as sklearn_names

    from sklcalib.metrics import get_scorer_names

    names = get_scorer_names()
    assert names == sorted(names)
    assert set(names) == set(CALIBRATION_SCORERS) | set(sklearn_names())
    X, y = iris
    model = GaussianNB().fit(X, y)
    for name in CALIBRATION_SCORERS:
        assert np.isfinite(get_scorer(name)(model, X, y)), name


def test_scorer_names_come_from_the_metric_registry():
    from sklcalib.metrics._registry import METRICS

    calibration_errors = set(METRICS) - {"nll", "brier"}
    assert set(CALIBRATION_SCORERS) == {f"neg_{m}" for m in calibration_errors}
    for name in calibration_errors:
        assert CALIBRATION_SCORERS[f"neg_{name}"]._score_func is METRICS[name]
