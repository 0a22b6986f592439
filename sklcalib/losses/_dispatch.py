"""Whether a fused node runs its compiled kernel (:mod:`sklcalib.losses._compiled`)
or its torch operations, and the compiled forward and backward.

A node takes its kernel when numba is installed (the ``fast`` extra; not
disabled by ``SKLCALIB_DISABLE_NUMBA``), :func:`torch_kernels` is not active,
the reduction is the mean or the sum, and the logits are a small contiguous
float32 or float64 CPU batch. Large batches keep torch's operations: its
vector kernels (several lanes of exp per instruction) beat one compiled loop
there, while on small batches the dispatch of each torch call dominates.
The nodes of MbLS, MDCA and the focal family are the exception: on a large
batch torch computes the exponentials (its vector kernels) and compiled
passes do the rest (:func:`~sklcalib.losses._compiled.margin_finish`,
:func:`~sklcalib.losses._compiled.focal_finish`,
:func:`~sklcalib.losses._compiled.mdca_finish`), where their torch
operations make a dozen passes over the batch.
"""

import contextlib
import threading

import numpy as np
import torch

from sklcalib._utils._optional import is_installed

#: batches of at most this many entries (N·K) take the compiled kernel: above
#: it torch's vector kernels catch up (forward + backward per call, one
#: thread, AVX-512: focal loss's kernel breaks even with its torch node
#: between 512 x 10 and 1024 x 10, and near 128 x 100; the other criteria's,
#: whose torch nodes make more passes, at 2048 x 10 and beyond; MMCE's, with
#: one exp per pair of rows, is faster than its torch node at every size up to
#: it, 4096 x 2 included)
MAX_ENTRIES = 1 << 13

_DTYPES = (torch.float32, torch.float64)
_NUMPY = {torch.float32: np.float32, torch.float64: np.float64}
_STATE = threading.local()
_KERNELS = []  # [module or None] once decided


@contextlib.contextmanager
def torch_kernels():
    """Run the criteria's fused nodes with their torch operations in this block.

    With the ``fast`` extra (numba) installed, the fused nodes of the focal
    family, Brier, MbLS, MDCA and MMCE compute small CPU batches in one
    compiled kernel: the same values and gradients to rounding (float64
    arithmetic inside), at a fraction of the per-call cost. Inside this
    block (per thread) they take their torch operations, whose results do not
    depend on whether numba is installed: bitwise reproducible across
    installs. Setting the environment variable ``SKLCALIB_DISABLE_NUMBA=1``
    does the same for the whole process.

    Yields
    ------
    None
        The block runs with the torch operations; the previous setting is
        restored on leaving it, also on an exception.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import FocalLoss, torch_kernels
    >>> logits = torch.randn(8, 3, requires_grad=True)
    >>> with torch_kernels():
    ...     FocalLoss()(logits, torch.zeros(8, dtype=torch.long)).backward()
    """
    previous = getattr(_STATE, "off", False)
    _STATE.off = True
    try:
        yield
    finally:
        _STATE.off = previous


def _kernels():
    if not _KERNELS:
        module = None
        if is_installed("numba"):
            from sklcalib.losses import _compiled as module
        _KERNELS.append(module)
    return _KERNELS[0]


def kernels_for(logits, target, reduction, any_size=False):
    """The compiled kernels' module if this call takes them, else None.

    ``any_size``: also above ``MAX_ENTRIES``, for a node with a kernel for
    large batches (MbLS's, MDCA's and the focal family's, whose exponentials
    torch computes)."""
    size = logits.numel()
    if (
        reduction == "none"
        or getattr(_STATE, "off", False)
        or not logits.is_cpu
        or logits.dtype not in _DTYPES
        or size == 0
        or (size > MAX_ENTRIES and not any_size)
        or not logits.is_contiguous()
        or not target.is_contiguous()
    ):
        return None
    return _kernels()


def run_compiled(ctx, kernel, logits, target, reference, reduction, *args, batch=False):
    """A node's forward through ``kernel``: the reduced value, with the
    logits' gradient (for an upstream gradient of 1) kept for :func:`compiled_grad`.
    ``batch``: the kernel also takes the batch term's upstream gradient."""
    n = logits.shape[0]
    out = torch.empty_like(logits)
    mean = reduction == "mean"
    scales = (1.0 / n if mean else 1.0, 1.0 if mean else float(n))
    value = kernel(
        logits.detach().numpy(),
        target.numpy(),
        out.numpy(),
        *(scales if batch else scales[:1]),
        *args,
    )
    ctx.save_for_backward(logits, target)
    ctx.reference, ctx.reduction = reference, reduction
    ctx.compiled = out
    # (from a numpy scalar array: a third of torch.tensor's cost)
    return torch.from_numpy(np.array(value, dtype=_NUMPY[logits.dtype]))


def compiled_grad(ctx, upstream, seed):
    """The logits' gradient of a compiled forward for the upstream gradient
    of the scalar loss (``seed``: the cached 1 of an eager call, for which the
    kept buffer is the gradient itself)."""
    out = ctx.compiled
    return out if upstream is seed else torch.mul(out, upstream)


_SCALARS = {}

#: the table arguments of a kernel call without a per-row γ
NO_TABLE = np.empty(0)


def scalar(value, like):
    """A float as a numpy scalar of ``like``'s dtype, cached: numba then does
    a kernel's dtype-exact steps in that dtype."""
    key = (value, like.dtype)
    typed = _SCALARS.get(key)
    if typed is None:
        if len(_SCALARS) > 256:
            _SCALARS.clear()
        typed = _SCALARS[key] = _NUMPY[like.dtype](value)
    return typed
