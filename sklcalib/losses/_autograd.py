"""The fused autograd nodes of the criteria, and the pieces their reference
compositions share.

Each criterion has a plain composition of torch operations, its ``_per_sample``
method (the reference: what evaluation, the ``"none"`` reduction without a
gradient, and second derivatives use), and, for training, one autograd node
per call whose forward computes the same values with the same operations and
whose backward writes the logits' gradient in closed form.

Why: composed from torch operations a criterion pays for a dozen autograd
nodes per call, each with its saved tensors and its backward kernels, and for
several (N, K) temporaries in the backward (gather, pow and product backwards,
the gradient accumulated over the branches). The arithmetic needs much less:
every criterion here is a function of log p_t, a few per-row scalars and at
most one extra (N, K) quantity, so its gradient is a per-row scaling of
(softmax - one-hot) plus a scatter or two (derivations below). On small
batches (tabular training, 128 x 10) what remains is the number of torch
calls, which the nodes keep low: each call costs microseconds of dispatch
whatever its size. With numba installed, a node computes such a batch in one
compiled kernel instead, with no torch call at all
(:mod:`sklcalib.losses._dispatch`, :mod:`sklcalib.losses._compiled`).

**Second derivatives.** When a node's backward runs with grad mode on
(``create_graph=True``, as the Hessian-vector products of
:mod:`sklcalib.diagnostics` do), it differentiates the reference composition
instead of using the closed form, so second derivatives are exactly those of
the loss.

**The focal family** (focal, FLSD, inverse focal, dual focal, FCL, Brier,
AdaFocal, AdaDualFocal; :class:`FocalNode`). Per sample

    L = -B^γ·log p_t + λ·(S - 2·p_t + 1),   B = 1 - s·p_t + s·c,  S = Σ_k p_k²,

with c = 0 or the dual term p_j (the largest probability strictly below p_t),
s = ±1 (focal / inverse focal) and γ a constant or a per-row value without
gradient. With w = B^γ, r = log p_t / B (0 where B = 0) and y = γ·s·w·r:

    ∂L/∂log p_t = -(w - y·p_t) - 2λ·p_t,   ∂L/∂c = -y,   ∂L/∂S = λ.

``dL/dB = -γ·B^(γ-1)·log p_t`` is written as y without ``B^(γ-1)``, which is
infinite at B = 0 for γ < 1 while the product is finite (B >= 1 - p_t, and
B = 0 only where log p_t = 0). With dp_k/dz = p_k (e_k - p), d(log p_t)/dz =
e_t - p, dc/dz = p_j (e_j - p) and dS/dz = 2 p ⊙ (p - S), and G the upstream
gradient of the row, m = w - y·p_t + 2λ·p_t and k = m + y·p_j - 2λ·S:

    ∂L/∂z = G·[p ⊙ (2λ·p + k) - m·e_t - y·p_j·e_j],

which for plain focal (no c, λ = 0) is G·m·(p - e_t).
"""

import functools
import threading

import numpy as np
import torch

from sklcalib.losses import _dispatch as dispatch
from sklcalib.losses._dispatch import (
    _NUMPY,
    NO_TABLE,
    compiled_grad,
    kernels_for,
    run_compiled,
    scalar,
)


@functools.cache
def _float_lanes():
    # float32 lanes of torch's CPU vector kernels (AVX-512: 16, AVX2: 8)
    capability = torch.backends.cpu.get_cpu_capability()
    return 16 if "512" in capability else 8


def log_softmax(logits):
    """``log_softmax`` over the classes (dim 1) of (N, K) logits.

    On the CPU with fewer classes than the float32 vector lanes, computed over
    dim 0 of the transposed view: torch's kernel over a last dimension that
    short takes a path several times slower (128 x 10: 21 µs against 6 µs,
    4096 x 10: 680 µs against 95 µs, AVX-512). The values are the same
    formula, ``z - max - log Σ exp(z - max)``; the result is a transposed
    view, which every operation here takes as it is.
    """
    if logits.is_cpu and logits.shape[1] < _float_lanes():
        return torch.log_softmax(logits.t(), 0).t()
    return torch.log_softmax(logits, 1)


def reference_gradient(ctx, grad):
    """The logits' gradient through the reference composition, with a graph.

    For a backward run with ``create_graph=True``: the composition's own
    autograd graph, so that second derivatives are exact.
    """
    logits, target = ctx.saved_tensors
    with torch.enable_grad():
        loss = ctx.reference(logits, target, ctx.reduction)
        (g,) = torch.autograd.grad(loss, logits, grad, create_graph=True)
    return g


class _EagerContext:
    """A node's ``ctx`` for calling its forward and backward directly."""

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


#: the result list of a pending :func:`eager_gradient` call, per thread
_EAGER = threading.local()


def apply_node(node, logits, target, *args):
    """``node.apply(logits, target, *args)``: the criteria's training path
    through a fused node (every node takes the logits, the targets, then
    constants).

    Inside :func:`eager_gradient`, the node's forward and closed-form backward
    are called directly instead (:func:`eager_node`), and the logits'
    gradient is handed to the caller with the node and its constants (which
    a criterion whose path depends on its parameters alone calls directly
    for the next batches): the same operations on the same values, without
    the autograd node, its saved tensors and the engine's call back into
    Python (on the small batches of tabular training about half of a
    criterion's cost per step).
    """
    request = getattr(_EAGER, "request", None)
    if request is None:
        return node.apply(logits, target, *args)
    _EAGER.request = None  # one node per request
    value, grad = eager_node(node, logits, target, args)
    request.extend((grad, (node, args)))
    return value


def eager_node(node, logits, target, args):
    """``(value, grad)`` of ``node.apply(logits, target, *args)`` for a scalar
    loss, its forward and closed-form backward called directly: on the logits
    detached (so that no operation records a graph, as under the ``no_grad``
    autograd runs a node in; switching the grad mode off and on costs more
    than the detach), the backward seeded with 1 as ``backward()`` of a
    scalar loss seeds it (cached, which :func:`row_grad` recognises)."""
    ctx = _EagerContext()
    value = node.forward(ctx, logits.detach(), target, *args)
    return value, node.backward(ctx, constant(1.0, value))[0]


def builds_graph(ctx):
    """Whether a node's backward must build a graph: autograd runs it with the
    grad mode on for ``create_graph=True`` (second derivatives), never for an
    eager call (:func:`apply_node`)."""
    return torch.is_grad_enabled() and type(ctx) is not _EagerContext


def eager_gradient(loss_fn, logits, target):
    """``(value, grad, step)``: ``loss_fn(logits, target)``, a scalar loss, its
    gradient with respect to ``logits``, as ``value.backward()`` would
    propagate it to them, and ``(node, constants)``, the fused node the loss
    took (:func:`eager_node` calls it again); ``grad`` and ``step`` are None
    (and ``value`` has its graph, to call ``backward`` on) where the loss took
    no fused node."""
    request = []
    _EAGER.request = request
    try:
        value = loss_fn(logits, target)
    finally:
        _EAGER.request = None
    if not request:
        return value, None, None
    return value, *request


def reduce(rows, reduction):
    """Mean, sum or the (N,) vector of per-sample losses (N,) or (N, 1)."""
    if reduction == "mean":
        return rows.mean()
    if reduction == "sum":
        return rows.sum()
    return rows.reshape(-1)


_CONSTANTS = {}


def constant(value, like):
    """``value`` as a 0-d tensor of ``like``'s dtype and device, cached.

    An operation with a Python number wraps it in a new tensor at every call:
    on the small batches of tabular training that costs as much as the
    operation itself.
    """
    # a CPU tensor's key without its device: reading ``device`` makes an object
    key = (value, like.dtype) if like.is_cpu else (value, like.dtype, like.device)
    tensor = _CONSTANTS.get(key)
    if tensor is None:
        if len(_CONSTANTS) > 1024:  # (MMCE_w: two factors per count)
            _CONSTANTS.clear()
        with torch.inference_mode(False):
            tensor = torch.tensor(value, dtype=like.dtype, device=like.device)
        _CONSTANTS[key] = tensor
    return tensor


def reduce_rows(rows, reduction, sign=1.0):
    """:func:`reduce` of ``sign * rows`` inside a node: the mean as the sum
    times a cached ``sign / N`` (two cheap calls instead of ``mean`` and a
    negation)."""
    if reduction == "none":
        return rows.neg_().reshape(-1) if sign < 0 else rows.reshape(-1)
    factor = sign / rows.shape[0] if reduction == "mean" else sign
    total = rows.sum()
    return total if factor == 1.0 else total.mul_(constant(factor, total))


def row_grad(grad, reduction, n):
    """The upstream gradient of each row: a 0-d tensor (mean, sum) or (N, 1)."""
    if reduction == "mean":
        if grad is constant(1.0, grad):
            # the seed of an eager call (apply_node): 1·(1/N) is 1/N exactly
            return constant(1.0 / n, grad)
        return torch.mul(grad, constant(1.0 / n, grad))
    if reduction == "sum":
        return grad
    return grad.unsqueeze(1)


def batch_grad(grad, reduction, n):
    """The upstream gradient of a term shared by every row of the batch: the
    sum of the rows' upstream gradients (a 0-d tensor)."""
    if reduction == "mean":
        return grad
    if reduction == "sum":
        return grad * n
    return grad.sum()


# ---------------------------------------------------------------------------
# the focal family
# ---------------------------------------------------------------------------


#: from this many entries on, the first index of a row minimum is found from
#: its value: torch's min with indices over the last dimension is a scalar loop
#: (4096 x 100: 750 µs, against 85 µs for the value alone)
INDEX_BY_VALUE = 1 << 14


def _descending(n, like):
    key = ("descending", n, like.dtype, like.device)
    weights = _CONSTANTS.get(key)
    if weights is None:
        with torch.inference_mode(False):
            weights = torch.arange(n, 0, -1, dtype=like.dtype, device=like.device)
        _CONSTANTS[key] = weights
    return weights


def first_one(mask):
    """Index (N, 1) of the first 1 of each row of the 0/1 float ``mask``, which
    it overwrites: the ones weighted K, K-1, ..., 1, whose largest weight names
    the first one (exact, the weights are integers). A row without a 1 gets
    the last index."""
    n_classes = mask.shape[1]
    weights = mask.mul_(_descending(n_classes, mask)).amax(1, keepdim=True)
    return weights.neg_().add_(n_classes).long().clamp_(max=n_classes - 1)


def dual_index(logits, target):
    """The largest logit strictly below the target's per row: its index (N, 1),
    and whether there is one (N, 1); no gradient.

    The one definition of "the class of the largest probability strictly below
    p_t" (logits order like the probabilities, and exact ties of logits are
    exact ties of probabilities). ``1 / (z_k - z_t)`` is < 0 exactly for the
    classes strictly below the target (a difference of distinct floats is never
    0, and that of equal ones +0.0 here, signed zeros included) and smallest
    for the closest one, +inf for ties (the target included) and > 0 above,
    so the row minimum picks the class (the first of equal ones), and its sign
    says whether there is one. A difference so small that its
    reciprocal overflows to -inf is the closest class below, as it should be.

    On large inputs the index is the first position equal to the row minimum
    (:func:`first_one`; an infinite minimum is found as well, with no
    subtraction from it): six passes over the (N, K) key.
    """
    if target.ndim == 1:
        target = target.reshape(-1, 1)
    if logits.requires_grad:  # the reference composition's call
        logits = logits.detach()
    # z_k - z_t plus +0.0: a tie's -0.0 (-0.0 - (+0.0), which would have made
    # a logit -0.0 "strictly below" a target's +0.0: 1 / -0.0 = -inf) becomes
    # +0.0, every other difference stays what it is
    key = torch.sub(logits, logits.gather(1, target)).add_(0.0).reciprocal_()
    if key.numel() < INDEX_BY_VALUE:
        values, index = key.min(1, keepdim=True)
    else:
        values = key.amin(1, keepdim=True)
        index = first_one(key.eq_(values))
    return index, torch.signbit(values)


def consume_logp(ctx):
    """``exp`` of the node's saved log-probabilities, computed in their place:
    the backward's (N, K) gradient without a new (N, K) allocation (on large
    batches a fresh one costs as much as a pass over it). A second backward
    through the same graph (``retain_graph=True``) recomputes them."""
    logp = ctx.logp
    ctx.logp = None
    if logp is None:
        logp = log_softmax(ctx.saved_tensors[0].detach())
    return logp.exp_()


def dual_logp(logits, logp, target):
    """(log p_t, p_j) of each row, (N,) each, with gradient (the paper's dual
    term: p_j the largest probability strictly below p_t, 0 if none)."""
    index, has = dual_index(logits, target)
    pair = logp.gather(1, torch.cat((target.unsqueeze(1), index), 1))
    return pair[:, 0], pair[:, 1].exp() * has.squeeze(1)


def focal_base(logp_t, sign, dual):
    """B = 1 - s·p_t + s·c, with 1 - p_t as ``-expm1(log p_t)`` (exact near 1)."""
    p_t_1 = torch.expm1(logp_t)  # p_t - 1, exact near p_t = 1
    if isinstance(sign, torch.Tensor):
        base = torch.where(sign > 0, p_t_1.neg(), p_t_1 + 2.0)
    elif sign > 0:
        base = p_t_1.neg()
    else:
        base = p_t_1 + 2.0
    if dual is not None:
        # only the focal side has a dual term here (AdaDualFocal's γ >= 0)
        base = base + dual if not isinstance(sign, torch.Tensor) else base + sign * dual
    return base


class _FocalWeight(torch.autograd.Function):
    """``B^γ`` of a reference composition, with a finite derivative at B = 0.

    Autograd on ``B ** γ`` gives ``γ·B^(γ-1)``, infinite at B = 0 (p_t = 1, no
    dual term) for γ < 1 and NaN once multiplied by log p_t = 0 there; the
    reference composition multiplies this weight by log p_t, whose product has
    the finite derivative of the module docstring. The backward here returns
    ``γ·B^γ / B`` (0 where B = 0): times log p_t, exactly that product. Its
    own backward is built from differentiable operations, so second
    derivatives are exact wherever B > 0 and 0 (the constant ``0^γ``) at B = 0.
    """

    @staticmethod
    def forward(ctx, base, gamma):
        weight = base.pow(gamma)
        ctx.save_for_backward(base, weight)
        ctx.gamma = gamma
        return weight

    @staticmethod
    def backward(ctx, grad):
        base, weight = ctx.saved_tensors
        positive = base > 0
        ratio = weight / torch.where(positive, base, 1.0)
        return torch.where(positive, grad * ratio * ctx.gamma, 0.0), None


def plain_pow_ok(gammas):
    """Whether autograd on ``B ** γ`` is finite to second order at ``B = 0``
    for a tensor of these γ: ``γ·B^(γ-1)`` is for γ >= 1, its derivative for
    γ = 1 and γ >= 2 (torch's pow backward gives 0 for a Python-scalar exponent
    0, not for a tensor one)."""
    return all(g == 1.0 or g >= 2.0 for g in gammas)


def focal_term(logp_t, gamma, *, sign=1.0, dual=None, plain=None):
    """Per-sample ``-(1 - s·p_t + s·c)^γ · log p_t`` (the reference composition).

    ``gamma`` and ``sign`` are floats or tensors shaped like ``logp_t`` (no
    gradient); ``dual`` (c) is None or a tensor with gradient. ``plain`` says
    whether autograd on ``B ** γ`` is finite (see :func:`plain_pow_ok`; None:
    decided from a float ``gamma``); otherwise :class:`_FocalWeight` keeps the
    gradient finite at B = 0. ``sign < 0`` (B >= 1) is always plain.
    """
    if not isinstance(gamma, torch.Tensor) and gamma == 0.0:
        return -logp_t
    base = focal_base(logp_t, sign, dual)
    if plain is None:
        plain = not isinstance(gamma, torch.Tensor) and plain_pow_ok((gamma,))
    if plain or (not isinstance(sign, torch.Tensor) and sign < 0):
        weight = base.pow(gamma)
    else:
        weight = _FocalWeight.apply(base, gamma)
    return -(weight * logp_t)


def squared_error(logp, target):
    """Per-sample ``Σ_k (p_k - e_y,k)²`` from log-probabilities (with gradient),
    as ``(1 - p_y)² + Σ_(k≠y) p_k²``: no one-hot is built, and no cancellation
    near p_y = 1 (where ``Σ_k p_k² - 2 p_y + 1`` loses the digits of both)."""
    t1 = target.unsqueeze(1)
    p = logp.exp()
    others = (p * p).scatter(1, t1, 0.0).sum(1)
    p_y_1 = torch.expm1(logp.gather(1, t1)).squeeze(1)
    return torch.addcmul(others, p_y_1, p_y_1)


def focal_slope(logp_t, base, weight, gamma, sign):
    """``(v, factor)`` with ``v·factor = y = γ·s·w·r`` (module docstring): the
    tensor factors of γ and s in v, their float factors in ``factor``."""
    if isinstance(gamma, float) and gamma >= 1.0:
        # w·r = B^(γ-1)·log p_t, finite for γ >= 1: no division
        v = base.pow(gamma - 1.0).mul_(logp_t)
    else:
        # r = log p_t / B, 0 where B = 0 (only where log p_t = 0, no dual term)
        v = torch.div(logp_t, base)
        if not (isinstance(sign, float) and sign < 0):
            v.nan_to_num_(0.0)
        v.mul_(weight)
    factor = 1.0
    if isinstance(gamma, torch.Tensor):
        v.mul_(gamma)
    else:
        factor = gamma
    if isinstance(sign, torch.Tensor):
        v.mul_(sign)
    else:
        factor *= sign
    return v, factor


class FocalPlan:
    """What :class:`FocalNode` computes for one criterion.

    ``gamma`` is a float, or None when ``row_gamma(p_t, p_j)`` gives a per-row
    ``(γ, s)`` (FLSD, AdaFocal, AdaDualFocal; tensors shaped (N, 1), s possibly
    a float); ``sign`` is s for a float γ; ``dual`` adds p_j; ``lam`` weights the
    squared error; ``focal=False`` drops the focal term (the Brier score).
    ``table(like)``, with ``row_gamma``, gives the same look-up to the compiled
    kernel: ``(mode, bounds, gammas)`` (see
    :func:`~sklcalib.losses._compiled.focal_family`), float64 arrays.
    """

    __slots__ = ("dual", "focal", "gamma", "lam", "row_gamma", "sign", "table")

    def __init__(
        self,
        gamma=0.0,
        *,
        sign=1.0,
        dual=False,
        lam=0.0,
        row_gamma=None,
        focal=True,
        table=None,
    ):
        self.gamma = None if row_gamma is not None else float(gamma)
        self.sign = float(sign)
        self.dual = bool(dual)
        self.lam = float(lam)
        self.row_gamma = row_gamma
        self.focal = bool(focal)
        self.table = table


def compiled_focal(ctx, kernels, logits, target, plan, reference, reduction):
    """:class:`FocalNode`'s (or :class:`FocalFastNode`'s) forward through the
    compiled focal-family kernel."""
    if plan.gamma is None:
        mode, bounds, gammas = plan.table(logits)
        gamma = 0.0
    else:
        mode, bounds, gammas, gamma = 0, NO_TABLE, NO_TABLE, plan.gamma
    args = (gamma, plan.sign, plan.dual, plan.lam, plan.focal, mode, bounds, gammas)
    args += (scalar(0.0, logits), scalar(1.0, logits))
    if logits.numel() > dispatch.MAX_ENTRIES:
        run = functools.partial(_focal_large_run, kernels, args=args)
        return run_large(ctx, run, logits, target, reference, reduction)
    return run_compiled(
        ctx, kernels.focal_family, logits, target, reference, reduction, *args
    )


def _focal_large_run(kernels, z, target, reduction, args):
    """(value, gradient) of the focal family on the logits ``z`` (no
    gradient) for an upstream gradient of 1: torch's ``amax``, ``sub`` and
    in-place ``exp`` give ``exp(z - max)`` (vectorised, as its log-softmax
    computes it), and :func:`~sklcalib.losses._compiled.focal_finish` sums the
    rows and writes the gradient over the exponentials."""
    top = torch.amax(z, 1)
    e = torch.sub(z, top.unsqueeze(1)).exp_()
    row_scale = 1.0 / z.shape[0] if reduction == "mean" else 1.0
    value = kernels.focal_finish(
        z.numpy(), target.numpy(), e.numpy(), top.numpy(), row_scale, *args
    )
    return value, e


@functools.lru_cache(maxsize=64)
def _fast_plan(gamma, sign):
    # FocalFastNode's criterion as a plan of the compiled kernel, once per γ
    return FocalPlan(gamma, sign=sign)


class FocalFastNode(torch.autograd.Function):
    """Focal or inverse focal loss with a constant γ > 0 in one node: the
    general node's common case in straight-line code (module docstring;
    ``∂L/∂z = G·(w - y·p_t)·(p - e_t)``).

    ``apply(logits, target, gamma, sign, reference, reduction)``.
    """

    @staticmethod
    def forward(ctx, logits, target, gamma, sign, reference, reduction):
        ctx.large = None
        kernels = kernels_for(logits, target, reduction, any_size=True)
        if kernels is not None:
            plan = _fast_plan(gamma, sign)
            return compiled_focal(
                ctx, kernels, logits, target, plan, reference, reduction
            )
        ctx.compiled = None
        logp = log_softmax(logits)
        t1 = target.unsqueeze(1)
        logp_t = logp.gather(1, t1)
        p_t_1 = torch.expm1(logp_t)  # p_t - 1, exact near p_t = 1
        if sign > 0:
            base = p_t_1.neg()
        else:
            base = torch.add(p_t_1, constant(2.0, p_t_1))  # 1 + p_t
        weight = base.pow(gamma)
        ctx.save_for_backward(logits, target)
        ctx.reference, ctx.reduction = reference, reduction
        ctx.logp, ctx.parts = logp, (t1, logp_t, p_t_1, base, weight)
        ctx.gamma, ctx.sign = gamma, sign
        return reduce_rows(torch.mul(weight, logp_t), reduction, -1.0)

    @staticmethod
    def backward(ctx, grad):
        if builds_graph(ctx):
            return (reference_gradient(ctx, grad),) + (None,) * 5
        if ctx.compiled is not None:
            return (compiled_grad(ctx, grad, constant(1.0, grad)),) + (None,) * 5
        if ctx.large is not None:
            return (large_grad(ctx, grad),) + (None,) * 5
        t1, logp_t, p_t_1, base, weight = ctx.parts
        y, factor = focal_slope(logp_t, base, weight, ctx.gamma, ctx.sign)
        g = row_grad(grad, ctx.reduction, t1.shape[0])
        m = torch.addcmul(weight, y, logp_t.exp(), value=-factor).mul_(g)
        out = consume_logp(ctx)
        out.scatter_(1, t1, p_t_1)
        return (out.mul_(m),) + (None,) * 5


class FocalNode(torch.autograd.Function):
    """The focal family's loss in one node (see the module docstring).

    ``apply(logits, target, plan, reference, reduction)``: ``target`` int64 in
    [0, K); ``reference(logits, target, reduction)`` the reduced reference
    composition (every node takes one).

    The squared error is ``(1 - p_t)² + S_o`` with ``S_o = Σ_(k≠t) p_k²``, and
    the target's entry of the gradient is written in closed form,
    ``G·[m_f·(p_t - 1) + y·p_j·p_t - 2λ·p_t·((1 - p_t)² + S_o)]`` (m_f the focal
    part of m): both avoid differences of nearly equal terms near p_t = 1.
    """

    @staticmethod
    def forward(ctx, logits, target, plan, reference, reduction):
        ctx.large = None
        kernels = kernels_for(logits, target, reduction, any_size=True)
        if kernels is not None:
            return compiled_focal(
                ctx, kernels, logits, target, plan, reference, reduction
            )
        ctx.compiled = None
        logp = log_softmax(logits)
        t1 = target.unsqueeze(1)
        j = None
        if plan.dual:
            j, has = dual_index(logits, t1)
            logp_t = logp.gather(1, t1)
            # p_j where there is a class below, else 0 (a product with the
            # boolean would convert it first)
            p_j = torch.where(has, logp.gather(1, j).exp_(), constant(0.0, logp_t))
        else:
            p_j = None
            logp_t = logp.gather(1, t1)
        p_t = logp_t.exp()
        p_t_1 = torch.expm1(logp_t)  # p_t - 1, exact near p_t = 1
        rows = gamma = sign = base = weight = p = sq = others = None
        if plan.focal:
            gamma, sign = plan.gamma, plan.sign
            if gamma is None:
                gamma, sign = plan.row_gamma(p_t, p_j)
            if isinstance(sign, torch.Tensor):
                base = focal_base(logp_t, sign, p_j)
            elif sign > 0:
                base = p_t_1.neg() if p_j is None else torch.sub(p_j, p_t_1)
            else:
                base = torch.add(p_t_1, constant(2.0, p_t_1))  # 1 + p_t
            if isinstance(gamma, float) and gamma == 0.0:
                weight = torch.ones_like(base)
                rows = logp_t.neg()
            else:
                weight = base.pow(gamma)
                rows = torch.mul(weight, logp_t).neg_()
        if plan.lam:
            # p in the log-probabilities' memory (the backward reads p only);
            # S_o = Σ_(k≠t) p_k² as the squared norm with p_t set to 0 a moment
            p = logp.exp_()
            others = torch.linalg.vector_norm(
                p.scatter_(1, t1, 0.0), dim=1, keepdim=True
            )
            others.square_()
            p.scatter_(1, t1, p_t)
            sq = torch.addcmul(others, p_t_1, p_t_1)
            if rows is None:
                rows = sq if plan.lam == 1.0 else torch.mul(sq, plan.lam)
            else:
                rows = torch.add(rows, sq, alpha=plan.lam)
        ctx.save_for_backward(logits, target)
        ctx.reference, ctx.reduction, ctx.plan = reference, reduction, plan
        ctx.logp = None if plan.lam else logp  # with λ the backward reads p
        ctx.parts = (t1, j, logp_t, p_t, p_t_1, p_j, gamma, sign, base, weight)
        ctx.squares = (p, sq, others)
        return reduce_rows(rows, reduction)

    @staticmethod
    def backward(ctx, grad):
        if builds_graph(ctx):
            return reference_gradient(ctx, grad), None, None, None, None
        if ctx.compiled is not None:
            out = compiled_grad(ctx, grad, constant(1.0, grad))
            return out, None, None, None, None
        if ctx.large is not None:
            return large_grad(ctx, grad), None, None, None, None
        t1, j, logp_t, p_t, p_t_1, p_j, gamma, sign, base, weight = ctx.parts
        plan = ctx.plan
        g = row_grad(grad, ctx.reduction, t1.shape[0])
        # k (see the module docstring) and the target's entry; G once, last
        k = y_pj = None
        if plan.focal:
            y, factor = focal_slope(logp_t, base, weight, gamma, sign)
            if p_j is None:
                # m_f = w - y·p_t with y's float factor in addcmul's: the same
                # product, y·factor·p_t (addcmul multiplies value·y first)
                k = torch.addcmul(weight, y, p_t, value=-factor)
            else:
                if factor != 1.0:
                    y.mul_(constant(factor, y))
                k = torch.addcmul(weight, y, p_t, value=-1.0)  # m_f = w - y·p_t
            at_target = torch.mul(k, p_t_1)
            if p_j is not None:
                y_pj = y.mul_(p_j)
                at_target.addcmul_(y_pj, p_t)
                k = k.add_(y_pj)
        if plan.lam:
            p, sq, others = ctx.squares
            two_lam = 2.0 * plan.lam
            # 2λ·(p_t - S) = -2λ·(p_t·(1 - p_t) + S_o): written without S
            shift = torch.addcmul(others, p_t, p_t_1).mul_(constant(-two_lam, p_t))
            k = shift if k is None else k.add_(shift)
            lam_t = torch.mul(p_t, sq).mul_(constant(-two_lam, p_t))
            at_target = lam_t if not plan.focal else at_target.add_(lam_t)
            # p ⊙ (2λ·p + k), the (N, K) operand first (a broadcast (N, 1)
            # first operand takes a slow path)
            out = torch.mul(p, constant(two_lam, p)).add_(k).mul_(p)
        else:
            out = consume_logp(ctx).mul_(k)
        out.scatter_(1, t1, at_target)
        if y_pj is not None:
            out.scatter_add_(1, j, y_pj.neg_())
        return out.mul_(g), None, None, None, None


# ---------------------------------------------------------------------------
# label smoothing
# ---------------------------------------------------------------------------


class LabelSmoothingNode(torch.autograd.Function):
    """Cross-entropy against the smoothed targets ``(1 - α)·e_t + α/K`` in one
    node: per row ``-(1 - α)·log p_t - (α/K)·Σ_k log p_k``. The smoothed
    targets sum to 1, so ``∂L/∂z = G·(p - (1 - α)·e_t - α/K)``; the target's
    entry is written ``G·((p_t - 1) + α·(1 - 1/K))``, without the difference
    near p_t = 1.

    ``apply(logits, target, alpha, reference, reduction)``, 0 < α <= 1.
    """

    @staticmethod
    def forward(ctx, logits, target, alpha, reference, reduction):
        logp = log_softmax(logits)
        t1 = target.unsqueeze(1)
        logp_t = logp.gather(1, t1)
        smooth = alpha / logits.shape[1]
        rows = logp.sum(1, keepdim=True).mul_(constant(-smooth, logp_t))
        rows = torch.add(rows, logp_t, alpha=alpha - 1.0)
        ctx.save_for_backward(logits, target)
        ctx.reference, ctx.reduction = reference, reduction
        ctx.logp, ctx.parts = logp, (t1, logp_t)
        ctx.alpha, ctx.smooth = alpha, smooth
        return reduce_rows(rows, reduction)

    @staticmethod
    def backward(ctx, grad):
        if builds_graph(ctx):
            return (reference_gradient(ctx, grad),) + (None,) * 4
        t1, logp_t = ctx.parts
        g = row_grad(grad, ctx.reduction, t1.shape[0])
        out = consume_logp(ctx).sub_(constant(ctx.smooth, logp_t))
        at_target = torch.expm1(logp_t).add_(constant(ctx.alpha - ctx.smooth, logp_t))
        out.scatter_(1, t1, at_target)
        return (out.mul_(g),) + (None,) * 4


# ---------------------------------------------------------------------------
# MbLS and MDCA
# ---------------------------------------------------------------------------


class MarginNode(torch.autograd.Function):
    """MbLS in one node: ``-log p_t + α·Σ_j max(0, max_k z_k - z_j - m)``
    (``class_mean``: the mean over the classes instead of the sum).

    The penalty's derivative is -α on every z_j with a distance above the margin
    and +α times their number on the largest logit (the index of torch's
    ``max``, as the reference's autograd takes it); with G the row's upstream
    gradient, ``∂L/∂z = G·(p - e_t) + G·α·(count·e_max - [d_j > m])``.
    """

    @staticmethod
    def forward(ctx, logits, target, margin, alpha, class_mean, reference, reduction):
        ctx.large = None
        kernels = kernels_for(logits, target, reduction, any_size=True)
        if kernels is not None:
            typed = scalar(margin, logits)  # the excess in the logits' dtype
            if logits.numel() > dispatch.MAX_ENTRIES:
                args = (typed, scalar(0.0, logits), alpha, class_mean)
                run = functools.partial(_margin_large_run, kernels, args=args)
                return run_large(ctx, run, logits, target, reference, reduction)
            return run_compiled(
                ctx,
                kernels.margin,
                logits,
                target,
                reference,
                reduction,
                typed,
                alpha,
                class_mean,
            )
        ctx.compiled = None
        logp = log_softmax(logits)
        t1 = target.unsqueeze(1)
        logp_t = logp.gather(1, t1)
        if logits.numel() < INDEX_BY_VALUE:
            top, argmax = logits.max(1, keepdim=True)
        else:
            # torch's max with indices is a scalar loop: the value here, the
            # index in the backward (as dual_index does)
            top, argmax = logits.amax(1, keepdim=True), None
        excess = torch.sub(top - constant(margin, top), logits).relu_()
        if class_mean:
            penalty = excess.mean(1, keepdim=True)
        else:
            penalty = excess.sum(1, keepdim=True)
        rows = penalty.mul_(constant(alpha, penalty)).sub_(logp_t)
        # what the backward needs of the excess: where it is > 0, how often
        above = excess.sign_()
        ctx.save_for_backward(logits, target)
        ctx.reference, ctx.reduction = reference, reduction
        ctx.logp, ctx.above = logp, above
        ctx.parts = (t1, logp_t, top, argmax, above.sum(1, keepdim=True))
        ctx.margin = margin
        ctx.alpha = alpha / logits.shape[1] if class_mean else alpha
        return reduce_rows(rows, reduction)

    @staticmethod
    def backward(ctx, grad):
        if builds_graph(ctx):
            return (reference_gradient(ctx, grad),) + (None,) * 6
        if ctx.compiled is not None:
            return (compiled_grad(ctx, grad, constant(1.0, grad)),) + (None,) * 6
        if ctx.large is not None:
            return (large_grad(ctx, grad),) + (None,) * 6
        t1, logp_t, top, argmax, count = ctx.parts
        g = row_grad(grad, ctx.reduction, t1.shape[0])
        out = consume_logp(ctx)
        out.scatter_(1, t1, torch.expm1(logp_t))
        above, ctx.above = ctx.above, None
        if above is None:  # a second backward: the first one spent it
            logits = ctx.saved_tensors[0].detach()
            above = torch.sub(top - ctx.margin, logits).relu_().sign_()
        out.sub_(above, alpha=ctx.alpha)
        if argmax is None:
            # the first largest logit, in the spent mask's memory
            logits = ctx.saved_tensors[0].detach()
            argmax = first_one(torch.eq(logits, top, out=above))
        out.scatter_add_(1, argmax, torch.mul(count, constant(ctx.alpha, count)))
        return (out.mul_(g),) + (None,) * 6


def run_large(ctx, run, logits, target, reference, reduction):
    """A node's forward on a batch above ``MAX_ENTRIES`` with the compiled
    kernels: ``run(z, target, reduction)`` gives the value and the gradient
    for an upstream gradient of 1 (compiled passes around torch's vectorised
    ``exp``), the gradient kept for :func:`large_grad`."""
    value, grad = run(logits.detach(), target, reduction)
    ctx.save_for_backward(logits, target)
    ctx.reference, ctx.reduction = reference, reduction
    ctx.compiled = None
    ctx.large, ctx.large_grad = run, grad
    return torch.from_numpy(np.array(value, dtype=_NUMPY[logits.dtype]))


def _margin_large_run(kernels, z, target, reduction, args):
    """(value, gradient) of MbLS on the logits ``z`` (no gradient) for an
    upstream gradient of 1: torch's ``amax`` takes the rows' maxima, a
    compiled pass writes ``z - max`` into a new buffer, torch's ``exp`` takes
    it in place (both vectorised), and a second compiled pass sums the rows,
    computes the penalty and writes the gradient over the exponentials. Four
    passes over the batch where the torch operations make a dozen, and one
    exp per entry where they make two."""
    n = z.shape[0]
    e = torch.empty_like(z)
    arg = np.empty(n, dtype=np.int64)
    z_np, e_np = z.numpy(), e.numpy()
    kernels.margin_shift(z_np, torch.amax(z, 1).numpy(), e_np, arg)
    e.exp_()
    row_scale = 1.0 / n if reduction == "mean" else 1.0
    value = kernels.margin_finish(z_np, target.numpy(), e_np, arg, row_scale, *args)
    return value, e


def large_grad(ctx, grad):
    """The logits' gradient of :func:`run_large`'s forward: its buffer,
    given away (the gradient accumulator keeps it without a copy), scaled
    unless the upstream gradient is 1; a second backward computes it again."""
    out, ctx.large_grad = ctx.large_grad, None
    if out is None:
        logits, target = ctx.saved_tensors
        out = ctx.large(logits.detach(), target, ctx.reduction)[1]
    if grad is not constant(1.0, grad) and grad.item() != 1.0:
        out.mul_(grad)
    return out


def class_fractions(target, n_classes, dtype):
    """The fraction of the batch in each class, (K,)."""
    counts = torch.bincount(target, minlength=n_classes)
    return counts.to(dtype) / target.shape[0]


def mdca_value(p, fractions):
    """``(1/K) Σ_c |mean_i p_ic - fraction_c|`` and its sign vector."""
    gap = p.mean(0) - fractions
    return gap.abs().mean(), gap


def mdca_batches(p, target, size):
    """:func:`mdca_value` of each consecutive batch of ``size`` rows of ``p``
    (a multiple of ``size`` rows), without a gradient: (B,)."""
    n_classes = p.shape[1]
    groups = target.reshape(-1, size)
    counts = torch.zeros(len(groups), n_classes, dtype=torch.int64, device=p.device)
    counts.scatter_add_(1, groups, torch.ones_like(groups))
    gap = p.reshape(-1, size, n_classes).mean(1) - counts.to(p.dtype) / size
    return gap.abs_().mean(1)


class MDCANode(torch.autograd.Function):
    """Cross-entropy (or focal loss) plus β·MDCA of the batch in one node.

    MDCA = (1/K) Σ_c |mean_i p_ic - f_c| has ∂/∂p_ic = sign(gap_c) / (K·N) (0 at
    a zero gap, as autograd's ``abs``), and through the softmax
    ``∂/∂z_i = p_i ⊙ (v - p_i·v)`` with v = β·G_batch·sign(gap) / (K·N), G_batch
    the sum of the rows' upstream gradients. The base loss adds its per-row
    ``G·m·(p - e_t)`` (m = 1 for cross-entropy, focal's ``w - y·p_t``).
    """

    @staticmethod
    def forward(ctx, logits, target, gamma, beta, reference, reduction):
        ctx.large = None
        kernels = kernels_for(logits, target, reduction, any_size=True)
        if kernels is not None and logits.numel() > dispatch.MAX_ENTRIES:
            run = functools.partial(_mdca_large_run, kernels, args=(gamma, beta))
            return run_large(ctx, run, logits, target, reference, reduction)
        if kernels is not None:
            return run_compiled(
                ctx,
                kernels.mdca,
                logits,
                target,
                reference,
                reduction,
                gamma,
                beta,
                batch=True,
            )
        ctx.compiled = None
        n_classes = logits.shape[1]
        logp = log_softmax(logits)
        t1 = target.unsqueeze(1)
        logp_t = logp.gather(1, t1)
        p_t_1 = torch.expm1(logp_t)  # p_t - 1, exact near p_t = 1
        weight = base = None
        if gamma:
            base = p_t_1.neg()
            weight = base.pow(gamma)
            rows = torch.mul(weight, logp_t)
        else:
            rows = logp_t
        p = logp.exp_()  # the backward reads p, not log p
        value, gap = mdca_value(p, class_fractions(target, n_classes, p.dtype))
        # β·MDCA - (the base loss without its sign): -base + β·MDCA exactly
        rows = torch.sub(value if beta == 1.0 else value * constant(beta, value), rows)
        ctx.save_for_backward(logits, target)
        ctx.reference, ctx.reduction = reference, reduction
        ctx.parts = (p, t1, logp_t, p_t_1, gap, base, weight)
        ctx.gamma, ctx.beta = gamma, beta
        return reduce_rows(rows, reduction)

    @staticmethod
    def backward(ctx, grad):
        if builds_graph(ctx):
            return (reference_gradient(ctx, grad),) + (None,) * 5
        if ctx.compiled is not None:
            return (compiled_grad(ctx, grad, constant(1.0, grad)),) + (None,) * 5
        if ctx.large is not None:
            return (large_grad(ctx, grad),) + (None,) * 5
        p, t1, logp_t, p_t_1, gap, base, weight = ctx.parts
        n, n_classes = p.shape
        g = row_grad(grad, ctx.reduction, n)
        p_t = logp_t.exp()
        # G·m, with ∂L_i/∂z_i = m·(p_i - e_t) for the base loss
        if ctx.gamma:
            y, factor = focal_slope(logp_t, base, weight, ctx.gamma, 1.0)
            gm = torch.addcmul(weight, y, p_t, value=-factor).mul_(g)
        else:
            gm = g
        scale = ctx.beta / n / n_classes
        batch = batch_grad(grad, ctx.reduction, n)
        # an eager call's seed 1: 1·scale is scale exactly
        if batch is constant(1.0, batch):
            batch = constant(scale, batch)
        else:
            batch = batch * scale
        v = gap.sign().mul_(batch)
        # ∂L/∂z = p ⊙ (v + G·m - p·v), and the target's entry in closed form
        # G·m·(p_t - 1) + p_t·(v_t - p·v), without the difference near p_t = 1
        out = torch.mul(p, v)
        pv = out.sum(1, keepdim=True)
        out.addcmul_(p, torch.sub(gm, pv))
        at_target = torch.sub(v.take(t1), pv).mul_(p_t).addcmul_(p_t_1, gm)
        out.scatter_(1, t1, at_target)
        return (out,) + (None,) * 5


def _mdca_large_run(kernels, z, target, reduction, args):
    """(value, gradient) of MDCA on the logits ``z`` (no gradient) for an
    upstream gradient of 1: ``exp(z - max)`` by torch (vectorised), then
    :func:`~sklcalib.losses._compiled.mdca_finish`'s two passes."""
    n = z.shape[0]
    top = torch.amax(z, 1)
    e = torch.sub(z, top.unsqueeze(1)).exp_()
    mean = reduction == "mean"
    scales = (1.0 / n if mean else 1.0, 1.0 if mean else float(n))
    value = kernels.mdca_finish(
        z.numpy(), target.numpy(), e.numpy(), top.numpy(), *scales, *args
    )
    return value, e


# ---------------------------------------------------------------------------
# MMCE
# ---------------------------------------------------------------------------


def mmce_scale(correct, like, weighted, normalisation):
    """The factor s_i (no gradient) of MMCE's weights ``w_i = s_i·(1 - r_i)``
    (correct) or ``s_i·r_i`` (wrong), so that MMCE² = wᵀ K w.

    Unweighted: ``±1/N``. Weighted (MMCE_w): ``1/m_c`` for the correct and
    ``-1/m_w`` for the wrong samples (``"kumar"``; an empty group has no
    weights), or ``1/m_c²`` and ``-1/m_w²`` (``"mukhoti"``), where the weights
    are all 0 unless both groups are present. The counts are read once as
    Python numbers, and each factor is picked from two cached constants of
    ``like``'s dtype: three small tensor operations instead of a dozen.
    """
    n = correct.shape[0]
    if weighted:
        m_c = int(correct.sum())
        m_w = n - m_c
        power = 2 if normalisation == "mukhoti" else 1
        if power == 2 and not (m_c and m_w):
            # their code: pair means divided by m² again, 0 unless both groups
            return torch.zeros(n, dtype=like.dtype, device=correct.device)
        s_correct, s_wrong = 1.0 / max(m_c, 1) ** power, -1.0 / max(m_w, 1) ** power
    else:
        s_correct, s_wrong = 1.0 / n, -1.0 / n
    return torch.where(correct, constant(s_correct, like), constant(s_wrong, like))


def mmce_parts(logp, target, weighted, bandwidth, normalisation):
    """MMCE's pieces from log-probabilities: (log r, the predicted class, the
    correctness c, r, the weight factors s, w, r_i - r_j, the kernel K, K w,
    wᵀ K w). The reference composition and :class:`MMCENode` share it."""
    log_conf, pred = logp.max(1)
    conf = log_conf.exp()
    correct = pred == target
    scale = mmce_scale(correct, conf, weighted, normalisation)
    # correct: (1 - r)·s ; wrong: r·s
    w = torch.where(correct, 1.0 - conf, conf) * scale
    diff = conf.unsqueeze(1) - conf.unsqueeze(0)
    kernel = torch.abs(diff).div_(-bandwidth).exp_()
    kw = kernel @ w
    return pred, correct, conf, scale, w, diff, kernel, kw, w @ kw


def mmce_batches(logp, target, size, weighted, bandwidth, normalisation):
    """``wᵀ K w`` of :func:`mmce_parts` for each consecutive batch of ``size``
    rows of ``logp`` (a multiple of ``size`` rows), without a gradient: (B,).
    The same weights and kernel, batched (the counts per batch, the kernel
    matrices as one (B, size, size) tensor)."""
    log_conf, pred = logp.max(1)
    conf = log_conf.exp().reshape(-1, size)
    correct = (pred == target).reshape(-1, size)
    if weighted:
        # mmce_scale's factors, batch by batch (in float64, as its Python floats)
        m_c = correct.sum(1, keepdim=True).to(torch.float64)
        m_w = size - m_c
        power = 2 if normalisation == "mukhoti" else 1
        scale = torch.where(
            correct, 1.0 / m_c.clamp(min=1) ** power, -1.0 / m_w.clamp(min=1) ** power
        )
        if power == 2:  # 0 unless both groups are present
            scale = scale * ((m_c > 0) & (m_w > 0))
        scale = scale.to(conf.dtype)
    else:
        scale = torch.where(correct, 1.0 / size, -1.0 / size).to(conf.dtype)
    w = torch.where(correct, 1.0 - conf, conf) * scale
    diff = conf.unsqueeze(2) - conf.unsqueeze(1)
    kernel = diff.abs_().div_(-bandwidth).exp_()
    kw = torch.bmm(kernel, w.unsqueeze(2)).squeeze(2)
    return (w * kw).sum(1)


def mmce_total(logp, target, weighted, bandwidth, normalisation):
    """``wᵀ K w`` of :func:`mmce_parts` for the reference composition: the
    same operations and value; with a gradient, the kernel's quadratic form
    is one :class:`KernelQuadratic` node, whose second derivatives are in
    closed form."""
    if not (torch.is_grad_enabled() and logp.requires_grad):
        return mmce_parts(logp, target, weighted, bandwidth, normalisation)[-1]
    log_conf, pred = logp.max(1)
    conf = log_conf.exp()
    correct = pred == target
    scale = mmce_scale(correct, conf, weighted, normalisation)
    w = torch.where(correct, 1.0 - conf, conf) * scale
    return KernelQuadratic.apply(conf, w, bandwidth)


def _kernel_quadratic(conf, w, bandwidth):
    # mmce_parts' operations from r and w to wᵀ K w: (K, r_i - r_j, K w, wᵀ K w)
    diff = conf.unsqueeze(1) - conf.unsqueeze(0)
    kernel = torch.abs(diff).div_(-bandwidth).exp_()
    kw = kernel @ w
    return kernel, diff, kw, w @ kw


class KernelQuadratic(torch.autograd.Function):
    """``Q = wᵀ K w`` with ``K_ij = exp(-|r_i - r_j| / h)``: ``apply(r, w, h)``.

    The value is :func:`mmce_parts`' (the same operations). A first backward
    without a graph differentiates those operations by autograd, as the
    composition would. With a graph (``create_graph=True``, the diagnostics'
    Hessian-vector products) the gradient is :class:`KernelQuadraticGrad`,
    whose own backward is in closed form, and every later backward through
    this node (each product reaches it again) takes the same closed form:
    autograd's double backward through the composition makes about thirty
    passes over (N, N) tensors per product, these three matrix products.
    """

    @staticmethod
    def forward(ctx, conf, w, bandwidth):
        kernel, diff, kw, total = _kernel_quadratic(conf, w, bandwidth)
        ctx.save_for_backward(conf, w)
        ctx.bandwidth = bandwidth
        ctx.parts = (kernel, diff, kw)
        ctx.signed = None
        return total

    @staticmethod
    def backward(ctx, grad):
        conf, w = ctx.saved_tensors
        kernel, diff = ctx.parts[:2]
        if torch.is_grad_enabled():
            if ctx.signed is None:
                ctx.signed = _signed_product(kernel, diff, w)
            grad_conf, grad_w = KernelQuadraticGrad.apply(
                conf, w, grad, ctx, ctx.bandwidth
            )
            return grad_conf, grad_w, None
        if ctx.signed is not None:
            return (*_quadratic_grad(ctx, w, grad), None)
        with torch.enable_grad():
            leaves = [conf.detach().requires_grad_(), w.detach().requires_grad_()]
            total = _kernel_quadratic(*leaves, ctx.bandwidth)[-1]
            grad_conf, grad_w = torch.autograd.grad(total, leaves, grad)
        return grad_conf, grad_w, None


def _signed_product(kernel, diff, w):
    # S = K ⊙ sign(r_i - r_j) and S w
    signed = kernel * diff.sign()
    return signed, signed @ w


def _quadratic_grad(ctx, w, grad):
    # G·(-(2/h)·w ⊙ S w, 2·K w)
    sw, kw = ctx.signed[1], ctx.parts[2]
    return (grad * (-2.0 / ctx.bandwidth)) * w * sw, (2.0 * grad) * kw


class KernelQuadraticGrad(torch.autograd.Function):
    """The gradient of :class:`KernelQuadratic`, ``G·(-(2/h)·w ⊙ S w, 2·K w)``
    with ``S = K ⊙ sign(r_i - r_j)``: ``apply(r, w, G, ctx, h)`` (``ctx`` the
    forward node's, holding K, S, Kw and Sw), and its vector-Jacobian product
    in closed form. With upstream (a, b) for (∂Q/∂r, ∂Q/∂w),
    ``φ = bᵀ 2Kw - (2/h)·aᵀ (w ⊙ Sw)`` and ``K' = |S|`` (K without the ties,
    the diagonal included):

        ∂(Gφ)/∂G = φ,
        ∂(Gφ)/∂w = G·[2Kb - (2/h)·(a ⊙ Sw - S (a ⊙ w))],
        ∂(Gφ)/∂r = G·[-(2/h)·(b ⊙ Sw + w ⊙ S b) + (2/h²)·w ⊙ (a ⊙ K'w - K'(a ⊙ w))].

    ``sign`` has derivative 0, as in autograd's derivative of ``|x|``
    (``sign``): ties between confidences add nothing to either derivative, as
    in the composition.
    """

    @staticmethod
    def forward(ctx, conf, w, grad, node, bandwidth):
        ctx.save_for_backward(w, grad)
        ctx.node = node
        return _quadratic_grad(node, w, grad)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, a, b):
        w, grad = ctx.saved_tensors
        node = ctx.node
        kernel, kw = node.parts[0], node.parts[2]
        signed, sw = node.signed
        h = node.bandwidth
        if a is None:
            a = torch.zeros_like(w)
        if b is None:
            b = torch.zeros_like(w)
        aw = a * w
        # one pass over S for both of its products, one over K, one over |S|
        # (computed once: every Hessian-vector product of a graph runs this)
        s_b, s_aw = (signed @ torch.stack((b, aw), 1)).unbind(1)
        k_b = kernel @ b
        unsigned = getattr(node, "unsigned", None)
        if unsigned is None:
            unsigned = node.unsigned = signed.abs()
        k_aw, k_w = (unsigned @ torch.stack((aw, w), 1)).unbind(1)
        phi = 2.0 * torch.dot(b, kw) - (2.0 / h) * torch.dot(a, w * sw)
        grad_w = 2.0 * k_b - (2.0 / h) * (a * sw - s_aw)
        grad_conf = (-2.0 / h) * (b * sw + w * s_b) + (2.0 / h**2) * w * (
            a * k_w - k_aw
        )
        return grad_conf * grad, grad_w * grad, phi, None, None


class SafeSqrt(torch.autograd.Function):
    """sqrt(max(x, 0)) with gradient 0 (a valid subgradient) where x <= 0.

    MMCE is the RKHS norm ‖v‖ of a vector v that is 0 for a perfectly calibrated
    batch; d‖v‖/dv is undefined there and autograd's 1/(2·sqrt(0)) would be inf.
    """

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sqrt(torch.clamp(x, min=0.0))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        positive = x > 0
        root = torch.sqrt(torch.where(positive, x, torch.ones_like(x)))
        return torch.where(positive, grad / (2.0 * root), torch.zeros_like(x))


class MMCENode(torch.autograd.Function):
    """Cross-entropy plus λ·MMCE of the batch in one node (one log-softmax).

    With ``S = wᵀ K w``, ``K_ij = exp(-|r_i - r_j| / h)`` and ``v = K w``::

        ∂S/∂r_i = 2·v_i·∂w_i/∂r_i - (2/h)·w_i·Σ_j K_ij·sign(r_i - r_j)·w_j,

    (``sign(0) = 0``, as autograd's derivative of ``|x|``), ``∂w_i/∂r_i = ∓s_i``
    (correct / wrong), and ``r = exp(max_k log p_k)`` gives
    ``∂r/∂z = r·(e_pred - p)``. MMCE = √S with gradient 0 where S <= 0, as
    :class:`SafeSqrt`. With G the rows' upstream gradients and a_i = ∂/∂r_i
    times r_i: ``∂L/∂z = p ⊙ (G - a) - G·e_t + a·e_pred``.
    """

    @staticmethod
    def forward(ctx, logits, target, lam, options, reference, reduction):
        kernels = kernels_for(logits, target, reduction)
        if kernels is not None:
            weighted, bandwidth, normalisation = options
            power = 2 if normalisation == "mukhoti" else 1
            return run_compiled(
                ctx,
                kernels.mmce,
                logits,
                target,
                reference,
                reduction,
                lam,
                weighted,
                power,
                bandwidth,
                batch=True,
            )
        ctx.compiled = None
        logp = log_softmax(logits)
        t1 = target.unsqueeze(1)
        parts = mmce_parts(logp, target, *options)
        root = torch.sqrt(parts[-1].clamp(min=0.0))  # MMCE; sqrt(S) where S > 0
        rows = logp.gather(1, t1).neg_().add_(root * lam)
        ctx.save_for_backward(logits, target)
        ctx.reference, ctx.reduction = reference, reduction
        ctx.logp, ctx.parts = logp, (t1, *parts, root)
        ctx.lam, ctx.bandwidth = lam, options[1]
        return reduce_rows(rows, reduction)

    @staticmethod
    def backward(ctx, grad):
        if builds_graph(ctx):
            return (reference_gradient(ctx, grad),) + (None,) * 5
        if ctx.compiled is not None:
            return (compiled_grad(ctx, grad, constant(1.0, grad)),) + (None,) * 5
        t1, pred, correct, conf, scale, w, diff, kernel, kw, total, root = ctx.parts
        n = t1.shape[0]
        g = row_grad(grad, ctx.reduction, n)
        out = consume_logp(ctx)
        if total.item() > 0:
            # g·λ·dMMCE/dS, then dS/dr, then times r
            d_total = ctx.lam / 2.0 / root
            batch = batch_grad(grad, ctx.reduction, n)
            if batch is not constant(1.0, batch):  # an eager call's seed: 1·x is x
                d_total = batch * d_total
            signed = (kernel * diff.sign()) @ w
            d_conf = torch.where(correct, -scale, scale).mul_(kw)
            d_conf.sub_(w * signed, alpha=1.0 / ctx.bandwidth)
            a = d_conf.mul_(conf).mul_(2.0 * d_total).unsqueeze(1)
            out.mul_(torch.sub(g, a))
        else:
            a = None
            out.mul_(g)
        # -g at the target, then +a at the prediction: per entry the
        # additions of one scatter over both columns, in its order
        # (-(1/N) of an eager call's seed is exact: the cached constant)
        minus_g = constant(-1.0 / n, g) if g is constant(1.0 / n, g) else g.neg()
        out.scatter_add_(1, t1, minus_g.expand(n, 1))
        if a is not None:
            out.scatter_add_(1, pred.unsqueeze(1), a)
        return (out,) + (None,) * 5
