"""Scale-out: searches and cross-validation on a dask.distributed cluster.

A local cluster of two worker processes on 127.0.0.1 runs scikit-learn's
``GridSearchCV`` and ``cross_val_score`` through joblib's Dask backend; with the
same ``random_state`` the results must equal those of a plain ``n_jobs=1`` run in
this process (scores and parameters; timings naturally differ).

Dask is an optional extra (``pip install sklcalib[dask]``): without it these tests
are skipped.
"""

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

distributed = pytest.importorskip(
    "distributed", reason="dask is an optional extra (sklcalib[dask])"
)

from _helpers import local_dask_client  # noqa: E402

from sklcalib.calibration import (  # noqa: E402 (after the optional import)
    BBQCalibrator,
    BetaCalibrator,
    CalibratedClassifier,
    ENIRCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScaler,
    PlattScaler,
    TemperatureScaler,
    VectorScaler,
)
from sklcalib.metrics import ece_scorer  # noqa: E402
from sklcalib.net import NetClassifier  # noqa: E402

pytestmark = pytest.mark.slow  # starting worker processes takes seconds


@pytest.fixture(scope="module")
def client():
    with local_dask_client(processes=True) as client:
        yield client


def _on_dask(search_or_fn):
    with joblib.parallel_backend("dask"):
        return search_or_fn()


def _assert_same_cv_results(local, remote):
    assert local.keys() == remote.keys()
    for key in local:
        if "time" in key:
            continue
        if key == "params":
            assert local[key] == remote[key]
        elif key.startswith("param_"):
            assert list(local[key]) == list(remote[key])
        else:  # scores and ranks
            np.testing.assert_allclose(local[key], remote[key], rtol=1e-12, err_msg=key)


def test_cluster_runs_two_worker_processes(client):
    workers = client.scheduler_info()["workers"]
    assert len(workers) == 2
    assert all(w["host"] == "127.0.0.1" for w in workers.values())
    # joblib really ships the work to the workers
    pids = _on_dask(
        lambda: joblib.Parallel(n_jobs=-1)(
            joblib.delayed(__import__("os").getpid)() for _ in range(8)
        )
    )
    assert set(pids).isdisjoint({__import__("os").getpid()})


def test_grid_search_over_gamma_and_lambda_equals_local_run(client):
    X, y = make_classification(
        n_samples=240,
        n_features=6,
        n_informative=4,
        n_classes=3,
        n_clusters_per_class=1,
        random_state=0,
    )
    net = NetClassifier(
        criterion="fcl",
        module__hidden_units=(8,),
        max_epochs=5,
        lr=1e-2,
        batch_size=32,
        random_state=0,
    )
    grid = {"criterion__gamma": [0.0, 2.0], "criterion__lam": [0.0, 1.0]}
    scoring = {"ece": ece_scorer, "nll": "neg_log_loss", "accuracy": "accuracy"}

    def search(n_jobs):
        return GridSearchCV(
            net, grid, scoring=scoring, refit="ece", cv=3, n_jobs=n_jobs
        ).fit(X, y)

    local = search(1)
    remote = _on_dask(lambda: search(-1))
    _assert_same_cv_results(local.cv_results_, remote.cv_results_)
    assert local.best_params_ == remote.best_params_
    # the refitted best nets are the same net
    np.testing.assert_array_equal(local.predict_proba(X), remote.predict_proba(X))
    # the grid made a difference: the test is not comparing constants
    assert np.ptp(local.cv_results_["mean_test_nll"]) > 0


def _scores(n_classes=3, binary_1d=False):
    """Held-out scores of a deliberately over-confident model."""
    X, y = make_classification(
        n_samples=400,
        n_features=6,
        n_informative=4,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=1,
    )
    logits = 4.0 * LogisticRegression().fit(X[:100], y[:100]).decision_function(X)
    logits, y = logits[100:], y[100:]
    if n_classes == 2:
        logits = logits if binary_1d else np.column_stack([-logits, logits]) / 2
    return logits, y


def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


CALIBRATORS = [
    (TemperatureScaler(), "logits"),
    (TemperatureScaler(objective="ece"), "logits"),
    (VectorScaler(), "logits"),
    (MatrixScaler(reg=1e-2), "logits"),
    (PlattScaler(), "binary"),
    (HistogramBinningCalibrator(n_bins=10), "probabilities"),
    (IsotonicCalibrator(), "probabilities"),
    (BBQCalibrator(), "probabilities"),
    (ENIRCalibrator(), "probabilities"),
    (BetaCalibrator(), "probabilities"),
]


@pytest.mark.parametrize(
    ("calibrator", "kind"),
    CALIBRATORS,
    ids=[
        type(c).__name__ + (f"-{c.objective}" if hasattr(c, "objective") else "")
        for c, _ in CALIBRATORS
    ],
)
def test_every_calibrator_cross_validates_the_same_on_dask(client, calibrator, kind):
    if kind == "binary":
        scores, y = _scores(n_classes=2, binary_1d=True)
    else:
        scores, y = _scores()
        if kind == "probabilities":
            scores = _softmax(scores)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)

    def run(n_jobs):
        return cross_val_score(
            calibrator, scores, y, cv=cv, scoring="neg_log_loss", n_jobs=n_jobs
        )

    local = run(1)
    remote = _on_dask(lambda: run(-1))
    assert np.all(np.isfinite(local))
    np.testing.assert_allclose(remote, local, rtol=1e-10)


def test_calibrator_grid_search_and_calibrated_classifier_on_dask(client):
    scores, y = _scores()
    search = GridSearchCV(
        TemperatureScaler(),
        {"objective": ["nll", "ece"], "n_bins": [10, 15]},
        scoring=ece_scorer,
        cv=3,
    )
    local = search.set_params(n_jobs=1).fit(scores, y)
    local_results = local.cv_results_
    remote = _on_dask(lambda: search.set_params(n_jobs=-1).fit(scores, y))
    _assert_same_cv_results(local_results, remote.cv_results_)

    X, y = make_classification(n_samples=300, n_features=5, random_state=2)
    model = CalibratedClassifier(
        # lr=0.05: at the default 1e-3 three epochs leave the net untrained and
        # TemperatureScaler ran to its bound T = 1e4 on its uninformative logits
        NetClassifier(module__hidden_units=(8,), max_epochs=3, lr=0.05, random_state=0),
        calibrator=TemperatureScaler(),
        cv=3,
    )

    def run(n_jobs):
        return cross_val_score(model, X, y, cv=3, scoring=ece_scorer, n_jobs=n_jobs)

    np.testing.assert_allclose(_on_dask(lambda: run(-1)), run(1), rtol=1e-12)
