"""The fast path of NetClassifier: in-memory batches, lean loop, inference mode.

The reference is skorch's own path (a DataLoader over the dataset, skorch's
training loop), which a skorch ``Dataset`` subclass forces: the fast path must
give the same weights, losses and predictions, and keep skorch's conventions
(callbacks, histories, iterator parameters, optimizers that need a closure).
"""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from skorch.callbacks import Callback, GradientNormClipping, PassthroughScoring
from skorch.dataset import Dataset

from sklcalib._net_loop import TensorBatches
from sklcalib.net import NetClassifier


class RowDataset(Dataset):
    """A skorch Dataset subclass: NetClassifier must take skorch's general
    path for it (a subclass may transform each row)."""


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=300,
        n_features=6,
        n_informative=4,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    return X.astype(np.float32), y


def net_(**params):
    params = {
        "module__hidden_units": (16,),
        "module__dropout": 0.2,
        "max_epochs": 3,
        "batch_size": 32,
        "random_state": 0,
        **params,
    }
    return NetClassifier(**params)


def _state(net):
    return {k: v.clone() for k, v in net.module_.state_dict().items()}


def _assert_same_weights(a, b):
    sa, sb = _state(a), _state(b)
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key


def _batches(net, key):
    return [b[key] for epoch in net.history for b in epoch["batches"] if key in b]


class Recorder(Callback):
    """Records every per-batch call skorch makes."""

    def initialize(self):
        self.calls = []
        return self

    def on_batch_begin(self, net, batch=None, training=None, **kwargs):
        self.calls.append(("begin", training, len(batch[0])))

    def on_batch_end(self, net, batch=None, training=None, **kwargs):
        y_pred = kwargs["y_pred"]
        self.calls.append(("end", training, len(batch[0])))
        self.y_pred_inference = getattr(self, "y_pred_inference", [])
        self.y_pred_inference.append((training, y_pred.is_inference()))
        assert len(y_pred) == len(batch[0]) == len(batch[1])
        assert torch.is_tensor(kwargs["loss"])

    def on_grad_computed(self, net, named_parameters, batch=None, training=None):
        grads = [p.grad for _, p in named_parameters]
        assert all(g is not None for g in grads)
        self.calls.append(("grad", training, len(batch[0])))


def test_in_memory_data_takes_the_fast_path_and_datasets_the_general_one(data):
    X, y = data
    net = net_().fit(X, y)
    batches = net.get_iterator(net.get_dataset(X, y), training=True)
    assert isinstance(batches, TensorBatches)
    assert batches.shuffle and batches.batch_size == 32
    # a Dataset subclass, a user's iterator argument, a TensorDataset: skorch's
    general = [
        net.get_iterator(RowDataset(X, y), training=True),
        net_(iterator_train__collate_fn=torch.utils.data.default_collate)
        .fit(X, y)
        .get_iterator(net.get_dataset(X, y), training=True),
        net.get_iterator(
            torch.utils.data.TensorDataset(torch.as_tensor(X), torch.as_tensor(y)),
            training=True,
        ),
    ]
    for loader in general:
        assert isinstance(loader, torch.utils.data.DataLoader)


@pytest.mark.parametrize("criterion", ["ce", "focal", "mmce", "mdca"])
@pytest.mark.parametrize("shuffle", [True, False])
def test_fast_path_equals_skorchs_path(data, shuffle, criterion):
    # sklcalib's criteria get the encoded batches without the input check
    X, y = data
    params = {"iterator_train__shuffle": shuffle, "criterion": criterion}
    fast = net_(**params).fit(X, y)
    general = net_(dataset=RowDataset, **params).fit(X, y)
    assert not isinstance(
        general.get_iterator(general.get_dataset(X, y), training=True), TensorBatches
    )
    # the same batches in the same order, the same dropout masks: bit for bit
    _assert_same_weights(fast, general)
    assert _batches(fast, "train_loss") == _batches(general, "train_loss")
    assert _batches(fast, "train_batch_size") == _batches(general, "train_batch_size")
    assert _batches(fast, "valid_batch_size") == _batches(general, "valid_batch_size")
    # validation and prediction run in larger chunks: equal to float32 rounding
    np.testing.assert_allclose(
        _batches(fast, "valid_loss"), _batches(general, "valid_loss"), rtol=1e-5
    )
    np.testing.assert_allclose(
        fast.history[:, "valid_acc"], general.history[:, "valid_acc"]
    )
    np.testing.assert_allclose(
        fast.predict_proba(X), general.predict_proba(X), rtol=1e-5, atol=1e-7
    )


def test_partial_fit_continues_as_skorch_does(data):
    X, y = data
    fast, general = net_(max_epochs=1), net_(max_epochs=1, dataset=RowDataset)
    for net in (fast, general):
        net.fit(X, y)
        net.partial_fit(X, y)
        net.partial_fit(X, y)
    _assert_same_weights(fast, general)
    assert len(fast.history) == 3
    assert _batches(fast, "train_loss") == _batches(general, "train_loss")


def test_a_seeded_fit_is_the_same_every_time(data):
    X, y = data
    first = net_().fit(X, y)
    torch.manual_seed(123)  # the global state does not matter
    second = net_().fit(X, y)
    _assert_same_weights(first, second)
    assert _batches(first, "train_loss") == _batches(second, "train_loss")
    assert first.history[:, "valid_loss"] == second.history[:, "valid_loss"]
    np.testing.assert_array_equal(first.predict_proba(X), second.predict_proba(X))


def test_callbacks_see_every_batch(data):
    X, y = data
    recorder = Recorder()
    net = net_(max_epochs=2, callbacks=[("recorder", recorder)]).fit(X, y)
    n_train, n_valid = 240, 60  # the stratified 20 % split
    per_epoch = []
    for when, training in (("begin", True), ("grad", True), ("end", True)):
        sizes = [n for w, t, n in recorder.calls if w == when and t is training]
        assert sum(sizes) == 2 * n_train
        per_epoch.append(len(sizes) // 2)
    sizes = [n for w, t, n in recorder.calls if w == "end" and t is False]
    assert sum(sizes) == 2 * n_valid
    assert per_epoch == [8, 8, 8]  # ceil(240 / 32)
    assert net.history[:, "train_batch_count"] == [8, 8]
    assert net.history[:, "valid_batch_count"] == [2, 2]  # ceil(60 / 32)
    # training outputs carry autograd; validation ones come from inference mode
    assert {t: i for t, i in recorder.y_pred_inference} == {True: False, False: True}
    # the epoch table's columns are there
    for key in ("train_loss", "valid_loss", "valid_acc", "dur", "valid_loss_best"):
        assert len(net.history[:, key]) == 2
    # the epoch losses are skorch's batch-size-weighted means
    for name, on_train in (("train_loss", True), ("valid_loss", False)):
        skorch_mean = PassthroughScoring(name=name, on_train=on_train)
        assert net.history[-1, name] == skorch_mean.get_avg_score(net.history)


class Snapshot(Callback):
    """The module's weights when training begins."""

    def on_train_begin(self, net, **kwargs):
        self.weights_ = _state(net)


def test_gradient_clipping_callback_acts(data):
    X, y = data
    moved = {}
    for clip in (None, 1e-6):
        snapshot = Snapshot()
        callbacks = [("snapshot", snapshot)]
        if clip is not None:
            callbacks.append(("clip", GradientNormClipping(clip)))
        net = net_(
            optimizer=torch.optim.SGD, lr=1.0, max_epochs=1, callbacks=callbacks
        ).fit(X, y)
        moved[clip] = max(
            float((value - snapshot.weights_[name]).abs().max())
            for name, value in _state(net).items()
        )
    # 8 SGD steps of gradient norm <= 1e-6 at lr 1 move no weight by > 1e-5
    assert moved[1e-6] < 1e-5 < moved[None]


def test_an_optimizer_that_needs_a_closure_works(data):
    X, y = data
    fast = net_(optimizer=torch.optim.LBFGS, lr=0.1, max_epochs=2).fit(X, y)
    general = net_(
        optimizer=torch.optim.LBFGS, lr=0.1, max_epochs=2, dataset=RowDataset
    ).fit(X, y)
    _assert_same_weights(fast, general)
    assert np.isfinite(fast.history[-1, "train_loss"])


def test_a_subclass_step_is_honoured(data):
    X, y = data
    calls = []

    class Counting(NetClassifier):
        def train_step_single(self, batch, **fit_params):
            calls.append(len(batch[0]))
            return super().train_step_single(batch, **fit_params)

    net = Counting(module__hidden_units=(8,), max_epochs=1, batch_size=32)
    net.fit(X, y)
    assert sum(calls) == 240


def test_iterator_parameters_are_honoured(data):
    X, y = data
    net = net_(iterator_train__drop_last=True, iterator_train__batch_size=50)
    net.fit(X, y)
    assert set(_batches(net, "train_batch_size")) == {50}
    assert net.history[:, "train_batch_count"] == [4, 4, 4]  # 240 // 50


def test_prediction_runs_in_chunks_under_inference_mode(data):
    X, y = data
    net = net_().fit(X, y)
    chunks = []
    for out in net.forward_iter(X):
        # the caller's code between chunks is not in inference mode
        assert not torch.is_inference_mode_enabled()
        assert out.is_inference()
        chunks.append(len(out))
    assert chunks == [300]  # max(batch_size, 1024) rows per chunk
    # predicting does not stop training afterwards
    net.partial_fit(X, y)
    assert not torch.is_inference_mode_enabled()
    net = net_(iterator_valid__batch_size=70).fit(X, y)
    assert [len(out) for out in net.forward_iter(X)] == [70, 70, 70, 70, 20]
    # and the validation split's batches are of that size
    assert net.history[:, "valid_batch_count"] == [1, 1, 1]


def test_read_only_and_tensor_inputs(data):
    X, y = data
    X_ro = X.copy()
    X_ro.flags.writeable = False
    a = net_().fit(X_ro, y)
    b = net_().fit(X, y)
    _assert_same_weights(a, b)
    np.testing.assert_array_equal(
        a.predict_proba(torch.as_tensor(X)), b.predict_proba(X)
    )


def test_shuffled_or_dropped_validation_batches_take_skorchs_loop(data):
    X, y = data
    params = {"iterator_valid__shuffle": True, "iterator_valid__drop_last": True}
    # skorch warns of iterator_valid__shuffle=True at initialisation: the point here
    with pytest.warns(UserWarning, match="You set iterator_valid__shuffle=True"):
        fast = net_(**params).fit(X, y)
    with pytest.warns(UserWarning, match="You set iterator_valid__shuffle=True"):
        general = net_(dataset=RowDataset, **params).fit(X, y)
    # 60 validation rows, batches of 32, the last one dropped
    assert fast.history[:, "valid_batch_count"] == [1, 1, 1]
    assert _batches(fast, "valid_loss") == _batches(general, "valid_loss")
    assert len(fast.predict_proba(X)) == 288  # what skorch's loader yields


def test_a_module_narrower_than_the_classes_still_gets_the_input_check(data):
    # the fast loop skips the criterion's input check only for logits with a
    # column per class: a module with too few outputs gets the clear error
    X, y = data
    net = net_(criterion="focal", module__n_classes=2)
    with pytest.raises(ValueError, match="target must lie in"):
        net.fit(X, y)


def test_a_hook_on_the_criterion_is_still_called(data):
    X, y = data
    seen = []
    net = net_(criterion="focal", max_epochs=1).fit(X, y)
    net.criterion_.register_forward_hook(lambda *args: seen.append(1))
    net.partial_fit(X, y)
    assert len(seen) >= len(y) * 0.8 // 32  # one call per training batch at least


def test_validation_collectors_get_whole_chunks():
    # the callbacks that keep the validation logits (early stopping on the
    # temperature-scaled loss, AdaFocal) are handed each chunk of the
    # validation pass once: joined, the same rows in the same order as the
    # net's own prediction of the split
    from skorch.helper import predefined_split

    from sklcalib.callbacks import _ValidationBatches

    class Keep(_ValidationBatches):
        def _validation_end(self, net, dataset_valid):
            self.pieces = len(self.batches_)
            self.joined = self._collected_validation(dataset_valid)

    X, y = make_classification(n_samples=3500, n_features=6, random_state=0)
    X = X.astype(np.float32)
    X_val, y_val = X[1000:], y[1000:]  # 2 500 rows: three chunks of 1 024
    keep = Keep()
    net = NetClassifier(
        module__hidden_units=(8,),
        max_epochs=1,
        batch_size=32,
        random_state=0,
        train_split=predefined_split(Dataset(X_val, y_val)),
        callbacks=[("keep", keep)],
    ).fit(X[:1000], y[:1000])
    assert keep.pieces == 3
    logits, targets = keep.joined
    np.testing.assert_array_equal(logits, net.predict_logits(X_val))
    np.testing.assert_array_equal(targets, y_val)
    # the per-batch losses are still recorded batch by batch
    assert len(_batches(net, "valid_loss")) == -(-len(X_val) // 32)
