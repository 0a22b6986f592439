"""Diagnostics for the theory behind focal-type losses.

Closed forms from the papers sklcalib is built from, and curvature estimates of a
fitted network's training loss:

- :func:`focal_gradient_ratio` -- g(p, γ), the ratio of the focal-loss gradient to
  the cross-entropy gradient (Mukhoti et al. 2020, Proposition 1);
- :func:`gamma_for_threshold` -- γ*(p0), the smallest γ with g(p, γ) ≤ 1 for all
  p ≥ p0, by the Lambert W function (Mukhoti et al. 2020, Proposition 2);
- :func:`dual_focal_phi` and :func:`dual_focal_regions` -- the function φ of the
  instance-wise conditional risk of dual focal loss and the over/under-confidence
  regions it delimits (Tao et al. 2023, Section 4, Lemma 1, Figure 1);
- :func:`hessian_trace` (Hutchinson's estimator) and :func:`top_hessian_eigenvalue`
  (power iteration), both on Hessian-vector products of the training loss of a
  fitted skorch net, for the curvature claim of Kimura & Naganuma (focal loss
  lowers the curvature of the loss surface);
- :class:`CurvatureLogger`, a skorch callback recording the Hessian trace during
  training.

torch and skorch are imported here at module level: this submodule is only loaded
on demand (``import sklcalib`` stays light).
"""

import math
import numbers
import warnings
from typing import NamedTuple

import numpy as np
import torch
from scipy.optimize import brentq
from scipy.special import lambertw, xlogy
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from skorch.callbacks import Callback

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


# ---------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------


def _as_float_array(value, name, low, high, *, low_open=False, high_open=False):
    """Float64 array of ``value``, checked to lie in the interval [low, high]."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {value!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    too_low = arr <= low if low_open else arr < low
    too_high = arr >= high if high_open else arr > high
    if np.any(too_low | too_high):
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lo}{low}, {high}{hi}, got {value!r}")
    return arr


def _scalar_or_array(arr):
    return float(arr) if arr.ndim == 0 else arr


def _focal_factor(v, C, gamma):
    """w^γ - γ·w^(γ-1)·v·log v with w = 1 - v + C, accurate at the edges.

    Written as w^γ·(1 - γ·v·log(v)/w). w^γ is exp(γ·log1p(C - v)): 1 - v rounds
    to 1 for v < 1e-16, which would lose all of (1 - v)^γ for the huge γ that
    tiny thresholds need. v·log(v)/w has the limit -1 where w = 0 (only at v = 1
    with no dual term), so φ tends to 0 there for γ > 0, and is 1 everywhere for
    γ = 0.
    """
    v, C, gamma = np.broadcast_arrays(v, C, gamma)
    w = 1.0 - v + C
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(w > 0, xlogy(v, v) / np.where(w > 0, w, 1.0), -1.0)
        # log1p near w = 1, log near w = 0 (where C - v would lose a tiny C)
        log_w = np.where(w < 0.5, np.log(w), np.log1p(C - v))  # -inf at w = 0
        w_pow = np.where(gamma == 0, 1.0, np.exp(gamma * log_w))
    return w_pow * (1.0 - gamma * ratio)


def focal_gradient_ratio(p, gamma):
    """Ratio of the focal-loss to the cross-entropy gradient, g(p, γ).

    Proposition 1 of Mukhoti et al. (2020): the gradient of focal loss with respect
    to the last-layer weights equals the cross-entropy gradient times

        g(p, γ) = (1 - p)^γ - γ·p·(1 - p)^(γ-1)·log p,

    where p is the probability of the true class. Focal loss shrinks the gradient
    (regularises the weights) where g < 1 and enlarges it where g > 1.

    Parameters
    ----------
    p : float or array-like
        Probability of the true class, in [0, 1].
    gamma : float or array-like
        Focal parameter γ ≥ 0; broadcast against ``p``.

    Returns
    -------
    g : float or ndarray
        g(p, γ), with its limits at the edges: g(0, γ) = 1, g(1, γ) = 0 for
        γ > 0, and g ≡ 1 for γ = 0 (cross-entropy).

    Examples
    --------
    >>> from sklcalib.diagnostics import focal_gradient_ratio
    >>> round(focal_gradient_ratio(0.2, 5.0), 4)  # < 1: gradient shrunk
    0.9869
    >>> focal_gradient_ratio([0.0, 1.0], 3.0)
    array([1., 0.])
    """
    p = _as_float_array(p, "p", 0.0, 1.0)
    gamma = _as_float_array(gamma, "gamma", 0.0, np.inf)
    return _scalar_or_array(_focal_factor(p, 0.0, gamma))


# -(-1/e rounded towards 0): scipy's lambertw returns NaN at float(-1/e) itself
_MINUS_BRANCH_POINT = -np.nextafter(-np.exp(-1.0), 0.0)


def gamma_for_threshold(p0):
    """γ*(p0): the smallest γ with g(p, γ) ≤ 1 for every p ≥ p0.

    Proposition 2 of Mukhoti et al. (2020). With a = 1 - p0 and b = p0·log p0,
    g(p0, γ) = 1 reads a^(γ-1)·(a - γb) = 1. Substituting u = (γ - a/b)·log a
    turns it into u·e^u = -a^(1 - a/b)·log(a)/b, so

        γ* = a/b + W₋₁(-a^(1 - a/b)·log(a)/b) / log a,

    with W₋₁ the lower branch of the Lambert W function. The equation always has
    the trivial root γ = 0 (g(p, 0) ≡ 1) on one branch; for p0 < 0.5 it lies on the
    principal branch and W₋₁ gives the positive root, for p0 > 0.5 the roles swap
    and W₋₁ gives γ = 0 (every γ ≥ 0 already has g(p, γ) ≤ 1 for p ≥ p0 > 0.5), and
    at p0 = 0.5 both meet at the branch point -1/e. So the formula holds on all of
    (0, 1): γ* > 0 exactly for p0 < 0.5, γ*(p0) → ∞ as p0 → 0, and always
    g(p0, γ*) = 1, g(p, γ*) > 1 for p < p0, g(p, γ*) < 1 for p > p0.

    Parameters
    ----------
    p0 : float or array-like
        Threshold probability in the open interval (0, 1).

    Returns
    -------
    gamma : float or ndarray
        γ*(p0) ≥ 0.

    Examples
    --------
    >>> from sklcalib.diagnostics import focal_gradient_ratio, gamma_for_threshold
    >>> g = gamma_for_threshold(0.2)
    >>> round(g, 3)  # the paper rounds it to 5 (FLSD-53)
    4.851
    >>> round(focal_gradient_ratio(0.2, g), 12)
    1.0
    >>> gamma_for_threshold(0.7)
    0.0
    """
    p0 = _as_float_array(p0, "p0", 0.0, 1.0, low_open=True, high_open=True)
    a = 1.0 - p0
    log_a = np.log1p(-p0)
    b = p0 * np.log(p0)
    # a/b overflows only for subnormal p0 (< 2.2e-308), where γ* ≈ 4/p0 is
    # itself beyond the float range: those give inf below
    with np.errstate(over="ignore", invalid="ignore"):
        a_over_b = a / b
        # log of |argument|, in log space so that a^(1 - a/b) cannot underflow
        log_minus_arg = (1.0 - a_over_b) * log_a + np.log(log_a / b)
        # rounding can push the argument a hair below the branch point -1/e
        arg = -np.minimum(np.exp(log_minus_arg), _MINUS_BRANCH_POINT)
        w = lambertw(np.nan_to_num(arg), k=-1).real
        gamma = a_over_b + w / log_a
    gamma = np.where(np.isfinite(gamma), gamma, np.inf)
    # for p0 >= 0.5 the exact answer is 0; rounding leaves ~1e-12 of either sign
    gamma = np.where(p0 >= 0.5, 0.0, np.maximum(gamma, 0.0))
    return _scalar_or_array(gamma)


def dual_focal_phi(v, C, gamma):
    """φ of the instance-wise conditional risk of dual focal loss.

    Section 4 of Tao et al. (2023). For the class i ≠ j of the risk minimiser q*,
    with v = q*_i and C = q*_j the largest probability below the ground truth
    (the "dual" term, held fixed),

        φ(v) = (1 - v + C)^γ - γ·(1 - v + C)^(γ-1)·v·log v,

    and the class-posterior is η_i ∝ q*_i / φ(q*_i). With ``C = 0`` this is focal
    loss's φ, which equals :func:`focal_gradient_ratio`. Lemma 1: φ(0) = (1 + C)^γ,
    φ(1) = C^γ, φ increases on [0, v^m) and decreases on (v^m, 1]. (For i = j,
    φ ≡ 1.)

    Parameters
    ----------
    v : float or array-like
        Probability, in [0, 1].
    C : float or array-like
        The dual probability, in [0, 1).
    gamma : float or array-like
        γ ≥ 0. All three arguments broadcast.

    Returns
    -------
    phi : float or ndarray

    Examples
    --------
    >>> from sklcalib.diagnostics import dual_focal_phi
    >>> dual_focal_phi([0.0, 1.0], 0.3, 2.0)  # (1 + C)^γ and C^γ
    array([1.69, 0.09])
    """
    v = _as_float_array(v, "v", 0.0, 1.0)
    C = _as_float_array(C, "C", 0.0, 1.0, high_open=True)
    gamma = _as_float_array(gamma, "gamma", 0.0, np.inf)
    return _scalar_or_array(_focal_factor(v, C, gamma))


class DualFocalRegions(NamedTuple):
    """Landmarks of φ (Figure 1 of Tao et al. 2023); see :func:`dual_focal_regions`."""

    v_max: float
    """v^m, where φ peaks: the η-over-confident region is (0, v^m]."""
    v_prime: float
    """v' in (v^m, 1) with φ(v') = φ(0) = (1 + C)^γ: where the under-confident
    region would start if φ's minimum over (0, v'] were the bound (as in focal
    loss, where C = 0 and v' = v_uc)."""
    v_uc: float
    """v^uc in (v^m, 1) with φ(v^uc) = 1 = φ(v_j): the η-under-confident region of
    dual focal loss is [v^uc, 1)."""

    @property
    def overconfident(self):
        """The η-over-confident interval (0, v^m]."""
        return (0.0, self.v_max)

    @property
    def underconfident(self):
        """The η-under-confident interval [v^uc, 1)."""
        return (self.v_uc, 1.0)


def dual_focal_regions(C, gamma):
    """Over- and under-confidence regions of focal and dual focal loss.

    Section 4.2 of Tao et al. (2023): the risk minimiser is η-over-confident on
    (0, v^m], where v^m is the maximum of :func:`dual_focal_phi`, and
    η-under-confident on [v^uc, 1), where φ(v^uc) = 1. For focal loss (C = 0),
    φ(0) = 1, so v^uc = v', the point where φ comes back down to φ(0); with a dual
    term C > 0, φ(0) = (1 + C)^γ > 1 and the under-confident region shrinks by
    v^uc - v' = φ⁻¹(1) - φ⁻¹((1 + C)^γ). For C = 0, v^uc is the threshold p0 of
    :func:`gamma_for_threshold` whose γ* is ``gamma``.

    Parameters
    ----------
    C : float
        The dual probability, in [0, 1); 0 gives focal loss.
    gamma : float
        γ > 0 (for γ = 0, φ ≡ 1 and there are no regions).

    Returns
    -------
    regions : DualFocalRegions
        Named tuple ``(v_max, v_prime, v_uc)`` with the properties
        ``overconfident`` and ``underconfident``.

    Examples
    --------
    >>> from sklcalib.diagnostics import dual_focal_regions
    >>> focal = dual_focal_regions(0.0, 1.0)
    >>> dual = dual_focal_regions(0.3, 1.0)  # the setting of Figure 1
    >>> focal.v_prime == focal.v_uc
    True
    >>> dual.v_uc > focal.v_uc  # smaller under-confident region
    True
    """
    C = float(_as_float_array(C, "C", 0.0, 1.0, high_open=True))
    gamma = float(_as_float_array(gamma, "gamma", 0.0, np.inf, low_open=True))
    one_c = 1.0 + C

    # φ' has the sign of s(v) = 2(v - 1 - C) + γ v log v - (1 + C) log v (proof of
    # Lemma 1): s is convex, s(0+) = +inf, s(1) = -2C <= 0 and s'(1) > 0, so s
    # dips below 0 at its minimiser and v^m is the root of s left of it.
    def s(v):
        return 2.0 * (v - one_c) + gamma * v * math.log(v) - one_c * math.log(v)

    def ds(v):
        return 2.0 + gamma * math.log(v) + gamma - one_c / v

    tiny = 1e-300
    v_min_s = brentq(ds, tiny, 1.0, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    v_max = brentq(s, tiny, v_min_s, xtol=1e-15, rtol=4 * np.finfo(float).eps)

    def phi(v):
        return float(_focal_factor(np.float64(v), C, gamma))

    # φ decreases strictly from φ(v^m) > (1 + C)^γ >= 1 to φ(1) = C^γ < 1
    kw = {"xtol": 1e-15, "rtol": 4 * np.finfo(float).eps}
    v_prime = brentq(lambda v: phi(v) - one_c**gamma, v_max, 1.0, **kw)
    v_uc = brentq(lambda v: phi(v) - 1.0, v_max, 1.0, **kw) if C > 0 else v_prime
    return DualFocalRegions(v_max=v_max, v_prime=v_prime, v_uc=v_uc)


# ---------------------------------------------------------------------------
# curvature of a fitted net's training loss
# ---------------------------------------------------------------------------


def _check_positive_int(value, name, minimum=1):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < minimum
    ):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _full_batch(net, dataset):
    """The whole ``dataset`` as one batch, collated as the net's iterators do.

    Full batch because the training loss need not be a mean of per-batch losses
    (MMCE is a kernel over pairs of samples).
    """
    kwargs = net.get_params_for("iterator_valid")
    kwargs["batch_size"] = len(dataset)
    kwargs["shuffle"] = False
    iterator = net.iterator_valid
    if isinstance(iterator, type) and issubclass(iterator, torch.utils.data.DataLoader):
        # a DataLoader draws a base seed from torch's global generator even when
        # it does not shuffle: a local one keeps a CurvatureLogger from changing
        # the training it observes (dropout masks, shuffling)
        kwargs.setdefault("generator", torch.Generator())
    return next(iter(iterator(dataset, **kwargs)))


def _dataset_from_arrays(net, X, y):
    """A skorch dataset of (X, y) with y encoded as the net's criterion expects."""
    net.check_is_fitted(["module_", "criterion_"])
    if hasattr(X, "to_numpy") and not isinstance(X, dict):
        X = X.to_numpy()
    if isinstance(X, np.ndarray) or isinstance(X, list):
        X = np.asarray(X)
        if X.dtype.kind in "fiub":
            # the dtype of the parameters: float64 input -> float32 for the usual
            # float32 module, as NetClassifier does at fit
            param = next(iter(net.module_.parameters()), None)
            dtype = torch.float32 if param is None else param.dtype
            X = X.astype(torch.empty(0, dtype=dtype).numpy().dtype, copy=False)
        if X.dtype.kind == "f" and not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinity")
    if y is None:
        raise ValueError("y is required: the Hessian is that of the training loss")
    y = np.asarray(y)
    n_X = len(X) if not isinstance(X, dict) else len(next(iter(X.values())))
    if n_X == 0:
        raise ValueError("X is empty")
    if len(y) != n_X:
        raise ValueError(f"X and y have different lengths: {n_X} and {len(y)}")
    encoder = getattr(net, "label_encoder_", None)
    if encoder is not None:
        unknown = ~np.isin(y, encoder.classes_)
        if unknown.any():
            raise ValueError(
                f"y contains labels not in the net's classes_: {np.unique(y[unknown])}"
            )
        y = encoder.transform(y)
    return net.get_dataset(X, y)


class _HessianOperator:
    """Hessian-vector products of a net's loss on one batch, w.r.t. its parameters.

    The gradient graph is built once (double backward) and reused by every product.
    Use as a context manager: the module and criterion are put in eval mode (no
    dropout, frozen batch-norm statistics) and restored on exit.
    """

    def __init__(self, net, Xi, yi):
        self.net = net
        self.Xi = Xi
        self.yi = yi

    def __enter__(self):
        mods = [m for m in (self.net.module_, self.net.criterion_)]
        mods = [m for m in mods if isinstance(m, torch.nn.Module)]
        self._modes = [(sub, sub.training) for m in mods for sub in m.modules()]
        for m in mods:
            m.eval()
        try:
            self.params = [p for p in self.net.module_.parameters() if p.requires_grad]
            if not self.params:
                raise ValueError("the net's module_ has no trainable parameters")
            self.dtype = self.params[0].dtype
            self.device = self.params[0].device
            self.n_params = sum(p.numel() for p in self.params)
            with torch.enable_grad():
                y_pred = self.net.infer(self.Xi)
                loss = self.net.get_loss(y_pred, self.yi, X=self.Xi, training=False)
                if loss.ndim != 0:
                    raise ValueError(
                        "the criterion must return a scalar loss (reduction 'mean' "
                        f"or 'sum'), got shape {tuple(loss.shape)}"
                    )
                self.loss = loss.detach()
                self.grads = torch.autograd.grad(
                    loss, self.params, create_graph=True, allow_unused=True
                )
        except BaseException:
            self._restore()
            raise
        return self

    def __exit__(self, *exc):
        self.grads = None  # free the graph
        self._restore()
        return False

    def _restore(self):
        for sub, mode in self._modes:
            sub.training = mode

    def matvec(self, vec):
        """H @ vec for a flat vector ``vec`` of length ``n_params``."""
        vec = torch.as_tensor(vec, dtype=self.dtype, device=self.device)
        return self.matmat(vec[None, :], batched=False)[0]

    def matmat(self, vecs, batched=True):
        """H @ v for each row v of ``vecs``, shape (k, n_params).

        With ``batched`` the k products run as one vectorised double backward
        (``is_grads_batched``, i.e. vmap), an order of magnitude faster for small
        nets than k backward passes; operations vmap does not support fall back to
        the loop.
        """
        vecs = torch.as_tensor(vecs, dtype=self.dtype, device=self.device)
        k = vecs.shape[0]
        chunks = torch.split(vecs, [p.numel() for p in self.params], dim=1)
        live = [
            i
            for i, g in enumerate(self.grads)
            if g is not None and g.requires_grad  # else that block of H is 0
        ]
        out = [
            torch.zeros((k, *p.shape), dtype=self.dtype, device=self.device)
            for p in self.params
        ]
        if live:
            outputs = [self.grads[i] for i in live]
            if batched and k > 1:
                try:
                    hv = torch.autograd.grad(
                        outputs,
                        self.params,
                        grad_outputs=[
                            chunks[i].reshape(k, *self.params[i].shape) for i in live
                        ],
                        retain_graph=True,
                        allow_unused=True,
                        is_grads_batched=True,
                    )
                    for i, h in enumerate(hv):
                        if h is not None:
                            out[i] = h
                    return torch.cat([o.reshape(k, -1) for o in out], dim=1).detach()
                except RuntimeError:
                    pass  # an operation without a batching rule: loop instead
            for row in range(k):
                hv = torch.autograd.grad(
                    outputs,
                    self.params,
                    grad_outputs=[chunks[i][row].view_as(self.params[i]) for i in live],
                    retain_graph=True,
                    allow_unused=True,
                )
                for i, h in enumerate(hv):
                    if h is not None:
                        out[i][row] = h
        return torch.cat([o.reshape(k, -1) for o in out], dim=1).detach()


def _operator_for(net, X, y):
    Xi, yi = _full_batch(net, _dataset_from_arrays(net, X, y))
    return _HessianOperator(net, Xi, yi)


# Rademacher probes per vectorised batch of Hessian-vector products: bounds the
# memory of the batched double backward to that many copies of the graph
_PROBE_BATCH = 32


def _hutchinson(op, n_samples, rng):
    """Per-probe quadratic forms zᵀHz with Rademacher z, summed in float64."""
    quads = []
    for start in range(0, n_samples, _PROBE_BATCH):
        k = min(_PROBE_BATCH, n_samples - start)
        Z = rng.randint(0, 2, size=(k, op.n_params)).astype(np.float64) * 2.0 - 1.0
        HZ = op.matmat(Z).double().cpu().numpy()
        quads.append(np.einsum("ij,ij->i", Z, HZ))
    return np.concatenate(quads)


def hessian_trace(net, X, y, n_samples=100, random_state=None, return_std=False):
    """Hutchinson estimate of the trace of the Hessian of a net's training loss.

    The Hessian is that of the loss the net trains on, ``net.get_loss`` of
    ``net.infer(X)`` against ``y`` (i.e. ``net.criterion_`` on the logits, with the
    criterion's own reduction, ``"mean"`` by default), on all of ``(X, y)`` as one
    batch, with respect to the trainable parameters of ``net.module_``. Hutchinson's
    estimator averages zᵀHz over Rademacher vectors z (entries ±1), which is
    unbiased for tr(H) with the smallest variance among i.i.d. probes; each Hzᵢ is
    a Hessian-vector product by double backward. The module is put in eval mode
    (dropout off) during the computation and restored afterwards.

    The trace is the sum of the curvatures along all parameter directions; Kimura &
    Naganuma relate a lower curvature of the loss surface to better calibration,
    and show that focal loss lowers it.

    Parameters
    ----------
    net : fitted skorch net
        A :class:`~sklcalib.NetClassifier` or any fitted skorch ``NeuralNet`` with
        ``module_`` and ``criterion_``.
    X : array-like of shape (n_samples, n_features)
        Inputs (usually the training set).
    y : array-like of shape (n_samples,)
        Labels as passed to ``fit`` (encoded with the net's ``label_encoder_`` if
        it has one).
    n_samples : int, default=100
        Number of Rademacher probes.
    random_state : int, RandomState instance or None, default=None
        Seeds the probes.
    return_std : bool, default=False
        Also return the standard error of the estimate (sample standard
        deviation of zᵀHz over √n_samples; needs ``n_samples >= 2``).

    Returns
    -------
    trace : float
        Estimate of tr(H).
    std_error : float
        Its standard error, only if ``return_std=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from skorch import NeuralNetClassifier
    >>> import torch
    >>> from sklcalib.diagnostics import hessian_trace
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> X = X.astype(np.float32)
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = NeuralNetClassifier(
    ...     torch.nn.Linear(4, 2), criterion=torch.nn.CrossEntropyLoss,
    ...     max_epochs=5, lr=0.1, train_split=None, verbose=0,
    ... ).fit(X, y)
    >>> trace, se = hessian_trace(net, X, y, n_samples=50, random_state=0,
    ...                           return_std=True)
    >>> bool(trace > 0 and se < trace)
    True
    """
    n_samples = _check_positive_int(n_samples, "n_samples", 2 if return_std else 1)
    rng = check_random_state(random_state)
    with _operator_for(net, X, y) as op:
        quads = _hutchinson(op, n_samples, rng)
    trace = float(quads.mean())
    if return_std:
        return trace, float(quads.std(ddof=1) / math.sqrt(n_samples))
    return trace


def _power_iteration(op, n_iter, tol, rng, shift=0.0):
    """Dominant eigenvalue of H - shift·I by power iteration, and convergence."""
    v = rng.standard_normal(op.n_params)
    v /= np.linalg.norm(v)
    eig = np.nan
    for _ in range(n_iter):
        hv = op.matvec(v).double().cpu().numpy() - shift * v
        new = float(np.dot(v, hv))  # Rayleigh quotient, |v| = 1
        norm = float(np.linalg.norm(hv))
        if norm == 0.0:  # v lies in the null space: H - shift is 0 there
            return 0.0, True
        v = hv / norm
        if abs(new - eig) <= tol * max(abs(new), np.finfo(float).tiny):
            return new, True
        eig = new
    return eig, False


def _largest_eigenvalue(op, n_iter, tol, rng):
    """Largest algebraic eigenvalue of ``op``: power iteration, shifted if needed."""
    eig, converged = _power_iteration(op, n_iter, tol, rng)
    if converged and eig < 0:
        # the dominant eigenvalue is negative; H - eig·I is positive semi-definite
        # and its dominant eigenvalue is λ_max - eig
        shifted, converged = _power_iteration(op, n_iter, tol, rng, shift=eig)
        eig = shifted + eig
    return eig, converged


def top_hessian_eigenvalue(net, X, y, n_iter=100, tol=1e-6, random_state=None):
    """Largest eigenvalue of the Hessian of a net's training loss.

    Power iteration on Hessian-vector products (see :func:`hessian_trace` for the
    loss, the data and the parameters). Power iteration converges to the
    eigenvalue of largest *magnitude*; away from a minimum that can be a negative
    one. In that case a second power iteration runs on H - λI (λ the negative
    eigenvalue found), whose dominant eigenvalue is λ_max - λ, so the returned
    value is always the largest (algebraic) eigenvalue λ_max, the "sharpness" of
    the loss surface.

    Parameters
    ----------
    net : fitted skorch net
        A :class:`~sklcalib.NetClassifier` or any fitted skorch ``NeuralNet`` with
        ``module_`` and ``criterion_``.
    X : array-like of shape (n_samples, n_features)
        Inputs (usually the training set).
    y : array-like of shape (n_samples,)
        Labels as passed to ``fit``.
    n_iter : int, default=100
        Maximum number of Hessian-vector products per power iteration.
    tol : float, default=1e-6
        Stop when the relative change of the Rayleigh quotient is below ``tol``.
        A :class:`~sklearn.exceptions.ConvergenceWarning` is raised if it is not
        reached within ``n_iter`` products.
    random_state : int, RandomState instance or None, default=None
        Seeds the starting vector.

    Returns
    -------
    eigenvalue : float
        Estimate of the largest eigenvalue of H.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from skorch import NeuralNetClassifier
    >>> import torch
    >>> from sklcalib.diagnostics import hessian_trace, top_hessian_eigenvalue
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> X = X.astype(np.float32)
    >>> _ = torch.manual_seed(0)
    >>> net = NeuralNetClassifier(
    ...     torch.nn.Linear(4, 2), criterion=torch.nn.CrossEntropyLoss,
    ...     max_epochs=5, lr=0.1, train_split=None, verbose=0,
    ... ).fit(X, y)
    >>> lam = top_hessian_eigenvalue(net, X, y, random_state=0)
    >>> bool(0 < lam <= hessian_trace(net, X, y, n_samples=200, random_state=0))
    True
    """
    n_iter = _check_positive_int(n_iter, "n_iter")
    if not isinstance(tol, numbers.Real) or not tol > 0 or not math.isfinite(tol):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    rng = check_random_state(random_state)
    with _operator_for(net, X, y) as op:
        eig, converged = _largest_eigenvalue(op, n_iter, tol, rng)
    if not converged:
        warnings.warn(
            f"power iteration did not reach tol={tol} in n_iter={n_iter} "
            "Hessian-vector products; increase n_iter",
            ConvergenceWarning,
            stacklevel=2,
        )
    return float(eig)


# ---------------------------------------------------------------------------
# callback
# ---------------------------------------------------------------------------


class CurvatureLogger(Callback):
    """Record the Hessian trace of the training loss every few epochs.

    At the end of every ``every``-th epoch (and the first), Hutchinson's estimate of
    the trace of the Hessian of the loss (see :func:`hessian_trace`) on the
    training or validation split is written to the net's history under
    ``"hessian_trace"`` (and its standard error under ``"hessian_trace_std"``).
    Epochs in between get no entry. Each estimate costs ``n_samples``
    Hessian-vector products on the whole split.

    Parameters
    ----------
    every : int, default=10
        Log at epochs 1, 1 + every, 1 + 2·every, ... (1-based, as skorch counts).
    n_samples : int, default=20
        Rademacher probes per estimate.
    on : {"train", "valid"}, default="train"
        Which split to use; ``"valid"`` needs a ``train_split``.
    random_state : int, RandomState instance or None, default=0
        Seeds the probes. An int uses the same probes at every logged epoch, so
        that the logged values are comparable across epochs; a RandomState
        instance or None (NumPy's global state) draws fresh probes each time.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn.datasets import make_classification
    >>> from skorch import NeuralNetClassifier
    >>> from sklcalib.diagnostics import CurvatureLogger
    >>> X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    >>> net = NeuralNetClassifier(
    ...     torch.nn.Linear(4, 2), criterion=torch.nn.CrossEntropyLoss,
    ...     max_epochs=3, train_split=None, verbose=0,
    ...     callbacks=[CurvatureLogger(every=2, n_samples=5)],
    ... ).fit(X.astype(np.float32), y)
    >>> [ "hessian_trace" in row for row in net.history]
    [True, False, True]
    """

    def __init__(self, every=10, n_samples=20, on="train", random_state=0):
        self.every = every
        self.n_samples = n_samples
        self.on = on
        self.random_state = random_state

    def initialize(self):
        _check_positive_int(self.every, "every")
        _check_positive_int(self.n_samples, "n_samples", 2)
        if self.on not in ("train", "valid"):
            raise ValueError(f"on must be 'train' or 'valid', got {self.on!r}")
        return self

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        epoch = len(net.history)
        if (epoch - 1) % self.every:
            return
        dataset = dataset_train if self.on == "train" else dataset_valid
        if dataset is None:
            raise ValueError(
                f"CurvatureLogger(on={self.on!r}) got no {self.on} data; "
                "on='valid' needs a train_split"
            )
        # a fresh generator from the same seed: the same probes every epoch
        rng = check_random_state(
            self.random_state
            if not isinstance(self.random_state, np.random.RandomState)
            else self.random_state.randint(np.iinfo(np.int32).max)
        )
        Xi, yi = _full_batch(net, dataset)
        with _HessianOperator(net, Xi, yi) as op:
            quads = _hutchinson(op, self.n_samples, rng)
        net.history.record("hessian_trace", float(quads.mean()))
        net.history.record(
            "hessian_trace_std",
            float(quads.std(ddof=1) / math.sqrt(self.n_samples)),
        )
