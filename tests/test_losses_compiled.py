"""The compiled (numba) kernels of the fused nodes: which calls take them, and
how close they are to the reference compositions.

tests/test_losses_fused.py holds every node, on both paths, to its reference
(float64 1e-12, float32 1e-6 of the batch's largest magnitude), to finite
differences and to its eager calls. Here: the dispatch (small contiguous CPU
batches with a scalar reduction take a kernel; everything else, and every
call inside :func:`~sklcalib.losses.torch_kernels` or without numba, the torch
operations, bit for bit as before), and the float32 claim row by row: a
kernel computes in float64 and rounds its result once, so each row of its
float32 gradient is within 1e-6 (relative, Euclidean norm of the row) of the
float64 reference on the same logits (beyond float32's subnormal rounding
of the tiny rows near p_t = 1), also near p_t = 1 where the float32 torch
path loses digits, and never further from it than that path is.
"""

import contextlib
import copy

import pytest
import torch
from test_losses_fused import CRITERIA, INPUTS, NAMES, _tie_free

from sklcalib._utils._optional import is_installed
from sklcalib.losses import (
    AdaFocalLoss,
    FocalLoss,
    MMCELoss,
    SampleDependentFocalLoss,
    _dispatch,
    torch_kernels,
)

if not is_installed("numba"):  # absent, or hidden by SKLCALIB_DISABLE_NUMBA
    pytest.skip("the compiled kernels are the fast extra's", allow_module_level=True)

#: one criterion per node
FAMILIES = ["focal 3", "fcl", "dual 5", "adafocal mixed", "mbls", "mdca", "mmce"]


def _small(inputs=INPUTS):
    return [(n, z, y) for n, z, y in inputs if z.size <= _dispatch.MAX_ENTRIES]


def _compiled(loss):
    return getattr(loss.grad_fn, "compiled", None) is not None


@pytest.mark.parametrize("name", FAMILIES)
def test_small_scalar_batches_take_the_kernel_and_the_rest_torch(name):
    criterion = copy.deepcopy(CRITERIA[name])
    target = torch.arange(32) % 5
    for dtype in (torch.float32, torch.float64):
        logits = torch.randn(32, 5, dtype=dtype, requires_grad=True)
        for reduction in ("mean", "sum"):
            criterion.reduction = reduction
            assert _compiled(criterion(logits, target)), (name, dtype, reduction)
            with torch_kernels():
                assert not _compiled(criterion(logits, target))
        criterion.reduction = "none"
        assert not _compiled(criterion(logits, target))
    criterion.reduction = "mean"
    # a non-contiguous view, and a batch above the size limit
    wide = torch.randn(5, 32, requires_grad=True)
    assert not _compiled(criterion(wide.t(), target))
    n = _dispatch.MAX_ENTRIES // 5 + 1
    big = torch.randn(n, 5, requires_grad=True)
    assert not _compiled(criterion(big, torch.arange(n) % 5))


def test_torch_kernels_nests_and_restores():
    logits = torch.randn(8, 3, requires_grad=True)
    target = torch.arange(8) % 3
    criterion = FocalLoss()
    with torch_kernels():
        with torch_kernels():
            pass
        assert not _compiled(criterion(logits, target))
        with pytest.raises(RuntimeError), torch_kernels():
            raise RuntimeError
        assert not _compiled(criterion(logits, target))
    assert _compiled(criterion(logits, target))


@pytest.mark.parametrize("name", FAMILIES)
def test_without_numba_the_nodes_are_the_torch_operations_bit_for_bit(
    name, monkeypatch
):
    _, z, y = INPUTS[0]
    assert_torch_operations_without_numba(CRITERIA[name], z, y, monkeypatch, _compiled)


def assert_torch_operations_without_numba(criterion, z, y, monkeypatch, took_kernel):
    """An install without numba (the dispatch finds no kernels module) runs
    exactly what ``torch_kernels()`` runs, and no kernel (``took_kernel``)."""
    target = torch.from_numpy(y)
    results = []
    for path in ("absent", "forced"):
        logits = torch.tensor(z, dtype=torch.float32, requires_grad=True)
        if path == "absent":
            with monkeypatch.context() as m:
                m.setattr(_dispatch, "_KERNELS", [None])
                loss = criterion(logits, target)
        else:
            with torch_kernels():
                loss = criterion(logits, target)
        assert not took_kernel(loss)
        results.append((loss.detach(), *torch.autograd.grad(loss, logits)))
    for a, b in zip(*results, strict=True):
        assert torch.equal(a, b)


#: float32's smallest subnormal: near p_t = 1 a row's gradient can lie below
#: float32's normal range, where its rounding is this absolute step
_SUBNORMAL = 2.0**-149


def _row_errors(got, want):
    """Per row: |got - want| / |want| (Euclidean norms), the error within
    float32's subnormal rounding of the row, or float64's rounding of the
    batch's largest entry, counted as 0."""
    slack = _SUBNORMAL * want.shape[1] ** 0.5 + 2.0**-52 * want.abs().max()
    num = ((got - want).norm(dim=1) - slack).clamp(min=0.0)
    return num / want.norm(dim=1).clamp(min=1e-300)


#: the criteria with a compiled kernel (label smoothing has none)
COMPILED = [name for name in NAMES if not name.startswith("label")]


def _value_grad(criterion, logits, target, path):
    x = logits.clone().requires_grad_()
    with torch_kernels() if path == "torch" else contextlib.nullcontext():
        loss = criterion(x, target)
    assert _compiled(loss) == (path == "compiled")
    return loss.detach().double(), torch.autograd.grad(loss, x)[0].double()


@pytest.mark.parametrize("name", COMPILED)
def test_float32_kernel_rows_are_within_1e_6_of_float64(name):
    for input_name, z, y in _small():
        target = torch.from_numpy(y)
        for reduction in ("mean", "sum"):
            criterion = copy.deepcopy(CRITERIA[name])
            criterion.reduction = reduction
            where = f"{name}, {input_name}, {reduction}"
            z32 = torch.tensor(z, dtype=torch.float32)
            value, grad = _value_grad(criterion, z32, target, "compiled")
            _, torch32 = _value_grad(criterion, z32, target, "torch")
            # float64 on the same (float32) logits: the node's closed form
            # (torch operations) and the reference composition
            _, closed = _value_grad(criterion, z32.double(), target, "torch")
            x = z32.double().requires_grad_()
            want = criterion._reference(x, target, reduction)
            (composed,) = torch.autograd.grad(want, x)
            assert abs(value - want) <= 1e-6 * abs(want), where
            # every row within 1e-6 of both float64 evaluations where they
            # agree (near p_t = 1 their differences of nearly equal terms
            # can lose a row's digits, which the kernel's closed forms keep)
            kept = _row_errors(closed, composed) <= 1e-9
            assert kept.sum() >= len(y) // 4, where
            for reference in (closed, composed):
                errors = _row_errors(grad, reference)[kept]
                assert errors.max() <= 1e-6, f"{where}: {errors.max():.2g}"
                # never further than the float32 torch operations, any row
                mine = _row_errors(grad, reference).max()
                assert mine <= _row_errors(torch32, reference).max() + 1e-7, where


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_of_the_sum(name):
    # the mean is gradchecked in test_losses_fused.py on both paths
    criterion = copy.deepcopy(CRITERIA[name])
    criterion.reduction = "sum"
    if name.startswith("mbls"):
        criterion.margin = 0.5
    logits, target = _tie_free(11)
    assert _compiled(criterion(logits, target)) != name.startswith("label")
    assert torch.autograd.gradcheck(lambda x: criterion(x, target), (logits,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_probability_on_a_bin_edge_takes_the_float64_bin(dtype):
    # p_t = 1/2 (two tied logits) on AdaFocal's edge 0.5 and p_t = 1/5 (five)
    # on FLSD's threshold 0.2: the kernel looks γ up as the float64 reference
    # does (e < p_t for the bins, p0 <= p_t for FLSD), in either dtype
    ada = AdaFocalLoss(n_bins=2)
    with torch.no_grad():
        ada.gammas.copy_(torch.tensor([-1.0, 3.0], dtype=torch.float64))
    flsd = SampleDependentFocalLoss(gamma=1.0, thresholds=((0.2, 4.0),))
    rows = torch.tensor(
        [
            [2.0, 2.0, -1.0, -1.0, -1.0],
            [0.5, 0.5, 0.5, 0.5, 0.5],
            [3.0, 0.0, 1.0, 2.0, -2],
        ]
    )
    target = torch.tensor([0, 3, 0])
    for criterion in (ada, flsd):
        x = rows.to(dtype).requires_grad_()
        loss = criterion(x, target)
        assert _compiled(loss)
        ref = criterion._reference(rows.double(), target, "mean")
        tolerance = 1e-12 if dtype == torch.float64 else 1e-6
        assert abs(loss.item() - ref.item()) <= tolerance * abs(ref.item())


def test_mmce_kernel_on_a_batch_of_one_group():
    # every sample correct: the "mukhoti" weights are all 0, MMCE = 0 and its
    # gradient that of cross-entropy
    logits = torch.tensor([[3.0, 0.0], [2.0, -1.0], [4.0, 1.0]], requires_grad=True)
    target = torch.zeros(3, dtype=torch.long)
    loss = MMCELoss()(logits, target)
    assert _compiled(loss)
    ce = torch.nn.functional.cross_entropy(logits, target)
    torch.testing.assert_close(loss, ce, rtol=1e-6, atol=0)
    torch.testing.assert_close(
        torch.autograd.grad(loss, logits)[0], torch.autograd.grad(ce, logits)[0]
    )
