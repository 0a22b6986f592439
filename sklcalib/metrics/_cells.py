"""Per-cell (bin) summaries of a binned calibration error and their
simulation: the engine of :func:`~sklcalib.metrics.calibration_error_interval`
and of :func:`~sklcalib.metrics.compare_calibration`'s bias bounds.

Given the rows in a bin, the bin's mean outcome is a binomial proportion
around the bin's true accuracy; a binned error is a function of these
proportions, so its law is simulated per cell, at a cost independent of the
number of rows.
"""

import numpy as np

from sklcalib._utils._binning import bin_index, quantile_groups, top_label
from sklcalib._utils._binning import uniform_edges as _uniform_edges

from ._debiased import debiased_bins


class _Cells:
    """Per-cell (bin, or class and bin) summaries: ``group`` (the class of a
    classwise cell, else 0), ``share`` (the cell's fraction of its group's
    weight), ``n`` (its rows, or Kish's effective number with weights),
    ``pbar`` and ``ybar`` (mean score and mean outcome)."""

    def __init__(self, group, share, n, pbar, ybar, n_groups):
        keep = n > 0
        self.group = group[keep]
        self.share = share[keep]
        self.n = n[keep]
        self.pbar = np.clip(pbar[keep], 0.0, 1.0)
        self.ybar = np.clip(ybar[keep], 0.0, 1.0)
        self.n_groups = n_groups
        # (n_cells, n_groups) 0/1: sums per group as one matrix product
        self.indicator = (self.group[:, None] == np.arange(n_groups)).astype(float)


def _sums(idx, n_cells, score, outcome, w):
    """Per-cell rows, weight, weighted score and outcome sums, Kish size."""
    rows = np.bincount(idx, minlength=n_cells).astype(np.float64)
    if w is None:
        mass = rows
        s = np.bincount(idx, weights=score, minlength=n_cells)
        o = np.bincount(idx, weights=outcome, minlength=n_cells)
        n_eff = rows
    else:
        mass = np.bincount(idx, weights=w, minlength=n_cells)
        s = np.bincount(idx, weights=score * w, minlength=n_cells)
        o = np.bincount(idx, weights=outcome * w, minlength=n_cells)
        sq = np.bincount(idx, weights=w * w, minlength=n_cells)
        with np.errstate(divide="ignore", invalid="ignore"):
            n_eff = np.where(sq > 0, mass * mass / sq, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pbar = np.where(mass > 0, s / np.where(mass > 0, mass, 1.0), 0.0)
        ybar = np.where(mass > 0, o / np.where(mass > 0, mass, 1.0), 0.0)
    n_eff = np.where(mass > 0, n_eff, 0.0)
    return mass, n_eff, pbar, ybar


def _binned_cells(metric, y_idx, p, w, n_bins):
    """Cells of the L1/L2 binned errors (uniform or equal-mass bins)."""
    if metric in ("ece", "adaptive_ece"):
        conf, correct = top_label(p, y_idx)
        conf = conf.astype(np.float64)
        if metric == "ece":
            idx = bin_index(conf, _uniform_edges(n_bins))
        else:
            idx = quantile_groups(conf, n_bins)[0]
        mass, n, pbar, ybar = _sums(idx, n_bins, conf, correct.astype(float), w)
        total = mass.sum()
        return _Cells(np.zeros(n_bins, int), mass / total, n, pbar, ybar, 1)
    columns = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    columns = columns.astype(np.float64)
    n_classes = columns.shape[1]
    edges = _uniform_edges(n_bins)
    groups, shares, ns, pbars, ybars = [], [], [], [], []
    # two columns mirror each other (same gaps, mirrored bins): simulating both
    # as independent would halve the variance of their mean; take one
    classes = [1] if n_classes == 2 else range(n_classes)
    for k in classes:
        idx = bin_index(columns[:, k], edges)
        mass, n, pbar, ybar = _sums(
            idx, n_bins, columns[:, k], (y_idx == k).astype(float), w
        )
        groups.append(np.full(n_bins, len(groups)))
        shares.append(mass / mass.sum())
        ns.append(n)
        pbars.append(pbar)
        ybars.append(ybar)
    return _Cells(
        *(np.concatenate(a) for a in (groups, shares, ns, pbars, ybars)), len(groups)
    )


def _debiased_cells(y_idx, p, w, n_bins, mode):
    if mode == "top_label":
        conf, correct = top_label(p, y_idx)
        share, n, ybar, pbar = debiased_bins(conf, correct, n_bins, w)
        return _Cells(np.zeros(share.shape[0], int), share, n, pbar, ybar, 1)
    columns = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    parts = []
    for k in [1] if columns.shape[1] == 2 else range(columns.shape[1]):
        share, n, ybar, pbar = debiased_bins(columns[:, k], y_idx == k, n_bins, w)
        parts.append((np.full(share.shape[0], len(parts)), share, n, pbar, ybar))
    arrays = (np.concatenate([q[i] for q in parts]) for i in range(5))
    return _Cells(*arrays, len(parts))


def _shrunk_gaps(cells):
    """Per cell, the signed gap shrunk towards a line in the mean score fitted
    across the group's cells (Efron & Morris 1975: the positive-part
    James-Stein estimator around a regression, with the cells' binomial
    variances), so that the configuration of gaps the pivot is simulated at
    carries the observed gaps' signal without their noise."""
    d = cells.ybar - cells.pbar
    var = _noise_sd(cells) ** 2
    out = d.copy()
    for g in range(cells.n_groups):
        sel = (cells.group == g) & (var > 0)
        k = int(np.count_nonzero(sel))
        if k <= 3:
            continue
        prec = 1.0 / var[sel]
        design = np.ones((k, 1))
        coef = np.linalg.lstsq(
            design * np.sqrt(prec)[:, None], d[sel] * np.sqrt(prec), rcond=None
        )[0]
        fit = design @ coef
        rss = float(np.sum(prec * (d[sel] - fit) ** 2))
        shrink = min(1.0, (k - 3) / rss) if rss > 0 else 1.0
        out[sel] = fit + (1.0 - shrink) * (d[sel] - fit)
    return out


def _noise_sd(cells):
    # the outcome's sd in the cell, from the mean outcome pulled slightly
    # towards the mean score (a cell of all-correct rows is not noiseless)
    q = (cells.n * cells.ybar + cells.pbar) / (cells.n + 1.0)
    return np.sqrt(q * (1.0 - q) / np.maximum(cells.n, 1.0))


def _statistic(cells, ybar, kind):
    """The estimator from cell means ``ybar`` of shape (..., n_cells):
    ``kind="l1"`` / ``"l2"`` the plug-in binned error, ``"debiased"`` the
    squared debiased error (per group clipped at 0, then averaged)."""
    d = ybar - cells.pbar
    if kind == "l1":
        per_cell = cells.share * np.abs(d)
    elif kind == "l2":
        per_cell = cells.share * d * d
    else:
        n = cells.n
        with np.errstate(divide="ignore", invalid="ignore"):
            noise = np.where(n > 1, ybar * (1.0 - ybar) / (n - 1.0), 0.0)
        per_cell = cells.share * (d * d - noise)
    groups = per_cell @ cells.indicator
    if kind == "debiased":
        groups = np.maximum(groups, 0.0)
    stat = groups.mean(axis=-1)
    return np.sqrt(stat) if kind == "l2" else stat


def _simulate(cells, gaps, rng, n_draws):
    """Cell means drawn as binomial proportions around ``pbar + gaps``
    (normal where the binomial is, ``min(nq, n(1 - q)) >= 20``: binomial
    draws of large counts are slow)."""
    q = np.clip(cells.pbar + gaps, 0.0, 1.0)
    trials = np.maximum(np.rint(cells.n), 1).astype(np.int64)
    out = np.empty((n_draws, q.shape[0]))
    large = np.minimum(trials * q, trials * (1.0 - q)) >= 20.0
    if np.any(large):
        sd = np.sqrt(q[large] * (1.0 - q[large]) / trials[large])
        out[:, large] = q[large] + sd * rng.standard_normal((n_draws, sd.shape[0]))
    # one cell at a time: numpy's binomial sets up once per call for
    # scalar parameters, and per draw for array ones
    for j in np.flatnonzero(~large):
        out[:, j] = rng.binomial(trials[j], q[j], size=n_draws) / trials[j]
    return out
