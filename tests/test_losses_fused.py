"""The fused training nodes of sklcalib.losses against their reference
compositions.

Every criterion computes its training loss (logits with a gradient) in one
autograd node with a closed-form backward, and everything else (evaluation,
second derivatives) through ``_per_sample``, a plain composition of torch
operations: the reference. Here the node's values and first derivatives are
held to the reference's on random and adversarial inputs (p_t -> 1, ties at the
maximum, one class, logits ±1e4, γ < 1 among the criteria), in float64 to
1e-12 and in float32 to 1e-6, both relative to the largest magnitude in the
batch; finite differences (``gradcheck``) check every node's first and second
derivatives in float64.

With numba installed (the ``fast`` extra) a node computes the mean or sum
of a small CPU batch in a compiled kernel (float64 inside), else with torch
operations: the tests that hold a node to the reference, to finite
differences or to its eager calls run on both paths (the ``kernels``
fixture; the compiled path also in tests/test_losses_compiled.py).

In float32 the composition itself is not that exact: on large batches its
gradient strays up to 3.5e-6 from the float64 value (its autograd's
log-softmax backward), where the node's stays within 5e-7. There the node is
held to the same composition evaluated in float64 on the same inputs, and at a
kink of the loss (ties between MMCE's confidences, which float64 breaks) to
the float32 composition. Near p_t = 1 the float32 log-softmax that every
criterion starts from fixes 1 - p_t only to about 6e-8 absolute: there torch's
own float32 cross-entropy strays up to 3e-6 from its float64 gradient, and the
nodes are held to that bound (the test measures it on the same logits).
"""

import copy

import numpy as np
import pytest
import torch

from sklcalib._utils._optional import is_installed
from sklcalib.losses import (
    AdaDualFocalLoss,
    AdaFocalLoss,
    BrierLoss,
    DualFocalLoss,
    FocalCalibrationLoss,
    FocalLoss,
    InverseFocalLoss,
    LabelSmoothingLoss,
    MbLSLoss,
    MDCALoss,
    MMCELoss,
    SampleDependentFocalLoss,
    torch_kernels,
)
from sklcalib.losses._autograd import INDEX_BY_VALUE, dual_index


@pytest.fixture(params=["compiled", "torch"])
def kernels(request):
    """Run the test on the nodes' compiled kernels, then on their torch
    operations (:func:`~sklcalib.losses.torch_kernels`)."""
    if request.param == "torch":
        with torch_kernels():
            yield request.param
        return
    if not is_installed("numba"):
        pytest.skip("the compiled kernels are the fast extra's (numba)")
    yield request.param


def _binned(cls, gammas):
    """An AdaFocal-type criterion in a state an update could leave: 4 bins with
    the given γ (AdaFocal: signs mixed, inverse focal in some bins)."""
    criterion = cls(n_bins=4)
    with torch.no_grad():
        criterion.gammas.copy_(torch.tensor(gammas, dtype=torch.float64))
        edges = torch.tensor([0.0, 0.2, 0.5, 0.8, 1.0], dtype=torch.float64)
        criterion.bin_edges.copy_(edges)
    return criterion


CRITERIA = {
    "focal 0.5": FocalLoss(0.5),
    "focal 1": FocalLoss(1.0),
    "focal 1.5": FocalLoss(1.5),
    "focal 3": FocalLoss(3.0),
    "inverse 0.3": InverseFocalLoss(0.3),
    "inverse 2": InverseFocalLoss(2.0),
    "flsd53": SampleDependentFocalLoss(),
    "flsd532": SampleDependentFocalLoss(2.0, ((0.2, 5.0), (0.5, 3.0))),
    "flsd γ<1": SampleDependentFocalLoss(0.5, ((0.3, 0.0), (0.6, 0.7))),
    "flsd lambert": SampleDependentFocalLoss(thresholds="lambert"),
    "fcl": FocalCalibrationLoss(),
    "fcl γ=0": FocalCalibrationLoss(0.0, 2.0),
    "fcl γ<1": FocalCalibrationLoss(0.5, 3.0),
    "brier": BrierLoss(),
    "dual 5": DualFocalLoss(),
    "dual 0.5": DualFocalLoss(0.5),
    "adafocal": AdaFocalLoss(gamma_init=0.4),
    "adafocal mixed": _binned(AdaFocalLoss, [-1.5, 0.5, 2.0, -0.3]),
    "adadualfocal": AdaDualFocalLoss(gamma_init=0.7),
    "adadualfocal bins": _binned(AdaDualFocalLoss, [0.5, 2.0, 0.0, 3.0]),
    "mbls": MbLSLoss(),
    "mbls m=1": MbLSLoss(margin=1.0, alpha=0.3),
    "mbls mean": MbLSLoss(margin=2.0, class_reduction="mean"),
    "mbls m=0": MbLSLoss(margin=0.0),
    "mdca": MDCALoss(),
    "mdca γ=1": MDCALoss(beta=2.0, gamma=1.0),
    "mdca γ<1": MDCALoss(gamma=0.5),
    "mmce": MMCELoss(),
    "mmce kumar": MMCELoss(normalisation="kumar"),
    "mmce unweighted": MMCELoss(lam=0.7, weighted=False),
    "label smoothing": LabelSmoothingLoss(),
    "label smoothing 1": LabelSmoothingLoss(alpha=1.0),
}
NAMES = list(CRITERIA)

#: the node each criterion's training path is (the CE shortcuts aside)
NODES = {
    "FocalFastNodeBackward": ("focal", "inverse"),
    "FocalNodeBackward": ("flsd", "fcl", "brier", "dual", "ada"),
    "MarginNodeBackward": ("mbls",),
    "MDCANodeBackward": ("mdca",),
    "MMCENodeBackward": ("mmce",),
    "LabelSmoothingNodeBackward": ("label smoothing",),
}


def _inputs():
    """(name, logits (float64), targets) of every input the nodes face."""
    rng = np.random.default_rng(0)
    out = []
    z = 3 * rng.standard_normal((48, 7))
    out.append(("random", z, rng.integers(0, 7, 48)))
    # p_t -> 1: the target's logit 5 to 60 above the others
    z = 3 * rng.standard_normal((32, 5))
    y = rng.integers(0, 5, 32)
    z[np.arange(32), y] += np.linspace(5.0, 60.0, 32)
    out.append(("p_t -> 1", z, y))
    # ties at the maximum: the target tied with another class, whole rows tied
    z = np.round(rng.standard_normal((32, 6)))
    y = z.argmax(1)
    z[:, 2] = z.max(1)
    z[:8] = 0.0
    out.append(("ties", z, y))
    out.append(("one class", rng.standard_normal((16, 1)), np.zeros(16, int)))
    z = np.sign(rng.standard_normal((16, 6))) * 1e4
    y = rng.integers(0, 6, 16)
    z[0], y[0] = [1e4, -1e4, -1e4, -1e4, -1e4, -1e4], 0  # p_t = 1
    z[1], y[1] = [-1e4, 1e4, -1e4, -1e4, -1e4, -1e4], 0  # p_t = 0
    out.append(("±1e4", z, y))
    # a large batch, where float32 rounding accumulates
    out.append(("1024 x 100", 3 * rng.standard_normal((1024, 100)), None))
    return [
        (name, z, rng.integers(0, z.shape[1], len(z)) if y is None else y)
        for name, z, y in out
    ]


INPUTS = _inputs()


def _loss_and_grad(criterion, logits, target, reduction, upstream, path):
    logits = logits.clone().requires_grad_()
    if path == "node":
        loss = criterion(logits, target)
    else:
        loss = criterion._reference(logits, target, reduction)
    (grad,) = torch.autograd.grad(loss, logits, upstream.to(logits.dtype))
    return loss.detach().double(), grad.double()


def _error(got, want):
    """max |got - want| relative to the largest |want| (1 where all are 0)."""
    scale = want.abs().max().item() or 1.0
    return (got - want).abs().max().item() / scale


def _float32_bound(logits, target, reduction, upstream):
    """1e-6, or the error of torch's float32 cross-entropy gradient (against its
    float64 one) on these logits where that is larger."""
    ce = torch.nn.CrossEntropyLoss(reduction=reduction)
    grads = [
        _loss_and_grad(ce, logits.to(dtype), target, reduction, upstream, "node")[1]
        for dtype in (torch.float32, torch.float64)
    ]
    return max(1e-6, _error(*grads))


def test_float32_cross_entropy_is_the_limit_near_certainty():
    # the premise of the bound above: on the p_t -> 1 input torch's own
    # float32 cross-entropy is further than 1e-6 from its float64 gradient
    _, z, y = INPUTS[1]
    upstream = torch.tensor(1.0, dtype=torch.float64)
    target = torch.from_numpy(y)
    bound = _float32_bound(torch.tensor(z), target, "mean", upstream)
    assert 1e-6 < bound < 1e-5


@pytest.mark.parametrize("name", NAMES)
def test_node_equals_reference_composition(name, kernels):
    rng = np.random.default_rng(1)
    for input_name, z, y in INPUTS:
        if name.startswith("mmce") and len(z) > 256:
            z, y = z[:256], y[:256]  # MMCE is quadratic in the batch
        target = torch.from_numpy(y)
        for reduction in ("mean", "sum", "none"):
            criterion = copy.deepcopy(CRITERIA[name])
            criterion.reduction = reduction
            upstream = torch.tensor(1.7, dtype=torch.float64)
            if reduction == "none":
                upstream = torch.from_numpy(rng.uniform(0.5, 1.5, len(y)))
            where = f"{name}, {input_name}, {reduction}"
            # float64: the node against the composition
            z64 = torch.tensor(z)
            node = _loss_and_grad(criterion, z64, target, reduction, upstream, "node")
            ref64 = _loss_and_grad(criterion, z64, target, reduction, upstream, "ref")
            for got, want, what in zip(node, ref64, ("value", "gradient"), strict=True):
                assert torch.isfinite(got).all(), where
                assert _error(got, want) <= 1e-12, f"float64 {what}: {where}"
            # float32: against the composition in float32 or, where that one's
            # own rounding is the larger, in float64 (module docstring)
            z32 = torch.tensor(z, dtype=torch.float32)
            node = _loss_and_grad(criterion, z32, target, reduction, upstream, "node")
            ref32 = _loss_and_grad(criterion, z32, target, reduction, upstream, "ref")
            exact = _loss_and_grad(
                criterion, z32.double(), target, reduction, upstream, "ref"
            )
            bound = _float32_bound(z32, target, reduction, upstream)
            for i, what in enumerate(("value", "gradient")):
                assert torch.isfinite(node[i]).all(), where
                error = min(_error(node[i], ref32[i]), _error(node[i], exact[i]))
                assert error <= bound, f"float32 {what}: {where}: {error:.2g}"


@pytest.mark.parametrize("name", NAMES)
def test_training_path_is_one_node(name):
    z, y = INPUTS[0][1], INPUTS[0][2]
    logits = torch.tensor(z, requires_grad=True)
    loss = CRITERIA[name](logits, torch.from_numpy(y))
    node = type(loss.grad_fn).__name__
    assert any(name.startswith(prefixes) for prefixes in NODES[node])
    # its only input is the logits' gradient accumulator: no other node
    assert [type(f).__name__ for f, _ in loss.grad_fn.next_functions] == [
        "AccumulateGrad"
    ] + [None] * (len(loss.grad_fn.next_functions) - 1) or all(
        f is None or type(f).__name__ == "AccumulateGrad"
        for f, _ in loss.grad_fn.next_functions
    )


def _tie_free(seed, n=6, k=4):
    """Logits with no ties and no kink within gradcheck's steps (differences of
    at least 0.05 between any two logits of a row, targets of every rank)."""
    rng = np.random.default_rng(seed)
    z = np.stack([rng.permutation(k) * 0.7 + 0.05 * rng.random(k) for _ in range(n)])
    z += rng.standard_normal((n, 1))
    return torch.tensor(z, requires_grad=True), torch.from_numpy(rng.integers(0, k, n))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_gradcheck_first_and_second_derivatives(name, reduction, kernels):
    # first derivatives: the closed-form backward; second: the reference
    # composition's graph, which the node's backward builds under create_graph
    criterion = copy.deepcopy(CRITERIA[name])
    criterion.reduction = reduction
    if name.startswith("mbls"):
        criterion.margin = 0.5  # distances above and below it, none at it
    logits, target = _tie_free(3)
    assert torch.autograd.gradcheck(lambda x: criterion(x, target), (logits,))
    assert torch.autograd.gradgradcheck(
        lambda x: criterion(x, target), (logits,), fast_mode=True
    )


def test_hessian_vector_product_is_the_compositions(kernels):
    # the diagnostics' Hessian-vector products through a node equal those
    # through the composition itself
    logits, target = _tie_free(4, n=8, k=5)
    vector = torch.randn(logits.shape, dtype=torch.float64)
    for name in ("focal 3", "flsd53", "dual 5", "fcl", "mbls", "mdca γ=1", "mmce"):
        criterion = CRITERIA[name]
        hvps = []
        for path in ("node", "ref"):
            x = logits.detach().clone().requires_grad_()
            if path == "node":
                loss = criterion(x, target)
            else:
                loss = criterion._reference(x, target, criterion.reduction)
            (grad,) = torch.autograd.grad(loss, x, create_graph=True)
            (hvp,) = torch.autograd.grad((grad * vector).sum(), x)
            hvps.append(hvp)
        torch.testing.assert_close(*hvps, rtol=1e-12, atol=1e-14, msg=name)


@pytest.mark.parametrize("ties", [False, True])
def test_mmce_kernel_node_has_the_compositions_derivatives(ties):
    # MMCE's reference takes wᵀKw through KernelQuadratic, whose second
    # derivatives are in closed form: held to autograd through the plain
    # operations (w depends on r, as in MMCE; ties between confidences and
    # at 1, where |r_i - r_j| has its kink), first derivatives without a
    # graph to the last bit
    from sklcalib.losses._autograd import KernelQuadratic, _kernel_quadratic

    rng = np.random.default_rng(5)
    n, h = 40, 0.4
    conf = rng.random(n)
    if ties:
        conf[5:12], conf[20:23] = conf[3], 1.0
    conf, w = torch.tensor(conf), torch.tensor(rng.standard_normal(n))
    a, b = (torch.tensor(rng.standard_normal(n)) for _ in range(2))
    found = []
    for quadratic in (KernelQuadratic.apply, lambda *x: _kernel_quadratic(*x)[-1]):
        r, v = conf.clone().requires_grad_(), w.clone().requires_grad_()
        q = quadratic(r, v * (1.0 + r), h)
        plain = torch.autograd.grad(q, (r, v), retain_graph=True)
        grads = torch.autograd.grad(q * q, (r, v), create_graph=True)
        hvps = [
            torch.autograd.grad((grads[0] * a + grads[1] * b).sum(), (r, v), **k)
            for k in ({"retain_graph": True}, {})  # twice through one graph
        ]
        found.append((q, *plain, *grads, *hvps[0], *hvps[1]))
    node, reference = found
    assert torch.equal(node[0], reference[0])
    for x, y in zip(node[1:3], reference[1:3], strict=True):
        assert torch.equal(x, y)
    for x, y in zip(node[3:], reference[3:], strict=True):
        x, y = x.detach(), y.detach()
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12 * float(y.abs().max()))
    if not ties:
        r, v = conf.clone().requires_grad_(), w.clone().requires_grad_()
        assert torch.autograd.gradgradcheck(
            lambda r, v: KernelQuadratic.apply(r, v * (1.0 + r), h) ** 2, (r, v)
        )


def test_parameters_are_checked_once_per_change(monkeypatch):
    # the per-batch work is the loss: parameters (and what derives from them,
    # the fused plan, FLSD's tables) are checked and built once per change
    calls = []
    criterion = SampleDependentFocalLoss()
    original = type(criterion)._check_params
    monkeypatch.setattr(
        type(criterion),
        "_check_params",
        lambda self: calls.append(1) or original(self),
    )
    logits, target = _tie_free(5, n=16, k=4)
    for _ in range(5):
        criterion(logits, target).backward()
    assert len(calls) == 1
    criterion.gamma = 2.0
    criterion(logits, target).backward()
    assert len(calls) == 2
    expected = SampleDependentFocalLoss(gamma=2.0)
    torch.testing.assert_close(criterion(logits, target), expected(logits, target))


def test_adafocal_state_checked_again_when_a_buffer_is_replaced():
    criterion = AdaFocalLoss(n_bins=4)
    logits, target = _tie_free(6, n=8, k=3)
    criterion(logits, target)
    criterion.gammas = torch.ones(3, dtype=torch.float64)  # 3 bins, n_bins=4
    with pytest.raises(ValueError, match="n_bins"):
        criterion(logits, target)


@pytest.mark.parametrize("n", [64, INDEX_BY_VALUE // 50 + 1])
def test_dual_index_is_the_first_largest_logit_strictly_below_the_target(n):
    # both paths: torch's min with indices, and the index found from the value
    rng = np.random.default_rng(7)
    k = 50
    logits = torch.tensor(np.round(rng.standard_normal((n, k)), 1))
    target = torch.tensor(rng.integers(0, k, n))
    logits[:5] = 0.0  # every class tied with the target: no class below
    logits[5:10, 3:7] = -3.0  # ties at the largest logit below the target
    logits[5:10, 7:] = -5.0
    logits[5:10, :3] = -5.0
    target[5:10] = 0
    logits[5:10, 0] = 1.0
    # signed zeros tie: -0.0 is not below +0.0 (nor +0.0 below -0.0)
    logits[11], target[11] = -1.0, 0
    logits[11, 0], logits[11, 1], logits[11, 2] = 0.0, -0.0, -0.5
    logits[12], target[12] = -1.0, 0
    logits[12, 0], logits[12, 1], logits[12, 2] = -0.0, 0.0, -0.5
    # a difference whose reciprocal overflows (to -inf): still the closest
    logits[10], target[10] = -5.0, 0
    logits[10, 0], logits[10, 4], logits[10, 9] = 0.0, -1e-300, -5e-324
    index, has = dual_index(logits, target)
    for i in range(n):
        z, t = logits[i].tolist(), int(target[i])
        below = [j for j in range(k) if z[j] < z[t]]
        assert bool(has[i]) == bool(below)
        if i == 10:
            assert int(index[i]) == 9
        if i in (11, 12):
            assert int(index[i]) == 2
        if below:
            best = max(z[j] for j in below)
            assert int(index[i]) == min(j for j in below if z[j] == best)
    assert index.min() >= 0 and index.max() < k


@pytest.mark.parametrize("name", ["focal 3", "fcl", "dual 5", "mbls", "mdca", "mmce"])
def test_a_retained_graph_gives_the_same_gradient_twice(name, kernels):
    # the backward writes the gradient over the saved log-probabilities; a
    # second backward through the same graph recomputes them
    logits, target = _tie_free(8, n=8, k=5)
    loss = CRITERIA[name](logits, target)
    (first,) = torch.autograd.grad(loss, logits, retain_graph=True)
    (second,) = torch.autograd.grad(loss, logits)
    torch.testing.assert_close(first, second, rtol=0, atol=0)


@pytest.mark.parametrize("name", NAMES)
def test_eager_value_and_gradient_are_the_nodes_to_the_last_bit(name, kernels):
    # the training loops call the node's forward and backward directly
    # (_value_and_grad): the same values and gradient as through autograd,
    # bit for bit, in both dtypes, on every input, for a scalar reduction
    for input_name, z, y in INPUTS:
        if name.startswith("mmce") and len(z) > 256:
            z, y = z[:256], y[:256]
        target = torch.from_numpy(y)
        for dtype in (torch.float32, torch.float64):
            for reduction in ("mean", "sum"):
                criterion = copy.deepcopy(CRITERIA[name])
                criterion.reduction = reduction
                where = f"{name}, {input_name}, {dtype}, {reduction}"
                logits = torch.tensor(z, dtype=dtype, requires_grad=True)
                loss = criterion._loss(logits, target)
                (want,) = torch.autograd.grad(loss, logits)
                value, grad = criterion._value_and_grad(logits, target)
                assert grad is not None, where
                assert not value.requires_grad, where
                assert torch.equal(value, loss.detach()), where
                assert torch.equal(grad, want), where
                # the gradient through a layer is the same as well (the
                # layout the node returns reaches the layer's backward)
                x = torch.tensor(z, dtype=dtype)
                layer = torch.nn.Linear(z.shape[1], z.shape[1], dtype=dtype)
                criterion._loss(layer(x), target).backward()
                expected = [p.grad.clone() for p in layer.parameters()]
                layer.zero_grad()
                out = layer(x)
                out.backward(criterion._value_and_grad(out, target)[1])
                for p, e in zip(layer.parameters(), expected, strict=True):
                    assert torch.equal(p.grad, e), where


@pytest.mark.parametrize(
    "criterion",
    [
        FocalLoss(0.0),
        MMCELoss(lam=0.0),
        LabelSmoothingLoss(alpha=0.0),
        DualFocalLoss(dual="mean_all"),
    ],
)
def test_eager_path_defers_to_autograd_without_a_node(criterion):
    # cross-entropy's kernel and the composed ablations: the loss with its
    # graph and no gradient, for the caller's backward()
    logits = torch.randn(8, 4, requires_grad=True)
    target = torch.arange(8) % 4
    value, grad = criterion._value_and_grad(logits, target)
    assert grad is None and value.requires_grad
    assert torch.equal(value, criterion._loss(logits, target))
    # and a reduction of "none" is a vector: autograd's
    criterion = FocalLoss(2.0, reduction="none")
    value, grad = criterion._value_and_grad(logits, target)
    assert grad is None and value.shape == (8,) and value.requires_grad


@pytest.mark.parametrize(
    "name", ["mmce", "mmce kumar", "mmce unweighted", "mdca", "mdca γ=1", "mdca γ<1"]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batched_losses_are_the_batch_by_batch_losses(name, dtype):
    # NetClassifier's validation pass takes the losses of a chunk's batches
    # in one call (_batch_losses) for the criteria with a batch term: each
    # the loss of its batch alone, to rounding (float32 1e-6, float64 1e-12)
    rng = np.random.default_rng(3)
    z = torch.tensor(3 * rng.standard_normal((300, 5)), dtype=dtype)
    target = torch.from_numpy(rng.integers(0, 5, 300))
    z[:32] = 1.0  # a batch of ties, every sample wrong but one class
    target[32:64] = z[32:64].argmax(1)  # a batch with every sample correct
    target[64:96] = (z[64:96].argmax(1) + 1) % 5  # every sample wrong
    tolerance = 1e-6 if dtype == torch.float32 else 1e-12
    for reduction in ("mean", "sum"):
        criterion = copy.deepcopy(CRITERIA[name])
        criterion.reduction = reduction
        assert criterion.batched and not criterion.rowwise
        got = criterion._batch_losses(z, target, 32)  # 9 batches and 12 rows
        want = torch.stack(
            [criterion(z[i : i + 32], target[i : i + 32]) for i in range(0, 300, 32)]
        )
        assert got.shape == (10,) and got.dtype == dtype
        torch.testing.assert_close(got, want, rtol=tolerance, atol=0)


@pytest.mark.parametrize("name", NAMES)
def test_later_eager_calls_are_the_nodes_to_the_last_bit(name, kernels):
    # after its first batch a criterion calls the node its parameters chose
    # directly (_value_and_grad's shortcut): still the node's values and
    # gradient, bit for bit, on every batch
    criterion = copy.deepcopy(CRITERIA[name])
    for input_name, z, y in INPUTS[:3]:
        logits = torch.tensor(z, dtype=torch.float32, requires_grad=True)
        target = torch.from_numpy(y)
        for _ in range(2):
            (want,) = torch.autograd.grad(criterion._loss(logits, target), logits)
            value, grad = criterion._value_and_grad(logits, target)
            assert grad is not None, f"{name}, {input_name}"
            assert torch.equal(value, criterion._loss(logits, target).detach())
            assert torch.equal(grad, want), f"{name}, {input_name}"


def test_a_parameter_changed_between_eager_calls_is_taken():
    logits, target = _tie_free(9, n=16, k=4)
    criterion = FocalLoss(gamma=3.0)
    for _ in range(2):
        criterion._value_and_grad(logits, target)
    criterion.gamma = 1.0  # as a schedule would, between two batches
    value, grad = criterion._value_and_grad(logits, target)
    expected = FocalLoss(gamma=1.0)(logits, target)
    assert torch.equal(value, expected.detach())
    assert torch.equal(grad, torch.autograd.grad(expected, logits)[0])
    criterion.gamma = 0.0  # cross-entropy's kernel: no node, autograd's graph
    value, grad = criterion._value_and_grad(logits, target)
    assert grad is None and value.requires_grad
    criterion.gamma, criterion.reduction = 2.0, "none"  # a vector: autograd's
    value, grad = criterion._value_and_grad(logits, target)
    assert grad is None and value.shape == (16,) and value.requires_grad
    # an AdaFocal bin's γ updated in place (the updater's epoch-end update)
    # reaches the next batch too
    ada = AdaFocalLoss(n_bins=4)
    ada._value_and_grad(logits, target)
    with torch.no_grad():
        ada.gammas.fill_(2.0)
    value, _ = ada._value_and_grad(logits, target)
    twin = AdaFocalLoss(n_bins=4)
    with torch.no_grad():
        twin.gammas.fill_(2.0)
    assert torch.equal(value, twin(logits, target).detach())
