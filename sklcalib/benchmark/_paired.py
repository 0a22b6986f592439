"""Paired comparisons of the benchmark's test ECEs, combined over seeds.

The runs of one dataset and seed score the same test rows, so two of them
(two losses, or one net before and after temperature scaling) are compared by
:func:`sklcalib.metrics.compare_calibration`'s paired swap test: under "the
two are equally calibrated" their predictions of a row are interchangeable,
so swapping them on a random half of the rows leaves the law of the
difference of their ECEs unchanged. Over seeds the statistic is the mean of
the per-seed differences and every seed's rows are swapped independently
(the null law of a mean of independent swap laws): a randomisation test of
"the two are equally calibrated in every seed", exact for exchangeable pairs.
The interval of the mean difference of *population* ECEs is
compare_calibration's: the swap quantile around the observed mean, each end
moved out by the mean over seeds of the largest bias of the corresponding
plug-in (its bias at zero gaps).

This is compare_calibration's computation for the top-label 15-bin ECE
(``tests/test_benchmark_marks.py`` checks that a seed's swapped differences
are those of its ``swap_differences`` on the same draws, and that one seed's
p-value is compare_calibration's), arranged for the benchmark's many pairs:
every run of a dataset and seed gets the *same* swaps, so that each run's
swapped bin sums are one matrix product, shared by every pair it is in (the
package's import rules keep the benchmark off the metrics' private
modules). A top-label ECE is ``sum_b |sum_{i in b} (conf_i - correct_i)| /
n``: a run's row adds its residual to one bin, and a swap moves it to the
other run.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import gammaln

from sklcalib._utils._binning import bin_index, top_label, uniform_edges
from sklcalib._utils._validation import check_targets

#: bins of the benchmark's ECE (the papers' 15 equal-width bins)
N_BINS = 15
#: random swaps per comparison; 499 puts a 5 % test's rejection at exactly
#: 25 of the 500 values (the observed one included)
SWAP_RESAMPLES = 499
_CHUNK = 1 << 22  # entries of a (swaps x rows) block


class PairedRuns(NamedTuple):
    """One run's top-label residuals on its test rows: ``bins`` (n,) its bin
    per row, ``residual`` (n,) ``conf - correct``, ``ece`` and ``bias``
    (the largest bias of its plug-in, at zero gaps)."""

    bins: np.ndarray
    residual: np.ndarray
    ece: float
    bias: float


def _mean_abs_deviation(n, p):
    """``E|X / n - p|`` for ``X ~ Binomial(n, p)``, exactly (de Moivre:
    ``E|X - np| = 2 m C(n, m) p^m (1 - p)^(n - m + 1)``, ``m = floor(np) + 1``)."""
    n = np.asarray(n, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    inner = (n > 0) & (p > 0.0) & (p < 1.0)
    n_, p_ = np.where(inner, n, 2.0), np.where(inner, p, 0.5)
    m = np.floor(n_ * p_) + 1.0
    log = (
        np.log(2.0 * m)
        + gammaln(n_ + 1.0)
        - gammaln(m + 1.0)
        - gammaln(n_ - m + 1.0)
        + m * np.log(p_)
        + (n_ - m + 1.0) * np.log1p(-p_)
    )
    return np.where(inner, np.exp(log) / n_, 0.0)


def run_residuals(y_idx, proba, n_bins=N_BINS):
    """:class:`PairedRuns` of one run (``y_idx``: the true column of every row)."""
    conf, correct = top_label(np.asarray(proba, dtype=np.float64), y_idx)
    bins = bin_index(conf, uniform_edges(n_bins))
    residual = conf - correct
    n = conf.shape[0]
    counts = np.bincount(bins, minlength=n_bins).astype(np.float64)
    ece = float(np.abs(np.bincount(bins, residual, n_bins)).sum() / n)
    with np.errstate(invalid="ignore", divide="ignore"):
        pbar = np.where(counts > 0, np.bincount(bins, conf, n_bins) / counts, 0.0)
    # the plug-in's bias when every bin is calibrated: the most it can be
    bias = float(np.dot(counts / n, _mean_abs_deviation(counts, pbar)))
    return PairedRuns(bins, residual, ece, bias)


def encode(y_true, proba):
    """The true column of every row, validated as the metrics do."""
    return check_targets(y_true, proba)[0]


def swapped_sums(runs, n_resamples, seed, n_bins=N_BINS):
    """Every run's per-bin residual sums after the same ``n_resamples``
    swaps (a swap takes the other run's prediction on a random half of the
    rows; ``rng.random((r, n)) < 0.5`` as compare_calibration draws them):
    ``{key: (n_resamples, n_bins)}``, the *moved* part ``swaps @ rows``."""
    keys = list(runs)
    n = runs[keys[0]].bins.shape[0]
    # (n, n_bins * n_runs): a run's row adds its residual to its bin
    rows = np.zeros((n, n_bins * len(keys)))
    at = np.arange(n)
    for j, key in enumerate(keys):
        rows[at, j * n_bins + runs[key].bins] = runs[key].residual
    rng = np.random.default_rng(seed)
    moved = np.empty((n_resamples, rows.shape[1]))
    step = max(1, _CHUNK // max(n, 1))
    for start in range(0, n_resamples, step):
        m = min(step, n_resamples - start)
        swap = (rng.random((m, n)) < 0.5).astype(np.float64)
        moved[start : start + m] = swap @ rows
    return {key: moved[:, j * n_bins : (j + 1) * n_bins] for j, key in enumerate(keys)}


def _totals(run, n_bins=N_BINS):
    return np.bincount(run.bins, run.residual, n_bins)


def swap_null(run_a, run_b, moved_a, moved_b):
    """``ece(a) - ece(b)`` on every swap: a swapped row of A takes B's
    residual, so A's bin sums gain ``moved_b - moved_a`` and B's lose it."""
    n = run_a.bins.shape[0]
    shift = moved_b - moved_a
    a = np.abs(_totals(run_a) + shift).sum(axis=1) / n
    b = np.abs(_totals(run_b) - shift).sum(axis=1) / n
    return a - b


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

    The mean over seeds of the per-seed differences against the mean of the
    per-seed swap nulls (independent swaps per seed, so resample ``r`` of
    the mean is the mean of every seed's resample ``r``); p-value
    ``(1 + #{|T*| >= |T|}) / (1 + R)``, interval ``T -+ q`` with ``q`` the
    ``confidence_level`` quantile of ``|T*|``, the low end moved down by A's
    mean largest bias and the high end up by B's."""
    diff = float(np.mean([a.ece - b.ece for a, b, _ in per_seed]))
    null = np.mean([z for _, _, z in per_seed], axis=0)
    r = null.shape[0]
    pvalue = (1.0 + np.count_nonzero(np.abs(null) >= abs(diff) - 1e-12)) / (1.0 + r)
    half = float(np.quantile(np.abs(null), confidence_level))
    low = diff - half - float(np.mean([a.bias for a, _, _ in per_seed]))
    high = diff + half + float(np.mean([b.bias for _, b, _ in per_seed]))
    return Comparison(diff, low, high, float(min(pvalue, 1.0)), len(per_seed))


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
