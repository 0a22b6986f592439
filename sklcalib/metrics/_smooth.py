"""Smooth ECE (smECE) of Błasiok & Nakkiran, "Smooth ECE: Principled Reliability
Diagrams via Kernel Smoothing" (2023).

This is the algorithm of ``relplot.smECE`` 1.0.3 (Apple's sample-code licence), written
again here because relplot is a reference for the tests, not a runtime
dependency, and because it lacks sample weights. Steps, as in relplot:

1. the residuals ``r = f - y`` and the unit masses are spread linearly onto a
   regular grid of ``M`` points of [0, 1];
2. both are convolved with a Gaussian of width ``sigma`` reflected at 0 and 1;
3. the smoothed residual (divided by the smoothed density + 1e-4) is read at
   ``max(200, round(10 / sigma))`` points by linear interpolation, and
   ``smECE(sigma) = sum |r_s| dens / sum dens`` over these points;
4. ``sigma`` is the fixed point ``smECE(sigma) = sigma`` found by ten steps of
   bisection on [0, 1], ``sigma < eps`` counting as small enough.

The only departure: convolutions use ``scipy.signal.fftconvolve`` rather than
``numpy.convolve`` (direct, O(M^2), M up to ~10^4); the results agree to
~1e-12.
"""

import numpy as np
from scipy.signal import fftconvolve

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._validation import reject_dask

from ._calibration_error import top_label_inputs

_MESH_POINTS = 200  # relplot.config.smECE_mesh_pts
_DENSITY_EPS = 1e-4  # relplot's BaseKernelMixin.smooth eps


def _round_to_grid(f, values, n_points):
    """Spread ``values`` at ``f`` linearly onto ``n_points`` grid points."""
    pos = f * (n_points - 1)
    idx = pos.astype(np.intp).clip(0, n_points - 2)
    frac = pos - idx
    out = np.bincount(idx, weights=(1.0 - frac) * values, minlength=n_points)
    out += np.bincount(idx + 1, weights=frac * values, minlength=n_points)
    return out


def _reflected_gaussian(values, sigma):
    """Convolve grid ``values`` with a Gaussian reflected at both ends."""
    n_points = values.shape[0]
    t = np.linspace(0.0, 1.0, n_points)
    kernel = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma**2))
    kernel /= np.sqrt(2 * np.pi) * sigma
    extended = np.concatenate([values[::-1][:-1], values, values[::-1][1:]])
    valid = fftconvolve(extended, kernel, mode="valid")
    return valid[n_points // 2 : n_points // 2 + n_points]


def _interpolate(t, y):
    n = y.shape[0]
    step = 1.0 / (n - 1)
    idx = (t * (n - 1)).astype(np.intp).clip(0, n - 2)
    frac = (t - idx * step) / step
    return y[idx] * (1 - frac) + y[idx + 1] * frac


def smooth_ece_at(f, y, sigma, weights=None):
    """smECE at a fixed bandwidth ``sigma`` (relplot's ``smECE_sigma``).

    ``weights`` are normalised to mean 1 so that unit weights reproduce relplot.
    """
    f = np.asarray(f, dtype=np.float64)
    residual = f - np.asarray(y, dtype=np.float64)
    if weights is None:
        mass = np.ones_like(f)
    else:
        mass = weights * (f.shape[0] / weights.sum())
    n_eval = max(round(10 / sigma), _MESH_POINTS)
    t = np.linspace(0.0, 1.0, n_eval)
    n_grid = max(2000, round(20 / sigma)) // 2 + 1
    smoothed_r = _reflected_gaussian(_round_to_grid(f, residual * mass, n_grid), sigma)
    smoothed_d = _reflected_gaussian(_round_to_grid(f, mass, n_grid), sigma)
    dens = _interpolate(t, smoothed_d) + _DENSITY_EPS
    rs = _interpolate(t, smoothed_r) / dens
    return float(np.sum(np.abs(rs) * dens) / np.sum(dens))


def smooth_ece_fixed_point(f, y, weights=None, eps=0.001):
    """Return ``(smECE, sigma)`` with the bandwidth chosen as relplot does."""

    def small_enough(alpha):
        return alpha < eps or alpha < smooth_ece_at(f, y, alpha, weights)

    if small_enough(1.0):
        sigma = 1.0
    else:
        hi, lo = 1.0, 0.0
        for _ in range(10):
            mid = (hi + lo) / 2
            if small_enough(mid):
                lo = mid
            else:
                hi = mid
        sigma = hi
    return smooth_ece_at(f, y, sigma, weights), sigma


@fill_doc
def smooth_calibration_error(
    y_true, y_prob, *, labels=None, sample_weight=None, return_bandwidth=False
):
    """Smooth ECE (smECE) of the top-label confidence, Błasiok & Nakkiran (2023).

    Kernel-smoothed calibration error with a reflected Gaussian kernel whose
    bandwidth is the fixed point ``smECE(sigma) = sigma``. It needs no bins and
    equals ``relplot.smECE(confidence, correct)`` of relplot 1.0.3.

    Parameters
    ----------
    y_true, y_prob : array-like
        The labels and the predicted probabilities of
        :func:`~sklcalib.metrics.expected_calibration_error`: their top-label
        confidence and correctness are what is smoothed.
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights (an extension: relplot has none; unit weights give
        relplot's value).
    return_bandwidth : bool, default=False
        Also return the bandwidth ``sigma``.

    Returns
    -------
    smece : float
        In [0, 1]; lower is better.
    sigma : float
        The bandwidth, only if ``return_bandwidth`` is True.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import smooth_calibration_error
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> round(smooth_calibration_error([0, 1, 1, 1], y_prob), 4)
    0.1377
    """
    reject_dask(
        "the smooth ECE smooths over all (confidence, correctness) pairs at once",
        "Use expected_calibration_error(strategy='uniform') or "
        "CalibrationAccumulator, which stream, or compute the smooth ECE on an "
        "in-memory sample (y_prob[idx].compute()).",
        y_prob=y_prob,
        y_true=y_true,
        sample_weight=sample_weight,
    )
    conf, correct, w, _, _ = top_label_inputs(y_true, y_prob, labels, sample_weight)
    value, sigma = smooth_ece_fixed_point(conf, correct, w)
    return (value, sigma) if return_bandwidth else value
