"""Baselines of the papers: Brier score, MMCE, label smoothing."""

import torch.nn.functional as F

from sklcalib._utils._validation import check_bool
from sklcalib.losses._autograd import (
    FocalPlan,
    LabelSmoothingNode,
    MMCENode,
    SafeSqrt,
    apply_node,
    log_softmax,
    mmce_batches,
    mmce_total,
    squared_error,
)
from sklcalib.losses._base import (
    CalibrationLoss,
    check_real,
    check_reduction,
    target_logp,
)
from sklcalib.losses._focal import fused_focal


class BrierLoss(CalibrationLoss):
    """Brier score as a training loss.

    Per sample, ``Σ_k (p_k - e_y,k)²``, the squared Euclidean distance between the
    softmax vector and the one-hot target (no 1/K).

    Parameters
    ----------
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses. The authors' code takes the mean, as the default does.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import BrierLoss
    >>> logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    >>> round(BrierLoss()(logits, torch.tensor([0])).item(), 6)
    0.38
    """

    name = "brier"
    _fixed_node = True
    rowwise = True

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction
        self._check_params()

    def _per_sample(self, logits, target):
        return squared_error(log_softmax(logits), target)

    def _fused(self, logits, target):
        return fused_focal(
            self, logits, target, lambda: FocalPlan(lam=1.0, focal=False)
        )


_NORMALISATIONS = ("mukhoti", "kumar")


def check_normalisation(normalisation):
    if normalisation not in _NORMALISATIONS:
        raise ValueError(
            f"normalisation must be one of {', '.join(map(repr, _NORMALISATIONS))}; "
            f"got {normalisation!r}."
        )
    return normalisation


def mmce(logits, target, *, weighted=True, bandwidth=0.4, normalisation="mukhoti"):
    """Maximum mean calibration error (Kumar et al. 2018) of a batch, with gradient.

    r_i is the top-1 confidence (with gradient), c_i = [argmax = y_i] (without), and
    ``k(r, r') = exp(-|r - r'| / bandwidth)`` the Laplacian kernel. With m_c
    correct and m_w wrong samples, and the pair sums

        S_cc = Σ_{i,j correct} (1-r_i)(1-r_j) k,   S_ww = Σ_{i,j wrong} r_i r_j k,
        S_cw = Σ_{i correct, j wrong} (1-r_i) r_j k,

    the weighted MMCE_w is, with ``normalisation="kumar"`` (Kumar et al.'s Eq.)::

        MMCE_w² = S_cc / m_c² + S_ww / m_w² - 2 S_cw / (m_c m_w)

    and with ``normalisation="mukhoti"`` (the MMCE baseline as Mukhoti et al.'s
    code computes it, and as the focal-loss papers' tables report it: each pair
    sum is first averaged over its pairs, then divided by m² again)::

        MMCE_w² = S_cc / m_c⁴ + S_ww / m_w⁴ - 2 S_cw / (m_c m_w)²,

    0 when the batch has no correct or no wrong sample (their code returns 0
    then; with ``"kumar"`` an empty group contributes 0). The unweighted MMCE is
    ``Σ_ij (c_i - r_i)(c_j - r_j) k(r_i, r_j) / N²`` under either normalisation.
    Each is ``wᵀ K w`` for a weight vector w. Returns the square root (the MMCE
    itself); its gradient is 0 where MMCE = 0. O(N²) time and memory in the batch
    size.

    Parameters
    ----------
    logits : torch.Tensor of shape (N, K)
        Raw scores; the confidences r_i are the largest softmax probabilities.
    target : torch.Tensor of shape (N,)
        Integer class indices.
    weighted : bool, default=True
        MMCE_w (True) or the unweighted MMCE.
    bandwidth : float, default=0.4
        Width of the Laplacian kernel.
    normalisation : {"mukhoti", "kumar"}, default="mukhoti"
        Normalisation of MMCE_w's pair sums (see above); ignored when
        ``weighted=False``.

    Returns
    -------
    mmce : torch.Tensor
        A scalar >= 0.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import mmce
    >>> logits = torch.log(torch.tensor([[0.75, 0.25], [0.75, 0.25], [0.75, 0.25],
    ...                                  [0.25, 0.75]]))
    >>> # confidence 0.75 everywhere, accuracy 3/4: calibrated, MMCE = 0
    >>> round(mmce(logits, torch.tensor([0, 0, 1, 1]), weighted=False).item(), 6)
    0.0
    >>> # MMCE_w: 3 correct, 1 wrong, r = 0.75 and k = 1 everywhere, so
    >>> # S_cc = 9/16, S_ww = 9/16, S_cw = 9/16
    >>> target = torch.tensor([0, 0, 1, 1])
    >>> # kumar: √(1/16 + 9/16 - 6/16); mukhoti: √(1/144 + 9/16 - 2/16)
    >>> round(mmce(logits, target, normalisation="kumar").item(), 6)
    0.5
    >>> round(mmce(logits, target).item(), 6)
    0.666667
    """
    check_normalisation(normalisation)
    logp = log_softmax(logits)
    total = mmce_total(logp, target, weighted, bandwidth, normalisation)
    return SafeSqrt.apply(total)


class MMCELoss(CalibrationLoss):
    """Cross-entropy plus λ · MMCE, the focal-loss papers' MMCE baseline.

    MMCE (maximum mean calibration error, Kumar et al. 2018) is a kernel estimate
    of calibration error on the top-1 confidence r and correctness c of the
    batch, with the Laplacian kernel ``k = exp(-|r_i - r_j| / bandwidth)``; see
    :func:`mmce`. ``weighted=True`` uses MMCE_w, which normalises the correct and
    the wrong samples separately. With the pair sums ``S_cc = Σ_(i,j correct)
    (1-r_i)(1-r_j) k``, ``S_ww = Σ_(i,j wrong) r_i r_j k`` and ``S_cw = Σ_(i
    correct, j wrong) (1-r_i) r_j k`` over m_c correct and m_w wrong samples:

    - ``normalisation="mukhoti"`` (default): ``MMCE_w² = S_cc/m_c⁴ + S_ww/m_w⁴ -
      2 S_cw/(m_c m_w)²``, 0 unless the batch has both correct and wrong
      samples. This is what Mukhoti et al.'s code computes (each pair sum
      averaged over its pairs and divided by m² again) and what produced the
      MMCE rows of the focal-loss papers' tables (λ = 2, mean cross-entropy).
    - ``normalisation="kumar"``: ``MMCE_w² = S_cc/m_c² + S_ww/m_w² - 2
      S_cw/(m_c m_w)``, Kumar et al.'s definition; a penalty m² times stronger
      (4 to 40 times on batches of 128), which can overwhelm the cross-entropy.

    The unweighted MMCE is ``Σ_ij (c_i - r_i)(c_j - r_j) k / N²``. The loss takes
    the square root (MMCE itself), as Kumar et al. and Mukhoti et al.'s weighted
    code do (their unweighted code omits it); its gradient is set to 0 where
    MMCE = 0 instead of 1/0.

    Per sample, ``-log p_t + λ · MMCE(batch)``: the batch term is shared by every
    sample, so ``"mean"`` gives ``mean CE + λ·MMCE`` (the authors' form) and
    ``"sum"`` gives ``sum CE + N·λ·MMCE``.

    Parameters
    ----------
    lam : float, default=2.0
        Weight λ >= 0 of the MMCE term.
    weighted : bool, default=True
        Use MMCE_w (correct and wrong samples normalised separately).
    bandwidth : float, default=0.4
        Width of the Laplacian kernel, > 0.
    normalisation : {"mukhoti", "kumar"}, default="mukhoti"
        Normalisation of MMCE_w (see above); ignored when ``weighted=False``.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses. The authors' code takes the mean, as the default does.

    Notes
    -----
    Called on ``logits`` (N, K) and integer ``target`` (N,) as
    :meth:`CalibrationLoss.forward` says. Time and memory are O(N²) in the batch size.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import MMCELoss
    >>> logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    >>> target = torch.tensor([0, 1, 1])
    >>> ce = torch.nn.functional.cross_entropy(logits, target)
    >>> bool(MMCELoss(lam=2.0)(logits, target) > ce)
    True
    """

    name = "mmce"
    _fixed_node = True
    _repr_params = ("lam", "weighted", "bandwidth", "normalisation", "reduction")

    def __init__(
        self,
        lam=2.0,
        weighted=True,
        bandwidth=0.4,
        normalisation="mukhoti",
        reduction="mean",
    ):
        super().__init__()
        self.lam = lam
        self.weighted = weighted
        self.bandwidth = bandwidth
        self.normalisation = normalisation
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.lam, "lam", low=0.0)
        check_bool(self.weighted, "weighted")
        check_real(self.bandwidth, "bandwidth", low=0.0, low_open=True)
        check_normalisation(self.normalisation)
        check_reduction(self.reduction)

    def _per_sample(self, logits, target):
        logp, logp_t = target_logp(logits, target)
        lam = float(self.lam)
        if lam == 0.0:
            return -logp_t
        options = (bool(self.weighted), float(self.bandwidth), self.normalisation)
        term = SafeSqrt.apply(mmce_total(logp, target, *options))
        return -logp_t + lam * term

    batched = True

    def _batches(self, logits, target, size):
        logp, logp_t = target_logp(logits, target)
        rows = logp_t.reshape(-1, size)
        lam = float(self.lam)
        ce = rows.mean(1) if self.reduction == "mean" else rows.sum(1)
        ce = ce.neg_()
        if lam == 0.0:
            return ce
        options = (bool(self.weighted), float(self.bandwidth), self.normalisation)
        term = mmce_batches(logp, target, size, *options).clamp_(min=0.0).sqrt_()
        if self.reduction == "sum":
            lam *= size
        return ce.add_(term, alpha=lam)

    def _fused(self, logits, target):
        lam = float(self.lam)
        if lam == 0.0:
            return F.cross_entropy(logits, target, reduction=self.reduction)
        options = (bool(self.weighted), float(self.bandwidth), self.normalisation)
        return apply_node(
            MMCENode, logits, target, lam, options, self._reference, self.reduction
        )


class LabelSmoothingLoss(CalibrationLoss):
    """Cross-entropy against smoothed targets ``(1 - α)·e_y + α/K``.

    Per sample, ``-Σ_k ((1 - α)·e_y,k + α/K) · log p_k``: PyTorch's own
    ``cross_entropy(label_smoothing=α)``, which it calls for evaluation and
    second derivatives; on the training path (logits with a gradient) one
    fused node computes the same values, and its closed-form gradient
    ``p - (1 - α)·e_y - α/K``. The class puts label smoothing in the
    registry with a validated, routable ``alpha``.

    Parameters
    ----------
    alpha : float, default=0.05
        Smoothing α in [0, 1] (0.05 in the papers' baselines).
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import LabelSmoothingLoss
    >>> logits = torch.log(torch.tensor([[0.5, 0.5]]))
    >>> round(LabelSmoothingLoss(alpha=0.1)(logits, torch.tensor([0])).item(), 6)
    0.693147
    """

    name = "label_smoothing"
    _fixed_node = True
    rowwise = True
    _repr_params = ("alpha", "reduction")

    def __init__(self, alpha=0.05, reduction="mean"):
        super().__init__()
        self.alpha = alpha
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.alpha, "alpha", low=0.0, high=1.0)
        check_reduction(self.reduction)

    def _per_sample(self, logits, target):
        return F.cross_entropy(
            logits, target, reduction="none", label_smoothing=float(self.alpha)
        )

    def _fused(self, logits, target):
        alpha = float(self.alpha)
        if alpha == 0.0:
            return F.cross_entropy(logits, target, reduction=self.reduction)
        return apply_node(
            LabelSmoothingNode,
            logits,
            target,
            alpha,
            self._reference,
            self.reduction,
        )
