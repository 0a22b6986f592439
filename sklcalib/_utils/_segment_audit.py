"""The segment audit on validated arrays: per-segment cumulative statistics,
calibration-in-the-large gaps, and the null law of their maxima simulated
conditionally on the scores.

Every segment ``s`` and score column ``c`` (one for binary and top-label
scores, one per class for classwise ones) gets the cumulative differences of
its own rows sorted by score (see ``_cumulative``), their range (Kuiper) or
largest absolute value (KS) in units of ``sqrt(V_s)``, ``V_s = sum_s w^2
p (1 - p)``, and the gap ``sum_s w (y - p) / sum_s w`` (the last cumulative
difference). Under the null hypothesis "calibrated in every segment" the
outcomes are independent draws from the model's own probabilities given the
scores; redrawing them ``B`` times and recomputing every segment's statistic
gives the law of the maximum over segments, overlaps and all. The observed
data are one more draw from that law under the null, so ``(1 + #{null max >=
observed max}) / (1 + B)`` is a p-value whose size is at most its level
whatever the number and overlap of the segments.

The statistic of all segments at once: the member rows of every segment,
each segment's rows sorted by score, are laid end to end (``pos``); one
cumulative sum runs over that sequence, and a segment's cumulative
differences are that sum minus its value just before the segment starts, so
the segment's maximum and minimum are ``numpy.maximum.reduceat`` and
``minimum.reduceat`` of the sum over the segment, minus that offset. Only the
ends of tie groups (within the segment) are read. The work per resample is
the total membership, with no per-segment Python loop.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import ndtri

from ._brownian import brownian_sf
from ._cumulative import scaled
from ._optional import is_installed
from ._resampling import stream_seeds, uniforms

_BLOCK_ELEMENTS = 1 << 22  # resamples x memberships per block (32 MB)
# Below this many (resamples x memberships x columns) the numpy path runs: the
# compiled kernel's import and one-off compilation cost seconds. Tests move
# it to exercise both paths; without numba numpy runs every size.
_COMPILED_MIN_WORK = 1 << 24


class _Layout(NamedTuple):
    """One score column's segment layout (see the module docstring)."""

    pos: np.ndarray  # (nnz,) original rows, segment by segment, by score
    is_end: np.ndarray  # (nnz,) whether pos[k] ends a tie group of its segment
    ends: np.ndarray | None  # (n_ends,) positions read (None: all)
    end_starts: np.ndarray  # (S,) first read position of each segment
    before: np.ndarray  # (S,) position just before each segment (-1: none)
    last: np.ndarray  # (S,) last position of each segment


def _layout(score, segset):
    n = score.shape[0]
    order = np.argsort(score, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    sizes = segset.sizes()
    seg_of = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    key = seg_of * n + rank[segset.indices]
    key.sort()
    pos = order[key % n]
    starts, last = segset.indptr[:-1], segset.indptr[1:] - 1
    s = score[pos]
    is_end = np.empty(pos.shape[0], dtype=bool)
    np.not_equal(s[1:], s[:-1], out=is_end[:-1])
    is_end[last] = True
    if np.all(is_end):
        ends, end_starts = None, starts
    else:
        ends = np.flatnonzero(is_end)
        end_starts = np.searchsorted(ends, starts)
    return _Layout(pos, is_end, ends, end_starts, starts - 1, last)


def _extremes(residual, layout):
    """``(high, low, last)`` (b, S) of the raw cumulative sums
    ``sum w (y - p)`` of every segment, from ``residual`` (b, n)."""
    # np.take, not residual[:, pos]: the latter is Fortran-ordered, and the
    # row-wise cumsum and reduceat below run 4-5x slower on it
    g = np.take(residual, layout.pos, axis=1)
    np.cumsum(g, axis=1, out=g)
    offset = np.where(layout.before >= 0, g[:, np.maximum(layout.before, 0)], 0.0)
    read = g if layout.ends is None else g[:, layout.ends]
    high = np.maximum.reduceat(read, layout.end_starts, axis=1) - offset
    low = np.minimum.reduceat(read, layout.end_starts, axis=1) - offset
    last = g[:, layout.last] - offset
    return np.maximum(high, 0.0), np.minimum(low, 0.0), last


def _statistic(high, low, statistic):
    return high - low if statistic == "kuiper" else np.maximum(high, -low)


class _Draws(NamedTuple):
    """How the null outcomes are drawn: ``scores`` (n,) for one column
    (outcome = ``u < score``), or ``cumulative`` (n, K) for classwise ones
    (outcome of column k = [class drawn from the row = k])."""

    scores: np.ndarray | None
    cumulative: np.ndarray | None


def _null_outcomes(u, draws):
    if draws.cumulative is None:
        return u < draws.scores
    target = u * draws.cumulative[None, :, -1]
    k = (draws.cumulative[None, :, :] <= target[:, :, None]).sum(axis=2)
    np.minimum(k, draws.cumulative.shape[1] - 1, out=k)
    return [k == c for c in range(draws.cumulative.shape[1])]


def _null_maxima(seeds, draws, scores, w, layouts, inv, statistic):
    """``(max scaled statistic, max |gap| z)`` of every resample (numpy)."""
    n = scores[0].shape[0]
    n_resamples = seeds.shape[0]
    null_max = np.zeros(n_resamples)
    null_gap = np.zeros(n_resamples)
    nnz = max(layouts[0].pos.shape[0], 1)
    step = max(1, _BLOCK_ELEMENTS // nnz)
    for start in range(0, n_resamples, step):
        sl = slice(start, min(start + step, n_resamples))
        drawn = _null_outcomes(uniforms(seeds[sl], n), draws)
        for c, score in enumerate(scores):
            outcome = drawn if draws.cumulative is None else drawn[c]
            high, low, last = _extremes(w * (outcome - score), layouts[c])
            t = _statistic(high, low, statistic) * inv[:, c]
            np.maximum(null_max[sl], t.max(axis=1), out=null_max[sl])
            gap_z = np.abs(last * inv[:, c]).max(axis=1)
            np.maximum(null_gap[sl], gap_z, out=null_gap[sl])
    return null_max, null_gap


class AuditCore(NamedTuple):
    """The audit's numbers (arrays of shape (S, C): segments x score columns).

    ``n_rows`` (S,); ``weight``, ``mean_prob``, ``outcome_rate``, ``gap``,
    ``gap_low``, ``gap_high`` (pointwise interval at the confidence level),
    ``statistic`` (probability units), ``sigma``, ``scaled_statistic``,
    ``pvalue`` (adjusted by the null law of the maximum), ``pvalue_unadjusted``
    (the Brownian limit law of the segment alone); ``null_maximum`` (B,) the
    sorted null maxima of the scaled statistic; ``pvalue_family``;
    ``null_quantile`` (the scaled statistic above which a segment is flagged
    at the family-wise level); ``gap_critical`` (the simultaneous critical
    value of the gaps' z); ``worst`` (segment, column); ``worst_interval``
    (low, high) of the worst segment's gap, simultaneous over segments.
    """

    n_rows: np.ndarray
    weight: np.ndarray
    mean_prob: np.ndarray
    outcome_rate: np.ndarray
    gap: np.ndarray
    gap_low: np.ndarray
    gap_high: np.ndarray
    statistic: np.ndarray
    sigma: np.ndarray
    scaled_statistic: np.ndarray
    pvalue: np.ndarray
    pvalue_unadjusted: np.ndarray
    null_maximum: np.ndarray
    pvalue_family: float
    null_quantile: float
    gap_critical: float
    worst: tuple
    worst_interval: tuple


def _segment_sums(values, segset):
    return np.add.reduceat(values[segset.indices], segset.indptr[:-1])


def gap_interval(gap, mean_prob, w_sum, w2_sum, var_sum, slope_sum, z):
    """Interval of the calibration-in-the-large gap ``g`` of segments.

    The score (Wilson-type) interval: every ``g`` with ``(gap - g)^2 W^2 <=
    z^2 sum w^2 (p + g)(1 - p - g)``, the variance of ``sum w y`` if the
    outcome rate of every row were ``p + g``; a quadratic inequality in
    ``g`` (``var_sum = sum w^2 p (1 - p)``, ``slope_sum = sum w^2 (1 -
    2p)``, ``w2_sum = sum w^2``). Unlike ``gap +- z * se`` it does not shrink
    to a point on a small segment without events. The estimate is kept
    inside, and the bounds inside ``[-mean_prob, 1 - mean_prob]``.
    """
    a = w_sum**2 + z**2 * w2_sum
    b = 2.0 * gap * w_sum**2 + z**2 * slope_sum
    c = gap**2 * w_sum**2 - z**2 * var_sum
    disc = np.maximum(b * b - 4.0 * a * c, 0.0)
    root = np.sqrt(disc)
    low = np.minimum((b - root) / (2.0 * a), gap)
    high = np.maximum((b + root) / (2.0 * a), gap)
    return np.maximum(low, -mean_prob), np.minimum(high, 1.0 - mean_prob)


def _order_statistic(sorted_null, alpha):
    """The value a statistic must exceed for ``(1 + #{null >= t}) / (1 + B)
    <= alpha``; inf if no value can."""
    n = sorted_null.shape[0]
    allowed = int(np.floor(alpha * (n + 1) + 1e-9)) - 1  # exceedances allowed
    if allowed < 0:
        return np.inf
    return float(sorted_null[n - allowed - 1])


def simulate_maxima(
    scores, weight, segset, draws, seeds, *, statistic="kuiper", layouts=None
):
    """The maxima over segments (and columns) of every simulated draw.

    ``scores``: the model's probabilities, one (n,) float64 array per score
    column; ``draws``: how the outcomes are drawn (:func:`binary_draws` of
    the scores themselves for the null law; of other probabilities for an
    alternative); ``seeds``: one stream per draw (see ``_resampling``).
    Returns ``(maximum scaled statistic, maximum |gap| z)``, each (len(seeds),),
    in the order of the seeds: the same seeds give the same draws on either
    path (numpy or compiled) and for any segments.
    """
    n = scores[0].shape[0]
    w = np.ones(n) if weight is None else weight
    if layouts is None:
        layouts = [_layout(s, segset) for s in scores]
    w2 = w * w
    root_var = np.sqrt(
        np.maximum(
            np.column_stack(
                [_segment_sums(w2 * s * (1.0 - s), segset) for s in scores]
            ),
            0.0,
        )
    )
    positive = root_var > 0
    inv = np.where(positive, 1.0 / np.where(positive, root_var, 1.0), 0.0)
    work = seeds.shape[0] * max(segset.indices.shape[0], 1) * len(scores)
    if work >= _COMPILED_MIN_WORK and is_installed("numba"):
        from ._segment_audit_compiled import null_maxima_compiled

        return null_maxima_compiled(
            seeds,
            draws,
            np.stack(scores),
            w,
            layouts,
            segset.indptr,
            inv,
            statistic == "kuiper",
        )
    return _null_maxima(seeds, draws, scores, w, layouts, inv, statistic)


def audit_core(
    columns,
    weight,
    segset,
    *,
    draws,
    statistic="kuiper",
    n_resamples=1000,
    confidence_level=0.95,
    random_state=None,
):
    """Audit ``segset`` on validated score columns.

    ``columns``: a list of ``(outcome, score)`` pairs ((n,) bool and (n,)
    float in [0, 1]); ``weight`` (n,) positive float64 or None; ``draws``: a
    :class:`_Draws` (see :func:`binary_draws`, :func:`classwise_draws`).
    Returns an :class:`AuditCore`.
    """
    n = columns[0][1].shape[0]
    w = np.ones(n) if weight is None else weight
    n_seg, n_col = segset.n_segments, len(columns)
    layouts = [_layout(score.astype(np.float64), segset) for _, score in columns]

    w_sum = _segment_sums(w, segset)
    w2 = w * w
    w2_sum = _segment_sums(w2, segset)
    shape = (n_seg, n_col)
    out = {k: np.empty(shape) for k in ("mean", "rate", "var", "slope")}
    residuals = []
    for c, (outcome, score) in enumerate(columns):
        s = score.astype(np.float64)
        out["mean"][:, c] = _segment_sums(w * s, segset) / w_sum
        out["rate"][:, c] = _segment_sums(w * outcome, segset) / w_sum
        out["var"][:, c] = _segment_sums(w2 * s * (1.0 - s), segset)
        out["slope"][:, c] = _segment_sums(w2 * (1.0 - 2.0 * s), segset)
        residuals.append(w * (outcome - s))
    root_var = np.sqrt(np.maximum(out["var"], 0.0))

    observed = np.empty(shape)
    gap = np.empty(shape)
    for c, layout in enumerate(layouts):
        high, low, last = _extremes(residuals[c][None, :], layout)
        observed[:, c] = _statistic(high, low, statistic)[0]
        gap[:, c] = last[0] / w_sum
    t_obs = scaled(observed, root_var)

    n_resamples = int(n_resamples)
    seeds = stream_seeds(random_state, n_resamples)
    scores = [score.astype(np.float64) for _, score in columns]
    null_max, null_gap = simulate_maxima(
        scores, weight, segset, draws, seeds, statistic=statistic, layouts=layouts
    )
    null_max.sort()
    null_gap.sort()

    exceed = n_resamples - np.searchsorted(null_max, t_obs, side="left")
    pvalue = (1.0 + exceed) / (1.0 + n_resamples)
    worst = np.unravel_index(int(np.argmax(t_obs)), shape)
    alpha = 1.0 - confidence_level
    z = float(ndtri(1.0 - alpha / 2.0))
    low, high = gap_interval(
        gap, out["mean"], w_sum[:, None], w2_sum[:, None], out["var"], out["slope"], z
    )
    gap_critical = _order_statistic(null_gap, alpha)
    sc = worst
    wlow, whigh = gap_interval(
        gap[sc],
        out["mean"][sc],
        w_sum[sc[0]],
        w2_sum[sc[0]],
        out["var"][sc],
        out["slope"][sc],
        gap_critical if np.isfinite(gap_critical) else z,
    )
    return AuditCore(
        n_rows=segset.sizes(),
        weight=w_sum,
        mean_prob=out["mean"],
        outcome_rate=out["rate"],
        gap=gap,
        gap_low=low,
        gap_high=high,
        statistic=observed / w_sum[:, None],
        sigma=root_var / w_sum[:, None],
        scaled_statistic=t_obs,
        pvalue=pvalue,
        pvalue_unadjusted=np.asarray(brownian_sf(t_obs, statistic)),
        null_maximum=null_max,
        pvalue_family=float(pvalue[worst]),
        null_quantile=_order_statistic(null_max, alpha),
        gap_critical=gap_critical,
        worst=(int(worst[0]), int(worst[1])),
        worst_interval=(float(wlow), float(whigh)),
    )


def binary_draws(score):
    """Null outcomes ``u < score`` (binary and top-label columns)."""
    return _Draws(np.asarray(score, dtype=np.float64), None)


def classwise_draws(p):
    """Null classes drawn from the rows of ``p`` (n, K)."""
    return _Draws(None, np.cumsum(np.asarray(p, dtype=np.float64), axis=1))
