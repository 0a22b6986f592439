"""NetClassifier and MLP: the scikit-learn contract of the skorch classifier."""

import functools
import io
import pickle
from contextlib import redirect_stdout

import numpy as np
import pytest
import torch
from _helpers import small_net as _small_net
from scipy.special import softmax
from sklearn.base import clone, is_classifier
from sklearn.datasets import make_classification
from sklearn.metrics import get_scorer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch import NeuralNetClassifier
from skorch.callbacks import ProgressBar

from sklcalib.net import MLP, NetClassifier

# 5 epochs and no seed unless a test sets one
small_net = functools.partial(_small_net, max_epochs=5, random_state=None)


class SoftmaxMSELoss(torch.nn.Module):
    """A criterion on logits that is not cross-entropy.

    With such a criterion plain skorch returns the raw module output from
    ``predict_proba`` (the classic pitfall NetClassifier fixes).
    """

    def forward(self, logits, target):
        one_hot = torch.nn.functional.one_hot(target, logits.shape[1])
        return ((torch.softmax(logits, dim=1) - one_hot) ** 2).sum(1).mean()


# ----------------------------------------------------------------------
# MLP
# ----------------------------------------------------------------------
def test_mlp_returns_logits_of_the_right_shape():
    module = MLP(hidden_units=(8, 4), n_features=3, n_classes=5)
    out = module(torch.randn(7, 3))
    assert out.shape == (7, 5)
    # logits: not constrained to the simplex
    assert not torch.allclose(out.sum(1), torch.ones(7))
    linears = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [
        (3, 8),
        (8, 4),
        (4, 5),
    ]


def test_mlp_options():
    module = MLP(
        hidden_units=6,
        dropout=0.5,
        activation=torch.nn.Tanh(),
        n_features=2,
        n_classes=2,
    )
    kinds = [type(m) for m in module.layers]
    assert kinds == [torch.nn.Linear, torch.nn.Tanh, torch.nn.Dropout, torch.nn.Linear]
    logistic = MLP(hidden_units=(), n_features=4, n_classes=3)
    assert [type(m) for m in logistic.layers] == [torch.nn.Linear]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_features": None, "n_classes": 2}, "n_features must be given"),
        ({"n_features": 3, "n_classes": None}, "n_classes must be given"),
        ({"n_features": 0, "n_classes": 2}, "n_features must be >= 1"),
        ({"n_features": 3, "n_classes": 2, "hidden_units": (4, -1)}, "hidden_units"),
        ({"n_features": 3, "n_classes": 2, "dropout": 1.0}, "dropout"),
    ],
)
def test_mlp_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MLP(**kwargs)


# ----------------------------------------------------------------------
# parameters, clone, tags
# ----------------------------------------------------------------------
def test_defaults_a_tabular_user_can_rely_on():
    net = NetClassifier()
    params = net.get_params(deep=False)
    assert params["module"] is MLP
    assert params["criterion"] is torch.nn.CrossEntropyLoss
    assert params["optimizer"] is torch.optim.Adam
    assert params["lr"] == 1e-3
    assert params["iterator_train__shuffle"] is True
    assert params["verbose"] == 0
    assert params["random_state"] is None
    assert params["train_split"].stratified
    assert params["train_split"].cv == 0.2
    assert is_classifier(net)
    # skorch's private bookkeeping is not a parameter
    assert not [name for name in params if name.startswith("_")]


def test_training_batches_are_shuffled(data):
    X, y = data
    net = small_net(max_epochs=1, random_state=0).fit(X, y)
    dataset = net.get_dataset(X.astype(np.float32), y)
    # in-memory arrays take the fast path's batches
    assert net.get_iterator(dataset, training=True).shuffle
    assert not net.get_iterator(dataset, training=False).shuffle
    # any other dataset a DataLoader
    dataset = torch.utils.data.TensorDataset(torch.as_tensor(X), torch.as_tensor(y))
    train_loader = net.get_iterator(dataset, training=True)
    valid_loader = net.get_iterator(dataset, training=False)
    assert isinstance(train_loader.sampler, torch.utils.data.RandomSampler)
    assert isinstance(valid_loader.sampler, torch.utils.data.SequentialSampler)


def test_clone_and_get_params_are_exact(data):
    X, y = data
    net = NetClassifier(
        criterion=SoftmaxMSELoss,
        module__hidden_units=(16,),
        max_epochs=2,
        random_state=3,
        optimizer__weight_decay=1e-4,
    )
    params = net.get_params(deep=False)
    cloned = clone(net)
    assert cloned.get_params(deep=False).keys() == params.keys()
    for key, value in cloned.get_params(deep=False).items():
        if key == "train_split":
            assert type(value) is type(params[key])
        else:
            assert value == params[key], key
    net.fit(X, y)
    refit = clone(net)
    assert not hasattr(refit, "label_encoder_")
    assert not refit.initialized_
    assert refit.get_params(deep=False).keys() == params.keys()


def test_set_params_routes_to_module_and_reinitializes(data):
    X, y = data
    net = small_net(max_epochs=1).fit(X, y)
    net.set_params(module__hidden_units=(3,))
    first = next(iter(net.module_.modules())).layers[0]
    assert first.out_features == 3
    # sizes inferred from the last fit survive the re-initialization
    assert first.in_features == 5


# ----------------------------------------------------------------------
# probabilities, logits, labels
# ----------------------------------------------------------------------
def test_predict_proba_is_softmax_of_logits_for_a_custom_criterion(data):
    X, y = data
    net = small_net(criterion=SoftmaxMSELoss, random_state=0).fit(X, y)
    logits = net.decision_function(X)
    proba = net.predict_proba(X)
    assert logits.shape == proba.shape == (200, 3)
    assert logits.dtype == np.float32
    assert proba.dtype == np.float64
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(proba, softmax(logits.astype(np.float64), axis=1))
    assert np.array_equal(net.predict(X), net.classes_[logits.argmax(axis=1)])

    # plain skorch with the same criterion returns the logits (the pitfall)
    plain = NeuralNetClassifier(
        MLP,
        module__n_features=5,
        module__n_classes=3,
        module__hidden_units=(16,),
        criterion=SoftmaxMSELoss,
        max_epochs=1,
    ).fit(X.astype(np.float32), y)
    raw = plain.predict_proba(X.astype(np.float32))
    assert not np.allclose(raw.sum(axis=1), 1.0)


@pytest.mark.parametrize("criterion", ["focal", "dual_focal", "fcl", "brier"])
def test_predict_proba_is_softmax_for_registry_criteria(data, criterion):
    X, y = data
    net = small_net(criterion=criterion, max_epochs=2, random_state=0).fit(X, y)
    proba = net.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        proba, softmax(net.decision_function(X).astype(np.float64), axis=1)
    )


def test_tensors_that_require_grad_are_taken_as_their_values(data):
    # a scikit-learn user hands over what a torch pipeline produced: fit,
    # partial_fit, predict* and score take the values, as for arrays
    X, y = data
    X_grad = torch.tensor(X, requires_grad=True)
    y_tensor = torch.from_numpy(y)
    classes = torch.tensor(np.unique(y), dtype=torch.float64, requires_grad=True)
    want = _small_net().fit(X, y)
    net = _small_net().fit(X_grad, y_tensor)
    np.testing.assert_array_equal(net.predict_proba(X_grad), want.predict_proba(X))
    np.testing.assert_array_equal(net.predict_logits(X_grad), want.predict_logits(X))
    assert net.score(X_grad, y_tensor.double().requires_grad_()) == want.score(X, y)
    partial = _small_net().partial_fit(X_grad, y_tensor, classes=classes)
    np.testing.assert_array_equal(partial.classes_, np.unique(y))
    assert not X_grad.grad_fn and X_grad.grad is None  # left untouched


def test_criterion_by_name(data):
    X, y = data
    net = small_net(criterion="ce", max_epochs=1).fit(X, y)
    assert type(net.criterion_) is torch.nn.CrossEntropyLoss
    assert net.criterion == "ce"  # the parameter is left as given
    net.set_params(criterion="focal", criterion__gamma=1.5)
    assert type(net.criterion_).__name__ == "FocalLoss"
    assert net.criterion_.gamma == 1.5
    with pytest.raises(ValueError, match="Unknown criterion name 'nope'"):
        small_net(criterion="nope").fit(X, y)


def test_string_labels(data):
    X, y = data
    names = np.array(["setosa", "versicolor", "virginica"], dtype=object)
    net = small_net(random_state=0, max_epochs=10, lr=1e-2).fit(X, names[y])
    assert list(net.classes_) == list(names)
    predicted = net.predict(X)
    assert set(predicted) <= set(names)
    assert np.mean(predicted == names[y]) > 0.6
    np.testing.assert_array_equal(net.label_encoder_.transform(names[y]), y)
    # valid_acc compares encoded targets, so it is a real accuracy
    assert net.history[-1, "valid_acc"] > 0.5
    assert net.score(X, names[y]) == pytest.approx(np.mean(predicted == names[y]))


def test_labels_follow_classes_parameter(data):
    X, y = data
    mask = y < 2
    net = small_net(classes=[0, 1, 2], max_epochs=1).fit(X[mask], y[mask])
    assert net.predict_proba(X).shape == (200, 3)
    with pytest.raises(ValueError, match="not in classes_"):
        small_net(classes=[0, 1], max_epochs=1).fit(X, y)


def test_binary_problem_gives_two_columns():
    X, y = make_classification(n_samples=120, n_features=4, random_state=1)
    net = small_net(random_state=0).fit(X, y == 1)
    assert list(net.classes_) == [False, True]
    assert net.predict_proba(X).shape == (120, 2)
    assert net.predict_logits(X).shape == (120, 2)


def test_binary_decision_function_is_the_logit_margin():
    # scikit-learn's convention: (n,) for binary, positive favours classes_[1]
    X, y = make_classification(n_samples=120, n_features=4, random_state=1)
    net = small_net(random_state=0).fit(X, np.array(["no", "yes"])[y])
    logits = net.predict_logits(X)
    margin = net.decision_function(X)
    assert margin.shape == (120,)
    np.testing.assert_array_equal(margin, logits[:, 1] - logits[:, 0])
    np.testing.assert_allclose(
        1 / (1 + np.exp(-margin.astype(np.float64))),
        net.predict_proba(X)[:, 1],
        rtol=1e-6,
    )
    np.testing.assert_array_equal(
        net.predict(X), net.classes_[(margin > 0).astype(int)]
    )


def test_multiclass_decision_function_is_the_logits(data):
    X, y = data
    net = small_net(max_epochs=1, random_state=0).fit(X, y)
    scores = net.decision_function(X)
    assert scores.shape == (200, 3)
    np.testing.assert_array_equal(scores, net.predict_logits(X))


def test_sklearn_binary_scorers_and_calibration_work():
    # both raised on the former (n, 2) binary decision_function
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.metrics import average_precision_score, roc_auc_score
    from sklearn.model_selection import cross_val_score

    X, y = make_classification(n_samples=200, n_features=4, random_state=1)
    net = small_net(lr=0.02, max_epochs=10, random_state=0)
    for scoring, metric in (
        ("roc_auc", roc_auc_score),
        ("average_precision", average_precision_score),
    ):
        scores = cross_val_score(net, X, y, cv=2, scoring=scoring, error_score="raise")
        assert np.all(scores > 0.8), scoring
        fitted = clone(net).fit(X[:100], y[:100])
        assert get_scorer(scoring)(fitted, X[100:], y[100:]) == pytest.approx(
            metric(y[100:], fitted.predict_proba(X[100:])[:, 1])
        )
    for method in ("sigmoid", "isotonic"):
        clf = CalibratedClassifierCV(net, method=method, cv=2).fit(X, y)
        proba = clf.predict_proba(X)
        assert proba.shape == (200, 2)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


# VectorScaler's 4 parameters on 150 rows of a net that is nearly calibrated:
# the calibration check may find no gain (CalibrationWarning); the test is
# about which logit columns reach the scaler
@pytest.mark.filterwarnings(
    "ignore:VectorScaler makes the probabilities worse:"
    "sklcalib.calibration.CalibrationWarning"
)
@pytest.mark.parametrize("calibrator", ["temperature", "vector"])
def test_calibrated_classifier_takes_all_logits_of_a_binary_net(calibrator):
    from sklearn.frozen import FrozenEstimator

    from sklcalib.calibration import (
        CalibratedClassifier,
        TemperatureScaler,
        VectorScaler,
    )

    X, y = make_classification(n_samples=300, n_features=4, random_state=1)
    # lr=0.05: at the default 1e-3 four epochs leave the net untrained (held-out
    # AUC 0.35), and TemperatureScaler rightly ran to its bound T = 1e4
    net = small_net(random_state=0, lr=0.05).fit(X[:150], y[:150])
    scaler = {"temperature": TemperatureScaler(), "vector": VectorScaler()}[calibrator]
    clf = CalibratedClassifier(FrozenEstimator(net), scaler).fit(X[150:], y[150:])
    ((_, fitted),) = clf.calibrated_classifiers_
    assert fitted.n_features_in_ == 2  # both logit columns, not the margin
    direct = clone(scaler).fit(net.predict_logits(X[150:]), y[150:])
    np.testing.assert_allclose(
        clf.predict_proba(X[:150]), direct.predict_proba(net.predict_logits(X[:150]))
    )


def test_pandas_input(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    labels = pd.Series(np.array(["x", "y", "z"])[y], name="target")
    net = small_net(random_state=0).fit(frame, labels)
    assert list(net.feature_names_in_) == list(frame.columns)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_frame = net.predict_proba(frame)
    with pytest.warns(UserWarning, match="feature names"):
        from_array = net.predict_proba(X.astype(np.float32))
    np.testing.assert_array_equal(from_frame, from_array)
    same = small_net(random_state=0).fit(X, labels.to_numpy())
    np.testing.assert_array_equal(same.predict_proba(X), from_frame)


def test_float64_is_cast_to_float32(data):
    X, y = data
    net = small_net(max_epochs=1, random_state=0).fit(X.astype(np.float64), y)
    assert all(p.dtype == torch.float32 for p in net.module_.parameters())
    np.testing.assert_array_equal(
        net.decision_function(X.astype(np.float64)),
        net.decision_function(X.astype(np.float32)),
    )


def test_in_a_pipeline(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), small_net(random_state=0)).fit(X, y)
    assert pipe.predict_proba(X).shape == (200, 3)
    assert pipe.classes_.tolist() == [0, 1, 2]


# ----------------------------------------------------------------------
# reproducibility
# ----------------------------------------------------------------------
def test_same_random_state_same_fit_and_global_state_untouched(data):
    X, y = data
    net = small_net(random_state=7, module__dropout=0.2)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = net.fit(X, y).predict_proba(X)
    # fit (forked, seeded) and predict leave the caller's torch RNG alone
    assert torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(456)  # the global state must not matter
    second = clone(net).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(first, second)
    other = clone(net).set_params(random_state=8).fit(X, y).predict_proba(X)
    assert not np.allclose(first, other)


def test_random_state_none_depends_on_global_state(data):
    X, y = data
    torch.manual_seed(0)
    first = small_net().fit(X, y).predict_proba(X)
    second = small_net().fit(X, y).predict_proba(X)
    assert not np.allclose(first, second)


# A net fitted in another process is the same net: a NetClassifier pickled to
# Dask worker processes and fitted there (tests/test_dask.py, grid search
# against the local run) and nets trained in loky workers (tests/test_benchmark.py,
# --n-jobs 2 against --n-jobs 1, every number of results.csv) check it; each
# pool of workers importing torch costs about 10 CPU-s, so no third one here.


def test_pickle_round_trip(data):
    X, y = data
    net = small_net(random_state=0).fit(X, np.array(["a", "b", "c"])[y])
    restored = pickle.loads(pickle.dumps(net))
    np.testing.assert_array_equal(restored.predict_proba(X), net.predict_proba(X))
    np.testing.assert_array_equal(restored.predict(X), net.predict(X))
    assert restored.n_features_in_ == 5


# ----------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------
def test_nan_and_inf_in_X_raise(data):
    X, y = data
    for bad in (np.nan, np.inf):
        X_bad = X.copy()
        X_bad[3, 2] = bad
        with pytest.raises(ValueError, match="X contains"):
            small_net(max_epochs=1).fit(X_bad, y)
    net = small_net(max_epochs=1).fit(X, y)
    X_bad = X.copy()
    X_bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        net.predict_proba(X_bad)
    with pytest.raises(ValueError, match="too large in magnitude for float32"):
        small_net(max_epochs=1).fit(np.where(X > 2, 1e300, X), y)


def test_wrong_number_of_features_at_predict(data):
    X, y = data
    net = small_net(max_epochs=1).fit(X, y)
    with pytest.raises(ValueError, match="expecting 5 features"):
        net.predict(X[:, :4])
    with pytest.raises(ValueError, match="expecting 5 features"):
        net.decision_function(np.hstack([X, X]))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"max_epochs": -3}, "max_epochs must be >= 1"),
        ({"max_epochs": 0}, "max_epochs must be >= 1"),
        ({"max_epochs": 2.5}, "max_epochs must be an integer"),
        ({"max_epochs": True}, "max_epochs must be an integer"),
        ({"batch_size": 0}, "batch_size must be a positive integer or -1"),
        ({"batch_size": -2}, "batch_size must be a positive integer or -1"),
        ({"batch_size": 12.0}, "batch_size must be a positive integer or -1"),
        ({"lr": -0.1}, "lr must be >= 0"),
        ({"lr": float("nan")}, "lr must be finite"),
        ({"lr": "fast"}, "lr must be a real number"),
    ],
)
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_training_parameters_are_validated_at_fit(data, params, match, method):
    X, y = data
    net = small_net(**params)  # the constructor stores them unchanged
    assert net.get_params()[next(iter(params))] is next(iter(params.values()))
    with pytest.raises(ValueError, match=match):
        getattr(net, method)(X, y)


def test_whole_data_batches_and_zero_lr_are_accepted(data):
    X, y = data
    net = small_net(batch_size=-1, lr=0.0, max_epochs=1, train_split=None)
    assert net.fit(X, y).history[-1, "train_batch_count"] == 1


def test_single_class_and_length_mismatch_raise(data):
    X, y = data
    with pytest.raises(ValueError, match="y has 1 class"):
        small_net(max_epochs=1).fit(X, np.zeros(200))
    with pytest.raises(ValueError, match="y has 199 samples but X has 200"):
        small_net(max_epochs=1).fit(X, y[:-1])
    with pytest.raises(ValueError, match="Unknown label type"):
        small_net(max_epochs=1).fit(X, np.linspace(0, 1, 200))
    with pytest.raises(ValueError, match="requires y to be passed"):
        small_net(max_epochs=1).fit(X, None)


def test_predict_before_fit_raises_not_fitted(data):
    from sklearn.exceptions import NotFittedError

    for method in ("predict", "predict_proba", "decision_function", "predict_logits"):
        with pytest.raises(NotFittedError):
            getattr(NetClassifier(), method)(data[0])


# ----------------------------------------------------------------------
# skorch features
# ----------------------------------------------------------------------
def test_progress_bar_and_silence(data, capsys):
    X, y = data
    net = small_net(max_epochs=2, callbacks=[ProgressBar()]).fit(X, y)
    assert len(net.history) == 2
    captured = capsys.readouterr()
    assert "it/s" in captured.err or "it/s" in captured.out
    small_net(max_epochs=2).fit(X, y)
    assert capsys.readouterr().out == ""


def test_verbose_prints_the_epoch_table(data):
    X, y = data
    out = io.StringIO()
    with redirect_stdout(out):
        small_net(max_epochs=2, verbose=1).fit(X, y)
    assert "valid_acc" in out.getvalue()


def test_no_validation_split(data):
    X, y = data
    net = small_net(train_split=None, max_epochs=2).fit(X, y)
    assert "valid_loss" not in net.history[-1]
    assert np.isfinite(net.history[-1, "train_loss"])


def test_partial_fit_continues_training(data):
    X, y = data
    net = small_net(max_epochs=2, random_state=0)
    net.partial_fit(X, y)
    net.partial_fit(X, y)
    assert len(net.history) == 4
    with pytest.raises(ValueError, match="not in classes_"):
        net.partial_fit(X, y + 5)


def test_warm_start_keeps_training(data):
    X, y = data
    net = small_net(max_epochs=2, warm_start=True, random_state=0).fit(X, y)
    weights = [p.detach().clone() for p in net.module_.parameters()]
    net.fit(X, y)
    assert len(net.history) == 4
    moved = [p.detach() for p in net.module_.parameters()]
    assert any(not torch.equal(a, b) for a, b in zip(weights, moved, strict=True))


# ----------------------------------------------------------------------
# a diverging fit never hands back NaN
# ----------------------------------------------------------------------
def test_diverging_fit_stops_with_a_clear_error():
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    # seeded: about one initialisation in seven leaves every ReLU dead after
    # the first step, and the loss then stays finite
    net = NetClassifier(lr=1e3, optimizer=torch.optim.SGD, max_epochs=5, random_state=0)
    with pytest.raises(
        RuntimeError, match=r"loss is (nan|inf) at epoch \d+, batch \d+"
    ) as info:
        net.fit(X * 1e3, y)
    message = str(info.value)
    for advice in ("lower learning rate", "lr=1000.0", "StandardScaler", "clipping"):
        assert advice in message
    # whatever the weights became, predictions refuse to be NaN
    with pytest.raises((RuntimeError, ValueError), match="NaN or infinite"):
        net.predict_proba(X)


def test_non_finite_training_loss_is_caught_at_its_batch():
    # lr=0: the weights never move, so only the poisoned batch has a NaN loss
    X, y = make_classification(n_samples=64, n_features=4, random_state=0)

    class NaNOnThirdCall(torch.nn.CrossEntropyLoss):
        calls = 0

        def forward(self, logits, target):
            type(self).calls += 1
            loss = super().forward(logits, target)
            return loss * np.nan if type(self).calls == 3 else loss

    net = small_net(criterion=NaNOnThirdCall, lr=0.0, batch_size=16, train_split=None)
    with pytest.raises(RuntimeError, match="training loss is nan at epoch 1, batch 3"):
        net.fit(X, y)


def test_finite_loss_check_is_a_default_callback_that_can_be_disabled():
    from sklcalib.callbacks import FiniteLossCheck

    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    net = small_net(lr=1e3, optimizer=torch.optim.SGD, train_split=None)
    net.set_params(callbacks__finite_loss=None)
    net.fit(X * 1e3, y)  # the user asked for no check: the fit runs through
    assert "finite_loss" not in dict(net.callbacks_)
    assert not np.isfinite(net.history[-1, "train_loss"])
    with pytest.raises(RuntimeError, match="weights are NaN or infinite"):
        net.predict_proba(X)
    with pytest.raises(RuntimeError, match="weights are NaN or infinite"):
        net.decision_function(X)
    assert isinstance(
        dict(small_net().initialize_callbacks().callbacks_)["finite_loss"],
        FiniteLossCheck,
    )


def test_outputs_that_overflow_float32_are_refused(data):
    X, y = data
    net = small_net(max_epochs=1, random_state=0).fit(X, y)
    first = net.module_.layers[0]
    with torch.no_grad():
        first.weight.fill_(1e38)  # finite weights, but w @ x overflows float32
    X_big = np.full((3, 5), 10.0)
    X_big[0] = 0.0  # one row stays finite: the message counts the others
    with pytest.raises(ValueError, match="infinite for 2 of 3 samples of X: float32"):
        net.predict_proba(X_big)


# ----------------------------------------------------------------------
# seeding touches only the CPU generator
# ----------------------------------------------------------------------
def test_random_state_leaves_accelerator_generators_alone(data, monkeypatch):
    # torch.manual_seed also reseeds the CUDA and MPS generators, which
    # fork_rng(devices=[]) does not restore
    X, y = data
    calls = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", lambda s: calls.append(s))
    monkeypatch.setattr(torch.cuda, "manual_seed", lambda s: calls.append(s))
    monkeypatch.setattr(torch.mps, "manual_seed", lambda s: calls.append(s))
    before = torch.random.get_rng_state()
    first = small_net(max_epochs=1, random_state=0).fit(X, y).predict_proba(X)
    second = small_net(max_epochs=1, random_state=0).fit(X, y).predict_proba(X)
    assert calls == []
    np.testing.assert_array_equal(first, second)
    assert torch.equal(torch.random.get_rng_state(), before)
