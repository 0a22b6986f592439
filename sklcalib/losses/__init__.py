"""Calibration losses as PyTorch criteria.

Every criterion takes raw logits of shape (N, K) and integer targets of shape
(N,), computes probabilities through ``log_softmax`` (never ``log(softmax +
eps)``), and returns the ``"mean"`` (default, skorch's convention), ``"sum"``
or ``"none"`` (per-sample) reduction; each docstring says which one the authors'
code uses where it was checked.
Loss and gradients stay finite for float32 logits in [-1e4, 1e4].

When the logits require grad, the focal family (focal, FLSD, dual focal with
``dual="max"``, FCL, inverse focal, AdaFocal, AdaDualFocal) and Brier run through one
fused autograd node whose backward gives the logits' gradient in closed form
(about the cost of cross-entropy; ``benchmarks/bench_losses.py``); second
derivatives (``create_graph=True``) differentiate the composed implementation,
which is also what runs when no gradient is needed. With the ``fast`` extra
(numba), these nodes and those of MbLS, MDCA and MMCE compute small CPU
batches in one compiled kernel each (values and gradients equal to rounding;
:func:`torch_kernels` turns it off).

Hyper-parameters are plain public attributes with the constructor's names, so
that skorch routes ``criterion__gamma``, ``criterion__lam``, ... and
``set_params`` works; they are validated at construction and at every call
(``ValueError`` naming the argument).

=========================== ===================== ===============================
class                       registry name         per-sample loss
=========================== ===================== ===============================
FocalLoss                   ``"focal"``           -(1-p_t)^γ log p_t
SampleDependentFocalLoss    ``"flsd53"``          focal, γ from p_t (FLSD)
DualFocalLoss               ``"dual_focal"``      -(1-p_t+p_j)^γ log p_t
FocalCalibrationLoss        ``"fcl"``             focal + λ Σ_k (p_k - e_y,k)²
InverseFocalLoss            ``"inverse_focal"``   -(1+p_t)^γ log p_t
BrierLoss                   ``"brier"``           Σ_k (p_k - e_y,k)²
MMCELoss                    ``"mmce"``            -log p_t + λ MMCE(batch)
LabelSmoothingLoss          ``"label_smoothing"`` CE against (1-α)e_y + α/K
MbLSLoss                    ``"mbls"``            CE + α mean_j max(0, max z - z_j - m)
MDCALoss                    ``"mdca"``            CE (or focal) + β MDCA(batch)
AdaFocalLoss                ``"adafocal"``        focal / inverse focal, γ per bin
AdaDualFocalLoss            ``"adadualfocal"``    dual focal, γ >= 0 per bin
torch.nn.CrossEntropyLoss   ``"ce"``              -log p_t
=========================== ===================== ===============================
"""

from sklcalib._utils._optional import extra_imports

with extra_imports("sklcalib.losses"):
    import torch

from sklcalib.losses._adaptive import (
    AdaDualFocalLoss,
    AdaFocalLoss,
    adafocal_step,
)
from sklcalib.losses._base import CalibrationLoss
from sklcalib.losses._dispatch import torch_kernels
from sklcalib.losses._focal import (
    DualFocalLoss,
    FocalCalibrationLoss,
    FocalLoss,
    InverseFocalLoss,
    SampleDependentFocalLoss,
    dual_probability,
)
from sklcalib.losses._margin import MbLSLoss, MDCALoss, mdca
from sklcalib.losses._other import BrierLoss, LabelSmoothingLoss, MMCELoss, mmce

__all__ = [
    "CRITERIA",
    "AdaDualFocalLoss",
    "AdaFocalLoss",
    "BrierLoss",
    "CalibrationLoss",
    "DualFocalLoss",
    "FocalCalibrationLoss",
    "FocalLoss",
    "InverseFocalLoss",
    "LabelSmoothingLoss",
    "MDCALoss",
    "MMCELoss",
    "MbLSLoss",
    "SampleDependentFocalLoss",
    "adafocal_step",
    "dual_probability",
    "get_criterion",
    "mdca",
    "mmce",
    "torch_kernels",
]

#: registry name -> criterion class
CRITERIA = {
    cls.name: cls
    for cls in (
        FocalLoss,
        SampleDependentFocalLoss,
        DualFocalLoss,
        FocalCalibrationLoss,
        InverseFocalLoss,
        BrierLoss,
        MMCELoss,
        LabelSmoothingLoss,
        AdaFocalLoss,
        AdaDualFocalLoss,
        MbLSLoss,
        MDCALoss,
    )
}
CRITERIA["ce"] = torch.nn.CrossEntropyLoss


def get_criterion(name):
    """The criterion class registered under ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`CRITERIA`: ``"focal"``, ``"flsd53"``, ``"dual_focal"``,
        ``"fcl"``, ``"inverse_focal"``, ``"brier"``, ``"mmce"``,
        ``"label_smoothing"``, ``"adafocal"``, ``"adadualfocal"``, ``"mbls"``,
        ``"mdca"``, or ``"ce"``
        (``torch.nn.CrossEntropyLoss``).

    Returns
    -------
    cls : type
        The class (not an instance): skorch instantiates it with the
        ``criterion__*`` parameters.

    Raises
    ------
    ValueError
        If ``name`` is not registered; the message lists the valid names.

    Examples
    --------
    >>> from sklcalib.losses import get_criterion
    >>> get_criterion("fcl").__name__
    'FocalCalibrationLoss'
    >>> get_criterion("ce")
    <class 'torch.nn.modules.loss.CrossEntropyLoss'>
    """
    try:
        return CRITERIA[name]
    except (KeyError, TypeError):
        valid = ", ".join(map(repr, sorted(CRITERIA)))
        raise ValueError(
            f"Unknown criterion name {name!r}; valid names: {valid}."
        ) from None
