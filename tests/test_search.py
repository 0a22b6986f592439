"""NetClassifier inside scikit-learn's model selection tools."""

import numpy as np
import pytest
from _helpers import small_net
from scipy.stats import uniform
from sklearn.model_selection import (
    GridSearchCV,
    RandomizedSearchCV,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklcalib.metrics import CALIBRATION_SCORERS, ece_scorer


@pytest.fixture(scope="module")
def data(data):
    X, y = data  # conftest's 3-class problem
    return X * 10 + 3, y  # badly scaled: the pipeline's scaler matters


CV = StratifiedKFold(n_splits=2, shuffle=True, random_state=0)


def test_grid_search_routes_criterion_parameters_in_a_pipeline(data):
    X, y = data
    grid = {
        "netclassifier__criterion__gamma": [0.5, 3.0],
        "netclassifier__criterion__lam": [0.1, 2.0],
    }
    search = GridSearchCV(
        make_pipeline(StandardScaler(), small_net(criterion="fcl")),
        grid,
        scoring=ece_scorer,
        cv=CV,
    ).fit(X, y)
    best = search.best_params_
    criterion = search.best_estimator_[-1].criterion_
    assert type(criterion).__name__ == "FocalCalibrationLoss"
    assert criterion.gamma == best["netclassifier__criterion__gamma"]
    assert criterion.lam == best["netclassifier__criterion__lam"]
    scores = search.cv_results_["mean_test_score"]
    assert scores.shape == (4,)
    assert np.all((scores <= 0) & (scores >= -1))
    # the four settings are four different nets
    assert len(np.unique(np.round(scores, 12))) > 1
    assert search.predict_proba(X).shape == (200, 3)


def test_grid_search_over_criterion_names(data):
    X, y = data
    search = GridSearchCV(
        small_net(),
        {"criterion": ["ce", "focal", "brier"]},
        scoring="neg_log_loss",
        cv=CV,
    ).fit(X, y)
    # each name became its criterion class, and the three nets differ
    expected = {"ce": "CrossEntropyLoss", "focal": "FocalLoss", "brier": "BrierLoss"}
    best = search.best_params_["criterion"]
    assert type(search.best_estimator_.criterion_).__name__ == expected[best]
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and len(np.unique(scores)) == 3


def test_randomized_search_samples_criterion_parameters(data):
    X, y = data
    search = RandomizedSearchCV(
        small_net(criterion="focal"),
        {"criterion__gamma": uniform(0.0, 5.0)},
        n_iter=2,
        scoring=CALIBRATION_SCORERS["neg_adaptive_ece"],
        cv=CV,
        random_state=0,
    ).fit(X, y)
    # the sampled gamma reaches the refitted net's criterion, and matters
    best = search.best_params_["criterion__gamma"]
    assert search.best_estimator_.criterion_.gamma == best
    assert len(np.unique(search.cv_results_["mean_test_score"])) == 2


def test_cross_validate_with_all_calibration_scorers(data):
    X, y = data
    results = cross_validate(
        make_pipeline(StandardScaler(), small_net(criterion="focal")),
        X,
        y,
        scoring=CALIBRATION_SCORERS,
        cv=CV,
    )
    for name in ("neg_ece", "neg_adaptive_ece", "neg_classwise_ece", "neg_mce"):
        values = results[f"test_{name}"]
        assert values.shape == (2,)
        assert np.all(np.isfinite(values)), name
        assert np.all((values >= -1) & (values <= 0)), name
    assert np.all(np.isfinite(results["test_neg_smooth_ece"]))
    assert np.all(results["test_neg_smooth_ece"] <= 0)


def test_cross_val_score_with_string_labels(data):
    X, y = data
    labels = np.array(["low", "mid", "high"])[y]
    scores = cross_val_score(
        make_pipeline(StandardScaler(), small_net(max_epochs=10, lr=1e-2)),
        X,
        labels,
        cv=CV,
    )
    assert scores.shape == (2,)
    assert np.all(scores > 0.5)  # accuracy over three classes, chance is 1/3


def test_search_results_are_reproducible(data):
    X, y = data

    def run():
        return (
            GridSearchCV(
                small_net(criterion="focal"),
                {"criterion__gamma": [1.0, 2.0]},
                scoring=ece_scorer,
                cv=CV,
            )
            .fit(X, y)
            .cv_results_["mean_test_score"]
        )

    np.testing.assert_array_equal(run(), run())
