"""The kernels for large batches of MbLS, MDCA and the focal family (focal,
inverse focal, FLSD, FCL, Brier, dual focal, AdaFocal, AdaDualFocal): compiled passes
around torch's vectorised ``exp`` (:func:`~sklcalib.losses._autograd.run_large`),
taken above the dispatch's ``MAX_ENTRIES`` with numba installed.

The ``large`` fixture lowers ``MAX_ENTRIES`` to 0, so that every batch of the
adversarial inputs of tests/test_losses_fused.py (p_t -> 1, ties at the
maximum, γ < 1, one class, logits ±1e4) takes this path: its values and gradients
are held to the reference composition (float64 1e-12, float32 1e-6, both
relative to the batch's largest magnitude, as every node is), its float32
rows to the float64 reference, its derivatives to finite differences, and its
eager calls to its autograd calls, bit for bit.
"""

import copy

import numpy as np
import pytest
import torch
from test_losses_compiled import _row_errors, assert_torch_operations_without_numba
from test_losses_fused import (
    CRITERIA,
    INPUTS,
    _error,
    _float32_bound,
    _loss_and_grad,
    _tie_free,
)

from sklcalib._utils._optional import is_installed
from sklcalib.losses import MbLSLoss, _dispatch, torch_kernels

if not is_installed("numba"):  # absent, or hidden by SKLCALIB_DISABLE_NUMBA
    pytest.skip("the compiled kernels are the fast extra's", allow_module_level=True)

MBLS = [name for name in CRITERIA if name.startswith("mbls")]
#: the criteria of the focal family's node (FocalNode, FocalFastNode)
FOCAL = [
    name
    for name in CRITERIA
    if name.split()[0]
    in {"focal", "inverse", "flsd53", "flsd532", "flsd", "fcl", "brier", "dual"}
    or name.startswith(("adafocal", "adadualfocal"))
]
MDCA = [name for name in CRITERIA if name.startswith("mdca")]
LARGE = MBLS + FOCAL + MDCA


def _large_path(loss):
    return getattr(loss.grad_fn, "large", None) is not None


@pytest.fixture
def large(monkeypatch):
    """Every batch above ``MAX_ENTRIES``: the large-batch kernels run."""
    monkeypatch.setattr(_dispatch, "MAX_ENTRIES", 0)


#: one criterion of each node and kind of γ
SAMPLE = ["mbls m=1", "focal 3", "inverse 2", "flsd53", "fcl", "brier", "dual 5"]
SAMPLE += ["adafocal mixed", "adadualfocal", "mdca", "mdca γ<1"]


@pytest.mark.parametrize("name", SAMPLE)
def test_large_scalar_batches_take_it_and_the_rest_does_not(name):
    n = _dispatch.MAX_ENTRIES // 10 + 1
    target = torch.arange(n) % 10
    criterion = copy.deepcopy(CRITERIA[name])
    for dtype in (torch.float32, torch.float64):
        logits = torch.randn(n, 10, dtype=dtype, requires_grad=True)
        for reduction in ("mean", "sum"):
            criterion.reduction = reduction
            loss = criterion(logits, target)
            assert _large_path(loss) and loss.grad_fn.compiled is None
            with torch_kernels():
                assert not _large_path(criterion(logits, target))
        criterion.reduction = "none"
        assert not _large_path(criterion(logits, target))
        criterion.reduction = "mean"
        # a non-contiguous view; a small batch takes the one-pass kernel
        wide = torch.randn(10, n, dtype=dtype, requires_grad=True)
        assert not _large_path(criterion(wide.t(), target))
        small = criterion(logits[:8].detach().requires_grad_(), target[:8])
        assert not _large_path(small) and small.grad_fn.compiled is not None


@pytest.mark.parametrize("name", SAMPLE)
def test_without_numba_a_large_batch_is_the_torch_operations_bit_for_bit(
    name, monkeypatch
):
    _, z, y = INPUTS[-1]  # 1024 x 100, above MAX_ENTRIES
    assert_torch_operations_without_numba(
        CRITERIA[name], z, y, monkeypatch, _large_path
    )


@pytest.mark.parametrize("name", LARGE)
def test_equals_the_reference_composition(name, large):
    for input_name, z, y in INPUTS:
        target = torch.from_numpy(y)
        for reduction in ("mean", "sum"):
            criterion = copy.deepcopy(CRITERIA[name])
            criterion.reduction = reduction
            # 1.7: the buffer scaled; 1: handed over as it is
            for scale in (1.7, 1.0):
                upstream = torch.tensor(scale, dtype=torch.float64)
                where = f"{name}, {input_name}, {reduction}, {scale}"
                z64 = torch.tensor(z)
                x = z64.clone().requires_grad_()
                assert _large_path(criterion(x, target)), where
                args = (criterion, z64, target, reduction, upstream)
                node, ref = _loss_and_grad(*args, "node"), _loss_and_grad(*args, "ref")
                for got, want in zip(node, ref, strict=True):
                    assert torch.isfinite(got).all(), where
                    assert _error(got, want) <= 1e-12, f"float64: {where}"
                z32 = torch.tensor(z, dtype=torch.float32)
                args = (criterion, z32, target, reduction, upstream)
                node, ref32 = (
                    _loss_and_grad(*args, "node"),
                    _loss_and_grad(*args, "ref"),
                )
                exact = _loss_and_grad(
                    criterion, z32.double(), target, reduction, upstream, "ref"
                )
                bound = _float32_bound(z32, target, reduction, upstream)
                for i in range(2):
                    assert torch.isfinite(node[i]).all(), where
                    error = min(_error(node[i], ref32[i]), _error(node[i], exact[i]))
                    assert error <= bound, f"float32: {where}: {error:.2g}"


@pytest.mark.parametrize("name", LARGE)
def test_float32_rows_are_within_1e_6_of_float64(name, large):
    # row by row (Euclidean norms), against the float64 reference on the
    # same float32 logits: its exponentials are float32 (of z - max rounded
    # to float32, as torch's log-softmax takes them), the rest float64
    for input_name, z, y in INPUTS:
        target = torch.from_numpy(y)
        criterion = copy.deepcopy(CRITERIA[name])
        where = f"{name}, {input_name}"
        z32 = torch.tensor(z, dtype=torch.float32)
        x = z32.clone().requires_grad_()
        loss = criterion(x, target)
        assert _large_path(loss)
        (grad,) = torch.autograd.grad(loss, x)
        x64 = z32.double().requires_grad_()
        want = criterion._reference(x64, target, "mean")
        (composed,) = torch.autograd.grad(want, x64)
        assert abs(loss.double() - want) <= 1e-6 * abs(want), where
        # not a reference for a row near p_t = 1, where its differences of
        # nearly equal terms (1 - p_t, and MDCA's v_j - p·v) lose the row's
        # digits, which this path's log1p and closed forms keep (MbLS's rows
        # there are dominated by its penalty's exact steps; one class: p_t = 1
        # on every row, the gradients 0, held to it by the tests above)
        p_t = torch.softmax(z32.double(), 1).gather(1, target.unsqueeze(1))
        kept = (p_t.squeeze(1) <= 1 - 1e-3) | (name in MBLS)
        if not kept.any():
            continue
        errors = _row_errors(grad.double(), composed)[kept]
        # the focal family's rows are p_j·k, each p_j from exp(z_j - max) with
        # z_j - max rounded to float32 (as in torch's log-softmax): a relative
        # error up to |z_j - max|·2^-24, 1.2e-6 at the gaps of 20 of these
        # inputs
        bound = 1e-6 if name in MBLS else 2e-6
        assert errors.max() <= bound, f"{where}: {errors.max():.2g}"
        # and never further from it than the float32 torch operations (which
        # stray up to about 1e-5 on these inputs)
        with torch_kernels():
            x = z32.clone().requires_grad_()
            (torch32,) = torch.autograd.grad(criterion(x, target), x)
        theirs = _row_errors(torch32.double(), composed)[kept].max()
        assert errors.max() <= theirs + 1e-7, where


def _criterion(name, reduction="mean"):
    # MbLS with a margin that the tie-free logits cross
    if name.startswith("mbls"):
        return MbLSLoss(margin=0.5, reduction=reduction)
    criterion = copy.deepcopy(CRITERIA[name])
    criterion.reduction = reduction
    return criterion


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("name", SAMPLE)
def test_gradcheck_first_and_second_derivatives(name, reduction, large):
    criterion = _criterion(name, reduction)
    logits, target = _tie_free(5, n=7, k=5)
    assert _large_path(criterion(logits, target))
    assert torch.autograd.gradcheck(lambda x: criterion(x, target), (logits,))
    assert torch.autograd.gradgradcheck(
        lambda x: criterion(x, target), (logits,), fast_mode=True
    )


@pytest.mark.parametrize("name", SAMPLE)
def test_hessian_vector_product_is_the_compositions(name, large):
    logits, target = _tie_free(4, n=8, k=5)
    vector = torch.randn(logits.shape, dtype=torch.float64)
    criterion = _criterion(name)
    hvps = []
    for path in ("node", "ref"):
        x = logits.detach().clone().requires_grad_()
        if path == "node":
            loss = criterion(x, target)
            assert _large_path(loss)
        else:
            loss = criterion._reference(x, target, criterion.reduction)
        (grad,) = torch.autograd.grad(loss, x, create_graph=True)
        (hvp,) = torch.autograd.grad((grad * vector).sum(), x)
        hvps.append(hvp)
    torch.testing.assert_close(*hvps, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["mbls m=1", "fcl", "dual 5", "mdca γ=1"])
def test_a_retained_graph_gives_the_same_gradient_twice(name, large):
    # the first backward hands the kept gradient over; a second computes it
    # again
    logits, target = _tie_free(8, n=8, k=5)
    loss = CRITERIA[name](logits, target)
    assert _large_path(loss)
    (first,) = torch.autograd.grad(loss, logits, retain_graph=True)
    (second,) = torch.autograd.grad(loss, logits, retain_graph=True)
    (third,) = torch.autograd.grad(loss, logits, torch.tensor(2.0, dtype=loss.dtype))
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    torch.testing.assert_close(third, 2.0 * first, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eager_calls_are_the_nodes_to_the_last_bit(dtype, large):
    rng = np.random.default_rng(2)
    z = torch.tensor(3 * rng.standard_normal((64, 9)), dtype=dtype)
    target = torch.from_numpy(rng.integers(0, 9, 64))
    for name in LARGE:
        for reduction in ("mean", "sum"):
            criterion = copy.deepcopy(CRITERIA[name])
            criterion.reduction = reduction
            logits = z.clone().requires_grad_()
            loss = criterion._loss(logits, target)
            assert _large_path(loss)
            (want,) = torch.autograd.grad(loss, logits)
            for _ in range(2):  # the first eager call, then its shortcut
                value, grad = criterion._value_and_grad(logits, target)
                assert torch.equal(value, loss.detach()), (name, reduction)
                assert torch.equal(grad, want), (name, reduction)
