"""TemperatureEarlyStopping: the score is the post-temperature validation
log-loss (checked against scipy's bounded minimiser), the best epoch's weights
come back, it stops after ``patience`` epochs, and in a regime where the raw
validation loss picks another epoch it keeps a better net than skorch's
EarlyStopping does."""

import pickle

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from sklearn.base import clone
from sklearn.datasets import make_classification
from skorch.callbacks import EarlyStopping
from skorch.dataset import Dataset
from skorch.helper import predefined_split

from sklcalib import NetClassifier
from sklcalib.callbacks import (
    TemperatureEarlyStopping,
    _temperature_scaled_log_loss,
)


def nll_at(logits, y, temperature):
    logp = log_softmax(logits / temperature, axis=1)
    return -np.mean(logp[np.arange(len(y)), y])


def scipy_temperature(logits, y):
    # an independent fit: bounded Brent search on log T
    res = minimize_scalar(
        lambda s: nll_at(logits, y, np.exp(s)),
        bounds=(np.log(1e-2), np.log(1e2)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return np.exp(res.x)


@pytest.mark.parametrize("seed", [0, 1])
def test_score_is_the_nll_at_the_optimal_temperature(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, 300)
    # the predicted class is right 70 % of the time, at confidence ~0.99
    predicted = np.where(rng.random(300) < 0.7, y, rng.integers(0, 4, 300))
    logits = rng.normal(size=(300, 4)) + 6.0 * np.eye(4)[predicted]
    temperature, score = _temperature_scaled_log_loss(logits, y)
    want = scipy_temperature(logits, y)
    assert temperature == pytest.approx(want, rel=1e-5)
    assert score == pytest.approx(nll_at(logits, y, want), rel=1e-9)
    assert temperature > 1


def test_score_with_a_class_absent_from_the_validation_rows():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)  # class 2 never appears
    logits = rng.normal(size=(200, 3)) + 2.0 * np.eye(3)[y]
    temperature, score = _temperature_scaled_log_loss(logits, y)
    want = scipy_temperature(logits, y)
    assert temperature == pytest.approx(want, rel=1e-5)
    assert score == pytest.approx(nll_at(logits, y, want), rel=1e-9)


def noisy_split(seed=3):
    """Small noisy 3-class data where a cross-entropy net over-fits quickly."""
    X, y = make_classification(
        n_samples=750,
        n_features=20,
        n_informative=6,
        n_classes=3,
        flip_y=0.15,
        random_state=seed,
    )
    X = X.astype(np.float32)
    return X[:600], y[:600], X[600:], y[600:]


def make_net(callback, X_val, y_val, **params):
    return NetClassifier(
        max_epochs=params.pop("max_epochs", 30),
        lr=0.01,
        random_state=1,
        module__hidden_units=(64, 64),
        train_split=predefined_split(Dataset(X_val, y_val)),
        callbacks=[callback],
        **params,
    )


def post_temperature_nll(net, X_val, y_val):
    logits = np.asarray(net.predict_logits(X_val), dtype=np.float64)
    return _temperature_scaled_log_loss(logits, y_val)


def test_restores_the_epoch_of_the_best_post_temperature_loss():
    # The regime where the two stopping rules differ: the raw validation loss
    # turns up once the net grows over-confident, while its ranking keeps
    # improving for a few epochs, which a temperature turns into a lower
    # log-loss. skorch's EarlyStopping on valid_loss keeps the earlier epoch.
    X, y, X_val, y_val = noisy_split()
    stop = TemperatureEarlyStopping(patience=8, threshold=0.0)
    net = make_net(stop, X_val, y_val).fit(X, y)
    scores = np.array(net.history[:, "valid_temp_nll"])
    raw = np.array(net.history[:, "valid_loss"])
    best = int(np.argmin(scores)) + 1
    assert stop.best_epoch_ == best
    assert stop.best_score_ == scores.min()
    assert net.history[best - 1, "valid_temp_nll_best"]
    # it stopped: patience epochs after the best one, before max_epochs
    assert len(net.history) == best + 8 < 30
    # the epochs differ, and the restored weights are the best epoch's
    assert np.argmin(raw) + 1 < best
    temperature, score = post_temperature_nll(net, X_val, y_val)
    assert score == pytest.approx(stop.best_score_, rel=1e-5)
    assert temperature == pytest.approx(stop.best_temperature_, rel=1e-4)
    assert score < scores[-1]  # not the last epoch's weights

    # skorch's early stopping on the raw validation loss, same net and seed
    plain = make_net(
        EarlyStopping(patience=8, threshold=0.0, load_best=True), X_val, y_val
    ).fit(X, y)
    _, plain_score = post_temperature_nll(plain, X_val, y_val)
    assert plain_score == pytest.approx(scores[np.argmin(raw)], rel=1e-5)
    assert score < plain_score - 0.01  # 0.765 against 0.789


def test_without_load_best_the_last_weights_stay():
    X, y, X_val, y_val = noisy_split()
    stop = TemperatureEarlyStopping(patience=3, threshold=0.0, load_best=False)
    net = make_net(stop, X_val, y_val).fit(X, y)
    _, score = post_temperature_nll(net, X_val, y_val)
    assert score == pytest.approx(net.history[-1, "valid_temp_nll"], rel=1e-5)
    assert stop.best_weights_ is None


def test_threshold_ignores_small_improvements():
    X, y, X_val, y_val = noisy_split()
    # an absolute threshold of 1: no epoch after the first improves enough
    stop = TemperatureEarlyStopping(patience=2, threshold=1.0, threshold_mode="abs")
    net = make_net(stop, X_val, y_val).fit(X, y)
    assert len(net.history) == 3 and stop.best_epoch_ == 1
    assert net.history[:, "valid_temp_nll_best"] == [True, False, False]


def test_runs_to_max_epochs_and_records_every_epoch():
    X, y, X_val, y_val = noisy_split()
    stop = TemperatureEarlyStopping(patience=50, name="tnll")
    net = make_net(stop, X_val, y_val, max_epochs=4).fit(X, y)
    assert len(net.history) == 4
    assert np.all(np.isfinite(net.history[:, "tnll"]))
    assert np.all(np.array(net.history[:, "valid_temperature"]) > 0)
    # refitting starts afresh
    net.fit(X, y)
    assert len(net.history) == 4 and stop.best_epoch_ >= 1


def test_default_validation_split_and_partial_fit():
    X, y, _, _ = noisy_split()
    stop = TemperatureEarlyStopping(patience=2)
    net = NetClassifier(
        max_epochs=3, random_state=0, module__hidden_units=(8,), callbacks=[stop]
    )
    net.fit(X, y)
    first = len(net.history)
    net.partial_fit(X, y)
    assert len(net.history) > first
    assert stop.best_epoch_ > first or stop.misses_ > 0


def test_needs_a_validation_split():
    X, y, _, _ = noisy_split()
    net = NetClassifier(
        max_epochs=1, train_split=None, callbacks=[TemperatureEarlyStopping()]
    )
    with pytest.raises(ValueError, match="train_split"):
        net.fit(X, y)


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"patience": 0}, "patience"),
        ({"patience": 2.5}, "patience"),
        ({"threshold": -1.0}, "threshold"),
        ({"threshold_mode": "relative"}, "threshold_mode"),
        ({"name": ""}, "name"),
    ],
)
def test_bad_parameters_raise_at_fit(params, name):
    X, y, _, _ = noisy_split()
    net = NetClassifier(max_epochs=1, callbacks=[TemperatureEarlyStopping(**params)])
    with pytest.raises(ValueError, match=name):
        net.fit(X, y)


def test_params_clone_and_pickle():
    stop = TemperatureEarlyStopping(patience=3, threshold=0.01)
    assert set(stop.get_params()) == {
        "patience",
        "threshold",
        "threshold_mode",
        "load_best",
        "name",
        "sink",
    }
    X, y, X_val, y_val = noisy_split()
    net = make_net(stop, X_val, y_val, max_epochs=3).fit(X, y)
    assert set(stop.get_params()) == set(clone(stop).get_params())
    again = pickle.loads(pickle.dumps(net))
    np.testing.assert_allclose(again.predict_proba(X_val), net.predict_proba(X_val))
    cloned = clone(net)
    assert cloned.callbacks[0].get_params()["patience"] == 3
    assert torch.get_num_threads() >= 1


def test_predicts_the_split_when_the_loop_gave_no_batches():
    # a training loop that does not report its validation batches: the
    # callback predicts the split itself, with the same numbers
    X, y, X_val, y_val = noisy_split()
    stop = TemperatureEarlyStopping(patience=2)
    net = make_net(stop, X_val, y_val, max_epochs=2).fit(X, y)
    stop.batches_ = []
    logits, targets = stop._validation_logits(net, Dataset(X_val, y_val))
    np.testing.assert_allclose(logits, net.predict_logits(X_val), rtol=1e-6)
    np.testing.assert_array_equal(targets, y_val)
