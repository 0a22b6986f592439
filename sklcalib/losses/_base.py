"""Shared pieces of the criteria: parameter checks, input checks, reductions and
the :class:`CalibrationLoss` base class."""

import functools
import inspect
import operator

import torch
from torch import nn

from sklcalib._utils._validation import check_option, check_scalar
from sklcalib.losses._autograd import fused_focal

_REDUCTIONS = ("mean", "sum", "none")

#: From this many rows on, a batch's loss goes through the fused node of
#: ``_fused_spec``; smaller batches differentiate the composed graph of
#: ``_per_sample``. Measured inside a training loop (MLP 64-64, Adam, one
#: thread): on 128-row batches the composed graph is 40 to 100 µs per step
#: cheaper for 2 to 100 classes, on 1024 rows of 10 classes the fused node
#: is 5 to 12 % cheaper. The fused node saves memory traffic on large batches
#: but costs Python work per call, which inside a training step (caches
#: cold after the network's own forward and backward) weighs several times
#: what a tight micro-benchmark shows.
FUSED_MIN_ROWS = 512


def check_real(value, name, *, low=None, high=None, low_open=False):
    """``value`` as a float, checked to be a finite real in [low, high]."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    return check_scalar(value, name, low=low, high=high, low_open=low_open)


def check_reduction(reduction):
    return check_option(reduction, "reduction", _REDUCTIONS)


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
    lo, hi = (int(v) for v in torch.aminmax(target))
    if lo < 0 or hi >= k:
        raise ValueError(
            f"target must lie in [0, {k}) for logits with {k} columns, got values "
            f"in [{int(lo)}, {int(hi)}]."
        )
    return target.long()


# values whose identity fixes their value (tuples may hold mutable objects)
_IMMUTABLE = frozenset({int, float, bool, str, type(None)})


@functools.cache
def _init_params(cls):
    """The constructor's parameter names of a criterion class."""
    return tuple(
        name
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )


def reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


class CalibrationLoss(nn.Module):
    """Base class: ``forward`` validates, computes per-sample losses, reduces.

    Subclasses store their hyper-parameters as plain public attributes (so that
    skorch's ``criterion__<name>`` routing and ``set_params`` work), implement
    ``_check_params`` (called at construction and at every forward, so that a
    value changed in place, e.g. by :class:`sklcalib.callbacks.GammaSchedule`,
    is checked too) and ``_per_sample(logits, target)``; ``_fused_spec`` may
    return a fused training path (see :mod:`sklcalib.losses._autograd`).

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

    def __init__(self):
        # no constructor arguments of its own (torch's Module takes none either);
        # defined so that the documented signature is not ``(*args, **kwargs)``
        super().__init__()

    def _check_params(self):
        check_reduction(self.reduction)

    def forward(self, logits, target):
        """Compute the loss of a batch.

        Checks the inputs and the hyper-parameters, computes the per-sample
        losses (through the fused path when ``logits`` requires a gradient and the
        subclass provides one) and reduces them as ``reduction`` says.

        Parameters
        ----------
        logits : torch.Tensor of shape (N, K)
            Raw scores (the probabilities are ``softmax(logits)``).
        target : torch.Tensor of shape (N,)
            Integer class indices in ``[0, K)``.

        Returns
        -------
        loss : torch.Tensor
            A scalar for ``reduction="mean"`` or ``"sum"``, the (N,) per-sample
            losses for ``"none"``.
        """
        return self._loss(logits, check_input(logits, target))

    def _loss(self, logits, target):
        """``forward`` after :func:`check_input`: for a batch whose logits are
        (N, K) floats and whose targets are int64 in ``[0, K)``. NetClassifier's
        training loop calls it for its own batches, whose targets it encoded
        at fit: the per-batch input check is Python work that costs about 5 %
        of a small network's training step."""
        if not self._params_unchanged():
            self._check_params()
            self._remember_params()
        if logits.requires_grad:
            loss = self._fused_per_sample(logits, target)
        else:
            loss = self._per_sample(logits, target)
        return reduce(loss, self.reduction)

    # Hyper-parameters are checked at every forward (a schedule may change them
    # between batches), unless they are the very objects last checked and
    # immutable: the check is Python work that, inside a training step, costs
    # about 4 % of a small network's step.
    def _params_unchanged(self):
        last = self.__dict__.get("_checked_params")
        if last is None:
            return False
        values = self._param_values()
        return len(values) == len(last) and all(map(operator.is_, values, last))

    def _remember_params(self):
        values = self._param_values()
        if all(type(v) in _IMMUTABLE for v in values):
            self.__dict__["_checked_params"] = values

    def _param_values(self):
        return tuple(self.__dict__.get(name) for name in _init_params(type(self)))

    def _fused_per_sample(self, logits, target):
        """The per-sample losses on the training path (logits with gradient):
        the same values as ``_per_sample``, with a cheaper backward where a
        subclass has one (``_fused_spec`` from :data:`FUSED_MIN_ROWS` rows on,
        or an override of this method)."""
        min_rows = self._fused_min_rows
        if min_rows is None:
            min_rows = FUSED_MIN_ROWS
        spec = self._fused_spec() if logits.shape[0] >= min_rows else None
        if spec is None:
            return self._per_sample(logits, target)
        return fused_focal(logits, target, spec)

    def _fused_spec(self):
        """A :class:`~sklcalib.losses._autograd.FocalSpec` for the fused training
        path, or None to differentiate ``_per_sample`` with autograd."""
        return None

    #: rows from which the fused node is used; None: :data:`FUSED_MIN_ROWS`
    _fused_min_rows = None

    def _per_sample(self, logits, target):  # pragma: no cover - abstract
        raise NotImplementedError

    def extra_repr(self):
        """Return the hyper-parameters that ``repr`` shows, as ``name=value``.

        Returns
        -------
        text : str
            The set (not None) hyper-parameters, comma-separated.
        """
        names = [p for p in self._repr_params if getattr(self, p, None) is not None]
        return ", ".join(f"{p}={getattr(self, p)!r}" for p in names)

    _repr_params = ("reduction",)


def target_logp(logits, target):
    """(log_softmax(logits), log p_t): one normalisation, one gather."""
    logp = torch.log_softmax(logits, dim=1)
    return logp, logp.gather(1, target.unsqueeze(1)).squeeze(1)
