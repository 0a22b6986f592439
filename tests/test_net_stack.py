"""The stacked training of several nets (sklcalib._net_stack) and the
benchmark's grouped paths built on it.

The reference is each net's own ``fit`` (and the benchmark's per-run and
per-pair paths): the stacked pass must give the same weights, histories and
rows to the last bit (``torch.equal`` / ``==``, no tolerance), since it
computes every number by the same operation on the same values.
"""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from skorch.dataset import Dataset
from skorch.helper import predefined_split

from sklcalib._net_stack import fit_stacked
from sklcalib.callbacks import TemperatureEarlyStopping
from sklcalib.net import NetClassifier

#: torch's cross-entropy, the fused nodes of the focal family, batch-coupled
#: criteria (MMCE, MDCA) and a margin one
CRITERIA = ("ce", "focal", "dual_focal", "brier", "mmce", "mdca", "mbls")


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=330,  # 10 batches of 32 and a last one of 10 rows
        n_features=5,
        n_informative=4,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    X = X.astype(np.float32)
    return X[:250], y[:250], X[250:], y[250:]


def _nets(criteria, random_states=None, validation=None, patience=None, epochs=3):
    nets = []
    for i, criterion in enumerate(criteria):
        kwargs = {"train_split": None}
        if validation is not None:
            kwargs["train_split"] = predefined_split(Dataset(*validation))
        if patience is not None:
            stopper = TemperatureEarlyStopping(patience=patience)
            kwargs["callbacks"] = [("early_stopping", stopper)]
        nets.append(
            NetClassifier(
                criterion=criterion,
                module__hidden_units=(16, 16),
                max_epochs=epochs,
                batch_size=32,
                lr=1e-2,
                optimizer__fused=True,
                random_state=0 if random_states is None else random_states[i],
                verbose=0,
                **kwargs,
            )
        )
    return nets


def _assert_stacked_fit_is_own(stacked, alone, X, y):
    """Fit ``stacked`` in one stacked pass and ``alone`` one by one: the same
    fits, net by net."""
    assert fit_stacked(stacked, X, y)
    for net in alone:
        net.fit(X, y)
    for a, b in zip(stacked, alone, strict=True):
        _assert_same_fit(a, b)


def _assert_same_fit(a, b):
    sa, sb = a.module_.state_dict(), b.module_.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key
    assert len(a.history) == len(b.history)
    for key in ("train_loss", "train_batch_count"):
        assert a.history[:, key] == b.history[:, key], key
    # every batch's recorded loss and size, training and validation
    assert [e["batches"] for e in a.history] == [e["batches"] for e in b.history]


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_stacked_fit_is_each_nets_own_fit(data, one_thread):
    X, y, _, _ = data
    stacked, alone = _nets(CRITERIA), _nets(CRITERIA)
    _assert_stacked_fit_is_own(stacked, alone, X, y)
    for a, b in zip(stacked, alone, strict=True):
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_stacked_fit_with_the_first_layer_per_net(data, one_thread, monkeypatch):
    # the plan of a narrow input whose batched first layer is not each net's
    # own product (moons' 6 features on an AVX2 host): that layer one
    # product per net, the others batched, forced here at whatever shape
    from sklcalib import _net_stack

    def first_alone(stack, shape, own):
        n_linear = len(stack.params)
        plan = (False,) + (True,) * (n_linear - 1)
        if not stack._same_as(plan, (False,) * n_linear, *shape[-2:], own):
            pytest.skip("this CPU's batched hidden layers are not the nets' own")
        return plan

    monkeypatch.setattr(_net_stack._Stack, "_batched_layers", first_alone)
    X, y, _, _ = data
    stacked, alone = _nets(CRITERIA), _nets(CRITERIA)
    _assert_stacked_fit_is_own(stacked, alone, X, y)


@pytest.mark.parametrize("batched", [True, False])
def test_stacked_last_layer_backward_is_each_nets_own(
    data, one_thread, batched, monkeypatch
):
    # batched where its check finds the products each net's own, else each
    # net's own backward by autograd: the nets' own fits either way (which
    # layouts the criteria's gradients take here depends on the CPU's vector
    # width and on numba: the mixed layouts are held by the next test)
    from sklcalib import _net_stack

    X, y, _, _ = data
    monkeypatch.setattr(_net_stack, "_LAST_EXACT", {})
    if not batched:
        monkeypatch.setattr(_net_stack, "_last_exact", lambda *args: False)
    stacked, alone = _nets(CRITERIA), _nets(CRITERIA)
    _assert_stacked_fit_is_own(stacked, alone, X, y)


def test_last_layer_node_takes_each_nets_layout(monkeypatch):
    # the last layers' node takes each net's logits' gradient in its own
    # layout (cross-entropy's row-major, a fused criterion's column-major):
    # the same gradients to the last bit as each net's own Linear backward
    from sklcalib import _net_stack

    monkeypatch.setattr(_net_stack, "_LAST_EXACT", {})
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(3, 32, 16, generator=gen)
    w = torch.randn(3, 3, 16, generator=gen)
    b = torch.randn(3, 3, generator=gen)
    seeds = [
        torch.randn(32, 3, generator=gen),
        torch.randn(3, 32, generator=gen).t(),
        torch.randn(32, 3, generator=gen),
    ]
    leaves = [t.clone().requires_grad_() for t in (z, w, b)]
    torch.autograd.backward(_net_stack._LastLinear.apply(*leaves), seeds)
    (key,) = _net_stack._LAST_EXACT
    assert [s[0] == 1 for s in key[-1]] == [False, True, False]
    own = _net_stack._last_per_net(z, w, b, seeds)
    for leaf, expected in zip(leaves, own, strict=True):
        assert torch.equal(leaf.grad, expected)


def test_last_layer_node_falls_back_on_other_layouts():
    # a gradient that is a view of something larger takes each net's own
    # backward (no check, whose random copy would not have its layout)
    from sklcalib._net_stack import _last_exact, _last_per_net

    gen = torch.Generator().manual_seed(0)
    z = torch.randn(2, 5, 4, generator=gen)
    w = torch.randn(2, 3, 4, generator=gen)
    b = torch.randn(2, 3, generator=gen)
    wide = torch.randn(5, 6, generator=gen)
    grads = [wide[:, :3], wide[:, 3:]]
    assert not _last_exact(z, w, b, grads)
    gz, gw, gb = _last_per_net(z, w, b, grads)
    for j in range(2):
        torch.testing.assert_close(gz[j], grads[j] @ w[j], rtol=0, atol=1e-6)
        torch.testing.assert_close(gw[j], grads[j].t() @ z[j], rtol=0, atol=1e-6)
        torch.testing.assert_close(gb[j], grads[j].sum(0), rtol=0, atol=1e-6)


def test_stacked_fit_with_own_batches_per_net(data, one_thread):
    # different seeds: different initial weights and batch orders
    X, y, _, _ = data
    states = [0, 1, 2]
    stacked = _nets(["focal", "ce", "mdca"], random_states=states)
    alone = _nets(["focal", "ce", "mdca"], random_states=states)
    _assert_stacked_fit_is_own(stacked, alone, X, y)


def test_stacked_fit_stops_each_net_on_its_own(data, one_thread):
    # early stopping on the validation split: the nets leave the stack at
    # their own epochs, each with its best epoch's weights
    X, y, X_val, y_val = data
    kwargs = {"validation": (X_val, y_val), "patience": 2, "epochs": 25}
    stacked, alone = _nets(CRITERIA, **kwargs), _nets(CRITERIA, **kwargs)
    _assert_stacked_fit_is_own(stacked, alone, X, y)
    for a, b in zip(stacked, alone, strict=True):
        sa = dict(a.callbacks_)["early_stopping"]
        sb = dict(b.callbacks_)["early_stopping"]
        assert (sa.best_epoch_, sa.best_score_) == (sb.best_epoch_, sb.best_score_)
        assert a.history[:, "valid_temp_nll"] == b.history[:, "valid_temp_nll"]
    # the test means something only if the nets stopped at different epochs
    assert len({len(net.history) for net in alone}) > 1


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"optimizer__amsgrad": True, "optimizer__weight_decay": 1e-2},
        {"optimizer__maximize": False, "optimizer__eps": 1e-6},
    ],
)
def test_stacked_adam_step_is_adams_own(data, one_thread, settings, monkeypatch):
    # the stacked pass calls fused Adam's kernel itself: the same state and
    # weights as torch's Adam.step in each net's own fit, for Adam's options
    from sklcalib import _net_stack

    X, y, _, _ = data
    stacked = [n.set_params(**settings) for n in _nets(["ce", "focal", "mdca"])]
    alone = [n.set_params(**settings) for n in _nets(["ce", "focal", "mdca"])]
    fallback = []
    monkeypatch.setattr(
        torch.optim.Adam,
        "step",
        lambda self, *a, **k: fallback.append(1),  # never called when lean
    )
    assert fit_stacked(stacked, X, y)
    assert not fallback
    monkeypatch.undo()
    for net in alone:
        net.fit(X, y)
    for a, b in zip(stacked, alone, strict=True):
        _assert_same_fit(a, b)
    assert _net_stack._lean_adam({"fused": False, "lr": 1e-3}) is None


def test_stacked_fit_after_the_first_net_stops(data, one_thread):
    # the nets share one batch stream; once the first net has stopped, the
    # others must go on with the batch order of the epochs that follow,
    # not start over at the first epoch's
    X, y, X_val, y_val = data
    kwargs = {"validation": (X_val, y_val), "patience": 6, "epochs": 20}
    stacked, alone = _nets(CRITERIA[:4], **kwargs), _nets(CRITERIA[:4], **kwargs)
    for net in (stacked[0], alone[0]):
        net.set_params(callbacks__early_stopping__patience=1)
    _assert_stacked_fit_is_own(stacked, alone, X, y)
    # the first net left the stack while others trained on
    assert len(alone[0].history) < max(len(net.history) for net in alone[1:])


def test_stacked_fit_falls_back_to_one_by_one(data):
    X, y, _, _ = data
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        nets = _nets(["ce", "focal"])
        assert not fit_stacked(nets, X, y)  # a parallel split could round apart
    finally:
        torch.set_num_threads(threads)
    # a module the stacked pass does not reproduce: dropout
    nets = _nets(["ce", "focal"])
    for net in nets:
        net.set_params(module__dropout=0.1)
    alone = _nets(["ce", "focal"])
    for net in alone:
        net.set_params(module__dropout=0.1).fit(X, y)
    torch.set_num_threads(1)
    try:
        assert not fit_stacked(nets, X, y)
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(nets, alone, strict=True):
        np.testing.assert_array_equal(a.predict_logits(X), b.predict_logits(X))


def test_a_learning_rate_schedule_fits_one_by_one(data, one_thread):
    # the schedule steps each net's own optimizer, not the stacked one (its
    # per-batch hook takes the nets off the stacked pass)
    from skorch.callbacks import LRScheduler

    X, y, _, _ = data
    schedule = {"callbacks": [("lr", LRScheduler(policy="StepLR", step_size=1))]}
    nets = [n.set_params(**schedule) for n in _nets(["ce", "focal"])]
    alone = [n.set_params(**schedule) for n in _nets(["ce", "focal"])]
    assert not fit_stacked(nets, X, y)
    for net in alone:
        net.fit(X, y)
    for a, b in zip(nets, alone, strict=True):
        _assert_same_fit(a, b)


def test_run_group_rows_are_run_ones_rows():
    from sklcalib.benchmark.runner import run_group, run_one

    losses = ["ce", "focal", "mmce"]
    kwargs = {"epochs": 3, "hessian_samples": 2, "torch_threads": 1}
    rows = run_group("wine", losses, 1, **kwargs)
    for loss, row in zip(losses, rows, strict=True):
        ref = run_one("wine", loss, 1, **kwargs)
        assert row.keys() == ref.keys()
        for key, value in row.items():
            if key == "train_seconds":
                continue
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(value, ref[key], err_msg=key)
            else:
                assert value == ref[key] or (value != value and ref[key] != ref[key])


@pytest.mark.parametrize("n", [700, 12000])
def test_group_resamples_are_seed_resamples(n):
    # 12 000 rows: several chunks of resamples, one resample a block
    from sklcalib.benchmark import _paired

    rng = np.random.default_rng(0)
    k = 3
    y = rng.integers(0, k, n)
    runs = {}
    for name, scale in (("a", 1.0), ("b", 2.0), ("c", 0.5)):
        logits = rng.normal(size=(n, k)) * scale + 2.0 * np.eye(k)[y]
        proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        runs[name] = _paired.run_residuals(y, proba)
    pairs = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "c")]
    n_resamples = 199 if n < 1000 else 180
    found = _paired.group_resamples(runs, pairs, n_resamples, 7)
    assert set(found) == set(pairs)
    for a, b in pairs:
        ref = _paired.seed_resamples(runs[a], runs[b], n_resamples, 7)
        for x, r in zip(found[a, b], ref, strict=True):
            np.testing.assert_array_equal(x, r)
