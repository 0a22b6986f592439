"""Shared pieces of the criteria: parameter checks, input checks, reductions,
and the one autograd function that keeps focal-type gradients finite."""

import math
import numbers

import torch
from torch import nn

_REDUCTIONS = ("mean", "sum", "none")

# Shared docstring fragments (numpydoc "Parameters" entries).
REDUCTION_DOC = """reduction : {"mean", "sum", "none"}, default="mean"
        How the per-sample losses are combined: their mean (skorch's convention),
        their sum (what the authors' training code uses), or the (N,) vector."""
INPUT_DOC = """Call with ``logits`` of shape (N, K) (raw scores; the probabilities are
    ``softmax(logits)``, computed through ``log_softmax``) and integer ``target``
    of shape (N,) with values in ``[0, K)``."""


def check_real(value, name, *, low=None, high=None, low_open=False):
    """``value`` as a float, checked to be a finite real in [low, high]."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if low is not None and (value <= low if low_open else value < low):
        bound = f"> {low}" if low_open else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value!r}.")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}.")
    return value


def check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"reduction must be one of {', '.join(map(repr, _REDUCTIONS))}; "
            f"got {reduction!r}."
        )
    return reduction


def check_input(logits, target):
    """Validate the (logits, target) pair; return target as int64.

    Only metadata and one (min, max) reduction over the N targets: a NaN check
    over the (N, K) logits would cost a full extra pass (the estimator checks X).
    """
    if not isinstance(logits, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise ValueError(
            "logits and target must be torch tensors, got "
            f"{type(logits).__name__} and {type(target).__name__}."
        )
    if logits.ndim != 2:
        raise ValueError(
            f"logits must have shape (N, K), got shape {tuple(logits.shape)}."
        )
    if not logits.is_floating_point():
        raise ValueError(f"logits must be floating point, got {logits.dtype}.")
    n, k = logits.shape
    if n == 0 or k == 0:
        raise ValueError(f"logits must be non-empty, got shape {tuple(logits.shape)}.")
    if target.ndim != 1 or target.shape[0] != n:
        raise ValueError(
            f"target must have shape ({n},) to match logits, got shape "
            f"{tuple(target.shape)}."
        )
    if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
        raise ValueError(f"target must hold integer class indices, got {target.dtype}.")
    lo, hi = torch.aminmax(target)
    if lo < 0 or hi >= k:
        raise ValueError(
            f"target must lie in [0, {k}) for logits with {k} columns, got values "
            f"in [{int(lo)}, {int(hi)}]."
        )
    return target.long()


def reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


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
        positive = base > 0
        safe_base = torch.where(positive, base, torch.ones_like(base))
        # B^γ, with the value 0^γ (1 if γ = 0 else 0) at B = 0 as a constant, so
        # that a second derivative does not meet γ·0^(γ-1) = inf there either
        at_zero = (torch.as_tensor(gamma) == 0).to(base.dtype)
        weight = torch.where(positive, safe_base.pow(gamma), at_zero)
        # dL/dB = -γ·B^(γ-1)·log p_t, written without B^(γ-1)
        grad_base = grad * gamma * weight * (logp_t / safe_base)
        # dB/dlog p_t = -s·p_t, dB/dc = s
        grad_logp = grad_base * sign * logp_t.exp() - grad * weight
        grad_dual = -grad_base * sign if ctx.needs_input_grad[3] else None
        return grad_logp, None, None, grad_dual


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


class CalibrationLoss(nn.Module):
    """Base class: ``forward`` validates, computes per-sample losses, reduces.

    Subclasses store their hyper-parameters as plain public attributes (so that
    skorch's ``criterion__<name>`` routing and ``set_params`` work), implement
    ``_check_params`` (called at construction and at every forward, so that a
    value changed in place, e.g. by :class:`sklcalib.callbacks.GammaSchedule`,
    is checked too) and ``_per_sample(logits, target)``; ``_fused_spec`` may
    return a fused training path (see :mod:`sklcalib._losses._fused`).

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import CalibrationLoss
    >>> class SquaredLogLoss(CalibrationLoss):
    ...     name = "squared_log"
    ...     def __init__(self, reduction="mean"):
    ...         super().__init__()
    ...         self.reduction = reduction
    ...     def _per_sample(self, logits, target):
    ...         logp = torch.log_softmax(logits, 1)
    ...         return logp.gather(1, target[:, None]).squeeze(1) ** 2
    >>> loss = SquaredLogLoss()(torch.zeros(2, 2), torch.tensor([0, 1]))
    >>> round(loss.item(), 6)
    0.480453
    """

    #: registry name (see :func:`sklcalib.losses.get_criterion`)
    name = None

    def _check_params(self):
        check_reduction(self.reduction)

    def forward(self, logits, target):
        target = check_input(logits, target)
        self._check_params()
        spec = self._fused_spec() if logits.requires_grad else None
        if spec is None:
            loss = self._per_sample(logits, target)
        else:
            from sklcalib._losses._fused import fused_focal

            loss = fused_focal(logits, target, spec)
        return reduce(loss, self.reduction)

    def _fused_spec(self):
        """A :class:`~sklcalib._losses._fused.FocalSpec` for the fused training
        path, or None to differentiate ``_per_sample`` with autograd."""
        return None

    def _per_sample(self, logits, target):  # pragma: no cover - abstract
        raise NotImplementedError

    def extra_repr(self):
        names = [p for p in self._repr_params if getattr(self, p, None) is not None]
        return ", ".join(f"{p}={getattr(self, p)!r}" for p in names)

    _repr_params = ("reduction",)


def target_logp(logits, target):
    """(log_softmax(logits), log p_t): one normalisation, one gather."""
    logp = torch.log_softmax(logits, dim=1)
    return logp, logp.gather(1, target.unsqueeze(1)).squeeze(1)
