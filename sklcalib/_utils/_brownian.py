"""Limit laws of the cumulative calibration statistics: the range of a
standard Brownian motion on [0, 1] (Kuiper) and the maximum of its absolute
value (Kolmogorov–Smirnov), as survival functions accurate in both tails.

Each law has two series (Feller 1951 for the range; Darling & Siegert 1953
for the maximum absolute value). The theta-function series of the CDF
converges fast for small ``x`` but gives the p-value as ``1 - CDF``, which
loses every digit below about 1e-16; the reflection series of the survival
function converges fast for large ``x`` and keeps its relative precision
down to the smallest float. Each ``x`` takes the series that converges there
(both are accurate to about 1e-15 at the switch point, checked in the tests).

- range ``R``: ``P(R <= x) = sum_{k>=0} (8/x^2 + 2/((k+1/2)^2 pi^2))
  exp(-2 (k+1/2)^2 pi^2 / x^2)`` and
  ``P(R > x) = 8 sum_{k>=1} (-1)^(k-1) k Phi_c(k x)``;
- maximum absolute value ``M``: ``P(M <= x) = (2/pi) sum_{k>=0} (-1)^k
  / (k+1/2) exp(-(k+1/2)^2 pi^2 / (2 x^2))`` and
  ``P(M > x) = 4 sum_{k>=0} (-1)^k Phi_c((2k+1) x)``.
"""

import numpy as np
from scipy.special import ndtr

# below this the theta series (1 - CDF), above it the reflection series
_SWITCH = 1.5
_TERMS = 40  # either series is exhausted (terms below 1e-300) within 40 terms


def _theta_range_cdf(x):
    k = np.arange(_TERMS)[:, None] + 0.5
    coef = 8.0 / x**2 + 2.0 / (k**2 * np.pi**2)
    return np.sum(coef * np.exp(-2.0 * k**2 * np.pi**2 / x**2), axis=0)


def _reflection_range_sf(x):
    k = np.arange(1, _TERMS + 1)[:, None]
    sign = np.where(k % 2 == 1, 1.0, -1.0)
    return 8.0 * np.sum(sign * k * ndtr(-k * x), axis=0)


def _theta_max_abs_cdf(x):
    k = np.arange(_TERMS)[:, None] + 0.5
    sign = np.where(np.arange(_TERMS)[:, None] % 2 == 0, 1.0, -1.0)
    terms = sign / k * np.exp(-(k**2) * np.pi**2 / (2.0 * x**2))
    return 2.0 / np.pi * np.sum(terms, axis=0)


def _reflection_max_abs_sf(x):
    k = np.arange(_TERMS)[:, None]
    sign = np.where(k % 2 == 0, 1.0, -1.0)
    return 4.0 * np.sum(sign * ndtr(-(2 * k + 1) * x), axis=0)


def _survival(x, theta_cdf, reflection_sf):
    x = np.asarray(x, dtype=np.float64)
    flat = np.atleast_1d(x).ravel()
    # below 0.1 both CDFs are under 1e-200 (and 1/x^2 could overflow)
    out = np.ones_like(flat)
    small = (flat >= 0.1) & (flat < _SWITCH)
    large = flat >= _SWITCH  # +inf included: the series gives 0
    if np.any(small):
        out[small] = 1.0 - theta_cdf(flat[small])
    if np.any(large):
        out[large] = reflection_sf(flat[large])
    out = np.clip(out, 0.0, 1.0)
    return out.reshape(x.shape) if x.ndim else float(out[0])


def brownian_range_sf(x):
    """``P(R > x)`` for the range ``R = max B - min B`` of a standard
    Brownian motion on [0, 1]: the p-value of a Kuiper statistic in units of
    its standard deviation. Scalar in, float out; arrays elementwise."""
    return _survival(x, _theta_range_cdf, _reflection_range_sf)


def brownian_max_abs_sf(x):
    """``P(M > x)`` for ``M = max |B|`` of a standard Brownian motion on
    [0, 1]: the p-value of a Kolmogorov–Smirnov statistic in units of its
    standard deviation. Scalar in, float out; arrays elementwise."""
    return _survival(x, _theta_max_abs_cdf, _reflection_max_abs_sf)


def brownian_sf(x, statistic):
    """The survival function of ``statistic`` (``"kuiper"`` or ``"ks"``)."""
    if statistic == "kuiper":
        return brownian_range_sf(x)
    return brownian_max_abs_sf(x)
