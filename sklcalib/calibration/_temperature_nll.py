"""The NLL of temperature-scaled logits and its exact minimum in T.

Temperature scaling, and the first step of SMS, SVS and ensemble temperature
scaling, minimise the NLL of ``softmax(z / T)``; it is convex in the inverse
temperature ``beta = 1 / T``, whose first three derivatives have closed forms
(moments of the logits under the scaled softmax). :func:`fit_temperature_nll`
finds the minimum with the shared bracketed Halley/Newton iteration
(:func:`sklcalib._utils._solvers.bracketed_newton`); large inputs use the
compiled one-pass kernel of ``_temperature_fused`` (numba, the "fast" extra).

This module holds no calibrator: it is the numerics the temperature-based
calibrators share.
"""

import numpy as np

from sklcalib._utils._optional import extra_imports, is_installed
from sklcalib._utils._solvers import bracketed_newton

#: Range of the fitted temperature. An NLL that keeps decreasing as T -> 0
#: (perfectly separable scores) or T -> inf (scores that carry no
#: information) stops at these bounds instead of running off to 0 or inf.
TEMPERATURE_BOUNDS = (1e-4, 1e4)


def _nll_derivatives(shifted, shifted_true, beta, buffer, weights=None):
    """NLL of softmax(beta * z) and its first three derivatives in beta.

    Means are weighted by ``weights`` (normalised to sum 1) when given.

    ``shifted`` is z minus its row maximum (softmax is shift invariant and
    ``exp(beta * shifted) <= 1`` cannot overflow), ``shifted_true`` its entry
    at the true class, ``buffer`` a scratch array of the same shape (reused so
    that a fit allocates no further (n, K) arrays).

    With p = softmax(beta z): NLL = mean(logsumexp(beta z) - beta z_y),
    dNLL/dbeta = mean(E_p[z] - z_y), d2NLL/dbeta2 = mean(Var_p[z]) >= 0, and
    the third derivative is the mean third central moment of z under p.
    """
    np.multiply(shifted, beta, out=buffer)
    np.exp(buffer, out=buffer)
    s0 = buffer.sum(axis=1)  # >= 1: the row maximum contributes exp(0)
    buffer *= shifted
    s1 = buffer.sum(axis=1)
    buffer *= shifted
    s2 = buffer.sum(axis=1)
    s3 = np.einsum("ij,ij->i", buffer, shifted)
    mean = s1 / s0
    second = s2 / s0

    def average(values):
        return np.mean(values) if weights is None else np.dot(weights, values)

    nll = average(np.log(s0) - beta * shifted_true)
    grad = average(mean - shifted_true)
    # the cube as products: every mean is <= 0, and numpy's power of a
    # negative base takes libm's scalar pow (a hundred times slower)
    mean_sq = mean * mean
    hess = average(np.maximum(second - mean_sq, 0.0))
    third = average(s3 / s0 - 3 * mean * second + 2 * mean_sq * mean)
    return nll, grad, hess, third


#: Logit matrices with at least this many entries use the compiled kernels.
FUSED_MIN_SIZE = 1_000_000
#: Rows of the subsample whose optimum starts Newton on large inputs.
SUBSAMPLE_ROWS = 5_000


def _numpy_derivatives(logits, y_idx, weights=None):
    """beta -> (nll, grad, hess), numpy reference (two (n, K) scratch arrays)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    shifted_true = shifted[np.arange(len(y_idx)), y_idx]
    buffer = np.empty_like(shifted)
    if weights is not None:
        weights = weights / weights.sum()
    return lambda beta: _nll_derivatives(shifted, shifted_true, beta, buffer, weights)


def _fused_derivatives(logits, y_idx):
    """beta -> (nll, grad, hess, third), compiled one-pass kernel."""
    # imports numba (the "fast" extra): large inputs only
    with extra_imports("the compiled temperature kernel"):
        from . import _temperature_fused as fused

    logits = np.ascontiguousarray(logits, dtype=np.float64)
    y_idx = np.ascontiguousarray(y_idx, dtype=np.int64)
    return lambda beta: fused.nll_derivatives(logits, y_idx, beta)


def _fused_by_default(logits):
    # without numba (the "fast" extra) the numpy path serves every size
    return logits.size >= FUSED_MIN_SIZE and is_installed("numba")


def nll_derivatives(logits, y_idx, *, fused=None, sample_weight=None):
    """A function beta -> the NLL of softmax(beta z) and three derivatives.

    ``fused=None`` picks the compiled kernels for inputs of at least
    ``FUSED_MIN_SIZE`` entries and numpy otherwise; weighted fits always use
    numpy (the compiled kernel has no weights).
    """
    if sample_weight is not None:
        return _numpy_derivatives(logits, y_idx, sample_weight)
    if fused is None:
        fused = _fused_by_default(logits)
    return (_fused_derivatives if fused else _numpy_derivatives)(logits, y_idx)


def fit_temperature_nll(
    logits,
    y_idx,
    *,
    bounds=TEMPERATURE_BOUNDS,
    max_iter=100,
    fused=None,
    sample_weight=None,
    return_nll=False,
):
    """The temperature minimising the NLL of ``softmax(logits / T)``.

    The NLL is convex in the inverse temperature beta = 1/T, so safeguarded
    Halley/Newton steps on beta (closed-form derivatives, float64, stable
    log-sum-exp) find the minimum exactly. On large inputs the steps start
    from the optimum of a subsample of rows, so that about two passes over
    the full logits remain.

    Parameters
    ----------
    logits : ndarray of shape (n_samples, n_classes)
        Float64 logits.
    y_idx : ndarray of shape (n_samples,)
        Integer index of the true class.
    bounds : tuple of float, default=TEMPERATURE_BOUNDS
        Range of T; the result lies in it.
    max_iter : int, default=100
        Maximum number of Halley, Newton or bisection steps.
    fused : bool or None, default=None
        Use the compiled kernels (True), numpy (False), or decide by size.
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        Weights of the weighted mean NLL (numpy path).
    return_nll : bool, default=False
        Also return the mean NLL of the logits as given (T = 1) and at the
        last temperature the solver evaluated (within 1e-5 relative of the
        fitted one, so above the minimum by about the squared step), both
        from the solver's own passes (one more only when the steps did not
        start at T = 1).

    Returns
    -------
    temperature : float
    nll : tuple of float
        ``(nll at T = 1, nll at the fit)``, with ``return_nll`` only.
    """
    lo, hi = 1.0 / bounds[1], 1.0 / bounds[0]
    beta = 1.0
    n = len(y_idx)
    if fused is None:  # decided once, so the subsample uses the same kernel
        fused = _fused_by_default(logits)
    if n >= 4 * SUBSAMPLE_ROWS:
        rows = slice(None, None, n // SUBSAMPLE_ROWS)
        sub = np.ascontiguousarray(logits[rows])
        sub_weight = None if sample_weight is None else sample_weight[rows]
        if sub_weight is None or sub_weight.sum() > 0:
            start = nll_derivatives(
                sub, y_idx[rows], fused=fused, sample_weight=sub_weight
            )
            beta = bracketed_newton(start, beta, lo, hi, max_iter)
    derivatives = nll_derivatives(
        logits, y_idx, fused=fused, sample_weight=sample_weight
    )
    passes = []  # (beta, NLL) of the solver's passes, in order

    def recorded(beta):
        values = derivatives(beta)
        passes.append((beta, values[0]))
        return values

    beta = bracketed_newton(recorded, beta, lo, hi, max_iter)
    temperature = 1.0 / min(max(beta, lo), hi)
    if not return_nll:
        return temperature
    # a further pass only where the solver made none there
    at_one = dict(passes).get(1.0)
    if at_one is None:
        at_one = derivatives(1.0)[0]
    fitted = passes[-1][1] if passes else derivatives(1.0 / temperature)[0]
    return temperature, (float(at_one), float(fitted))
