"""Callbacks: GammaSchedule, AdaFocalUpdater, CalibrationScoring."""

import pickle

import numpy as np
import pytest
import torch
from _helpers import small_net
from sklearn.base import clone

from sklcalib import losses
from sklcalib.callbacks import (
    FLS531,
    FLS532,
    AdaFocalUpdater,
    CalibrationScoring,
    GammaSchedule,
)
from sklcalib.metrics import (
    adaptive_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from sklcalib.net import NetClassifier


def split_of(net, X, y, valid):
    """The net's (seeded) internal split, rebuilt after fit."""
    X32 = np.asarray(X, dtype=np.float32)
    y_enc = net.label_encoder_.transform(y)
    train, test = net.get_split_datasets(X32, y_enc)
    dataset = test if valid else train
    indices = np.asarray(dataset.indices) if hasattr(dataset, "indices") else None
    if indices is None:
        return X32, y_enc
    return X32[indices], y_enc[indices]


# ----------------------------------------------------------------------
# GammaSchedule
# ----------------------------------------------------------------------
def test_paper_schedules():
    assert dict(FLS531) == {0: 5.0, 100: 3.0, 250: 1.0}
    assert dict(FLS532) == {0: 5.0, 100: 3.0, 250: 2.0}
    # the default of every GammaSchedule cannot be changed in place
    with pytest.raises(TypeError):
        FLS531[0] = (0, 1.0)
    pairs = GammaSchedule([(0, 2.0), (10, 1.0)]).initialize()
    assert pairs.gamma_at(12) == 1.0
    schedule = GammaSchedule(FLS532).initialize()
    assert [schedule.gamma_at(e) for e in (0, 99, 100, 249, 250, 1000)] == [
        5.0,
        5.0,
        3.0,
        3.0,
        2.0,
        2.0,
    ]
    default = GammaSchedule()
    assert default.get_params() == {"schedule": FLS531}  # FLS-531
    assert default.initialize().gamma_at(250) == 1.0


def test_gamma_schedule_sets_gamma_at_scheduled_epochs(data):
    X, y = data
    net = small_net(
        criterion="focal",
        max_epochs=5,
        callbacks=[GammaSchedule({0: 5, 2: 3.0, 4: 1})],
    ).fit(X, y)
    assert net.history[:, "gamma"] == [5.0, 5.0, 3.0, 3.0, 1.0]
    assert net.criterion_.gamma == 1.0


def test_gamma_schedule_keeps_the_criterion_gamma_before_its_first_epoch(data):
    X, y = data
    net = small_net(
        criterion="focal",
        criterion__gamma=2.0,
        max_epochs=3,
        callbacks=[GammaSchedule({2: 0.5})],
    ).fit(X, y)
    assert net.history[:, "gamma"] == [2.0, 2.0, 0.5]


def test_scheduled_gamma_is_the_one_the_loss_uses(data):
    # with lr=0 the weights never move, so each epoch's training loss is the
    # focal loss of the same logits with that epoch's γ
    X, y = data
    net = small_net(
        criterion="focal",
        lr=0.0,
        max_epochs=2,
        train_split=None,
        callbacks=[GammaSchedule({0: 0.0, 1: 2.0})],
    ).fit(X, y)
    logits = torch.as_tensor(net.decision_function(X))
    target = torch.as_tensor(net.label_encoder_.transform(y))
    ce = torch.nn.functional.cross_entropy(logits, target).item()
    focal2 = losses.FocalLoss(gamma=2.0)(logits, target).item()
    assert net.history[0, "train_loss"] == pytest.approx(ce, rel=1e-5)
    assert net.history[1, "train_loss"] == pytest.approx(focal2, rel=1e-5)
    assert focal2 < ce


@pytest.mark.parametrize(
    "schedule, match",
    [
        ({-1: 2.0}, "keys must be epochs"),
        ({1.5: 2.0}, "keys must be epochs"),
        ({True: 2.0}, "keys must be epochs"),
        ({0: -1.0}, "values must be gammas"),
        ({0: float("nan")}, "values must be gammas"),
        ({0: "5"}, "values must be gammas"),
        ({}, "non-empty dict"),
        ([(0, 5.0, 1.0)], "non-empty dict"),
        ([5.0], "non-empty dict"),
        ("FLS531", "non-empty dict"),
    ],
)
def test_gamma_schedule_rejects_bad_schedules(data, schedule, match):
    X, y = data
    net = small_net(criterion="focal", callbacks=[GammaSchedule(schedule)])
    with pytest.raises(ValueError, match=match):
        net.fit(X, y)


def test_gamma_schedule_needs_a_gamma(data):
    X, y = data
    net = small_net(callbacks=[GammaSchedule({0: 2.0})])  # cross-entropy
    with pytest.raises(ValueError, match="'gamma' attribute"):
        net.fit(X, y)


# ----------------------------------------------------------------------
# AdaFocalUpdater
# ----------------------------------------------------------------------
def test_adafocal_updater_updates_gammas_every_epoch(data):
    X, y = data
    net = small_net(criterion="adafocal", max_epochs=3, callbacks=[AdaFocalUpdater()])
    net.fit(X, y)
    gammas = [np.asarray(g) for g in net.history[:, "adafocal_gammas"]]
    assert len(gammas) == 3
    assert all(g.shape == (15,) and np.all(np.isfinite(g)) for g in gammas)
    initial = np.asarray(losses.AdaFocalLoss().gammas, dtype=float)
    assert not np.allclose(gammas[0], initial)
    assert not np.allclose(gammas[1], gammas[0])
    assert np.all((gammas[-1] >= -2) & (gammas[-1] <= 20))


def test_adafocal_updater_feeds_validation_probabilities(data):
    # one epoch: the recorded gammas are those of an update with the final
    # validation probabilities, rebuilt independently here
    X, y = data
    net = small_net(criterion="adafocal", max_epochs=1, callbacks=[AdaFocalUpdater()])
    net.fit(X, y)
    X_valid, y_valid = split_of(net, X, y, valid=True)
    reference = losses.AdaFocalLoss()
    reference.update_from_validation(net.predict_proba(X_valid), y_valid)
    np.testing.assert_allclose(
        net.history[-1, "adafocal_gammas"],
        np.asarray(reference.gammas, dtype=float),
        rtol=1e-6,
    )


def test_adafocal_updater_reuses_the_validation_loop(data, monkeypatch):
    # the probabilities handed to the criterion are, bit for bit, those of
    # predict_proba on the validation split, taken from the epoch's own
    # validation loop: the net does not predict the split a second time
    X, y = data
    seen = []
    update = losses.AdaFocalLoss.update_from_validation

    def spy(self, y_prob, y_true):
        seen.append((np.array(y_prob), np.array(y_true)))
        return update(self, y_prob, y_true)

    calls = []
    predict_proba = NetClassifier.predict_proba

    def counting(self, X):
        calls.append(1)
        return predict_proba(self, X)

    monkeypatch.setattr(losses.AdaFocalLoss, "update_from_validation", spy)
    monkeypatch.setattr(NetClassifier, "predict_proba", counting)
    net = small_net(criterion="adafocal", max_epochs=1).fit(X, y)
    assert calls == [] and len(seen) == 1
    X_valid, y_valid = split_of(net, X, y, valid=True)
    np.testing.assert_array_equal(seen[0][0], net.predict_proba(X_valid))
    np.testing.assert_array_equal(seen[0][1], y_valid)


def test_adafocal_updater_without_validation_batches_predicts(data):
    # called outside skorch's loop (no batches seen), the callback predicts
    # the validation split itself and makes the same update
    X, y = data
    net = small_net(criterion="adafocal", max_epochs=1).fit(X, y)
    X_valid, y_valid = split_of(net, X, y, valid=True)
    _, dataset_valid = net.get_split_datasets(
        np.asarray(X, dtype=np.float32), net.label_encoder_.transform(y)
    )
    reference = losses.AdaFocalLoss()
    reference.load_state_dict(net.criterion_.state_dict())
    expected = reference.update_from_validation(net.predict_proba(X_valid), y_valid)
    AdaFocalUpdater().on_epoch_end(net, dataset_valid=dataset_valid)
    np.testing.assert_array_equal(net.history[-1, "adafocal_gammas"], expected)


def test_adafocal_updater_needs_validation_and_adafocal(data):
    X, y = data
    with pytest.raises(ValueError, match="validation split"):
        small_net(
            criterion="adafocal", train_split=None, callbacks=[AdaFocalUpdater()]
        ).fit(X, y)
    with pytest.raises(ValueError, match="update_from_validation"):
        small_net(criterion="focal", callbacks=[AdaFocalUpdater()]).fit(X, y)


# ----------------------------------------------------------------------
# CalibrationScoring
# ----------------------------------------------------------------------
def test_calibration_scoring_records_the_metric_every_epoch(data):
    X, y = data
    net = small_net(max_epochs=5, callbacks=[CalibrationScoring()]).fit(X, y)
    values = net.history[:, "valid_ece"]
    assert len(values) == 5
    assert all(0.0 <= v <= 1.0 for v in values)
    assert net.history[:, "valid_ece_best"][0] is True
    # the last value is the ECE of the final net on its validation split
    X_valid, y_valid = split_of(net, X, y, valid=True)
    expected = expected_calibration_error(y_valid, net.predict_proba(X_valid))
    assert values[-1] == pytest.approx(expected, rel=1e-6)


def test_calibration_scoring_on_the_training_split(data):
    X, y = data
    names = np.array(["a", "b", "c"])[y]
    net = small_net(
        max_epochs=3,
        module__dropout=0.3,  # training-mode predictions would differ
        callbacks=[CalibrationScoring("mce", on_train=True, n_bins=5)],
    ).fit(X, names)
    X_train, y_train = split_of(net, X, names, valid=False)
    assert len(y_train) == 160
    expected = maximum_calibration_error(y_train, net.predict_proba(X_train), n_bins=5)
    assert net.history[-1, "train_mce"] == pytest.approx(expected, rel=1e-6)


def test_calibration_scoring_names_and_metrics(data):
    X, y = data
    net = small_net(
        max_epochs=2,
        callbacks=[
            CalibrationScoring("neg_adaptive_ece"),
            CalibrationScoring("classwise_ece"),
            CalibrationScoring("smooth_ece"),
            ("custom", CalibrationScoring("ece", name="my_ece", n_bins=4)),
            CalibrationScoring(adaptive_calibration_error, name="ace_callable"),
        ],
    ).fit(X, y)
    last = net.history[-1]
    for key in (
        "valid_adaptive_ece",
        "valid_classwise_ece",
        "valid_smooth_ece",
        "my_ece",
        "ace_callable",
    ):
        assert 0.0 <= last[key] <= 1.0, key
    assert last["ace_callable"] == pytest.approx(last["valid_adaptive_ece"])
    X_valid, y_valid = split_of(net, X, y, valid=True)
    expected = expected_calibration_error(y_valid, net.predict_proba(X_valid), n_bins=4)
    assert last["my_ece"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scoring": "accuracy"}, "scoring must be one of"),
        ({"n_bins": 0}, "n_bins must be an integer"),
    ],
)
def test_calibration_scoring_rejects_bad_arguments(data, kwargs, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        small_net(callbacks=[CalibrationScoring(**kwargs)]).fit(X, y)


def test_nets_with_callbacks_clone_and_pickle(data):
    X, y = data
    net = small_net(
        criterion="focal",
        callbacks=[GammaSchedule({0: 3.0, 2: 1.0}), CalibrationScoring()],
    )
    cloned = clone(net).get_params(deep=False)["callbacks"]
    assert [type(cb) for cb in cloned] == [GammaSchedule, CalibrationScoring]
    assert cloned[1].get_params() == {
        "scoring": "ece",
        "on_train": False,
        "name": None,
        "n_bins": 15,
    }
    net.fit(X, y)
    # skorch lists a net's callbacks' parameters once they are initialized
    assert net.get_params()["callbacks__CalibrationScoring__n_bins"] == 15
    net.set_params(callbacks__CalibrationScoring__n_bins=5)
    assert dict(net.callbacks_)["CalibrationScoring"].n_bins == 5
    net.set_params(callbacks__CalibrationScoring__n_bins=15)
    restored = pickle.loads(pickle.dumps(net))
    np.testing.assert_array_equal(restored.predict_proba(X), net.predict_proba(X))
    assert restored.history[:, "valid_ece"] == net.history[:, "valid_ece"]


def test_curvature_logger_is_reexported():
    from sklcalib import diagnostics
    from sklcalib.callbacks import CurvatureLogger

    assert CurvatureLogger is diagnostics.CurvatureLogger
    with pytest.raises(AttributeError, match="no_such_callback"):
        from sklcalib import callbacks

        callbacks.no_such_callback  # noqa: B018


# ----------------------------------------------------------------------
# AdaFocal criteria get their updater without asking
# ----------------------------------------------------------------------
def _updaters(net):
    return [name for name, cb in net.callbacks_ if isinstance(cb, AdaFocalUpdater)]


@pytest.mark.parametrize(
    "criterion",
    ["adafocal", "adadualfocal", losses.AdaFocalLoss, losses.AdaFocalLoss()],
)
def test_adafocal_criteria_adapt_without_an_explicit_updater(data, criterion):
    X, y = data
    net = small_net(criterion=criterion, max_epochs=2).fit(X, y)
    assert _updaters(net) == ["adafocal_updater"]
    gammas = np.asarray(net.history[-1, "adafocal_gammas"])
    start = np.asarray(type(net.criterion_)().gammas, dtype=float)
    assert not np.allclose(gammas, start)
    np.testing.assert_allclose(np.asarray(net.criterion_.gammas), gammas)


def test_adafocal_updater_is_not_doubled_or_forced(data):
    X, y = data
    for callbacks in (
        [AdaFocalUpdater()],
        [("mine", AdaFocalUpdater())],
        [AdaFocalUpdater],
    ):
        net = small_net(criterion="adafocal", max_epochs=1, callbacks=callbacks)
        net.fit(X, y)
        assert len(_updaters(net)) == 1, callbacks
        assert len(net.history[-1, "adafocal_gammas"]) == 15
    # other criteria get none; it can be switched off by name
    assert _updaters(small_net(criterion="focal", max_epochs=1).fit(X, y)) == []
    net = small_net(criterion="adafocal", max_epochs=1)
    net.set_params(callbacks__adafocal_updater=None).fit(X, y)
    assert _updaters(net) == []
    assert "adafocal_gammas" not in net.history[-1]


def test_automatic_adafocal_updater_still_needs_the_validation_split(data):
    X, y = data
    with pytest.raises(ValueError, match=r"added automatically.*validation split"):
        small_net(criterion="adafocal", train_split=None).fit(X, y)


@pytest.mark.parametrize("via", ["callback", "net"])
def test_calibration_scoring_follows_on_train_set_after_construction(data, via):
    # use_caching used to be fixed in __init__: after set_params(on_train=True)
    # the cached training-mode predictions (dropout, moving weights) were scored
    X, y = data
    net = small_net(
        max_epochs=1,
        module__dropout=0.3,
        callbacks=[("calib", CalibrationScoring("mce", n_bins=5))],
    )
    if via == "callback":
        net.fit(X, y)
        dict(net.callbacks_)["calib"].set_params(on_train=True)
        net.partial_fit(X, y)  # continues: the callbacks are not re-initialized
    else:
        net.set_params(callbacks__calib__on_train=True).fit(X, y)
    cb = dict(net.callbacks_)["calib"]
    assert cb.on_train and not cb.use_caching
    X_train, y_train = split_of(net, X, y, valid=False)
    expected = maximum_calibration_error(y_train, net.predict_proba(X_train), n_bins=5)
    assert net.history[-1, "train_mce"] == pytest.approx(expected, rel=1e-6)
