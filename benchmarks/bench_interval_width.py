"""Where ``calibration_error_interval``'s width over the oracle's comes from.

The coverage table (``bench_interval_coverage.py``) gives, per cell, the
interval's median width over the oracle's. This script takes cells apart:
per cell the estimator's mean and standard deviation over the replications,
and where the interval's and the oracle's bounds sit around the estimate, in
standard deviations of the estimator (``(bound - estimate) / sd``, averaged
over the replications; the oracle's ends before its clip at 0 and its
stretch to hold the estimate, so that where the truth is 0 its upper end can
lie below the estimate). An
interval as wide as the oracle puts its bounds where the oracle does; the
columns show which end is the wider one and by how much. The ``slope``
column is the median over the replications of how fast the tested
statistic's simulated mean moves with the population error along the
interval's path, at the shrunk configuration (:func:`path_slope`): the
oracle takes the estimator's law to shift one for one with the error (slope
1); where the law moves more slowly (a plug-in L1 error whose bins' noise
is folded: it grows by less than the error does), any interval that covers
the errors near the truth, not only the truth itself, is about ``1 / slope``
times as wide as the oracle.

The ``tested sd`` column is the standard deviation over the replications of
the statistic whose test the interval inverts (the root of the debiased
square for an L2 error, :func:`tested_statistic`) over the estimate's: the
oracle's width is that of the estimate's law, the interval's follows the
tested statistic's.

It also gives how much the oracle itself is narrowed by the few replications
of a cell: the oracle's width is the distance between the 2.5 % and 97.5 %
quantiles of ``T - truth`` over the replications, which on ``R`` draws of a
normal law (linear interpolation, numpy's default, as the table computes
them) falls short of the law's by the factor in ``--oracle-bias``.

And, with ``--few-events``, what width any interval can reach where the
error's noise is that of a count of a few events (a test set expecting
0.7-5 rows of its rare outcome: 2 % prevalence on 36-100 rows, 36 rows
right 95 % of the time): per count law ``Bin(n, p)`` the oracle's mean
width (from the exact law) beside Pratt's (1961) bound, the smallest mean
width at ``p`` of any confidence set, randomised or not, that covers at
least the level at every true rate (:func:`pratt_bound`), at 95 % and at
the 93 % target, and the Clopper-Pearson interval's mean width. Where the
law is near normal the bound is about 0.85 times the oracle's width (the
oracle knows the truth); below it the bound exceeds the oracle's.

Run (single-threaded BLAS, ``nice``)::

    python benchmarks/bench_interval_width.py --reps 200 \
        --csv docs/_static/interval_coverage/width_anatomy.csv
    python benchmarks/bench_interval_width.py --oracle-bias \
        --csv docs/_static/interval_coverage/oracle_bias.csv
    python benchmarks/bench_interval_width.py --few-events \
        --csv docs/_static/interval_coverage/few_events.csv

``--cells bed:n:error,...`` takes other cells of the coverage table apart.

And, with ``--neyman``, a reference one can compute where the oracle cannot
be: the equal-tailed Neyman band of the estimator over a one-parameter
family of cell accuracies (:func:`neyman_band`), on the covering cells of
the main table wider than 1.35 times the oracle (:func:`wide_cells`, or
``--cells``): along the interval's own path (:func:`path_band`; the
interval inverts the same test there, so the two agree where it tests the
estimator itself), along it with the gaps' signs known, and along the
family through the true configuration (known on a bed)::

    python benchmarks/bench_interval_width.py --neyman --reps 40 --jobs 2 \
        --csv docs/_static/interval_coverage/neyman.csv

The cells (``CELLS``) are the kinds of cell the coverage table finds wider
than 1.35 times the oracle while covering: an error clearly away from 0 but
within a few noise standard deviations per bin at n = 100-300 (under- and
over-confident binary models), an error at 0 (a calibrated model), an error
small against its noise (2 % prevalence), one bin on 36 rows (the sharp
network's debiased error), and, as controls, the same models at n = 10^4.
``tests/test_metrics_interval_beds.py`` runs a seeded fast variant.
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _beds
import bench_interval_coverage as coverage

#: (bed, n, error label of bench_interval_coverage.SPECS)
CELLS = (
    ("logistic_under", 300, "ece"),
    ("logistic_under", 300, "adaptive_ece"),
    ("logistic_over", 100, "ece"),
    ("flat_under", 100, "adaptive_ece"),
    ("logistic", 300, "ece"),
    ("rare_under", 100, "ece"),
    ("sharp_net", 36, "debiased_ece"),
    ("logistic_under", 10_000, "ece"),
    ("logistic_over", 10_000, "ece"),
)
LEVEL = coverage.LEVEL


def anatomy(bed, n, label, reps, seed=0):
    """One cell taken apart: a dict of the figures of the module doc (the
    replications are the coverage table's: same bed, ``n`` and seed)."""
    from sklcalib.metrics import calibration_error_interval

    spec = next(s for s in coverage.SPECS if s[0] == label)
    _, metric, params = spec
    truth = coverage._truth(bed, metric, params)
    rng = np.random.default_rng([seed, n, sum(map(ord, bed.name))])
    est, low, high = np.empty(reps), np.empty(reps), np.empty(reps)
    slope = np.full(reps, np.nan)
    square = np.full(reps, np.nan)
    tested = np.full(reps, np.nan)
    labels = {"labels": np.arange(bed.n_classes)}
    for r in range(reps):
        y, p = bed.sample(rng, n)
        # the coverage table's draws: every error of the cell in turn takes
        # nothing from rng, so the replications are the same
        ci = calibration_error_interval(
            y, p, metric=metric, random_state=r, **params, **labels
        )
        est[r], low[r], high[r] = ci.estimate, ci.low, ci.high
        if metric == "debiased_ece":
            square[r] = coverage._debiased_square(y, p, bed.n_classes, params)
        if metric not in ("nll", "brier"):
            slope[r] = path_slope(y, p, bed.n_classes, metric, params, seed=r)
        if metric in ("ece", "adaptive_ece", "classwise_ece"):
            tested[r] = tested_statistic(y, p, bed.n_classes, metric, params)
    alpha = 1.0 - LEVEL
    row = coverage.summarise(
        truth, est, low, high, square=square if metric == "debiased_ece" else None
    )
    sd = float(np.std(est, ddof=1))
    if metric == "debiased_ece":
        q_lo, q_hi = np.quantile(square - truth**2, [alpha / 2, 1 - alpha / 2])
        o_low = np.sqrt(np.maximum(square - q_hi, 0.0))
        o_high = np.sqrt(np.maximum(square - q_lo, 0.0))
    else:
        q_lo, q_hi = np.quantile(est - truth, [alpha / 2, 1 - alpha / 2])
        o_low, o_high = est - q_hi, est - q_lo
    scale = sd if sd > 0 else 1.0
    return {
        "bed": bed.name,
        "n": n,
        "error": label,
        "truth": truth,
        "estimate": float(np.mean(est)),
        "sd": sd,
        "coverage": row["coverage"],
        "low misses": row["miss_low"],
        "ratio": row["ratio"],
        "low": float(np.mean((low - est) / scale)),
        "high": float(np.mean((high - est) / scale)),
        "oracle low": float(np.mean((o_low - est) / scale)),
        "oracle high": float(np.mean((o_high - est) / scale)),
        "slope": float(np.nanmedian(slope)) if np.any(np.isfinite(slope)) else np.nan,
        "tested sd": float(np.std(tested, ddof=1)) / scale
        if np.all(np.isfinite(tested))
        else np.nan,
        "reps": reps,
    }


def tested_statistic(y, p, n_classes, metric, params):
    """The statistic whose test the interval inverts (``STATISTIC_OF``):
    for a plug-in L1 error the estimate itself, for an L2 error the root of
    its debiased square, whose spread can exceed the estimate's."""
    from sklcalib._utils._validation import check_prob_values, check_targets
    from sklcalib.metrics import _cells

    y_idx, q, _, _ = check_targets(y, p, np.arange(n_classes), None)
    q = check_prob_values(q)
    cells = _cells._binned_cells(metric, y_idx, q, None, params.get("n_bins", 15))
    kind = _cells.STATISTIC_OF[params.get("norm", "l1")]
    return float(_cells._statistic(cells, cells.ybar, kind))


def path_slope(y, p, n_classes, metric, params, seed, s_step=0.1, n_draws=400):
    """How fast the tested statistic's mean moves with the population error
    along the interval's path, at the shrunk configuration (``s = 1``): the
    change of its simulated mean from ``s = 1 - s_step`` to ``1 + s_step``
    over the change of the population error (of its square for the debiased
    error). A law that moved one for one with the error (a shift, which the
    oracle assumes) has slope 1; an inverted test is then about ``1 /
    slope`` times as wide as a shift's."""
    from sklcalib._utils._validation import check_prob_values, check_targets
    from sklcalib.metrics import _cells

    y_idx, q, _, w = check_targets(y, p, np.arange(n_classes), None)
    q = check_prob_values(q)
    n_bins = params.get("n_bins", 15)
    if metric == "debiased_ece":
        cells = _cells._debiased_cells(y_idx, q, w, n_bins, "top_label")
        kind = "debiased"
    else:
        cells = _cells._binned_cells(metric, y_idx, q, w, n_bins)
        kind = params.get("norm", "l1")
    g = _cells._shrunk_gaps(cells)
    if not np.any(np.abs(g) > 1e-12):
        g = np.ones_like(g)  # as the interval: a common shift
    draws = _cells.CellDraws(cells.n, np.random.default_rng(seed), n_draws)
    stat, truth = [], []
    for s in (1.0 - s_step, 1.0 + s_step):
        mu = cells.pbar + s * g
        means = draws.means(mu)
        stat.append(
            float(np.mean(_cells._statistic(cells, means, _cells.STATISTIC_OF[kind])))
        )
        truth.append(_cells._truth(cells, mu, kind))
    if truth[1] == truth[0]:
        return float("nan")
    return (stat[1] - stat[0]) / (truth[1] - truth[0])


def oracle_bias(sizes=(20, 40, 50, 60, 100, 200, 400), draws=20_000, seed=0):
    """Mean width of the 2.5-97.5 % quantile range of ``R`` normal draws
    (linear interpolation) over the law's, for every ``R`` in ``sizes``."""
    rng = np.random.default_rng(seed)
    alpha = 1.0 - LEVEL
    span = 2.0 * 1.959963984540054
    out = {}
    for size in sizes:
        x = rng.standard_normal((draws, size))
        q = np.quantile(x, [alpha / 2, 1 - alpha / 2], axis=1)
        out[size] = float(np.mean(q[1] - q[0]) / span)
    return out


def neyman_band(law, value, observed, s_range, alpha=1.0 - LEVEL, grid=48, refine=14):
    """The equal-tailed Neyman band of a one-parameter family, inverted at
    ``observed``.

    ``law(s)`` gives draws of the estimator at the family's point ``s``
    (common random numbers: the same draws' uniforms at every ``s``),
    ``value(s)`` the population error there, increasing in ``s`` on
    ``s_range``. A point is accepted when ``observed`` lies within its
    law's central ``1 - alpha`` range (the ``k``-th smallest and largest
    draws, ``k = floor(alpha / 2 (draws + 1))``: the interval's own rule);
    the band runs over the population errors of the accepted points, its
    ends found on a grid of ``grid`` points and refined by ``refine``
    bisections between the last rejected and the first accepted grid point.
    It covers every point of the family at the nominal rate, and no
    equal-tailed test of that family accepts fewer points. Returns
    ``(low, high)``, or None where no point is accepted."""
    s0, s1 = s_range
    cache = {}

    def side(s):  # -1: observed below the law's range, +1 above, 0 within
        if s not in cache:
            draws = np.asarray(law(s), dtype=np.float64)
            b = draws.shape[0]
            k = max(int(np.floor(alpha / 2.0 * (b + 1))), 1)
            lo = np.partition(draws, k - 1)[k - 1]
            hi = np.partition(draws, b - k)[b - k]
            cache[s] = -1 if observed < lo else (1 if observed > hi else 0)
        return cache[s]

    for points in (grid, 8 * grid):  # a finer grid where the first misses
        grid_s = np.linspace(s0, s1, points)
        kept = [s for s in grid_s if side(s) == 0]
        if kept:
            break
    else:
        return None

    def edge(inside, outside):
        for _ in range(refine):
            mid = 0.5 * (inside + outside)
            if side(mid) == 0:
                inside = mid
            else:
                outside = mid
        return inside

    step = grid_s[1] - grid_s[0]
    lo_s, hi_s = kept[0], kept[-1]
    if lo_s > s0:
        lo_s = edge(lo_s, lo_s - step)
    if hi_s < s1:
        hi_s = edge(hi_s, hi_s + step)
    return value(lo_s), value(hi_s)


#: the estimator whose law the Neyman band inverts, per error (the plug-in
#: itself; for the debiased error its unbiased square, the bounds rooted)
_ESTIMATOR_OF = {"l1": "l1", "l2": "l2", "debiased": "debiased_raw"}


def path_band(
    y, p, n_classes, metric, params, seed, alpha=1.0 - LEVEL, truth=None, halves="path"
):
    """The Neyman band along the interval's own path: the family of cell
    accuracies ``pbar + s g`` (``g`` the shrunk gaps of these data, the
    cells past 0 or 1 clipped), the estimator's law at every point
    simulated as the interval simulates it (the same draws:
    ``random_state=seed``; a classwise error's spread corrected for the
    rows' dependence across classes). ``halves="path"`` takes ``s`` of
    either sign where the interval does (the flipped half dropped where the
    data rule it out, by the interval's own rule), ``"ray"`` only ``s >=
    0``: the band had the gaps' signs been known. The band is the union of
    each half's (:func:`neyman_band`). Returns ``(estimate, low, high)`` of
    the error (the band stretched to hold the estimate, as the interval and
    the oracle are; ``low = high = estimate`` where no point is accepted).

    ``truth``, every row's true probabilities (n, n_classes) where a bed
    knows them, replaces the shrunk gaps by the cells' true gaps (the mean
    true probability of each cell's rows minus its mean score), ``s >= 0``:
    the family through the true configuration (``s = 1``), which no
    interval of the data knows."""
    from sklcalib._utils._resampling import stream_seeds
    from sklcalib._utils._validation import check_prob_values, check_targets
    from sklcalib.metrics import _cells, _intervals

    y_idx, q, _, w = check_targets(y, p, np.arange(n_classes), None)
    q = check_prob_values(q)
    n_bins = params.get("n_bins", 15)
    if metric == "debiased_ece":
        cells = _cells._debiased_cells(y_idx, q, w, n_bins, "top_label")
        kind = "debiased"
    else:
        cells = _cells._binned_cells(metric, y_idx, q, w, n_bins)
        kind = params.get("norm", "l1")
    stat_kind = _ESTIMATOR_OF[kind]
    n_draws = int(
        min(
            _intervals.N_DRAWS,
            max(_intervals._MIN_DRAWS, _intervals._DRAW_BUDGET // cells.n.shape[0]),
        )
    )
    draws = _cells.CellDraws(
        cells.n, np.random.default_rng(stream_seeds(seed, 1)[0]), n_draws
    )
    rows = None
    if cells.codes is not None:
        step = max(
            1, int(np.ceil(cells.codes.shape[0] * cells.n_groups / _cells._CROSS_ROWS))
        )
        rows = np.arange(0, cells.codes.shape[0], step)
    g, prec = _cells._shrunk_gaps(cells, with_precision=True)
    if truth is not None:
        g = _true_gaps(cells, metric, y_idx, q, truth, n_bins)
    if not np.any(np.abs(g) > 1e-12):
        g = np.ones_like(g)  # as the interval: a common shift
    b = draws.n_draws
    k = max(int(np.floor(alpha / 2.0 * (b + 1))), 1)
    observed = float(_cells._statistic(cells, cells.ybar, stat_kind))
    signs = (1.0,)
    if truth is None and halves == "path":
        # the interval's rule: the flipped half is dropped when the observed
        # gaps' projection on the path lies beyond the 1 - alpha / 20
        # quantile of its law at s = 0
        weight = prec * g
        projection = (draws.means(cells.pbar) - cells.pbar) @ weight
        seen = float((cells.ybar - cells.pbar) @ weight)
        beyond = np.count_nonzero(projection >= seen - 1e-12 * abs(seen))
        if (1 + beyond) / (1 + b) >= alpha / 20.0:
            signs = (1.0, -1.0)
    lows, highs = [], []
    for sign in signs:
        direction = sign * g

        def law(s, direction=direction):
            ybar = draws.means(cells.pbar + s * direction)
            stat = _cells._statistic(cells, ybar, stat_kind)
            scale = _cells._dependence_scale(cells, ybar, stat_kind, rows)
            if scale != 1.0:
                centre = stat.mean()
                stat = centre + scale * (stat - centre)
            return stat

        def value(s, direction=direction):
            return _cells._truth(cells, cells.pbar + s * direction, kind)

        with np.errstate(divide="ignore", invalid="ignore"):
            reach = np.where(
                direction > 0,
                (1.0 - cells.pbar) / direction,
                np.where(direction < 0, -cells.pbar / direction, 0.0),
            )
        s_max = float(reach.max())  # as the interval's: past it all is clipped
        # the family up to twice the last doubling of s whose law does not lie
        # wholly above the observed value (the lower tail of the debiased
        # square can first fall as s grows)
        s_top, s = 1.0, 1.0
        while s < s_max:
            if np.partition(law(s), k - 1)[k - 1] <= observed:
                s_top = 2.0 * s
            s *= 2.0
        band = neyman_band(law, value, observed, (0.0, min(s_top, s_max)), alpha)
        if band is not None:
            lows.append(band[0])
            highs.append(band[1])
    if kind == "debiased":
        estimate = float(np.sqrt(max(observed, 0.0)))
        lows = [float(np.sqrt(max(v, 0.0))) for v in lows]
        highs = [float(np.sqrt(max(v, 0.0))) for v in highs]
    else:
        estimate = observed
    if not lows:
        return estimate, estimate, estimate
    return estimate, min(min(lows), estimate), max(max(highs), estimate)


def _true_gaps(cells, metric, y_idx, q, truth, n_bins):
    """Per cell of ``cells`` the mean true probability of its rows' outcome
    minus its mean score (the cells rebuilt with the true probabilities in
    place of the outcomes)."""
    from sklcalib._utils._binning import top_label
    from sklcalib._utils._scores import as_columns
    from sklcalib.metrics import _cells

    if metric == "classwise_ece":
        import bench_interval_direction as direction

        mu = direction._true_accuracies(metric, y_idx, q, truth, n_bins)
        return np.clip(mu, 0.0, 1.0) - cells.pbar
    conf, _ = top_label(q, y_idx)
    # the top label's true probability (top_label's argmax, first of ties)
    right = truth[np.arange(truth.shape[0]), np.argmax(as_columns(q), axis=1)]
    if metric == "debiased_ece":
        rebuilt = _cells._debiased_cells(
            y_idx, q, None, n_bins, "top_label", top=(conf, right)
        )
    else:
        rebuilt = _cells._binned_cells(
            metric, y_idx, q, None, n_bins, top=(conf, right)
        )
    return rebuilt.ybar - cells.pbar


def neyman_cell(bed, n, label, reps, seed=0):
    """One cell's Neyman reference on the coverage table's replications (same
    bed, ``n`` and seed; the interval's own draws, ``random_state=r``): the
    median widths of the interval, of the oracle and of the band along the
    interval's path, their ratios, and how often each holds the truth."""
    from sklcalib.metrics import calibration_error_interval

    _, metric, params = next(s for s in coverage.SPECS if s[0] == label)
    truth = coverage._truth(bed, metric, params)
    rng = np.random.default_rng([seed, n, sum(map(ord, bed.name))])
    est, low, high = np.empty(reps), np.empty(reps), np.empty(reps)
    b_low, b_high = np.empty(reps), np.empty(reps)
    square = np.full(reps, np.nan)
    labels = {"labels": np.arange(bed.n_classes)}
    t_low, t_high = np.full(reps, np.nan), np.full(reps, np.nan)
    r_low, r_high = np.empty(reps), np.empty(reps)
    away = truth > 1e-4
    for r in range(reps):
        # the same draws as the table's (the truth takes nothing from rng)
        y, p, q = bed.sample(rng, n, with_truth=True)
        if q.ndim == 1:
            q = np.stack([1.0 - q, q], axis=1)
        ci = calibration_error_interval(
            y, p, metric=metric, random_state=r, **params, **labels
        )
        est[r], low[r], high[r] = ci.estimate, ci.low, ci.high
        if metric == "debiased_ece":
            square[r] = coverage._debiased_square(y, p, bed.n_classes, params)
        _, b_low[r], b_high[r] = path_band(y, p, bed.n_classes, metric, params, r)
        _, r_low[r], r_high[r] = path_band(
            y, p, bed.n_classes, metric, params, r, halves="ray"
        )
        if away:  # at an error of 0 every direction passes through the truth
            _, t_low[r], t_high[r] = path_band(
                y, p, bed.n_classes, metric, params, r, truth=q
            )
    row = coverage.summarise(
        truth, est, low, high, square=square if metric == "debiased_ece" else None
    )
    band = float(np.median(b_high - b_low))
    true_band = float(np.median(t_high - t_low))
    ray = float(np.median(r_high - r_low))
    ray_held = (r_low <= truth + 1e-12) & (truth <= r_high + 1e-12)
    held = (b_low <= truth + 1e-12) & (truth <= b_high + 1e-12)
    return {
        "bed": bed.name,
        "n": n,
        "error": label,
        "truth": truth,
        "coverage": row["coverage"],
        "band coverage": float(np.mean(held)),
        "width": row["width"],
        "oracle": row["oracle"],
        "band": band,
        "ours / oracle": row["ratio"],
        "band / oracle": band / row["oracle"] if row["oracle"] > 0 else np.nan,
        "ours / band": row["width"] / band if band > 0 else np.nan,
        "ray": ray,
        "ray coverage": float(np.mean(ray_held)),
        "ours / ray": row["width"] / ray if ray > 0 else np.nan,
        "true path": true_band,
        "true path / oracle": true_band / row["oracle"]
        if row["oracle"] > 0
        else np.nan,
        "ours / true path": row["width"] / true_band if true_band > 0 else np.nan,
        "reps": reps,
    }


#: (rows, rate of the rare outcome) of the few-events table: the sharp
#: 3-class point (wrong 5 % of the time) and 2 % prevalence, then larger n
FEW_EVENTS = ((36, 0.05), (36, 0.02), (100, 0.02), (300, 0.02), (1000, 0.02))


def pratt_bound(n, p, level=0.95, grid=4001):
    """Pratt's (1961) bound: the smallest mean width at rate ``p`` of any
    (randomised) confidence set for a binomial rate from ``Bin(n, .)`` that
    covers at least ``level`` at every rate. The mean width is the integral
    over the rates ``q`` of ``P_p(q in set)``, and for each ``q`` the set of
    counts that accepts ``q`` with the smallest ``P_p`` is that of the
    Neyman-Pearson test of ``q`` against ``p`` (counts in increasing order of
    their likelihood ratio ``P_p / P_q``, the last one in part)."""
    from scipy.stats import binom

    x = np.arange(n + 1)
    f0 = binom.pmf(x, n, p)
    rates = np.linspace(0.0, 1.0, grid)
    f = binom.pmf(x[None, :], n, rates[:, None])
    with np.errstate(divide="ignore", over="ignore"):
        ratio = np.where(f > 0, f0[None, :] / np.where(f > 0, f, 1.0), np.inf)
    order = np.argsort(ratio, axis=1, kind="stable")
    fq = np.take_along_axis(f, order, axis=1)
    fp = f0[order]
    cum = np.cumsum(fq, axis=1)
    k = np.minimum((cum < level - 1e-12).sum(axis=1), n)
    rows = np.arange(grid)
    before = np.where(k > 0, cum[rows, k - 1], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        part = np.where(fq[rows, k] > 0, (level - before) / fq[rows, k], 0.0)
    kept = np.where(np.arange(n + 1)[None, :] < k[:, None], fp, 0.0).sum(axis=1)
    accept = kept + np.clip(part, 0.0, 1.0) * fp[rows, k]
    return float(np.trapezoid(accept, rates))


def oracle_count_width(n, p, level=LEVEL):
    """The oracle's mean width for the rate ``X / n`` of ``X ~ Bin(n, p)``,
    from the exact law (as the table's: clipped at 0, stretched to hold the
    estimate)."""
    from scipy.stats import binom

    x = np.arange(n + 1)
    pmf = binom.pmf(x, n, p)
    cdf = np.cumsum(pmf)
    alpha = 1.0 - level
    q_lo = x[np.searchsorted(cdf, alpha / 2.0)] / n - p
    q_hi = x[np.searchsorted(cdf, 1.0 - alpha / 2.0)] / n - p
    t = x / n
    low, high = np.maximum(t - q_hi, 0.0), np.maximum(t - q_lo, 0.0)
    return float(pmf @ (np.maximum(high, t) - np.minimum(low, t)))


def clopper_pearson_width(n, p, level=LEVEL):
    """Mean width of the Clopper-Pearson interval at rate ``p``."""
    from scipy.stats import beta, binom

    alpha = 1.0 - level
    x = np.arange(n + 1)
    low = np.where(x == 0, 0.0, beta.ppf(alpha / 2.0, np.maximum(x, 1), n - x + 1))
    high = np.where(
        x == n, 1.0, beta.ppf(1.0 - alpha / 2.0, x + 1, np.maximum(n - x, 1))
    )
    return float(binom.pmf(x, n, p) @ (high - low))


def few_events(cells=FEW_EVENTS):
    """The ``--few-events`` table's rows (see the module docstring)."""
    header = [
        "n",
        "rate",
        "expected events",
        "oracle",
        "bound 95 %",
        "bound 93 %",
        "Clopper-Pearson",
        "bound 95 % / oracle",
        "bound 93 % / oracle",
    ]
    rows = []
    for n, p in cells:
        oracle = oracle_count_width(n, p)
        b95, b93 = pratt_bound(n, p, 0.95), pratt_bound(n, p, 0.93)
        rows.append(
            [
                str(n),
                f"{p:g}",
                f"{n * p:.2f}",
                f"{oracle:.4f}",
                f"{b95:.4f}",
                f"{b93:.4f}",
                f"{clopper_pearson_width(n, p):.4f}",
                f"{b95 / oracle:.2f}",
                f"{b93 / oracle:.2f}",
            ]
        )
    return header, rows


COLUMNS = (
    "bed",
    "n",
    "error",
    "truth",
    "estimate",
    "sd",
    "coverage",
    "low misses",
    "ratio",
    "low",
    "high",
    "oracle low",
    "oracle high",
    "slope",
    "tested sd",
    "reps",
)


def _format(row):
    out = []
    for key in COLUMNS:
        value = row[key]
        if key in ("coverage", "low misses"):
            out.append(f"{value:.1%}")
        elif key in ("truth", "estimate", "sd"):
            out.append(f"{value:.4f}")
        elif isinstance(value, float):
            signed = key in ("low", "high", "oracle low", "oracle high")
            out.append(f"{value:+.2f}" if signed else f"{value:.2f}")
        else:
            out.append(str(value))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", default=None, help="write the table there too")
    parser.add_argument("--jobs", type=int, default=1, help="processes (--neyman)")
    parser.add_argument(
        "--oracle-bias",
        action="store_true",
        help="print the oracle's shortfall on R replications of a normal law",
    )
    parser.add_argument(
        "--few-events",
        action="store_true",
        help="print the width any interval can reach on a count of few events",
    )
    parser.add_argument(
        "--neyman",
        action="store_true",
        help="the Neyman band along the interval's path, on the wide cells",
    )
    parser.add_argument(
        "--cells",
        default=None,
        help="comma-separated bed:n:error cells to take apart instead of CELLS",
    )
    args = parser.parse_args(argv)
    if args.few_events:
        _emit(*few_events(), args.csv)
        return
    if args.oracle_bias:
        header = ["replications", "oracle width over the law's"]
        rows = [[str(k), f"{v:.3f}"] for k, v in oracle_bias().items()]
        _emit(header, rows, args.csv)
        return
    family = _beds.family()
    if args.neyman:
        cells = wide_cells() if not args.cells else _parse_cells(args.cells)
        tasks = [
            (family[b], n, e, _neyman_reps(family[b], e, args.reps), args.seed)
            for b, n, e in cells
        ]
        if args.jobs > 1:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(args.jobs) as pool:
                _emit_rows(NEYMAN_COLUMNS, pool.map(_neyman_task, tasks), args.csv)
        else:
            _emit_rows(NEYMAN_COLUMNS, map(_neyman_task, tasks), args.csv)
        return
    rows = []
    print(",".join(COLUMNS))
    cells = CELLS
    if args.cells:
        cells = [
            (name, int(n), label)
            for name, n, label in (c.split(":") for c in args.cells.split(","))
        ]
    for name, n, label in cells:
        row = _format(anatomy(family[name], n, label, args.reps, args.seed))
        rows.append(row)
        print(",".join(row), flush=True)
    if args.csv:
        _write(args.csv, COLUMNS, rows)


#: the main table the wide cells are read from
ALL_CELLS = Path(__file__).resolve().parent.parent / (
    "docs/_static/interval_coverage/all_cells.csv"
)


def wide_cells(path=ALL_CELLS, wide=1.35, target=0.93):
    """The binned cells of the main table that cover (``target`` or more)
    and are wider than ``wide`` times the oracle, as ``(bed, n, error)``
    (NLL and Brier, whose path is one of label laws, left out)."""
    out = []
    for r in coverage._read(path):
        cover = float(r["coverage"].rstrip("%")) / 100.0
        if r["error"] in ("nll", "brier") or cover < target - 1e-9:
            continue
        if float(r["ratio"]) > wide:
            out.append((r["bed"], int(r["n"]), r["error"]))
    # the small test sets first: a run stopped early keeps the cheap cells
    return sorted(out, key=lambda c: c[1])


def _neyman_reps(bed, label, reps):
    """A classwise error of 10 classes or more on a fifth of the
    replications: its band simulates hundreds of cells with the rows'
    dependence at every point (seconds per replication)."""
    return max(reps // 5, 10) if bed.n_classes >= 10 and "classwise" in label else reps


def _neyman_task(task):
    return neyman_cell(*task)


def _parse_cells(text):
    return [
        (name, int(n), label)
        for name, n, label in (c.split(":") for c in text.split(","))
    ]


NEYMAN_COLUMNS = (
    "bed",
    "n",
    "error",
    "truth",
    "coverage",
    "band coverage",
    "width",
    "oracle",
    "band",
    "ours / oracle",
    "band / oracle",
    "ours / band",
    "ray",
    "ray coverage",
    "ours / ray",
    "true path",
    "true path / oracle",
    "ours / true path",
    "reps",
)


def _emit_rows(header, rows, path):
    """Print rows (dicts) as csv lines as they come, and write them all to
    ``path`` (row by row: a run stopped early keeps its cells)."""
    import csv

    def text(key, value):
        if key in ("coverage", "band coverage", "ray coverage"):
            return f"{value:.1%}"
        if key in ("truth", "width", "oracle", "band", "ray", "true path"):
            return f"{value:.4f}"
        if isinstance(value, float):
            return f"{value:.2f}"
        return str(value)

    print(",".join(header), flush=True)
    with open(path or os.devnull, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for row in rows:
            line = [text(k, row[k]) for k in header]
            print(",".join(line), flush=True)
            writer.writerow(line)
            f.flush()


def _emit(header, rows, path):
    """Print a small table as csv lines, and write it to ``path`` if given."""
    print(",".join(header))
    for row in rows:
        print(",".join(row))
    if path:
        _write(path, header, rows)


def _write(path, header, rows):
    import csv

    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


if __name__ == "__main__":
    main()
