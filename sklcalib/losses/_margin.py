"""The regularised cross-entropies that came after focal loss: margin-based label
smoothing (MbLS) and the multi-class difference in confidence and accuracy
(MDCA)."""

import torch
import torch.nn.functional as F

from sklcalib._utils._validation import check_option
from sklcalib.losses._autograd import (
    MarginNode,
    MDCANode,
    apply_node,
    class_fractions,
    focal_term,
    log_softmax,
    mdca_batches,
    mdca_value,
)
from sklcalib.losses._base import (
    CalibrationLoss,
    check_real,
    check_reduction,
    target_logp,
)
from sklcalib.losses._focal import fast_focal

_CLASS_REDUCTIONS = ("mean", "sum")


class MbLSLoss(CalibrationLoss):
    """Margin-based label smoothing (Liu et al. 2022).

    Cross-entropy plus a linear penalty on the logit distances larger than a
    margin. Per sample, with ``d_j = max_k z_k - z_j`` the distance of logit j to the
    largest logit (0 for the largest itself)::

        -log p_t + α · Σ_j max(0, d_j - m)

    The penalty sums over the K classes, the largest one included (its term
    is ``max(0, -m) = 0``), as the paper writes it. The authors' code
    averages over the classes instead (``F.relu(diff - margin).mean()`` over
    the (N, K) distances: a mean over the classes and over the batch), which
    ``class_reduction="mean"`` selects: the same penalty with α divided by K.
    To reproduce the authors' published runs (``margin=10``, ``alpha=0.1``
    with their code), pass ``class_reduction="mean"``. Label smoothing pulls
    every logit distance towards 0; MbLS only penalises distances above the
    margin, so that confident, correct predictions stay possible.

    Parameters
    ----------
    margin : float, default=10.0
        Margin m >= 0 on the logit distances; distances below it cost nothing.
    alpha : float, default=0.1
        Weight α >= 0 of the margin penalty; 0 is cross-entropy.
    class_reduction : {"sum", "mean"}, default="sum"
        How the per-class penalties of a sample are combined: their sum (the
        paper's formula) or their mean over the K classes (the authors'
        code).
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-sample losses are combined: their mean (skorch's
        convention), their sum, or the (N,) vector. The authors' code takes
        the mean over the batch, as the default does.

    See Also
    --------
    LabelSmoothingLoss : Cross-entropy against smoothed targets.
    MDCALoss : Cross-entropy plus a batch calibration penalty.

    Notes
    -----
    Call with ``logits`` of shape (N, K) (raw scores; the probabilities are
    ``softmax(logits)``, computed through ``log_softmax``) and integer
    ``target`` of shape (N,) with values in ``[0, K)``. The gradient of the
    maximum goes to one largest logit (torch's ``max``), as in the authors'
    code; the loss is not differentiable where two logits tie for the
    largest or where a distance equals the margin.

    References
    ----------
    Liu, B., Ben Ayed, I., Galdran, A. and Dolz, J. (2022). The devil is in the
    margins: margin-based label smoothing for network calibration. CVPR.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import MbLSLoss
    >>> logits = torch.tensor([[12.0, 0.0, 1.0]])
    >>> # distances to the largest logit: 0, 12, 11; above the margin 10: 2 and 1
    >>> ce = torch.nn.functional.cross_entropy(logits, torch.tensor([0]))
    >>> loss = MbLSLoss(margin=10.0, alpha=0.1)(logits, torch.tensor([0]))
    >>> round((loss - ce).item(), 6)  # 0.1 * (0 + 2 + 1)
    0.3
    """

    name = "mbls"
    _fixed_node = True
    rowwise = True
    _repr_params = ("margin", "alpha", "class_reduction", "reduction")

    def __init__(self, margin=10.0, alpha=0.1, class_reduction="sum", reduction="mean"):
        super().__init__()
        self.margin = margin
        self.alpha = alpha
        self.class_reduction = class_reduction
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.margin, "margin", low=0.0)
        check_real(self.alpha, "alpha", low=0.0)
        check_option(self.class_reduction, "class_reduction", _CLASS_REDUCTIONS)
        check_reduction(self.reduction)

    def _per_sample(self, logits, target):
        _, logp_t = target_logp(logits, target)
        alpha = float(self.alpha)
        if alpha == 0.0:
            return -logp_t
        # max(0, (max_k z_k - m) - z_j): the margin taken from the largest
        # logit once per row
        top = logits.max(dim=1, keepdim=True).values
        penalty = torch.relu((top - float(self.margin)) - logits)
        if self.class_reduction == "mean":
            penalty = penalty.mean(dim=1)
        else:
            penalty = penalty.sum(dim=1)
        return alpha * penalty - logp_t

    def _fused(self, logits, target):
        alpha = float(self.alpha)
        if alpha == 0.0:
            return F.cross_entropy(logits, target, reduction=self.reduction)
        return apply_node(
            MarginNode,
            logits,
            target,
            float(self.margin),
            alpha,
            self.class_reduction == "mean",
            self._reference,
            self.reduction,
        )


def mdca(logits, target):
    """Multi-class difference in confidence and accuracy of a batch (MDCA).

    ``(1/K) Σ_c |mean_i p_ic - mean_i [y_i = c]|``: for every class, the gap
    between the batch's mean softmax probability of the class and the
    fraction of the batch that belongs to it, averaged over the K classes
    (Hebbalaguppe et al. 2022). Differentiable in the logits (the gradient of
    ``|x|`` at 0 is taken as 0).

    Parameters
    ----------
    logits : torch.Tensor of shape (N, K)
        Raw scores; the probabilities are ``softmax(logits)``.
    target : torch.Tensor of shape (N,)
        Integer class indices in ``[0, K)``.

    Returns
    -------
    mdca : torch.Tensor
        A scalar in [0, 2/K].

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import mdca
    >>> logits = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]]))
    >>> # mean probabilities (.35, .3, .35) against class fractions (.5, .5, 0)
    >>> round(mdca(logits, torch.tensor([0, 1])).item(), 6)  # (.15 + .2 + .35) / 3
    0.233333
    """
    proba = log_softmax(logits).exp()
    return mdca_value(proba, class_fractions(target, logits.shape[1], proba.dtype))[0]


class MDCALoss(CalibrationLoss):
    """Cross-entropy (or focal loss) plus β · MDCA (Hebbalaguppe et al. 2022).

    MDCA, the multi-class difference in confidence and accuracy, is a batch
    term: ``(1/K) Σ_c |mean_i p_ic - mean_i [y_i = c]|``, the gap between the
    batch's mean softmax probability of each class and the fraction of the
    batch in that class, averaged over the classes (see :func:`mdca`). Per
    sample, ``-(1 - p_t)^γ · log p_t + β · MDCA(batch)``: the base loss is
    cross-entropy for ``gamma=0`` (the authors' ``NLL+MDCA``) and focal loss
    otherwise (their ``FL+MDCA``, which their README trains with γ = 1,
    β = 1). Their ``LS+MDCA`` variant (label smoothing as the base loss) is
    not provided.

    The batch term is shared by every sample, so ``reduction="mean"`` gives
    ``mean base loss + β·MDCA``, the authors' form, and ``"sum"`` gives
    ``sum base loss + N·β·MDCA``. MDCA depends on the batch: its value and
    its gradient change with the batch size (the authors train with batches
    of 128).

    Parameters
    ----------
    beta : float, default=1.0
        Weight β >= 0 of the MDCA term (the authors' examples use 1; their
        command line's default is 10); 0 is the base loss alone.
    gamma : float, default=0.0
        Focusing parameter γ >= 0 of the base loss; 0 is cross-entropy.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-sample losses are combined: their mean (skorch's
        convention), their sum, or the (N,) vector. The authors' code takes
        the mean, as the default does.

    See Also
    --------
    MbLSLoss : Cross-entropy plus a margin penalty on the logits.
    MMCELoss : Cross-entropy plus a kernel calibration penalty.

    Notes
    -----
    Call with ``logits`` of shape (N, K) (raw scores; the probabilities are
    ``softmax(logits)``, computed through ``log_softmax``) and integer
    ``target`` of shape (N,) with values in ``[0, K)``.

    References
    ----------
    Hebbalaguppe, R., Prakash, J., Madan, N. and Arora, C. (2022). A stitch in
    time saves nine: a train-time regularizing loss for improved neural
    network calibration. CVPR.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.losses import MDCALoss
    >>> logits = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]]))
    >>> target = torch.tensor([0, 1])
    >>> ce = torch.nn.functional.cross_entropy(logits, target)
    >>> round((MDCALoss(beta=1.0)(logits, target) - ce).item(), 6)
    0.233333
    """

    name = "mdca"
    _fixed_node = True
    _repr_params = ("beta", "gamma", "reduction")

    def __init__(self, beta=1.0, gamma=0.0, reduction="mean"):
        super().__init__()
        self.beta = beta
        self.gamma = gamma
        self.reduction = reduction
        self._check_params()

    def _check_params(self):
        check_real(self.beta, "beta", low=0.0)
        check_real(self.gamma, "gamma", low=0.0)
        check_reduction(self.reduction)

    def _per_sample(self, logits, target):
        _, logp_t = target_logp(logits, target)
        gamma = float(self.gamma)
        base = -logp_t if gamma == 0.0 else focal_term(logp_t, gamma)
        beta = float(self.beta)
        if beta == 0.0:
            return base
        return base + beta * mdca(logits, target)

    batched = True

    def _batches(self, logits, target, size):
        logp, logp_t = target_logp(logits, target)
        gamma = float(self.gamma)
        base = -logp_t if gamma == 0.0 else focal_term(logp_t, gamma)
        rows = base.reshape(-1, size)
        loss = rows.mean(1) if self.reduction == "mean" else rows.sum(1)
        beta = float(self.beta)
        if beta == 0.0:
            return loss
        if self.reduction == "sum":
            beta *= size
        return loss.add_(mdca_batches(logp.exp(), target, size), alpha=beta)

    def _fused(self, logits, target):
        gamma, beta = float(self.gamma), float(self.beta)
        if beta == 0.0:
            return fast_focal(self, logits, target, gamma)
        return apply_node(
            MDCANode, logits, target, gamma, beta, self._reference, self.reduction
        )
