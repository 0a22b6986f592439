"""The paired swap test of two models' top-label ECEs on the same rows: one
implementation for :func:`sklcalib.metrics.compare_calibration` and the
benchmark's marks (:mod:`sklcalib.benchmark._paired`).

Swapping the two models' predictions on a random half of the rows is a
paired randomisation test (Fisher 1935): exact for "A and B are
exchangeable on every row". Two models can be *equally calibrated* without
being exchangeable, though: the plug-in ECE is biased upwards by the noise of
every bin's mean outcome, folded by the absolute value, and that bias grows
with the number of bins a model spreads its rows over, so a sharp calibrated
model scores higher than a blunt calibrated one. The raw difference of the
plug-ins is then off-centre under "equal population ECE", and its swap test
rejected 41-44 % of the time at nominal 5 % for a constant 1/2 against a
sharper calibrated model. The statistic here is the difference of the plug-ins
each minus its *largest* bias, its bias at zero gaps:

* given a bin's rows (``n_b`` of them, mean score ``pbar_b``) the bin's mean
  outcome is binomial, so the bin term's bias at zero gap is ``E|X / n_b -
  pbar_b|`` with ``X ~ Binomial(n_b, pbar_b)``, computed exactly
  (:func:`binomial_mean_abs_deviation`); with weights ``n_b`` is Kish's
  effective number of rows;
* it depends on the bins' counts and mean scores only, not on the outcomes,
  so it adds no noise to the statistic (a correction at gaps estimated from
  the outcomes, shrunk towards their mean as in the intervals, was tried:
  its noise, anti-correlated with the plug-in's, inflated the size to
  18-29 % for two equal calibrated models, 100 replications);
* it is exact when both models are calibrated, whatever their sharpness;
  a miscalibrated model's bias is smaller (it falls as its gaps grow beyond
  the noise), so the statistic over-corrects it by at most its zero-gap
  bias: nearly the same for two equally sharp models (the correction cancels
  in the difference), a bounded distortion otherwise (measured in the user
  guide).

The null distribution is that of the same statistic on the swapped
predictions (every swapped model's own zero-gap bias subtracted), so the test
stays exact for exchangeable pairs (a swap and its complement give opposite
values: the null is symmetric about 0), and its spread carries the variation
of the correction between swaps. The interval of the difference of
population ECEs is conservative: the plug-in difference plus or minus the
swap quantile, the low end moved down by A's largest bias and the high end up
by B's. It holds the debiased difference plus or minus the quantile, so it
excludes 0 only when the test rejects; the test can reject while the
interval still holds 0.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import gammaln

#: entries of a (swaps x rows) block of swap indicators
SWAP_CHUNK = 1 << 22


def binomial_mean_abs_deviation(n, p):
    """``E|X / n - p|`` for ``X ~ Binomial(n, p)``, exactly and vectorised
    (de Moivre: ``E|X - np| = 2 m C(n, m) p^m (1 - p)^(n - m + 1)``, ``m =
    floor(np) + 1``); 0 where ``n = 0`` or ``p`` is 0 or 1."""
    n, p = np.broadcast_arrays(
        np.asarray(n, dtype=np.float64), np.asarray(p, dtype=np.float64)
    )
    inner = (n > 0) & (p > 0.0) & (p < 1.0)
    out = np.zeros(n.shape)
    # only where defined: a swap's empty bins are most of its cells
    n_, p_ = n[inner], p[inner]
    m = np.floor(n_ * p_) + 1.0
    log = (
        np.log(2.0 * m)
        + gammaln(n_ + 1.0)
        - gammaln(m + 1.0)
        - gammaln(n_ - m + 1.0)
        + m * np.log(p_)
        + (n_ - m + 1.0) * np.log1p(-p_)
    )
    out[inner] = np.exp(log) / n_
    return out


class TopLabelRows(NamedTuple):
    """A model's top-label rows as sums a swap moves: ``rows`` (n, k *
    n_bins), every row one-hot in its bin with its weight, its squared
    weight (with ``sample_weight`` only), weighted confidence and weighted
    residual ``conf - correct``; ``total`` the total weight, ``n_bins``."""

    rows: np.ndarray
    total: float
    n_bins: int

    @property
    def sums(self):
        return self.rows.sum(axis=0)


def top_label_rows(conf, correct, n_bins, sample_weight=None):
    """:class:`TopLabelRows` of the ``n_bins`` uniform-bin top-label ECE of
    confidences ``conf`` and 0/1 ``correct`` (bins as the metric's)."""
    from ._binning import bin_index, uniform_edges

    conf = np.asarray(conf, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    bins = bin_index(conf, uniform_edges(n_bins))
    n = conf.shape[0]
    if sample_weight is None:
        cols = (np.ones(n), conf, conf - correct)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        cols = (w, w * w, w * conf, w * (conf - correct))
    rows = np.zeros((n, len(cols) * n_bins))
    at = np.arange(n)
    for j, col in enumerate(cols):
        rows[at, j * n_bins + bins] = col
    return TopLabelRows(rows, float(rows[:, :n_bins].sum()), n_bins)


def ece_and_bias(sums, total, n_bins):
    """The plug-in ECE and its largest bias (at zero gaps) from bin sums
    ``sums`` (..., k * n_bins) of :class:`TopLabelRows` columns."""
    k = sums.shape[-1] // n_bins
    mass = sums[..., :n_bins]
    conf = sums[..., (k - 2) * n_bins : (k - 1) * n_bins]
    resid = sums[..., (k - 1) * n_bins :]
    ece = np.abs(resid).sum(axis=-1) / total
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(mass > 0, mass, 1.0)
        pbar = np.clip(np.where(mass > 0, conf / safe, 0.0), 0.0, 1.0)
        if k == 4:  # Kish's effective number of rows
            sq = sums[..., n_bins : 2 * n_bins]
            n_eff = np.where(sq > 0, mass * mass / np.where(sq > 0, sq, 1.0), 0.0)
        else:
            n_eff = mass
    trials = np.where(mass > 0, np.maximum(np.rint(n_eff), 1.0), 0.0)
    bias = (mass / total * binomial_mean_abs_deviation(trials, pbar)).sum(axis=-1)
    return ece, bias


def swap_products(rows, n_resamples, rng):
    """``swaps @ rows`` for ``n_resamples`` swaps of the ``n`` rows of
    ``rows`` (n, k), each row swapped with probability 1/2 (``rng.random((m,
    n)) < 0.5`` in blocks): the (n_resamples, k) moved sums."""
    n = rows.shape[0]
    out = np.empty((n_resamples, rows.shape[1]))
    step = max(1, SWAP_CHUNK // max(n, 1))
    for start in range(0, n_resamples, step):
        m = min(step, n_resamples - start)
        swap = (rng.random((m, n)) < 0.5).astype(np.float64)
        out[start : start + m] = swap @ rows
    return out


def swapped_statistics(sums_a, sums_b, shift, total, n_bins):
    """The debiased difference ``(ece - bias)(a*) - (ece - bias)(b*)`` of
    every swap, ``shift`` (R, k * n_bins) being the swapped rows' ``B - A``
    sums: a swapped row of A takes B's prediction, so A's sums gain
    ``shift`` and B's lose it."""
    ea, ba = ece_and_bias(sums_a + shift, total, n_bins)
    eb, bb = ece_and_bias(sums_b - shift, total, n_bins)
    return (ea - ba) - (eb - bb)


class SwapTest(NamedTuple):
    """``difference`` (of the plug-ins), ``statistic`` (the debiased
    difference the test uses), ``low``, ``high`` and ``pvalue``."""

    difference: float
    statistic: float
    low: float
    high: float
    pvalue: float


def swap_test(difference, bias_a, bias_b, null, level):
    """p-value and interval of a (possibly averaged over test sets) ECE
    difference with the largest biases ``bias_a``, ``bias_b`` and the swap
    null ``null`` of the debiased difference.

    ``statistic = difference - (bias_a - bias_b)``; p-value ``(1 + #{|null|
    >= |statistic|}) / (1 + R)``; interval ``[difference - bias_a - q,
    difference + bias_b + q]`` with ``q`` the ``level`` quantile of
    ``|null|``: it holds ``statistic -+ q``, so it excludes 0 only when the
    test rejects at ``1 - level``."""
    statistic = float(difference - (bias_a - bias_b))
    r = null.shape[0]
    pvalue = (1.0 + np.count_nonzero(np.abs(null) >= abs(statistic) - 1e-12)) / (
        1.0 + r
    )
    half = float(np.quantile(np.abs(null), level))
    low = difference - bias_a - half
    high = difference + bias_b + half
    return SwapTest(
        float(difference), statistic, float(low), float(high), float(min(pvalue, 1.0))
    )
