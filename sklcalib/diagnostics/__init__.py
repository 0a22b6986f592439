"""Diagnostics for the theory behind focal-type losses.

Closed forms from the papers sklcalib is built from, and curvature estimates of a
fitted network's training loss:

- :func:`focal_gradient_ratio` -- g(p, γ), the ratio of the focal-loss gradient to
  the cross-entropy gradient (Mukhoti et al. 2020, Proposition 1);
- :func:`gamma_for_threshold` -- γ*(p0), the smallest positive γ with g(p, γ) ≤ 1
  for all p ≥ p0, by the Lambert W function (Mukhoti et al. 2020, Proposition 2);
- :func:`dual_focal_phi` and :func:`dual_focal_regions` -- the function φ of the
  instance-wise conditional risk of dual focal loss and the over/under-confidence
  regions it delimits (Tao et al. 2023, Section 4, Lemma 1, Figure 1);
- :func:`hessian_trace` (Hutchinson's estimator) and :func:`top_hessian_eigenvalue`
  (power iteration), both on Hessian-vector products of the training loss of a
  fitted skorch net, for the curvature claim of Kimura & Naganuma (focal loss
  lowers the curvature of the loss surface);
- :class:`CurvatureLogger`, a skorch callback recording the Hessian trace during
  training.

The closed forms need only numpy and scipy; the curvature functions need torch
and skorch (the ``torch`` extra) and are imported on first use.
"""

from importlib import import_module

from ._theory import (
    DualFocalRegions,
    dual_focal_phi,
    dual_focal_regions,
    focal_gradient_ratio,
    gamma_for_threshold,
)

__all__ = [
    "CurvatureLogger",
    "DualFocalRegions",
    "dual_focal_phi",
    "dual_focal_regions",
    "focal_gradient_ratio",
    "gamma_for_threshold",
    "hessian_trace",
    "top_hessian_eigenvalue",
]

_CURVATURE = ("CurvatureLogger", "hessian_trace", "top_hessian_eigenvalue")


def __getattr__(name):
    # torch and skorch load only when a curvature name is first used
    if name in _CURVATURE:
        value = getattr(import_module("sklcalib.diagnostics._curvature"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sklcalib.diagnostics' has no attribute {name!r}")


def __dir__():
    return __all__
