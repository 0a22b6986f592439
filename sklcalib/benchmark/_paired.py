"""Paired comparisons of the benchmark's test ECEs, combined over seeds.

The runs of one dataset and seed score the same test rows, so two of them
(two losses, or one net before and after temperature scaling) are compared by
a paired swap test (:mod:`sklcalib._utils._swap`): the difference of the two
plug-in ECEs, each minus its bias at zero gaps (so that two calibrated runs
of different sharpness count as equally calibrated), against the same
statistic on predictions swapped on a random half of the rows. This was
:func:`sklcalib.metrics.compare_calibration`'s test, which now uses a paired
bootstrap-t of a gap-corrected difference: the swap test's size is above
nominal for runs that are equally calibrated but not interchangeable (one
over- and one under-confident, or a net before and after temperature
scaling). Over seeds the
statistic is the mean of the per-seed statistics and every seed's rows are
swapped independently (the null law of a mean of independent swap laws).
The interval of the mean difference of *population* ECEs is the swap
quantile around the observed mean difference, each end moved out by the mean
over seeds of the largest bias of the corresponding plug-in (its bias at zero
gaps).

What is arranged here for the benchmark's many pairs: every run of a dataset
and seed gets the *same* swaps, so that each run's swapped bin sums are one
matrix product, shared by every pair it is in (``tests/test_benchmark_marks.py``
checks the swapped statistics against the metric recomputed on the swapped
predictions). A run's row adds
its count, confidence and residual ``conf - correct`` to its bin, and a swap
moves them to the other run.
"""

from typing import NamedTuple

import numpy as np

from sklcalib._utils._binning import top_label
from sklcalib._utils._swap import (
    binomial_mean_abs_deviation as _mean_abs_deviation,
)
from sklcalib._utils._swap import (
    ece_and_bias,
    swap_products,
    swap_test,
    swapped_statistics,
    top_label_rows,
)
from sklcalib._utils._validation import check_targets

__all__ = ["_mean_abs_deviation"]

#: bins of the benchmark's ECE (the papers' 15 equal-width bins)
N_BINS = 15
#: random swaps per comparison; 499 puts a 5 % test's rejection at exactly
#: 25 of the 500 values (the observed one included)
SWAP_RESAMPLES = 499


class PairedRuns(NamedTuple):
    """One run's top-label rows on its test rows: ``rows`` (the
    :class:`~sklcalib._utils._swap.TopLabelRows` a swap moves), ``ece`` and
    ``bias`` (the largest bias of its plug-in, at zero gaps)."""

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


def swapped_sums(runs, n_resamples, seed, n_bins=N_BINS):
    """Every run's moved bin sums after the same ``n_resamples`` swaps (a
    swap takes the other run's prediction on a random half of the rows;
    ``rng.random((r, n)) < 0.5``):
    ``{key: (n_resamples, width)}``, ``swaps @ rows``."""
    keys = list(runs)
    rows = np.hstack([runs[key].rows.rows for key in keys])
    moved = swap_products(rows, n_resamples, np.random.default_rng(seed))
    width = runs[keys[0]].rows.rows.shape[1]
    return {key: moved[:, j * width : (j + 1) * width] for j, key in enumerate(keys)}


def swap_null(run_a, run_b, moved_a, moved_b):
    """The debiased difference ``(ece - bias)(a) - (ece - bias)(b)`` on every
    swap: a swapped row of A takes B's prediction, so A's bin sums gain
    ``moved_b - moved_a`` and B's lose it."""
    ra, rb = run_a.rows, run_b.rows
    return swapped_statistics(ra.sums, rb.sums, moved_b - moved_a, ra.total, ra.n_bins)


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
    """:class:`Comparison` from per-seed ``(run_a, run_b, null)`` triples.

    The mean over seeds of the per-seed differences, debiased by the mean
    largest biases, against the mean of the per-seed swap nulls (independent
    swaps per seed, so resample ``r`` of the mean is the mean of every
    seed's resample ``r``); p-value ``(1 + #{|T*| >= |T|}) / (1 + R)``,
    interval ``diff -+ q`` with ``q`` the ``confidence_level`` quantile of
    ``|T*|``, the low end moved down by A's mean largest bias and the high
    end up by B's (:func:`sklcalib._utils._swap.swap_test`)."""
    diff = float(np.mean([a.ece - b.ece for a, b, _ in per_seed]))
    null = np.mean([z for _, _, z in per_seed], axis=0)
    res = swap_test(
        diff,
        float(np.mean([a.bias for a, _, _ in per_seed])),
        float(np.mean([b.bias for _, b, _ in per_seed])),
        null,
        confidence_level,
    )
    return Comparison(diff, res.low, res.high, res.pvalue, len(per_seed))


def compare_over_seeds(y_true, probas_a, probas_b, *, n_resamples, seeds, alpha=0.05):
    """One comparison of two models over several test sets: ``y_true[s]``,
    ``probas_a[s]``, ``probas_b[s]`` and the swap seed ``seeds[s]`` of set
    ``s`` (the Monte Carlo bench and the tests use it; the report batches
    the same steps over its pairs)."""
    per_seed = []
    for y, pa, pb, seed in zip(y_true, probas_a, probas_b, seeds, strict=True):
        y_idx = encode(y, pa)
        runs = {"a": run_residuals(y_idx, pa), "b": run_residuals(y_idx, pb)}
        moved = swapped_sums(runs, n_resamples, seed)
        null = swap_null(runs["a"], runs["b"], moved["a"], moved["b"])
        per_seed.append((runs["a"], runs["b"], null))
    return combine(per_seed, 1.0 - alpha)
