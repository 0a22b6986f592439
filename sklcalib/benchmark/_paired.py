"""Paired comparisons of the benchmark's test ECEs, combined over seeds.

The runs of one dataset and seed score the same test rows, so two of them
(two losses, or one net before and after temperature scaling) are compared
by :func:`sklcalib.metrics.compare_calibration`'s test, one implementation
(:mod:`sklcalib._utils._swap`): the paired bootstrap-t of the difference of
the two gap-corrected plug-in ECEs (each bin's term minus the folded
normal's bias at a shrunk gap estimate, so that two calibrated runs of
different sharpness, or an over- and an under-confident run of equal ECE,
count as equally calibrated). It replaced a swap test whose size was above
nominal for runs that are equally calibrated but not interchangeable (one
over- and one under-confident run, a net before and after temperature
scaling).

Over seeds the statistic is the mean of the per-seed statistics, its
variance the sum of theirs over ``S^2``, and every seed's rows are
resampled independently (resample ``r`` of the mean is the mean of every
seed's resample ``r``). The interval of the mean difference of *population*
ECEs is the bootstrap-t interval of that mean (:func:`paired_test`).

Every run of a dataset and seed is resampled with the same row draws (the
seed's stream), so that all the pairs of a seed are compared on the same
resamples.
"""

from typing import NamedTuple

import numpy as np

from sklcalib._utils._binning import top_label
from sklcalib._utils._swap import (
    STUDENT_CHUNK,
    PairedResamples,
    ece_and_bias,
    gap_corrected,
    observed_statistic,
    paired_resamples,
    paired_test,
    shrunk_rows,
    top_label_rows,
)
from sklcalib._utils._swap import (
    binomial_mean_abs_deviation as _mean_abs_deviation,
)
from sklcalib._utils._validation import check_targets

__all__ = ["_mean_abs_deviation"]

#: bins of the benchmark's ECE (the papers' 15 equal-width bins)
N_BINS = 15
#: paired resamples per comparison and seed; 499 puts a 5 % test's rejection
#: at exactly 25 of the 500 values (the observed one included)
RESAMPLES = 499


class PairedRuns(NamedTuple):
    """One run's top-label rows on its test rows: ``rows`` (the
    :class:`~sklcalib._utils._swap.TopLabelRows` a resample draws), ``ece``
    and ``bias`` (the largest bias of its plug-in, at zero gaps)."""

    rows: object
    ece: float
    bias: float


def run_residuals(y_idx, proba, n_bins=N_BINS):
    """:class:`PairedRuns` of one run (``y_idx``: the true column of every row)."""
    conf, correct = top_label(np.asarray(proba, dtype=np.float64), y_idx)
    rows = top_label_rows(conf, correct, n_bins)
    ece, bias = ece_and_bias(rows.sums, rows.total, n_bins)
    return PairedRuns(rows, float(ece), float(bias))


def encode(y_true, proba):
    """The true column of every row, validated as the metrics do."""
    return check_targets(y_true, proba)[0]


def seed_resamples(run_a, run_b, n_resamples, seed):
    """One seed's :class:`~sklcalib._utils._swap.PairedResamples` of two runs
    on the same rows (the row draws depend on ``seed`` and the number of
    rows only: every pair of a seed is resampled alike)."""
    return paired_resamples(
        run_a.rows, run_b.rows, n_resamples, np.random.default_rng(seed)
    )


#: entries of the row blocks in which :func:`group_resamples` passes over a
#: pair's per-row terms: a few such blocks stay in a core's cache, where a
#: whole chunk of resamples (a million entries, 8 MB an array) would stream
#: through memory at every one of the pair's passes
_BLOCK = 1 << 14


def group_resamples(runs, pairs, n_resamples, seed):
    """:func:`seed_resamples` of every pair ``(a, b)`` of ``pairs`` (keys of
    ``runs``, the :class:`PairedRuns` of one seed's runs on the same rows),
    as ``{(a, b): PairedResamples}``: the same numbers, to the last bit.

    Every pair of a seed is resampled with the same row draws, so the draws,
    each run's resampled bin sums and its part of the per-row terms are
    computed once per run rather than once per pair: the pairs then cost a
    few passes over the resamples each, instead of two matrix products over
    every bin column and the draws. Those passes run over blocks of a few
    resamples (each resample's row reduced whole, as in one pass), and the
    products on one BLAS thread: they are small, and the report is computed
    while the workers draw the figures, where a second BLAS thread spins
    for a core that is busy (on 2 loaded cores the default 2 threads cost
    the products ten times the CPU of one). Weighted rows take
    :func:`seed_resamples` pair by pair."""
    from threadpoolctl import threadpool_limits

    pairs = list(dict.fromkeys(pairs))
    if not pairs:
        return {}
    used = list(dict.fromkeys(k for pair in pairs for k in pair))
    if any(runs[k].rows.weight is not None for k in used):
        return {
            (a, b): seed_resamples(runs[a], runs[b], n_resamples, seed)
            for a, b in pairs
        }
    with threadpool_limits(limits=1, user_api="blas"):
        stat, var = _shared_resamples(runs, pairs, used, n_resamples, seed)
        out = {}
        for a, b in pairs:
            ra, rb = runs[a].rows, runs[b].rows
            ece_a, bias_a = ece_and_bias(ra.sums, ra.total, ra.n_bins)
            ece_b, bias_b = ece_and_bias(rb.sums, rb.total, rb.n_bins)
            statistic, variance = observed_statistic(ra, rb)
            out[a, b] = PairedResamples(
                float(ece_a - ece_b),
                statistic,
                variance,
                float(bias_a),
                float(bias_b),
                stat[a, b],
                var[a, b],
            )
    return out


def _shared_resamples(runs, pairs, used, n_resamples, seed):
    # {pair: statistic}, {pair: variance} on the resamples: paired_bootstraps'
    # chunks and draws, shared by the pairs
    shrunk = {k: shrunk_rows(runs[k].rows) for k in used}
    first = shrunk[used[0]]
    n, n_bins, total = first.bin.shape[0], first.n_bins, first.total
    rng = np.random.default_rng(seed)
    stat = {pair: np.empty(n_resamples) for pair in pairs}
    var = {pair: np.empty(n_resamples) for pair in pairs}
    step = max(1, STUDENT_CHUNK // max(n, 1))
    block = max(1, _BLOCK // max(n, 1))
    for start in range(0, n_resamples, step):
        m = min(step, n_resamples - start)
        idx = rng.integers(0, n, size=(m, n)) + n * np.arange(m)[:, None]
        counts = np.bincount(idx.ravel(), minlength=m * n).reshape(m, n)
        counts = counts.astype(np.float64)
        # each run's part of _bootstrap_block (unweighted rows)
        parts = {}
        for k in used:
            rows = shrunk[k]
            e, _, c, slope = gap_corrected(counts @ rows.rows, total, n_bins)
            parts[k] = (e - c, np.take(slope, rows.bin, axis=1) * rows.resid)
        u_buf = np.empty((min(block, m), n))
        t_buf = np.empty_like(u_buf)
        for pair in pairs:
            (da, ua), (db, ub) = parts[pair[0]], parts[pair[1]]
            stat[pair][start : start + m] = da - db
            v = var[pair][start : start + m]
            for lo in range(0, m, block):
                hi = min(lo + block, m)
                c_b, u = counts[lo:hi], u_buf[: hi - lo]
                # _bootstrap_block's expressions, in place where that changes
                # no value: (counts * 1.0) is counts, x ** 2 is numpy's square
                np.subtract(ua[lo:hi], ub[lo:hi], out=u)
                t = np.multiply(c_b, u, out=t_buf[: hi - lo])
                ubar = t.sum(axis=1, keepdims=True) / total
                np.subtract(u, ubar, out=u)
                np.square(u, out=u)
                v[lo:hi] = np.multiply(c_b, u, out=u).sum(axis=1)
            v[:] = v / (total * total) * n / max(n - 1, 1)
    return stat, var


class Comparison(NamedTuple):
    """A comparison combined over seeds: ``difference`` (mean over seeds of
    ``ece(a) - ece(b)``), the interval ``low, high`` of the mean difference
    of population ECEs, the two-sided ``pvalue``, and ``n_seeds``."""

    difference: float
    low: float
    high: float
    pvalue: float
    n_seeds: int

    def verdict(self, alpha):
        """-1 (A lower), +1 (A higher) or 0: the test rejects at ``alpha``
        *and* the interval excludes 0 on that side, so mark and interval
        agree."""
        if self.pvalue > alpha:
            return 0
        if self.high < 0:
            return -1
        if self.low > 0:
            return 1
        return 0


def combine(per_seed, confidence_level=0.95):
    """:class:`Comparison` from per-seed
    :class:`~sklcalib._utils._swap.PairedResamples`: the bootstrap-t test and
    interval of the mean difference (:func:`sklcalib._utils._swap.paired_test`)."""
    res = paired_test(list(per_seed), confidence_level)
    return Comparison(res.difference, res.low, res.high, res.pvalue, len(per_seed))


def compare_over_seeds(y_true, probas_a, probas_b, *, n_resamples, seeds, alpha=0.05):
    """One comparison of two models over several test sets: ``y_true[s]``,
    ``probas_a[s]``, ``probas_b[s]`` and the resampling seed ``seeds[s]`` of
    set ``s`` (the Monte Carlo bench and the tests use it; the report batches
    the same steps over its pairs)."""
    per_seed = []
    for y, pa, pb, seed in zip(y_true, probas_a, probas_b, seeds, strict=True):
        y_idx = encode(y, pa)
        per_seed.append(
            seed_resamples(
                run_residuals(y_idx, pa), run_residuals(y_idx, pb), n_resamples, seed
            )
        )
    return combine(per_seed, 1.0 - alpha)
