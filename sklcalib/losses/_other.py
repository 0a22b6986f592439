"""Baselines of the papers: Brier score, MMCE, label smoothing."""

import torch
import torch.nn.functional as F

from sklcalib.losses._autograd import FocalSpec
from sklcalib.losses._base import (
    INPUT_DOC,
    REDUCTION_DOC,
    CalibrationLoss,
    check_real,
    check_reduction,
)
from sklcalib.losses._focal import squared_error


class BrierLoss(CalibrationLoss):
    __doc__ = f"""Brier score as a training loss.

    Per sample, ``Σ_k (p_k - e_y,k)²``, the squared Euclidean distance between the
    softmax vector and the one-hot target (no 1/K).

    Parameters
    ----------
    {REDUCTION_DOC}

    Notes
    -----
    {INPUT_DOC}

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import BrierLoss
    >>> logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    >>> round(BrierLoss()(logits, torch.tensor([0])).item(), 6)
    0.38
    """

    name = "brier"

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction
        self._check_params()

    def _per_sample(self, logits, target):
        return squared_error(torch.log_softmax(logits, dim=1), target)

    def _fused_spec(self):
        return FocalSpec(None, self._per_sample, lam=1.0)


class _SafeSqrt(torch.autograd.Function):
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


def mmce(logits, target, *, weighted=True, bandwidth=0.4):
    """Maximum mean calibration error (Kumar et al. 2018) of a batch, with gradient.

    r_i is the top-1 confidence (with gradient), c_i = [argmax = y_i] (without), and
    ``k(r, r') = exp(-|r - r'| / bandwidth)`` the Laplacian kernel. Unweighted::

        MMCE² = Σ_ij (c_i - r_i)(c_j - r_j) k(r_i, r_j) / N².

    Weighted (MMCE_w of Kumar et al.), with m_c correct and m_w wrong samples::

        MMCE_w² = Σ_{i,j correct} (1-r_i)(1-r_j) k / m_c²
                  + Σ_{i,j wrong} r_i r_j k / m_w²
                  - 2 Σ_{i correct, j wrong} (1-r_i) r_j k / (m_c m_w);

    both are ``wᵀ K w`` for a weight vector w; a group with no member contributes 0.
    Returns the square root (the MMCE itself); its gradient is 0 where MMCE = 0.
    O(N²) time and memory in the batch size.

    Parameters
    ----------
    logits : torch.Tensor of shape (N, K)
    target : torch.Tensor of shape (N,)
        Integer class indices.
    weighted : bool, default=True
        MMCE_w (True) or the unweighted MMCE.
    bandwidth : float, default=0.4
        Width of the Laplacian kernel.

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
    """
    logp = torch.log_softmax(logits, dim=1)
    log_conf, pred = logp.max(1)
    conf = log_conf.exp()
    correct = pred == target
    n = logits.shape[0]
    dtype = conf.dtype
    if weighted:
        m_c = correct.sum().to(dtype)
        m_w = (~correct).sum().to(dtype)
        scale = torch.where(correct, 1.0 / m_c.clamp_min(1), -1.0 / m_w.clamp_min(1))
    else:
        scale = torch.where(correct, 1.0, -1.0).to(dtype) / n
    # correct: (1 - r) / m ; wrong: -r / m
    w = torch.where(correct, 1.0 - conf, conf) * scale
    kernel = torch.exp(-torch.abs(conf.unsqueeze(1) - conf.unsqueeze(0)) / bandwidth)
    return _SafeSqrt.apply(w @ kernel @ w)


class MMCELoss(CalibrationLoss):
    __doc__ = f"""Cross-entropy plus λ · MMCE (Kumar et al. 2018), the MMCE baseline.

    MMCE (maximum mean calibration error) is a kernel estimate of calibration
    error on the top-1 confidence r and correctness c of the batch, with the
    Laplacian kernel ``exp(-|r_i - r_j| / bandwidth)``:
    ``MMCE² = Σ_ij (c_i - r_i)(c_j - r_j) k(r_i, r_j) / N²`` (the squared RKHS norm
    of the kernel mean embedding of (c - r)); ``weighted=True`` uses MMCE_w, which
    normalises the correct and the wrong samples separately (Kumar et al.'s MMCE_w);
    see :func:`mmce`. The loss is the square root, MMCE, as in the paper; its
    gradient is set to 0 where MMCE = 0 instead of 1/0.

    Note: the unweighted MMCE of Mukhoti et al.'s code omits the square root
    (it adds the kernel mean embedding MMCE² itself); their weighted version takes
    the root but divides the pair sums twice (by the number of pairs and again by
    m²). sklcalib follows the paper.

    Per sample, ``-log p_t + λ · MMCE(batch)``: the batch term is shared by every
    sample, so ``"mean"`` gives ``mean CE + λ·MMCE`` and ``"sum"`` gives
    ``sum CE + N·λ·MMCE``.

    Parameters
    ----------
    lam : float, default=2.0
        Weight λ >= 0 of the MMCE term.
    weighted : bool, default=True
        Use MMCE_w (correct and wrong samples normalised separately).
    bandwidth : float, default=0.4
        Width of the Laplacian kernel, > 0.
    {REDUCTION_DOC}

    Notes
    -----
    {INPUT_DOC} Time and memory are O(N²) in the batch size.

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
    _repr_params = ("lam", "weighted", "bandwidth", "reduction")

    def __init__(self, lam=2.0, weighted=True, bandwidth=0.4, reduction="mean"):
        super().__init__()
        self.lam = lam
        self.weighted = weighted
        self.bandwidth = bandwidth
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.lam, "lam", low=0.0)
        if not isinstance(self.weighted, bool):
            raise ValueError(f"weighted must be True or False, got {self.weighted!r}.")
        check_real(self.bandwidth, "bandwidth", low=0.0, low_open=True)
        check_reduction(self.reduction)

    def _per_sample(self, logits, target):
        ce = F.cross_entropy(logits, target, reduction="none")
        lam = float(self.lam)
        if lam == 0.0:
            return ce
        term = mmce(
            logits, target, weighted=self.weighted, bandwidth=float(self.bandwidth)
        )
        return ce + lam * term


class LabelSmoothingLoss(CalibrationLoss):
    __doc__ = f"""Cross-entropy against smoothed targets ``(1 - α)·e_y + α/K``.

    Per sample, ``-Σ_k ((1 - α)·e_y,k + α/K) · log p_k``. This is PyTorch's own
    ``cross_entropy(label_smoothing=α)``, which it calls; the class exists to put
    label smoothing in the registry with a validated, routable ``alpha``.

    Parameters
    ----------
    alpha : float, default=0.05
        Smoothing α in [0, 1] (0.05 in the papers' baselines).
    {REDUCTION_DOC}

    Notes
    -----
    {INPUT_DOC}

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import LabelSmoothingLoss
    >>> logits = torch.log(torch.tensor([[0.5, 0.5]]))
    >>> round(LabelSmoothingLoss(alpha=0.1)(logits, torch.tensor([0])).item(), 6)
    0.693147
    """

    name = "label_smoothing"
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
