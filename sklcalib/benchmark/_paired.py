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
    binomial_mean_abs_deviation as _mean_abs_deviation,
)
from sklcalib._utils._swap import (
    ece_and_bias,
    paired_resamples,
    paired_test,
    top_label_rows,
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
