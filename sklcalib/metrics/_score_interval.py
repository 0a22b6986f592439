"""Interval of a mean per-row score (NLL, Brier) whose every possible value
is known.

The population value is the expected score ``E[sum_k q_k(x) S_k(x)]``, with
``S_k`` the row's score if its label is ``k`` and ``q`` the true label
probabilities. The normal interval of the mean of the observed scores misses
under imbalance: at 2 % prevalence a test set of 100 rows holds no positive
13 % of the time, and the rows' scores then say nothing about the expensive
outcome that the population value weighs. But the score of every label is
known (``-log p_k``); only how often each label occurs is not. So the
interval inverts the test of the observed mean over a one-parameter family of
label laws running from the best to the worst the scores allow:

* ``lam`` in [-1, 0]: the model's own probabilities mixed with the best
  label of every row (its argmax), weight ``-lam``;
* ``lam`` in [0, 1]: mixed with the uniform law over the classes, weight
  ``lam`` (the expected score grows: the uniform law weighs the small
  probabilities more);
* ``lam`` in [1, 2]: the uniform law mixed with the worst label of every row.

Along it the expected score ``theta(lam)`` grows from the mean best score to
the mean worst; the observed mean is unbiased for it whatever the law, so
the family only has to give the law's spread and skew at each ``theta``. At
every ``lam`` the observed mean's law is the sum of the labels' noise (drawn
row by row with common random numbers on small sets, its first three
cumulants exactly with a Cornish-Fisher quantile on large ones) and of the
rows' own sampling, normal with the variance of the rows' expected scores.
The kept ``lam`` are those whose law puts the observed mean within its
central range; the interval runs over their ``theta``. With no positive in
100 rows the upper bound is where 100 rows show none with probability
``alpha / 2``: it covers the population value of a rare class the test set
does not show.
"""

import numpy as np
from scipy.special import ndtri

from sklcalib._utils._scores import as_columns, mean_standard_error

from ._bootstrap import ConfidenceInterval

#: simulated label draws on small sets (draws x rows at most _SIMULATED)
N_DRAWS = 1000
_SIMULATED = 1_000_000
#: ends of the family's three segments: best, model, uniform, worst
_SEGMENTS = (-1.0, 0.0, 1.0, 2.0)
#: below this skewness of the observed mean (at the model's own law) its
#: Cornish-Fisher quantiles are used instead of the simulation
_SKEWED = 0.25


def score_matrix(metric, p):
    """(n, K) score of every row for every label, float64: ``-log p_k``
    (clipped at the machine epsilon of the dtype, as the NLL is) or the
    Brier score ``sum_j p_j^2 - 2 p_k + 1``."""
    columns = as_columns(p)
    if metric == "nll":
        eps = np.finfo(columns.dtype).eps
        return -np.log(np.clip(columns, eps, 1.0).astype(np.float64))
    c = columns.astype(np.float64)
    return np.maximum(np.sum(c * c, axis=1, keepdims=True) - 2.0 * c + 1.0, 0.0)


class _Family:
    """The label laws of the family. Within a segment every row's raw
    moments of the score are linear in ``t`` (the position in the segment),
    so the observed mean's expectation, variance and third cumulant are
    polynomials in ``t`` whose coefficients are weighted sums over the rows,
    taken once per segment: a point of the family then costs O(1), not
    O(rows)."""

    def __init__(self, scores, probs, w):
        w = w / w.sum()
        self.w = w
        best = scores.min(axis=1)
        worst = scores.max(axis=1)
        model = [np.sum(probs * scores**r, axis=1) for r in (1, 2, 3)]
        uniform = [np.mean(scores**r, axis=1) for r in (1, 2, 3)]
        # raw moments at the four ends: best, model, uniform, worst
        ends = [
            [best**r for r in (1, 2, 3)],
            model,
            uniform,
            [worst**r for r in (1, 2, 3)],
        ]
        s2 = float(np.dot(w, w))
        # the rows' sampling: the unbiased weighted variance of their expected
        # scores times sum wn^2 (reliability weights); none for a single row
        self._rows_factor = s2 / (1.0 - s2) if s2 < 1.0 else 0.0
        w2, w3 = w * w, w**3
        self._coef = []
        for j in range(3):
            (a1, a2, a3), (b1, b2, b3) = ends[j], ends[j + 1]
            d1, d2, d3 = b1 - a1, b2 - a2, b3 - a3
            c_a, c_d = float(np.dot(w, a1)), float(np.dot(w, d1))
            e_a, e_d = a1 - c_a, d1 - c_d  # centred: no cancellation
            self._coef.append(
                (
                    (c_a, c_d),
                    # sum w^2 var_i(t), var_i = m2 - m1^2
                    tuple(
                        float(np.dot(w2, v))
                        for v in (a2 - a1 * a1, d2 - 2.0 * a1 * d1, -d1 * d1)
                    ),
                    # sum w^3 k3_i(t), k3_i = m3 - 3 m2 m1 + 2 m1^3
                    tuple(
                        float(np.dot(w3, v))
                        for v in (
                            a3 - 3.0 * a2 * a1 + 2.0 * a1**3,
                            d3 - 3.0 * (a2 * d1 + d2 * a1) + 6.0 * a1 * a1 * d1,
                            -3.0 * d2 * d1 + 6.0 * a1 * d1 * d1,
                            2.0 * d1**3,
                        )
                    ),
                    # sum w (m1 - theta)^2
                    tuple(
                        float(np.dot(w, v))
                        for v in (e_a * e_a, 2.0 * e_a * e_d, e_d * e_d)
                    ),
                )
            )

    def _segment(self, lam):
        j = int(np.clip(np.searchsorted(_SEGMENTS, lam, side="right") - 1, 0, 2))
        t = (lam - _SEGMENTS[j]) / (_SEGMENTS[j + 1] - _SEGMENTS[j])
        return self._coef[j], t

    def theta(self, lam):
        (mean, *_), t = self._segment(lam)
        return mean[0] + t * mean[1]

    def rows_var(self, lam):
        """Variance of the mean of the rows' expected scores at ``lam``."""
        (*_, spread), t = self._segment(lam)
        value = spread[0] + t * (spread[1] + t * spread[2])
        return max(value, 0.0) * self._rows_factor

    def law(self, lam):
        """Mean, variance and third cumulant of the observed mean at ``lam``
        (labels' noise and the rows' sampling)."""
        (mean, var, k3, _), t = self._segment(lam)
        labels_var = max(var[0] + t * (var[1] + t * var[2]), 0.0)
        third = k3[0] + t * (k3[1] + t * (k3[2] + t * k3[3]))
        return mean[0] + t * mean[1], labels_var + self.rows_var(lam), third


class _Simulated:
    """The observed mean's law along the family by drawing every row's label
    with common random numbers: in each draw a row has its label drawn from
    the model, one drawn uniformly and a switch uniform ``v``; at ``lam`` in
    [0, 1] it takes the uniform label when ``v < lam``, at ``lam`` in [-1, 0]
    its best label when ``v < -lam``, at ``lam`` in [1, 2] its worst label
    when ``v < lam - 1`` (the uniform one otherwise)."""

    def __init__(self, scores, probs, family, rng, n_draws):
        n, k = scores.shape
        self.family = family
        rows = np.arange(n)
        cum = np.cumsum(probs, axis=1)
        cum /= cum[:, -1:]
        u = rng.random((n_draws, n))
        # the model's label of every (draw, row): one sorted search for all
        keys = (rows[:, None] + cum).ravel()
        model = np.searchsorted(keys, (u + rows[None, :]).ravel(), side="right")
        model = np.minimum(model.reshape(n_draws, n) - rows[None, :] * k, k - 1)
        self.s_model = scores[rows[None, :], model]
        self.s_uniform = scores[rows[None, :], rng.integers(0, k, size=(n_draws, n))]
        self.s_best = scores.min(axis=1)
        self.s_worst = scores.max(axis=1)
        self.v = rng.random((n_draws, n))
        self.z = rng.standard_normal(n_draws)

    def draws(self, lam):
        """The observed mean at ``lam``, one value per draw."""
        if lam < 0:
            source, target, t = self.s_model, self.s_best, -lam
        elif lam <= 1:
            source, target, t = self.s_model, self.s_uniform, lam
        else:
            source, target, t = self.s_uniform, self.s_worst, lam - 1.0
        value = np.where(self.v < t, target, source) @ self.family.w
        return value + np.sqrt(self.family.rows_var(lam)) * self.z


def score_interval(metric, y_idx, p, w, estimate, confidence_level, rng):
    """:class:`ConfidenceInterval` of the expected NLL or Brier score."""
    alpha = 1.0 - confidence_level
    scores = score_matrix(metric, p)
    probs = as_columns(p).astype(np.float64)
    n = scores.shape[0]
    weights = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    keep = weights > 0
    scores, probs, weights, y_idx = (
        scores[keep],
        probs[keep],
        weights[keep],
        y_idx[keep],
    )
    n = scores.shape[0]
    observed_terms = scores[np.arange(n), y_idx]
    # the standard error of the observed mean (raises on fewer than two rows)
    se = mean_standard_error(observed_terms, weights)
    family = _Family(scores, probs, weights)
    observed = float(np.dot(family.w, observed_terms))
    _, var0, k3_0 = family.law(0.0)
    skew0 = abs(k3_0) / var0**1.5 if var0 > 0 else 0.0
    if n * N_DRAWS <= _SIMULATED and skew0 > _SKEWED:
        sim = _Simulated(scores, probs, family, rng, N_DRAWS)
        k = max(int(np.floor(alpha / 2.0 * (N_DRAWS + 1))), 1)

        def low_q(lam):
            return float(np.partition(sim.draws(lam), k - 1)[k - 1])

        def high_q(lam):
            return float(np.partition(sim.draws(lam), N_DRAWS - k)[N_DRAWS - k])
    else:
        z_lo, z_hi = float(ndtri(alpha / 2.0)), float(ndtri(1.0 - alpha / 2.0))

        def cornish_fisher(lam, z):
            mean, var, k3 = family.law(lam)
            sd = np.sqrt(var)
            skew = k3 / sd**3 if sd > 0 else 0.0
            return mean + sd * (z + skew / 6.0 * (z * z - 1.0))

        def low_q(lam):
            return cornish_fisher(lam, z_lo)

        def high_q(lam):
            return cornish_fisher(lam, z_hi)

    tol = 1e-12 * max(abs(observed), 1.0)
    # the family's point whose expected score is the observed one: both
    # bounds are searched outwards from it
    at = _bisect(lambda lam: family.theta(lam) <= observed, -1.0, 2.0, family.theta)
    # upper bound: the largest lam whose law puts alpha/2 at or below observed
    lam_hi = _boundary(lambda lam: low_q(lam) <= observed + tol, at, 2.0, family)
    # lower bound: the smallest lam whose law puts alpha/2 at or above observed
    lam_lo = _boundary(lambda lam: high_q(lam) >= observed - tol, at, -1.0, family)
    low, high = family.theta(lam_lo), family.theta(lam_hi)
    low, high = min(low, estimate), max(high, estimate)
    return ConfidenceInterval(estimate, float(low), float(high), se, np.empty(0))


def _boundary(keep, start, end, family):
    """The last point of ``keep`` going from ``start`` towards ``end``:
    doubling steps out to a bracket, then bisection (``start`` is taken as
    kept: the observed mean is its law's mean)."""
    step = 0.01 * (end - start)
    inside = start
    while True:
        probe = start + step
        if (probe - end) * (end - start) >= 0:  # at or past the end
            if keep(end):
                return end
            outside = end
            break
        if not keep(probe):
            outside = probe
            break
        inside = probe
        step *= 2.0
    lo, hi = min(inside, outside), max(inside, outside)
    if inside < outside:
        return _bisect(keep, lo, hi, family.theta)
    return _bisect(lambda lam: not keep(lam), lo, hi, family.theta)


def _bisect(keep, lo, hi, theta, rtol=2e-3):
    """The boundary of ``keep`` (True below it, False above) in [lo, hi], to
    a relative precision ``rtol`` of ``theta`` there."""
    for _ in range(60):
        t_lo, t_hi = theta(lo), theta(hi)
        if t_hi - t_lo <= rtol * max(abs(t_hi), 1e-6) or hi - lo < 1e-12:
            break
        mid = 0.5 * (lo + hi)
        if keep(mid):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
