"""Paired comparisons of two models' top-label ECEs on the same rows.

:func:`sklcalib.metrics.compare_calibration` and the benchmark's paired
marks (:mod:`sklcalib.benchmark._paired`, over several test sets) share one
test: the paired bootstrap-t of the gap-corrected difference
(:func:`paired_resamples`, :func:`paired_test`; notes in the second half).

The first half holds what it is built from: a model's rows as bin sums that a
resample (or a random swap, :func:`swap_products`, the randomisation test of
the other metrics) moves with one matrix product, and every bin's *zero-gap
bias*. The plug-in ECE is biased upwards by the noise of every bin's mean
outcome, folded by the absolute value; given a bin's rows (``n_b`` of them,
mean score ``pbar_b``) the bin's mean outcome is binomial at zero gap, so the
bin term's bias there is ``E|X / n_b - pbar_b|`` with ``X ~ Binomial(n_b,
pbar_b)``, computed exactly (:func:`binomial_mean_abs_deviation`; with
weights ``n_b`` is Kish's effective number of rows). It depends on the bins'
counts and mean scores only, not on the outcomes. It is the largest bias of
the term: the bias falls as the bin's gap grows beyond the noise.

Why not a swap test, which is exact for "A and B are exchangeable on every
row" (Fisher 1935) and which the comparison and the benchmark's marks used
before: two models can have equal population ECEs without being
exchangeable (one over- and one under-confident, two temperatures of the
same scores), and then the swap law was far narrower than the difference's
own law (rejection at nominal 5 %: 11-13 % for an over- against an
under-confident model, 32 % for two temperatures of the same scores,
24-27 % for a sharp net against its under-confident temperature, 31-48 % at
2 % prevalence; benchmarks/bench_compare.py).
"""

from typing import NamedTuple

import numpy as np
from scipy.special import erf, gammaln, ndtr

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
    residual ``conf - correct``; ``total`` the total weight, ``n_bins``;
    per row its ``bin``, unweighted ``resid`` and ``weight`` (None: all 1),
    for the standard error (:func:`paired_bootstraps`)."""

    rows: np.ndarray
    total: float
    n_bins: int
    bin: np.ndarray
    resid: np.ndarray
    weight: object = None

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
    w = None
    if sample_weight is None:
        cols = (np.ones(n), conf, conf - correct)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        cols = (w, w * w, w * conf, w * (conf - correct))
    rows = np.zeros((n, len(cols) * n_bins))
    at = np.arange(n)
    for j, col in enumerate(cols):
        rows[at, j * n_bins + bins] = col
    return TopLabelRows(
        rows, float(rows[:, :n_bins].sum()), n_bins, bins, conf - correct, w
    )


def ece_and_bias(sums, total, n_bins, per_bin=False):
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
    bias = mass / total * binomial_mean_abs_deviation(trials, pbar)
    return ece, (bias if per_bin else bias.sum(axis=-1))


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


class SwapTest(NamedTuple):
    """``difference`` (of the plug-ins), ``statistic`` (the gap-corrected
    difference the test uses), ``low``, ``high`` and ``pvalue``."""

    difference: float
    statistic: float
    low: float
    high: float
    pvalue: float


# --- the paired bootstrap-t of the gap-corrected difference ----------------
#
# The law of the difference itself: rows drawn jointly for both models (a
# paired bootstrap) from the rows with every bin's gap shrunk towards 0
# (shrunk_rows), the statistic over its standard error, centred at the
# resamples' mean (the bootstrap-t, Efron & Tibshirani 1993, 12.5 and 16.4).

#: entries of a (resamples x rows) block in the per-row pass
STUDENT_CHUNK = 1 << 20


def _bin_noise(sums, n_bins):
    """Every bin's mass, residual sum ``G``, noise sd ``s`` at zero gap
    (binomial at the bin's mean confidence; with weights, from the squared
    weights), whether it has noise (``live``), its standardised gap ``z =
    G / s`` and its pooled shrunk standardised gap ``zs``, from bin sums ``sums``
    (..., k * n_bins) of :class:`TopLabelRows` columns; and the pooled
    factor ``phi`` (...,) below.

    The shrinkage pools the model's ``B`` live bins (Efron & Morris 1975):
    their common gap per row ``mu = sum G / sum n`` (noise sd ``sqrt(sum
    s^2) / sum n``, standardised ``Z``) is shrunk towards 0 as a single bin
    would be, by ``(sqrt(Z^2 + 1) - 1) / |Z|``, and every bin's deviation
    from it, ``d = (G - n mu) / s``, by the positive-part James-Stein factor
    ``phi = max(0, 1 - (B - 1) / sum d^2)``: ``zs = (n mus) / s + phi d``.
    A calibrated model (``Z`` about 1, ``sum d^2`` near ``B - 1``) has every
    gap shrunk to about 0 and its noise corrected nearly in full; a model
    that errs in one direction keeps its common gap, one whose bins differ
    keeps their spread. No bin can tell this on its own: shrunk bin by bin
    (``sign(G) (sqrt(G^2 + s^2) - s)``, the earlier version), a calibrated
    bin's typical gap of 0.8 ``s`` kept 0.43 of its bias, the calibrated
    model's corrected ECE on 500 rows averaged 0.013 where its truth is 0,
    and the test found the 0.064 difference between it and an over-confident
    model 43 % of the time (benchmarks/bench_compare.py, ``--part moments``
    and the user guide's table). The common gap is weighted by the rows:
    averaged over the bins' standardised gaps instead, the many small bins
    of a model at 2 % prevalence hid its top bin's gap, which was then
    corrected in full."""
    k = sums.shape[-1] // n_bins
    mass = sums[..., :n_bins]
    conf = sums[..., (k - 2) * n_bins : (k - 1) * n_bins]
    resid = sums[..., (k - 1) * n_bins :]
    sq = sums[..., n_bins : 2 * n_bins] if k == 4 else mass
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(mass > 0, mass, 1.0)
        pbar = np.clip(np.where(mass > 0, conf / safe, 0.0), 0.0, 1.0)
        sd = np.sqrt(np.maximum(sq, 0.0) * pbar * (1.0 - pbar))
        live = sd > 0
        sd1 = np.where(live, sd, 1.0)
        z = np.where(live, resid / sd1, 0.0)
        b = live.sum(axis=-1).astype(np.float64)
        g_tot = np.where(live, resid, 0.0).sum(axis=-1)
        n_tot = np.where(live, mass, 0.0).sum(axis=-1)
        s2_tot = np.where(live, sd1 * sd1, 0.0).sum(axis=-1)
        mu = np.where(n_tot > 0, g_tot / np.where(n_tot > 0, n_tot, 1.0), 0.0)
        z2 = np.where(
            s2_tot > 0, g_tot * g_tot / np.where(s2_tot > 0, s2_tot, 1.0), 0.0
        )
        # mu shrunk as the earlier rule shrank a bin: |Z| -> sqrt(Z^2 + 1) - 1
        mus = mu * np.where(
            z2 > 0, (np.sqrt(z2 + 1.0) - 1.0) / np.sqrt(np.where(z2 > 0, z2, 1.0)), 0.0
        )
        dev = np.where(live, (resid - mass * mu[..., None]) / sd1, 0.0)
        spread = (dev * dev).sum(axis=-1)
        pos = spread > 0
        phi = np.where(
            pos, np.maximum(1.0 - (b - 1.0) / np.where(pos, spread, 1.0), 0.0), 0.0
        )
        zs = np.where(
            live, (mus[..., None] * mass + phi[..., None] * dev * sd1) / sd1, 0.0
        )
    return mass, resid, sd1, live, z, zs, phi


def gap_corrected(sums, total, n_bins):
    """The plug-in ECE, its zero-gap bias, the bias correction at the
    observed gaps and every bin's slope, from bin sums ``sums`` (...,
    k * n_bins) of :class:`TopLabelRows` columns.

    A bin's plug-in term ``|G| / total`` (``G`` its residual sum, noise sd
    ``s`` at zero gap: binomial at the bin's mean confidence) is biased by
    its zero-gap bias ``b0`` when its gap is 0 and by nearly nothing once
    the gap is a few ``s``: over-correcting a miscalibrated model by ``b0``
    shifted the statistic by 0.35 standard errors for an over- against an
    under-confident model of equal ECE (1.2 for a sharp net against its
    under-confident temperature). The correction here is the folded
    normal's bias at the gap shrunk towards 0 (``zs s``, pooled over the
    model's bins, :func:`_bin_noise`), ``b0 rho(r)``, ``r = |zs|``,
    ``rho(r) = exp(-r^2 / 2) - r sqrt(2 pi) Phi(-r)`` (the bias at gap
    ``r s`` over the bias at 0): ``b0`` for a calibrated model, vanishing
    for clear gaps.

    The slope is ``d(term * total) / dG``: ``erf(G / (s sqrt 2))`` (the
    folded normal's mean slope, the sign smoothed; its mean square over a
    zero gap's noise is 1/3, against ``1 - 2 / pi`` for ``|G|``'s variance)
    plus the correction's at a fixed pooled mean and spread, ``b0 total
    sqrt(2 pi) Phi(-r) sign(zs) phi / s``; a row's contribution to the
    statistic's delta-method variance is its residual times its bin's
    slope."""
    ece, bias0 = ece_and_bias(sums, total, n_bins, per_bin=True)
    _, resid, sd1, live, z, zs, phi = _bin_noise(sums, n_bins)
    r = np.abs(zs)
    tail = ndtr(-r)
    rho = np.exp(-0.5 * r * r) - r * np.sqrt(2.0 * np.pi) * tail
    correction = np.where(live, bias0 * rho, 0.0)
    # -d(b0 total rho(|zs|)) / dG at fixed pooled mean and spread: the
    # shrinkage's own noise left to the bootstrap-t (with it in the delta
    # method, the standard error overstated the statistic's by 15 % on 500
    # rows and the test lost power)
    slope_c = bias0 * total * np.sqrt(2.0 * np.pi) * tail * np.sign(zs) * phi[..., None]
    slope = np.where(live, erf(z / np.sqrt(2.0)) + slope_c / sd1, np.sign(resid))
    return ece, bias0.sum(axis=-1), correction.sum(axis=-1), slope


def _bootstrap_block(ra, rb, counts):
    """Gap-corrected difference and its variance on paired resamples
    (``counts``: (m, n) multiplicities of the rows, summing to ``n``)."""
    n_bins, total = ra.n_bins, ra.total
    sums_a, sums_b = counts @ ra.rows, counts @ rb.rows
    w = ra.weight
    if w is not None:  # every resample rescaled to the data's total weight
        scale = total / (counts @ w)
        sums_a, sums_b = sums_a * scale[:, None], sums_b * scale[:, None]
        counts = counts * scale[:, None]
    ea, _, ca, sa = gap_corrected(sums_a, total, n_bins)
    eb, _, cb, sb = gap_corrected(sums_b, total, n_bins)
    u = np.take(sa, ra.bin, axis=1) * ra.resid - np.take(sb, rb.bin, axis=1) * rb.resid
    ww = counts if w is None else counts * w
    ubar = (ww * u).sum(axis=1, keepdims=True) / total
    var = (counts * (1.0 if w is None else w * w) * (u - ubar) ** 2).sum(axis=1)
    n = counts.shape[1]
    return (ea - ca) - (eb - cb), var / (total * total) * n / max(n - 1, 1)


def shrunk_rows(rows):
    """The :class:`TopLabelRows` ``rows`` with every bin's residuals moved
    so that the bin's gap is shrunk bin by bin: ``G`` (the residual sum,
    noise sd ``s`` at zero gap) becomes ``sign(G) (sqrt(G^2 + s^2) - s)``,
    every row of the bin moved alike (its weight times the shift per unit
    weight).

    The paired bootstrap draws from these rows. Drawn from the rows as they
    are, a calibrated bin's resampled gap is spread around its observed
    ``G`` (about ``0.8 s`` from 0), not around 0: its folded term varied
    about 1.7 times as much as the truth's, and the test was conservative
    (0.5-1.8 % at nominal 5 % for two calibrated models; power 29 % against
    the 0.064 difference between a calibrated and an over-confident model
    on 500 rows; benchmarks/bench_compare.py). Shrunk, a calibrated bin is
    resampled near zero gap and a clear gap stays where it is; the bins'
    spread, the rows' pairing between the two models and the counts' noise
    are kept. Not shrunk with the statistic's pooled rule
    (:func:`_bin_noise`), which takes a model's gaps within their noise to 0
    together: resampled at zero gap, such bins vary less than they do at
    their true gaps, and the test rejected an over- against an
    under-confident model at 2 % prevalence 8.0-8.6 % of the time at
    nominal 5 % (1000 replications of 500 rows; 5.7 % with these rows)."""
    nb, sums = rows.n_bins, rows.sums
    k = sums.shape[0] // nb
    mass = sums[:nb]
    conf = sums[(k - 2) * nb : (k - 1) * nb]
    gap = sums[(k - 1) * nb :]
    sq = sums[nb : 2 * nb] if k == 4 else mass
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(mass > 0, mass, 1.0)
        pbar = np.clip(np.where(mass > 0, conf / safe, 0.0), 0.0, 1.0)
        sd = np.sqrt(np.maximum(sq, 0.0) * pbar * (1.0 - pbar))
        shrunk = np.where(
            sd > 0, np.sign(gap) * (np.sqrt(gap * gap + sd * sd) - sd), gap
        )
        shift = np.where(mass > 0, (gap - shrunk) / safe, 0.0)[rows.bin]
    moved = rows.rows.copy()
    at = np.arange(rows.bin.shape[0])
    weight = 1.0 if rows.weight is None else rows.weight
    moved[at, (k - 1) * nb + rows.bin] -= weight * shift
    return rows._replace(rows=moved, resid=rows.resid - shift)


def paired_bootstraps(ra, rb, n_resamples, rng):
    """Gap-corrected difference and its variance on ``n_resamples`` paired
    bootstrap resamples (rows drawn jointly for both models)."""
    n = ra.bin.shape[0]
    stat, var = np.empty(n_resamples), np.empty(n_resamples)
    step = max(1, STUDENT_CHUNK // max(n, 1))
    for start in range(0, n_resamples, step):
        m = min(step, n_resamples - start)
        idx = rng.integers(0, n, size=(m, n)) + n * np.arange(m)[:, None]
        counts = np.bincount(idx.ravel(), minlength=m * n).reshape(m, n)
        block = _bootstrap_block(ra, rb, counts.astype(np.float64))
        stat[start : start + m], var[start : start + m] = block
    return stat, var


def observed_statistic(ra, rb):
    """``(statistic, variance)`` of the pair on its own rows: the
    gap-corrected difference and its delta-method variance."""
    counts = np.ones((1, ra.bin.shape[0]))
    stat, var = _bootstrap_block(ra, rb, counts)
    return float(stat[0]), float(var[0])


def _standardised(stat, var):
    """``stat / sqrt(var)``; a zero variance gives 0 for a zero statistic
    (identical predictions) and an infinite ratio otherwise."""
    stat, var = np.asarray(stat, dtype=np.float64), np.asarray(var, dtype=np.float64)
    edge = np.where(np.abs(stat) > 1e-15, np.copysign(np.inf, stat), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(var > 1e-24, stat / np.sqrt(np.maximum(var, 0.0)), edge)


def bootstrap_t_test(
    difference, statistic, variance, bias_a, bias_b, null, null_variance, level
):
    """p-value and interval of an ECE difference ``difference`` of plug-ins:
    its gap-corrected ``statistic`` over its standard error ``sqrt(variance)``,
    against the paired resamples' ``(T* - mean T*) / se*`` (``null`` = ``T* -
    mean T*``, ``null_variance`` = ``se*^2``; resamples of the rows with
    shrunk gaps, :func:`shrunk_rows`): the bootstrap-t law of ``(T - Delta) /
    se``, symmetrised (Efron & Tibshirani 1993, 12.5).

    p-value ``(1 + #{|t*| >= |t|}) / (1 + R)``. Interval ``statistic -+ (q se
    + (bias_a + bias_b) / 3)`` within ``[-1, 1]``, ``q`` the ``level``
    quantile of ``|t*|``,
    ``bias_a``, ``bias_b`` the plug-ins' zero-gap biases: a bin's corrected
    term keeps a bias between -0.32 and +0.32 of its zero-gap bias (normal
    approximation: +0.32 at gap 0, -0.32 near one noise sd), which the
    bootstrap does not see. It holds ``statistic -+ q se``, so it excludes 0
    only when the test rejects at ``1 - level``, and is widened to hold
    ``difference`` where needed."""
    t = float(_standardised(statistic, variance))
    t_null = np.abs(_standardised(null, null_variance))
    r = t_null.shape[0]
    pvalue = (1.0 + np.count_nonzero(t_null >= abs(t) - 1e-9)) / (1.0 + r)
    se = float(np.sqrt(max(variance, 0.0)))
    if se <= 1e-12:
        # every row alike in both models (e.g. a few rows, all right): the
        # rows show no noise, which does not make the outcomes certain
        pvalue = 1.0
    # resamples with no spread but a shifted statistic (a handful of rows)
    # give infinite ratios, kept finite for the interpolation
    q = float(np.quantile(np.minimum(t_null, 1e12), level))
    half = q * se if se > 1e-12 else 0.0
    half += (bias_a + bias_b) / 3.0
    if se <= 1e-12 and abs(statistic) > 1e-15:
        half = 2.0  # no noise seen: the whole range
    # a difference of two ECEs lies in [-1, 1]
    return SwapTest(
        float(difference),
        float(statistic),
        float(max(min(statistic - half, difference), -1.0)),
        float(min(max(statistic + half, difference), 1.0)),
        float(min(pvalue, 1.0)),
    )


class PairedResamples(NamedTuple):
    """One test set's paired bootstrap of two models' top-label ECEs: the
    plug-in ``difference``, the gap-corrected ``statistic`` and its
    delta-method ``variance``, the zero-gap biases ``bias_a``, ``bias_b``, and
    the statistic ``null`` and variance ``null_variance`` on every resample
    (of the rows with shrunk gaps, :func:`shrunk_rows`)."""

    difference: float
    statistic: float
    variance: float
    bias_a: float
    bias_b: float
    null: np.ndarray
    null_variance: np.ndarray


def paired_resamples(ra, rb, n_resamples, rng):
    """:class:`PairedResamples` of the :class:`TopLabelRows` ``ra``, ``rb`` of
    two models on the same rows (``n_resamples`` paired resamples drawn with
    ``rng``)."""
    ece_a, bias_a = ece_and_bias(ra.sums, ra.total, ra.n_bins)
    ece_b, bias_b = ece_and_bias(rb.sums, rb.total, rb.n_bins)
    statistic, variance = observed_statistic(ra, rb)
    null, null_variance = paired_bootstraps(
        shrunk_rows(ra), shrunk_rows(rb), n_resamples, rng
    )
    return PairedResamples(
        float(ece_a - ece_b),
        statistic,
        variance,
        float(bias_a),
        float(bias_b),
        null,
        null_variance,
    )


def paired_test(pieces, level):
    """The bootstrap-t test (:func:`bootstrap_t_test`) of the mean over test
    sets of the ECE differences, from every set's :class:`PairedResamples`
    (one set: a single comparison). The sets are independent, each resampled
    on its own: resample ``r`` of the mean is the mean of every set's
    resample ``r``, its variance the sum of theirs over ``S^2``."""
    s = float(len(pieces))
    mean = lambda field: sum(getattr(p, field) for p in pieces) / s  # noqa: E731
    statistic = float(mean("statistic"))
    null = mean("null")
    return bootstrap_t_test(
        float(mean("difference")),
        statistic,
        float(mean("variance")) / s,
        float(mean("bias_a")),
        float(mean("bias_b")),
        null - null.mean(),
        mean("null_variance") / s,
        level,
    )
