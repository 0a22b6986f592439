"""Shared pieces of the criteria: parameter checks, input checks, reductions and
the :class:`CalibrationLoss` base class."""

import functools
import inspect
import operator

import torch
from torch import nn

from sklcalib._utils._validation import check_option, check_scalar
from sklcalib.losses._autograd import (
    eager_gradient,
    eager_node,
    log_softmax,
    reduce,
)

_REDUCTIONS = ("mean", "sum", "none")


def check_real(value, name, *, low=None, high=None, low_open=False):
    """``value`` as a float, checked to be a finite real in [low, high]."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    return check_scalar(value, name, low=low, high=high, low_open=low_open)


def check_reduction(reduction):
    return check_option(reduction, "reduction", _REDUCTIONS)


def check_input(logits, target, *, check_range=True):
    """Validate the (logits, target) pair; return target as int64.

    Only metadata and one (min, max) reduction over the N targets: a NaN check
    over the (N, K) logits would cost a full extra pass (the estimator checks X).
    ``check_range=False`` leaves out the reduction (see
    :meth:`CalibrationLoss.forward`).
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
    if check_range:
        check_target_range(target, k)
    return target.long()


def check_target_range(target, k):
    """Raise a ValueError naming ``target`` unless it lies in [0, k)."""
    lo, hi = (int(v) for v in torch.aminmax(target))
    if lo < 0 or hi >= k:
        raise ValueError(
            f"target must lie in [0, {k}) for logits with {k} columns, got values "
            f"in [{int(lo)}, {int(hi)}]."
        )


#: instance attributes that are caches, dropped from pickles and deep copies
_CACHES = ("_checked_params", "_derived_cache", "_lookup_cache", "_compiled_tables")

# values whose identity fixes their value
_IMMUTABLE = frozenset({int, float, bool, str, type(None)})


def _immutable(value):
    # a tuple of immutable values (FLSD's thresholds) is one too; a tuple may
    # hold lists, which can change under the same identity
    if type(value) is tuple:
        return all(map(_immutable, value))
    return type(value) in _IMMUTABLE


@functools.cache
def _init_params(cls):
    """The constructor's parameter names of a criterion class."""
    return tuple(
        name
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )


class CalibrationLoss(nn.Module):
    """Base class: ``forward`` validates, computes per-sample losses, reduces.

    Subclasses store their hyper-parameters as plain public attributes (so that
    skorch's ``criterion__<name>`` routing and ``set_params`` work), implement
    ``_check_params`` (called at construction and whenever a parameter has
    changed since the last call, so that a value changed in place, e.g. by
    :class:`sklcalib.callbacks.GammaSchedule`, is checked too) and
    ``_per_sample(logits, target)``, the reference composition; ``_fused`` may
    give the training path through a fused node (see
    :mod:`sklcalib.losses._autograd`).

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
    #: whether a row's loss depends on that row alone, not on the rest of the
    #: batch (MMCE's and MDCA's batch terms do)
    rowwise = False
    #: whether ``_fused`` takes the same fused node with the same constants for
    #: every batch while the parameters are unchanged (so that the training
    #: loop's eager call, :meth:`_value_and_grad`, may call that node directly
    #: for the next batches); a subclass whose ``_fused`` depends on the batch
    #: sets it False
    _fixed_node = False

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
        # On the CPU the range of the targets is checked by the first gather
        # of the targets, whose error is replaced by the clear one: the
        # check's reduction and its two reads cost several µs per small
        # batch. An out-of-range index on a GPU is a device-side assertion
        # that cannot be caught: checked first there.
        on_cpu = target.device.type == "cpu" if isinstance(target, torch.Tensor) else 0
        target = check_input(logits, target, check_range=not on_cpu)
        if not on_cpu:
            return self._loss(logits, target)
        try:
            return self._loss(logits, target)
        except (IndexError, RuntimeError):
            check_target_range(target, logits.shape[1])
            raise

    def _loss(self, logits, target):
        """``forward`` after :func:`check_input`: for a batch whose logits are
        (N, K) floats and whose targets are int64 in ``[0, K)``. NetClassifier's
        training loop calls it for its own batches, whose targets it encoded
        at fit: the per-batch input check is Python work that costs about 5 %
        of a small network's training step."""
        self._refresh_params()
        if logits.requires_grad and torch.is_grad_enabled():
            return self._fused(logits, target)
        return self._reference(logits, target, self.reduction)

    def _value_and_grad(self, logits, target):
        """``(loss, grad)``: :meth:`_loss` of a batch whose logits require a
        gradient, and the gradient ``loss.backward()`` would send to the
        logits, computed by the criterion's fused node without putting the
        node in the graph (:func:`~sklcalib.losses._autograd.apply_node`):
        the same values, to the last bit, at less cost per call. ``grad`` is
        None, and ``loss`` has its graph, where the training path takes no
        fused node (cross-entropy's own kernel, a composed graph) or the
        reduction is ``"none"``. The training loops call it; second
        derivatives go through :meth:`_loss`."""
        cache = self.__dict__.get("_derived_cache")
        step = cache.get("eager") if cache else None
        if (
            step is not None
            and logits.requires_grad
            and torch.is_grad_enabled()
            and self._params_unchanged()
        ):
            return eager_node(step[0], logits, target, step[1])
        self._refresh_params()
        if self.reduction == "none" or not (
            logits.requires_grad and torch.is_grad_enabled()
        ):
            return self._loss(logits, target), None
        value, grad, step = eager_gradient(self._fused, logits, target)
        if step is not None and self._fixed_node:
            # the node and constants of these parameters, for the next batches
            self._derived("eager", lambda: step)
        return value, grad

    def _rows(self, logits, target):
        """The (N,) per-row losses of :meth:`_loss`'s input, without a gradient:
        for a :attr:`rowwise` criterion, what ``_loss`` of any batch of these
        rows averages (NetClassifier's validation pass takes the losses of
        many batches in one call)."""
        self._refresh_params()
        return self._reference(logits, target, "none")

    #: whether :meth:`_batches` gives the losses of many batches in one call
    batched = False

    def _batch_losses(self, logits, target, size):
        """The loss of each consecutive batch of ``size`` rows of :meth:`_loss`'s
        input (the last one possibly shorter), without a gradient: (B,), for a
        :attr:`batched` criterion whose reduction is the mean or the sum. For
        a criterion whose batch term couples the rows (not :attr:`rowwise`),
        what NetClassifier's validation pass takes instead of one call per
        batch: equal to the batch-by-batch losses to rounding (the batched
        operations sum in another order)."""
        self._refresh_params()
        full = logits.shape[0] // size * size
        losses = [self._batches(logits[:full], target[:full], size)]
        if full < logits.shape[0]:
            tail = self._reference(logits[full:], target[full:], self.reduction)
            losses.append(tail.reshape(1))
        return torch.cat(losses)

    def _batches(self, logits, target, size):  # pragma: no cover - abstract
        """:meth:`_batch_losses` of a multiple of ``size`` rows."""
        raise NotImplementedError

    def _refresh_params(self):
        if not self._params_unchanged():
            self._check_params()
            # the constants derived from the parameters (fused plans, tables)
            self.__dict__.pop("_derived_cache", None)
            self._remember_params()

    def _reference(self, logits, target, reduction):
        """The reduced reference composition: ``_per_sample``'s plain torch
        operations, what the fused nodes differentiate for second derivatives."""
        return reduce(self._per_sample(logits, target), reduction)

    def _fused(self, logits, target):
        """The reduced loss on the training path (logits with gradient): the
        values of :meth:`_reference`, through a subclass's fused node (see
        :mod:`sklcalib.losses._autograd`) where it has one."""
        return self._reference(logits, target, self.reduction)

    def _derived(self, key, make):
        """``make()``, computed once per set of checked parameters and ``key``
        (the plan of a fused node, tables of per-sample γ, ...)."""
        cache = self.__dict__.get("_derived_cache")
        if cache is None:
            cache = self.__dict__["_derived_cache"] = {}
        value = cache.get(key)
        if value is None:
            value = cache[key] = make()
        return value

    def __getstate__(self):
        # caches are rebuilt on the next call; they hold bound methods and
        # tensors that need not travel with a pickle or a deepcopy
        state = super().__getstate__()
        for key in _CACHES:
            state.pop(key, None)
        return state

    # Hyper-parameters are checked at every forward (a schedule may change them
    # between batches), unless they are the very objects last checked and
    # immutable: the check is Python work that, inside a training step, costs
    # about 4 % of a small network's step.
    def _params_unchanged(self):
        last = self.__dict__.get("_checked_params")
        # last is None, or the values of the same names (map of two
        # iterables of one length)
        return last is not None and all(
            map(operator.is_, map(self.__dict__.get, _init_params(type(self))), last)
        )

    def _remember_params(self):
        values = self._param_values()
        if all(map(_immutable, values)):
            self.__dict__["_checked_params"] = values

    def _param_values(self):
        return tuple(self.__dict__.get(name) for name in _init_params(type(self)))

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
    logp = log_softmax(logits)
    return logp, logp.gather(1, target.unsqueeze(1)).squeeze(1)
