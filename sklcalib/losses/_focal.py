"""Focal loss and its relatives: sample-dependent γ, dual focal, focal
calibration loss, inverse focal."""

import functools
import numbers

import numpy as np
import torch
import torch.nn.functional as F

from sklcalib.diagnostics import gamma_for_threshold
from sklcalib.losses._autograd import (
    FocalFastNode,
    FocalNode,
    FocalPlan,
    apply_node,
    dual_logp,
    focal_term,
    log_softmax,
    plain_pow_ok,
    squared_error,
)
from sklcalib.losses._base import (
    CalibrationLoss,
    check_real,
    check_reduction,
    target_logp,
)

_NEG_INF = float("-inf")


def below_target_key(logits, logits_t):
    """A key whose positive entries are the classes strictly below the target
    (no gradient), largest for the closest: ``1 / (z_t - z_k)``, with ties (the
    target included) sent to -inf. ``key.topk(k, 1)`` gives the k largest below
    p_t, valid where the key is > 0 (the ablation variants of the dual term)."""
    key = torch.sub(logits_t.detach().unsqueeze(1), logits.detach()).reciprocal_()
    return torch.nan_to_num_(key, nan=_NEG_INF, posinf=_NEG_INF)


def fast_focal(criterion, logits, target, gamma, sign=1.0):
    """``criterion``'s reduced focal (``sign=1``) or inverse focal (``sign=-1``)
    loss with a constant γ: cross-entropy for γ = 0, else :class:`FocalFastNode`."""
    if gamma == 0.0:
        return F.cross_entropy(logits, target, reduction=criterion.reduction)
    return apply_node(
        FocalFastNode,
        logits,
        target,
        gamma,
        sign,
        criterion._reference,
        criterion.reduction,
    )


def fused_focal(criterion, logits, target, make_plan):
    """``criterion``'s reduced loss through :class:`FocalNode`, with the plan
    ``make_plan()`` built once per set of checked parameters."""
    plan = criterion._derived("plan", make_plan)
    return apply_node(
        FocalNode, logits, target, plan, criterion._reference, criterion.reduction
    )


class _ConstantGammaLoss(CalibrationLoss):
    """Focal loss (``_sign = 1``) or inverse focal loss (``-1``) with one γ:
    ``-(1 - s·p_t)^γ · log p_t``; the subclasses give the parameters' defaults
    and the documentation."""

    rowwise = True
    _fixed_node = True
    _sign = 1.0
    _repr_params = ("gamma", "reduction")

    def __init__(self, gamma, reduction):
        super().__init__()
        self.gamma = gamma
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.gamma, "gamma", low=0.0)
        check_reduction(self.reduction)

    def _per_sample(self, logits, target):
        _, logp_t = target_logp(logits, target)
        return focal_term(logp_t, float(self.gamma), sign=self._sign)

    def _fused(self, logits, target):
        return fast_focal(self, logits, target, float(self.gamma), sign=self._sign)


class FocalLoss(_ConstantGammaLoss):
    """Focal loss (Lin et al. 2017) for calibration (Mukhoti et al. 2020).

    Per sample, ``-(1 - p_t)^γ · log p_t`` with ``p_t`` the softmax probability of
    the target class. The weight ``(1 - p_t)^γ`` is not detached (as in the
    authors' code). ``gamma=0`` is cross-entropy.

    Parameters
    ----------
    gamma : float, default=3.0
        Focusing parameter γ >= 0.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses. The authors' training code sums (an SGD learning rate
        ported from it needs ``"sum"`` or multiplying by the batch size).

    Notes
    -----
    Called on ``logits`` (N, K) and integer ``target`` (N,) as
    :meth:`CalibrationLoss.forward` says. ``1 - p_t`` is computed as
    ``-expm1(log p_t)`` and the gradient of the weight is written so that it
    stays finite at ``p_t = 1`` for ``γ < 1``.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import FocalLoss
    >>> logits = torch.log(torch.tensor([[0.3, 0.7]]))
    >>> round(FocalLoss(gamma=3.0)(logits, torch.tensor([0])).item(), 6)
    0.412963
    """

    name = "focal"

    def __init__(self, gamma=3.0, reduction="mean"):
        super().__init__(gamma, reduction)


# ---------------------------------------------------------------------------
# sample-dependent γ
# ---------------------------------------------------------------------------

#: ``thresholds="lambert"`` is shorthand for this table
LAMBERT_THRESHOLDS = ((0.2, "lambert"),)


@functools.lru_cache(maxsize=64)
def _lambert_gamma(p0):
    # the closed form of Proposition 2 lives in sklcalib.diagnostics (its
    # theory part, numpy/scipy only: importing it loads neither torch nor skorch)
    return float(gamma_for_threshold(p0))


def _resolve_thresholds(thresholds):
    """Validated ``((p0, γ), ...)`` sorted by p0, with "lambert" entries resolved."""
    if isinstance(thresholds, str):
        if thresholds != "lambert":
            raise ValueError(
                "thresholds must be 'lambert' or a sequence of (p0, gamma) pairs, "
                f"got {thresholds!r}."
            )
        thresholds = LAMBERT_THRESHOLDS
    try:
        pairs = [tuple(pair) for pair in thresholds]
    except TypeError:
        raise ValueError(
            "thresholds must be 'lambert' or a sequence of (p0, gamma) pairs, "
            f"got {thresholds!r}."
        ) from None
    resolved = []
    for pair in pairs:
        if len(pair) != 2:
            raise ValueError(
                f"thresholds must hold (p0, gamma) pairs, got the entry {pair!r}."
            )
        p0 = check_real(pair[0], "thresholds p0", low=0.0, low_open=True, high=1.0)
        if p0 >= 1.0:
            raise ValueError(f"thresholds p0 must lie in (0, 1), got {p0!r}.")
        if isinstance(pair[1], str):
            if pair[1] != "lambert":
                raise ValueError(
                    "thresholds gamma must be a number >= 0 or 'lambert', got "
                    f"{pair[1]!r}."
                )
            if p0 >= 0.5:
                # γ*(p0) = 0 there: the entry would silently be cross-entropy
                raise ValueError(
                    f"thresholds: (p0, 'lambert') needs p0 < 0.5, got p0 = {p0!r}; "
                    "γ*(p0) is 0 (cross-entropy) for p0 >= 0.5, since every γ >= 0 "
                    "already has g(p, γ) <= 1 above p0. Give a number for that "
                    "interval instead."
                )
            gamma = _lambert_gamma(p0)
        else:
            gamma = check_real(pair[1], "thresholds gamma", low=0.0)
        resolved.append((p0, gamma))
    p0s = [p0 for p0, _ in resolved]
    if len(set(p0s)) != len(p0s):
        raise ValueError(f"thresholds must have distinct p0 values, got {p0s}.")
    return tuple(sorted(resolved))


def _hashable(thresholds):
    if isinstance(thresholds, str):
        return thresholds
    try:
        return tuple(
            tuple(pair) if not isinstance(pair, numbers.Number) else pair
            for pair in thresholds
        )
    except TypeError:
        return None


@functools.lru_cache(maxsize=64)
def _resolve_cached(key):
    return _resolve_thresholds(key)


def resolve_thresholds(thresholds):
    key = _hashable(thresholds)
    if key is None:
        return _resolve_thresholds(thresholds)  # raises the error
    try:
        return _resolve_cached(key)
    except TypeError:  # unhashable content
        return _resolve_thresholds(thresholds)


class SampleDependentFocalLoss(CalibrationLoss):
    """Focal loss with γ chosen per sample from p_t (FLSD, Mukhoti et al.).

    ``thresholds`` is a table ``((p0_1, γ_1), (p0_2, γ_2), ...)``: a sample takes
    the γ of the smallest threshold with ``p_t < p0``, and ``gamma`` if ``p_t`` is
    at or above every threshold. The default (``gamma=3``, ``((0.2, 5),)``) is
    FLSD-53: γ = 5 for p_t < 0.2, else 3. FLSD-532 is ``gamma=2.0,
    thresholds=((0.2, 5.0), (0.5, 3.0))``. γ is chosen without gradient (as in
    the authors' code), and the loss is the focal loss with that γ.

    **The Lambert-W rule.** Proposition 2 of Mukhoti et al. gives, for a
    threshold p0 < 0.5, the γ*(p0) with g(p0, γ*) = 1, where g(p, γ) is the ratio
    of the focal to the cross-entropy gradient: g(p, γ*) > 1 for p < p0 (training
    speeds up on samples still below p0) and g(p, γ*) < 1 for p > p0
    (:func:`sklcalib.diagnostics.gamma_for_threshold`, scipy's ``lambertw`` on
    branch -1). sklcalib uses it exactly as the paper derives FLSD-53 ("γ = 5 for
    p_t in [0, 0.19], as g(0.19, 5) ≈ 1"): p0 is a *threshold*, and a sample with
    ``p_t < p0`` gets γ*(p0); above it gets ``gamma``. A table entry may give
    ``"lambert"`` instead of a number, ``(p0, "lambert")``, for p0 < 0.5 (γ*(p0)
    is 0 for p0 >= 0.5, i.e. cross-entropy, so such an entry raises), and
    ``thresholds="lambert"`` is short for ``((0.2, "lambert"),)``, i.e. γ*(0.2) ≈
    4.851 below 0.2 and ``gamma`` above: FLSD-53 with the exact γ instead of the
    rounded 5. (Taking p0 = p_t of each sample instead was rejected: γ*(p_t) makes
    every gradient exactly the cross-entropy gradient, grows without bound as
    p_t → 0, and is 0 for p_t >= 0.5, the opposite of the intended
    regularisation of confident samples.)

    Parameters
    ----------
    gamma : float, default=3.0
        The γ >= 0 of samples with p_t at or above every threshold.
    thresholds : sequence of (float, float or "lambert") pairs, or "lambert", \
default=((0.2, 5.0),)
        Thresholds p0 in (0, 1) (distinct; any order) with their γ >= 0.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses. The authors' training code sums (an SGD learning rate
        ported from it needs ``"sum"`` or multiplying by the batch size).

    Notes
    -----
    Called on ``logits`` (N, K) and integer ``target`` (N,) as
    :meth:`CalibrationLoss.forward` says. The comparison ``p_t < p0`` is made
    in the dtype of the logits.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import SampleDependentFocalLoss
    >>> loss = SampleDependentFocalLoss()  # FLSD-53
    >>> logits = torch.log(torch.tensor([[0.1, 0.9], [0.25, 0.75]]))
    >>> loss.reduction = "none"
    >>> [round(v, 6) for v in loss(logits, torch.tensor([0, 0])).tolist()]
    [1.359653, 0.584843]
    >>> lam = SampleDependentFocalLoss(thresholds="lambert")
    >>> round(lam.gamma_table()[0][1], 3)
    4.851
    """

    name = "flsd53"
    _fixed_node = True
    rowwise = True
    _repr_params = ("gamma", "thresholds", "reduction")

    def __init__(self, gamma=3.0, thresholds=((0.2, 5.0),), reduction="mean"):
        super().__init__()
        self.gamma = gamma
        self.thresholds = thresholds
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.gamma, "gamma", low=0.0)
        resolve_thresholds(self.thresholds)
        check_reduction(self.reduction)

    def gamma_table(self):
        """The resolved table: ``((p0, γ), ...)`` sorted by p0, then ``gamma``.

        Returns
        -------
        table : tuple
            ``((p0_1, γ_1), ..., (p0_m, γ_m))`` followed by nothing else; samples
            with ``p_t >= p0_m`` use ``gamma``.
        """
        return resolve_thresholds(self.thresholds)

    def sample_gamma(self, p_t):
        """Return the γ of each probability in ``p_t`` (a tensor), without gradient.

        Parameters
        ----------
        p_t : torch.Tensor
            Probabilities of the target class.

        Returns
        -------
        gamma : torch.Tensor
            The γ of each sample; same shape and dtype as ``p_t``.
        """
        return self._lookup(p_t.detach(), self._tables(p_t))

    def _tables(self, p_t):
        # (p0 bounds, γ values) in p_t's dtype and device
        table = self.gamma_table()
        kwargs = {"dtype": p_t.dtype, "device": p_t.device}
        bounds = torch.tensor([p0 for p0, _ in table], **kwargs)
        values = torch.tensor([g for _, g in table] + [float(self.gamma)], **kwargs)
        return bounds, values

    @staticmethod
    def _lookup(p_t, tables):
        bounds, values = tables
        # right=True: index i such that bounds[i-1] <= p_t < bounds[i]
        return values.take(torch.bucketize(p_t, bounds, right=True))

    def _derived_tables(self, p_t):
        # the tables of the checked parameters, built once per dtype and device
        def make():
            values = [g for _, g in self.gamma_table()] + [float(self.gamma)]
            return (*self._tables(p_t), plain_pow_ok(values))

        return self._derived((p_t.dtype, p_t.device), make)

    def _row_gamma(self, p_t, p_j):
        return self._lookup(p_t, self._derived_tables(p_t)[:2]), 1.0

    def _compiled_table(self, like):
        # _row_gamma's look-up for the compiled kernel, bucketize(right=True),
        # in float64 whatever the logits' dtype
        def make():
            table = self.gamma_table()
            values = [g for _, g in table] + [float(self.gamma)]
            return 1, np.array([p0 for p0, _ in table]), np.array(values)

        return self._derived("compiled", make)

    def _per_sample(self, logits, target):
        _, logp_t = target_logp(logits, target)
        p_t = logp_t.detach().exp()
        bounds, values, plain = self._derived_tables(p_t)
        gamma = self._lookup(p_t, (bounds, values))
        return focal_term(logp_t, gamma, plain=plain)

    def _fused(self, logits, target):
        return fused_focal(
            self,
            logits,
            target,
            lambda: FocalPlan(row_gamma=self._row_gamma, table=self._compiled_table),
        )


# ---------------------------------------------------------------------------
# dual focal
# ---------------------------------------------------------------------------


def check_dual(dual):
    """Validate ``dual``; return ``(kind, k)``."""
    if dual in ("max", "mean_all"):
        return dual, None
    if (
        isinstance(dual, (tuple, list))
        and len(dual) == 2
        and dual[0] in ("kth", "mean")
        and isinstance(dual[1], numbers.Integral)
        and not isinstance(dual[1], bool)
    ):
        if dual[1] < 1:
            raise ValueError(f"dual's k must be >= 1, got {dual[1]!r}.")
        return dual[0], int(dual[1])
    raise ValueError(
        "dual must be 'max', 'mean_all', ('kth', k) or ('mean', k) with an "
        f"integer k >= 1; got {dual!r}."
    )


def dual_probability(logp, logp_t, target, dual="max", *, logits=None):
    """The dual term of Tao et al. (2023) for each row, with gradient.

    Built from the probabilities *strictly below* p_t: ties with p_t are
    excluded, and when the target is not the argmax the classes above it are
    ignored (so p_j is not the runner-up). With none below, p_j = 0.

    The ablation variants of the paper's Table 4 are computed as the authors'
    code computes them: ``("mean", k)`` and ``"mean_all"`` sum the (up to) k /
    all probabilities below p_t per sample and then average these sums over the
    *batch*, e.g. ``1 - p_t + mean_batch(p_j + p_3)`` for ``("mean", 2)``; every
    row gets that one batch value (with gradient into every row).

    Parameters
    ----------
    logp : torch.Tensor of shape (N, K)
        Log-probabilities.
    logp_t : torch.Tensor of shape (N,)
        Log-probability of the target class.
    target : torch.Tensor of shape (N,)
        Target class indices.
    dual : "max", ("kth", k), ("mean", k) or "mean_all"
        "max": the largest below p_t (the paper). ("kth", k): the k-th largest
        below p_t (0 if fewer than k are below). ("mean", k): the batch mean of
        the per-sample sums of the (up to) k largest below p_t. "mean_all": the
        batch mean of the per-sample sums of all below p_t.
    logits : torch.Tensor of shape (N, K), optional
        The logits, if the caller has them (they order like ``logp``).

    Returns
    -------
    p_j : torch.Tensor of shape (N,)
        The dual term p_j of each row (for ``("mean", k)`` and ``"mean_all"``,
        the one batch value in every row).

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import dual_probability
    >>> p = torch.tensor([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]], dtype=float)
    >>> logp, target = p.log(), torch.tensor([1, 3])
    >>> logp_t = logp[[0, 1], target]
    >>> for d in ("max", ("kth", 2), ("mean", 2), "mean_all"):
    ...     print(d, dual_probability(logp, logp_t, target, d).round(decimals=6))
    max tensor([0.2000, 0.3000], dtype=torch.float64)
    ('kth', 2) tensor([0.1000, 0.2000], dtype=torch.float64)
    ('mean', 2) tensor([0.4000, 0.4000], dtype=torch.float64)
    mean_all tensor([0.4500, 0.4500], dtype=torch.float64)
    """
    kind, k = check_dual(dual)
    if logits is None:
        logits = logp
    key = below_target_key(logits, logits.gather(1, target.unsqueeze(1)).squeeze(1))
    n_classes = logp.shape[1]
    if kind == "kth" and k > n_classes:
        return torch.zeros_like(logp_t)
    if kind == "mean_all":
        p = logp.exp()
        sums = torch.where(key > 0, p, torch.zeros_like(p)).sum(1)
    else:
        values, index = key.topk(1 if kind == "max" else min(k, n_classes), dim=1)
        p = logp.gather(1, index).exp()
        p = torch.where(values > 0, p, torch.zeros_like(p))
        if kind == "max":
            return p.squeeze(1)
        if kind == "kth":
            return p[:, k - 1]
        sums = p.sum(1)
    # the authors average the per-sample sums over the batch (Table 4)
    return sums.mean().expand_as(logp_t)


class DualFocalLoss(CalibrationLoss):
    """Dual focal loss (Tao et al., ICML 2023, Eq. 3).

    Per sample, ``-(1 - p_t + p_j)^γ · log p_t`` where **p_j is the largest
    probability strictly below p_t**: 0 if there is none, ties with p_t excluded,
    and not the runner-up when the target is not the argmax (the classes above p_t
    play no part). The gradient flows through p_j as well. The ``dual`` variants
    are the ablations of the paper's Table 4.

    Parameters
    ----------
    gamma : float, default=5.0
        Focusing parameter γ >= 0.
    dual : "max", ("kth", k), ("mean", k) or "mean_all", default="max"
        How the dual term is formed from the probabilities strictly below p_t:
        ``"max"`` the largest (the paper's loss); ``("kth", k)`` the k-th largest
        of the sample (0 if fewer than k are below; Table 4's "2nd/3rd largest
        logit ranked after q_gt"); ``("mean", k)`` the *batch* mean of the
        per-sample sums of the (up to) k largest, ``1 - p_t + mean_batch(p_j +
        p_3)`` for k = 2 ("mean(1st + 2nd)"); ``"mean_all"`` the batch mean of
        the per-sample sums of all of them ("mean(all other logits lower than
        q_gt)"). The two mean variants are what the authors' ablation code
        computes (``torch.mean`` over the batch of the summed terms), so they
        couple the samples of a batch: a sample's loss, and ``reduction="none"``,
        depend on the others. ``("kth", 1)`` equals ``"max"``.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses. The authors' training code sums (an SGD learning rate
        ported from it needs ``"sum"`` or multiplying by the batch size).

    Notes
    -----
    Called on ``logits`` (N, K) and integer ``target`` (N,) as
    :meth:`CalibrationLoss.forward` says. "Strictly below" is decided on the
    logits, which order like the probabilities (exact ties of logits are exact
    ties of probabilities).

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import DualFocalLoss
    >>> logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]] * 3))
    >>> loss = DualFocalLoss(gamma=5.0, reduction="none")
    >>> [round(v, 6) for v in loss(logits, torch.tensor([0, 1, 2])).tolist()]
    [0.22713, 0.710934, 0.527381]
    """

    name = "dual_focal"
    _fixed_node = True
    rowwise = True
    _repr_params = ("gamma", "dual", "reduction")

    def __init__(self, gamma=5.0, dual="max", reduction="mean"):
        super().__init__()
        self.gamma = gamma
        self.dual = dual
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.gamma, "gamma", low=0.0)
        check_dual(self.dual)
        check_reduction(self.reduction)

    def _per_sample(self, logits, target):
        logp = log_softmax(logits)
        if self.dual == "max":
            logp_t, p_j = dual_logp(logits, logp, target)
        else:
            logp_t = logp.gather(1, target.unsqueeze(1)).squeeze(1)
            p_j = dual_probability(logp, logp_t, target, self.dual, logits=logits)
        return focal_term(logp_t, float(self.gamma), dual=p_j)

    def _fused(self, logits, target):
        gamma = float(self.gamma)
        if self.dual != "max":
            # the ablation variants: the composed graph
            return self._reference(logits, target, self.reduction)
        if gamma == 0.0:  # (1 - p_t + p_j)^0 = 1: cross-entropy
            return F.cross_entropy(logits, target, reduction=self.reduction)
        return fused_focal(self, logits, target, lambda: FocalPlan(gamma, dual=True))


# ---------------------------------------------------------------------------
# focal calibration loss and inverse focal
# ---------------------------------------------------------------------------


class FocalCalibrationLoss(CalibrationLoss):
    """Focal calibration loss (Liang et al., Definition 3.1).

    Per sample, ``-(1 - p_t)^γ · log p_t + λ · Σ_k (p_k - e_y,k)²``: focal loss plus
    λ times the squared Euclidean distance between the softmax vector and the
    one-hot target (no square root, no 1/K).

    Parameters
    ----------
    gamma : float, default=2.0
        Focal γ >= 0.
    lam : float, default=1.0
        Weight λ >= 0 of the squared-error term.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses. The authors' code takes the mean, as the default does.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import FocalCalibrationLoss
    >>> logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    >>> loss = FocalCalibrationLoss(gamma=2.0, lam=1.0)
    >>> round(loss(logits, torch.tensor([0])).item(), 6)
    0.553287
    """

    name = "fcl"
    _fixed_node = True
    rowwise = True
    _repr_params = ("gamma", "lam", "reduction")

    def __init__(self, gamma=2.0, lam=1.0, reduction="mean"):
        super().__init__()
        self.gamma = gamma
        self.lam = lam
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.gamma, "gamma", low=0.0)
        check_real(self.lam, "lam", low=0.0)
        check_reduction(self.reduction)

    def _per_sample(self, logits, target):
        logp, logp_t = target_logp(logits, target)
        focal = focal_term(logp_t, float(self.gamma))
        lam = float(self.lam)
        if lam == 0.0:
            return focal
        return torch.add(focal, squared_error(logp, target), alpha=lam)

    def _fused(self, logits, target):
        gamma, lam = float(self.gamma), float(self.lam)
        if lam == 0.0:
            return fast_focal(self, logits, target, gamma)
        return fused_focal(self, logits, target, lambda: FocalPlan(gamma, lam=lam))


class InverseFocalLoss(_ConstantGammaLoss):
    """Inverse focal loss (Wang et al. 2021).

    Per sample, ``-(1 + p_t)^γ · log p_t``: weights confident samples up instead
    of down (it preserves sample hardness for post-hoc calibration).

    Parameters
    ----------
    gamma : float, default=2.0
        Focusing parameter γ >= 0.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import InverseFocalLoss
    >>> logits = torch.log(torch.tensor([[0.7, 0.3]]))
    >>> round(InverseFocalLoss(gamma=2.0)(logits, torch.tensor([0])).item(), 6)
    1.030791
    """

    name = "inverse_focal"
    _sign = -1.0

    def __init__(self, gamma=2.0, reduction="mean"):
        super().__init__(gamma, reduction)
