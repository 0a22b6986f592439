"""The torch autograd functions of the focal family.

``_FocalTerm`` is the per-sample focal term with a backward that stays finite;
``_FusedFocal`` is one node for the focal family: log-softmax, the target term, the dual
term and the squared-error term in the forward, the logits' gradient in closed
form in the backward.

Why: composed from torch operations, these losses pay for several (N, K)
temporaries in the backward (gather, exp and product backwards, gradient
accumulation) and for a dozen small nodes. Here the backward is one scaling of the
saved probabilities (the forward computes them instead of log-probabilities:
log p is needed only at the target) and one or two scatters, less than
cross-entropy's backward. For second derivatives (``create_graph=True``, used by
:mod:`sklcalib.diagnostics`) the backward differentiates the composed reference
implementation instead, so Hessian-vector products stay exact.

The per-sample loss is ``-B^γ·log p_t + λ·(Σ_k p_k² - 2 p_t + 1)`` with
``B = 1 - s·p_t + s·c``, where ``c`` is 0 or the dual term p_j (the largest
probability strictly below p_t) and ``s = ±1`` (focal / inverse focal). With
``w = B^γ`` and ``r = log p_t / B`` (0 where B = 0):

    ∂L/∂log p_t = -w + γ·w·r·s·p_t - 2λ·p_t,   ∂L/∂c = -γ·w·r·s,   ∂L/∂S = λ,

and with dp_k/dz = p_k (e_k - p) and dS/dz = 2 p ⊙ (p - S), for upstream g:

    ∂L/∂z = p ⊙ (2λg·p - (a + b·p_j + 2λg·S)) + a·e_t + b·p_j·e_j,

where a = g·∂L/∂log p_t and b = g·∂L/∂c.
"""

import torch

_NEG_INF = float("-inf")


class _FocalTerm(torch.autograd.Function):
    """Per-sample ``-B^γ · log p_t`` with ``B = 1 - s·p_t + s·c``, in one node.

    ``s = +1`` gives focal (``c = 0``) and dual focal (``c = p_j``); ``s = -1``
    gives inverse focal (and its dual variant); ``γ`` and ``s`` are floats or
    per-sample tensors without gradient, ``c`` an optional tensor with gradient.
    ``1 - p_t`` is computed as ``-expm1(log p_t)``.

    Why a hand-written backward: autograd on ``B ** γ`` gives
    ``γ·B^(γ-1)·log p_t``, which is ``inf · 0 = nan`` at ``B = 0`` (p_t = 1, no
    dual term) when ``γ < 1``. ``B >= 1 - p_t`` and ``B = 0`` only where
    ``log p_t = 0``, so writing the gradient as ``γ·B^γ·(log p_t / B)`` keeps it
    finite (the ratio is bounded, -1 as p_t -> 1, and is taken as 0 where
    ``B = 0``), and the second derivative too (where ``B = 0`` the weight is
    the constant ``0^γ``). One node also saves a dozen small autograd nodes per call.

    The backward uses differentiable torch operations on the saved inputs, so
    Hessian-vector products (``create_graph=True``, as in
    :mod:`sklcalib.diagnostics`) work too.
    """

    @staticmethod
    def forward(ctx, logp_t, gamma, sign, dual):
        ctx.gamma, ctx.sign = gamma, sign
        ctx.has_dual = dual is not None
        saved = [logp_t]
        for value in (gamma, sign, dual):
            if isinstance(value, torch.Tensor):
                saved.append(value)
        ctx.save_for_backward(*saved)
        base = focal_base(logp_t, sign, dual)
        return base.pow_(gamma).mul_(logp_t).neg_()

    @staticmethod
    def backward(ctx, grad):
        logp_t, *rest = ctx.saved_tensors
        rest = iter(rest)
        gamma = next(rest) if isinstance(ctx.gamma, torch.Tensor) else ctx.gamma
        sign = next(rest) if isinstance(ctx.sign, torch.Tensor) else ctx.sign
        dual = next(rest) if ctx.has_dual else None
        base = focal_base(logp_t, sign, dual)
        grad_logp, grad_dual = focal_partials(grad, logp_t, gamma, sign, base)
        return grad_logp, None, None, grad_dual if ctx.needs_input_grad[3] else None


def focal_partials(grad, logp_t, gamma, sign, base, weight=None):
    """``g·∂L/∂log p_t`` and ``g·∂L/∂c`` of ``L = -B^γ·log p_t``, B = 1 - s·p_t + s·c.

    The one derivation of the focal term's gradient, shared by :class:`_FocalTerm`
    and :class:`_FusedFocal`. With ``w = B^γ`` and ``r = log p_t / B`` (0 where
    B = 0): ``∂L/∂log p_t = -w + γ·w·r·s·p_t`` and ``∂L/∂c = -γ·w·r·s``.
    ``dL/dB = -γ·B^(γ-1)·log p_t`` is written without ``B^(γ-1)``, which is inf at
    B = 0 for γ < 1 while the product is finite (``B >= 1 - p_t``, and B = 0 only
    where log p_t = 0). ``weight`` is ``B^γ`` when the caller has it; otherwise it
    is computed with the value ``0^γ`` (1 if γ = 0 else 0) at B = 0 as a constant,
    so that a second derivative does not meet ``γ·0^(γ-1)`` there either. Only
    out-of-place torch operations: the result can be differentiated again.
    """
    positive = base > 0
    safe_base = torch.where(positive, base, torch.ones_like(base))
    if weight is None:
        at_zero = (torch.as_tensor(gamma) == 0).to(base.dtype)
        weight = torch.where(positive, safe_base.pow(gamma), at_zero)
    grad_base = grad * gamma * weight * (logp_t / safe_base)  # g·∂L/∂B·(-1)
    # dB/dlog p_t = -s·p_t, dB/dc = s
    grad_logp = grad_base * sign * logp_t.exp() - grad * weight
    return grad_logp, -grad_base * sign


def focal_base(logp_t, sign, dual):
    if isinstance(sign, torch.Tensor):
        base = torch.where(sign > 0, -torch.expm1(logp_t), 1.0 + logp_t.exp())
    elif sign > 0:
        base = -torch.expm1(logp_t)
    else:
        base = 1.0 + logp_t.exp()
    if dual is not None:
        base = base + sign * dual
    return base


def plain_autograd_ok(gammas):
    """Whether autograd on ``B ** γ`` is finite to second order at ``B = 0``.

    ``γ·B^(γ-1)`` is finite at B = 0 for γ = 1 and γ >= 1, and its derivative
    ``γ(γ-1)·B^(γ-2)`` for γ = 1 and γ >= 2 (torch's pow backward returns 0 for
    a Python-scalar exponent 0, not for a tensor exponent).
    """
    return all(g == 1.0 or g >= 2.0 for g in gammas)


def focal_term(logp_t, gamma, *, sign=1.0, dual=None, plain=None):
    """Per-sample ``-(1 - s·p_t + s·c)^γ · log p_t``.

    ``gamma`` and ``sign`` are floats or (N,) tensors (no gradient, same dtype
    as ``logp_t``); ``dual`` (c) is None or an (N,) tensor with gradient.

    Where plain autograd is finite (γ = 0, γ = 1, γ >= 2, or ``s = -1`` where
    B >= 1) the loss is built from a handful of autograd nodes, which is
    cheaper than a Python autograd function; otherwise (γ in (0, 1) or (1, 2),
    e.g. AdaFocal's γ) :class:`_FocalTerm` keeps the gradients finite.
    ``plain`` says whether a tensor ``gamma`` takes the plain path (the caller
    knows its values); ``None`` decides from a float ``gamma``.
    """
    if plain is None:
        scalar = not isinstance(gamma, torch.Tensor)
        scalar_sign = not isinstance(sign, torch.Tensor)
        plain = (
            scalar
            and scalar_sign
            and (gamma == 0.0 or sign < 0 or plain_autograd_ok((gamma,)))
        )
    if not plain:
        return _FocalTerm.apply(logp_t, gamma, sign, dual)
    if not isinstance(gamma, torch.Tensor) and gamma == 0.0:
        return -logp_t
    base = focal_base(logp_t, sign, dual)
    return -(base.pow(gamma) * logp_t)


def below_target_key(logits, logits_t):
    """A key whose positive entries are the classes strictly below the target.

    The one definition of "the probabilities strictly below p_t" (no gradient):
    logits order like the probabilities, and exact ties of logits are exact ties
    of probabilities. ``1 / (z_t - z_k)`` is > 0 exactly for the classes strictly
    below the target (a difference of distinct floats is never 0) and largest for
    the closest one; < 0 above; +inf for ties, the target itself included, which
    are sent to -inf. So ``key.max(1)`` / ``key.topk(k, 1)`` give the largest /
    the k largest below p_t, valid where the key is > 0. Three arithmetic
    passes: a boolean mask with ``masked_fill`` or ``where`` costs several times
    more on CPU.
    """
    key = torch.sub(logits_t.detach().unsqueeze(1), logits.detach()).reciprocal_()
    return torch.nan_to_num_(key, nan=_NEG_INF, posinf=_NEG_INF)


def dual_index(logits, logits_t):
    """Index of the largest logit strictly below the target's per row, and
    whether there is one (no gradient); see :func:`below_target_key`."""
    values, index = below_target_key(logits, logits_t).max(1)
    return index, values > 0


class FocalSpec:
    """What the fused node computes; ``gamma_sign(logp_t, p_j)`` gives (γ, s).

    ``reference(logits, target)`` is the composed per-sample implementation used
    for second derivatives.
    """

    __slots__ = ("dual", "gamma_sign", "lam", "reference")

    def __init__(self, gamma_sign, reference, *, dual=False, lam=0.0):
        # gamma_sign=None: no focal term (the Brier score, with lam=1)
        self.gamma_sign = gamma_sign
        self.reference = reference
        self.dual = dual
        self.lam = lam


class _FusedFocal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, spec):
        # p is what the backward needs, and log p is needed only at the
        # target: z_t - logsumexp(z); few dispatches, as batches are often small
        lse = torch.logsumexp(logits, 1, keepdim=True)
        p = torch.sub(logits, lse).exp_()
        logits_t = logits.gather(1, target.unsqueeze(1))
        logp_t = logits_t.sub(lse).squeeze(1)
        p_j = index = None
        if spec.dual:
            index, has = dual_index(logits, logits_t.squeeze(1))
            p_j = torch.where(has, p.gather(1, index.unsqueeze(1)).squeeze(1), 0.0)
        sq = base = weight = gamma = sign = None
        loss = 0.0
        if spec.gamma_sign is not None:
            gamma, sign = spec.gamma_sign(logp_t, p_j)
            base = focal_base(logp_t, sign, p_j)
            weight = base.pow(gamma)
            loss = -(weight * logp_t)
        if spec.lam:
            sq = torch.linalg.vecdot(p, p)
            loss = loss + spec.lam * (sq - 2.0 * logp_t.exp() + 1.0)
        ctx.spec = spec
        ctx.gamma, ctx.sign = gamma, sign
        ctx.save_for_backward(logits, target, p, logp_t, base, weight)
        ctx.extra = (p_j, index, sq)
        return loss

    @staticmethod
    def backward(ctx, grad):
        logits, target, p, logp_t, base, weight = ctx.saved_tensors
        spec = ctx.spec
        if torch.is_grad_enabled():
            # create_graph=True: differentiate the composed implementation, so
            # that second derivatives are those of the loss itself
            with torch.enable_grad():
                loss = spec.reference(logits, target)
                (g,) = torch.autograd.grad(loss, logits, grad, create_graph=True)
            return g, None, None
        p_j, index, sq = ctx.extra
        gamma, sign = ctx.gamma, ctx.sign
        p_t = logp_t.exp()
        if spec.gamma_sign is not None:
            a, grad_dual = focal_partials(grad, logp_t, gamma, sign, base, weight)
        else:
            a = torch.zeros_like(p_t)
        lam = spec.lam
        if lam:
            a = a - (2.0 * lam) * grad * p_t
            two_lam_g = (2.0 * lam) * grad
            coef = a + two_lam_g * sq
        else:
            coef = a
        if p_j is not None:
            b_pj = grad_dual * p_j  # g·∂L/∂c·p_j
            coef = coef + b_pj
        if lam:
            out = p * two_lam_g.unsqueeze(1)
            out.sub_(coef.unsqueeze(1)).mul_(p)
        else:
            out = p * (-coef).unsqueeze(1)
        out.scatter_add_(1, target.unsqueeze(1), a.unsqueeze(1))
        if p_j is not None:
            out.scatter_add_(1, index.unsqueeze(1), b_pj.unsqueeze(1))
        return out, None, None


def fused_focal(logits, target, spec):
    """Per-sample losses of ``spec`` through the fused node (see the module)."""
    return _FusedFocal.apply(logits, target, spec)
