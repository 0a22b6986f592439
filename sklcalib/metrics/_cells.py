"""Per-cell (bin) summaries of a binned calibration error and their
simulation: the engine of :func:`~sklcalib.metrics.calibration_error_interval`
and of :func:`~sklcalib.metrics.compare_calibration`'s bias bounds.

Given the rows in a bin, the bin's mean outcome is a binomial proportion
around the bin's true accuracy; a binned error is a function of these
proportions, so its law is simulated per cell, at a cost independent of the
number of rows.
"""

import copy
from typing import NamedTuple

import numpy as np
from scipy.special import betainc, ndtri

from sklcalib._utils._binning import (
    bin_index,
    quantile_groups,
    top_label,
    weighted_bin_sums,
)
from sklcalib._utils._binning import uniform_edges as _uniform_edges
from sklcalib._utils._scores import as_columns

from ._debiased import debiased_bins, debiased_layout


class _Cells:
    """Per-cell (bin, or class and bin) summaries: ``group`` (the class of a
    classwise cell, else 0; cells come group by group), ``share`` (the
    cell's fraction of its group's weight), ``n`` (its rows, or Kish's
    effective number with weights), ``mass`` (its weight), ``pbar`` and
    ``ybar`` (mean score and mean outcome). A classwise error also keeps
    every row's cell in every group, ``codes`` (n_rows, n_groups; -1 for a
    row in no cell), and the rows' weights: a row's outcomes in different
    classes are dependent (exactly one is 1). ``columns`` says that every
    group is one class's column, whose scores span (0, 1) (a classwise
    error), not a top label's confidence."""

    def __init__(
        self,
        group,
        share,
        n,
        pbar,
        ybar,
        n_groups,
        mass=None,
        codes=None,
        weights=None,
        columns=False,
    ):
        keep = n > 0
        self.group = group[keep]
        self.share = share[keep]
        self.n = n[keep]
        self.mass = (n if mass is None else mass)[keep]
        self.pbar = np.clip(pbar[keep], 0.0, 1.0)
        self.ybar = np.clip(ybar[keep], 0.0, 1.0)
        self.n_groups = n_groups
        self.columns = columns
        # first cell of every group present: sums per group by reduceat
        self.starts = np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]])
        if self.group.shape[0] == 0:
            self.starts = np.zeros(0, np.intp)
        self.codes = None
        self.weights = weights
        if codes is not None and n_groups > 1:
            # renumber the kept cells; a dropped cell's rows map to -1
            new = np.full(keep.shape[0] + 1, -1, dtype=np.int64)
            new[:-1][keep] = np.arange(int(keep.sum()))
            self.codes = new[codes]

    def group_sums(self, per_cell):
        """Sums over the cells of every group present, last axis."""
        if self.n_groups == 1:
            return per_cell.sum(axis=-1, keepdims=True)
        return np.add.reduceat(per_cell, self.starts, axis=-1)


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


def _binned_cells(metric, y_idx, p, w, n_bins, top=None):
    """Cells of the L1/L2 binned errors (uniform or equal-mass bins);
    ``top``, when given, is the top-label ``(confidence, correct)``."""
    if metric in ("ece", "adaptive_ece"):
        conf, correct = top_label(p, y_idx) if top is None else top
        conf = conf.astype(np.float64)
        if metric == "ece":
            idx = bin_index(conf, _uniform_edges(n_bins))
        else:
            idx = quantile_groups(conf, n_bins)[0]
        mass, n, pbar, ybar = _sums(idx, n_bins, conf, correct.astype(float), w)
        total = mass.sum()
        return _Cells(np.zeros(n_bins, int), mass / total, n, pbar, ybar, 1, mass)
    columns = as_columns(p)
    columns = columns.astype(np.float64)
    n_classes = columns.shape[1]
    edges = _uniform_edges(n_bins)
    groups, shares, ns, pbars, ybars, masses, codes = [], [], [], [], [], [], []
    # two columns mirror each other (same gaps, mirrored bins): simulating both
    # as independent would halve the variance of their mean; take one
    classes = [1] if n_classes == 2 else range(n_classes)
    for k in classes:
        idx = bin_index(columns[:, k], edges)
        mass, n, pbar, ybar = _sums(
            idx, n_bins, columns[:, k], (y_idx == k).astype(float), w
        )
        codes.append(idx + len(groups) * n_bins)
        groups.append(np.full(n_bins, len(groups)))
        shares.append(mass / mass.sum())
        ns.append(n)
        pbars.append(pbar)
        ybars.append(ybar)
        masses.append(mass)
    arrays = (np.concatenate(a) for a in (groups, shares, ns, pbars, ybars))
    return _Cells(
        *arrays,
        len(groups),
        np.concatenate(masses),
        np.stack(codes, axis=1),
        w,
        columns=True,
    )


def _debiased_cells(y_idx, p, w, n_bins, mode, top=None):
    """Cells of the debiased L2 error (its equal-mass bins with two rows or
    more)."""
    if mode == "top_label":
        conf, correct = top_label(p, y_idx) if top is None else top
        share, n, ybar, pbar = debiased_bins(conf, correct, n_bins, w)
        return _Cells(np.zeros(share.shape[0], int), share, n, pbar, ybar, 1)
    columns = as_columns(p)
    parts, codes, offset = [], [], 0
    wf = None if w is None else np.asarray(w, dtype=np.float64)
    for k in [1] if columns.shape[1] == 2 else range(columns.shape[1]):
        layout = debiased_layout(columns[:, k], n_bins, wf)
        _, sum_outcome = weighted_bin_sums(
            layout.idx, layout.n_edges, wf, (y_idx == k).astype(np.float64)
        )
        ybar = sum_outcome[layout.used] / layout.mass
        # a row in an unused bin (one row) is in no cell
        position = np.full(layout.n_edges, -1, dtype=np.int64)
        position[layout.used] = offset + np.arange(layout.share.shape[0])
        row_cell = position[layout.idx]
        codes.append(np.where(row_cell >= 0, row_cell, -1))
        offset += layout.share.shape[0]
        parts.append(
            (
                np.full(layout.share.shape[0], len(parts)),
                layout.share,
                layout.n_eff,
                layout.pbar,
                ybar,
                layout.mass,
            )
        )
    group, share, n, pbar, ybar, mass = (
        np.concatenate([q[i] for q in parts]) for i in range(6)
    )
    codes = np.stack(codes, axis=1)
    # a row in no cell keeps -1 through the renumbering (index -1 maps to -1)
    return _Cells(group, share, n, pbar, ybar, len(parts), mass, codes, w)


#: from this many cells the shrinkage target is a cubic in the mean score
#: (three free parameters more, nothing against thousands of cells); from
#: fewer for a classwise error, whose columns' gaps change sign along (0, 1)
_CURVED_FROM = 40
_CURVED_COLUMNS_FROM = 8


def _shrunk_gaps(cells, with_precision=False):
    """Per cell, the signed gap shrunk towards a line in the mean score
    fitted across the cells of all groups (Efron & Morris 1975: the
    positive-part James-Stein estimator around a regression, with every
    cell's binomial variance), so that the configuration the interval is
    simulated at carries the observed gaps' signal without their noise.

    The variances are not taken at the cells' own mean outcomes: a cell that
    happened to see fewer positives would look less noisy and weigh more,
    pulling the fit down (a hundred classes' tail cells, each expecting one
    positive, would all be read as over-predicted). They are taken at the
    mean scores, then at the fitted accuracies (mean score plus the fitted
    line, pooled over all cells), kept half a row away from 0 and 1.

    With many cells (a classwise error of three classes or more) the line
    is a cubic in the mean score: an over- or under-confident model's gap
    changes sign along the scores (S-shaped), which a line cannot follow,
    and a cell of one row adds ``(1 - 2 pbar) (y - pbar)`` to the debiased
    square, whose mean ``(1 - 2 pbar) gap`` follows the gap's sign: shrunk
    to a line, the gaps of a hundred classes' sparse top cells took the
    wrong sign in mid-range and the simulated L2 error sat a standard
    deviation below the estimator's law at the same error. A classwise
    error's columns span the scores from 0 to 1, so their gaps change sign
    whatever the number of cells: the cubic from 8 cells there (a binary
    model's class-1 column, a sharp network's 20 cells). Shrunk to a line,
    the S-shaped gaps of a binary under- or over-confident model sat at the
    wrong size in both tails, and the classwise interval covered 90-91.5 %
    on 1000 rows. A top label's confidence has a gap of one sign (a hump):
    there the cubic on fewer than 40 cells shrinks too little and costs
    coverage."""
    d = cells.ybar - cells.pbar
    n = np.maximum(cells.n, 1.0)
    k = d.shape[0]
    floor = 0.5 / (n + 1.0)

    def precision(q):
        q = np.clip(q, floor, 1.0 - floor)
        return n / (q * (1.0 - q))

    prec = precision(cells.pbar)
    if k <= 3:
        return (d.copy(), prec) if with_precision else d.copy()
    for _ in range(2):
        columns = [np.ones(k)]
        if k > 5 and np.ptp(cells.pbar) > 0:
            x = cells.pbar - np.average(cells.pbar, weights=prec)
            columns.append(x)
            if k >= (_CURVED_COLUMNS_FROM if cells.columns else _CURVED_FROM):
                columns += [x * x, x * x * x]
        design = np.stack(columns, axis=1)
        root = np.sqrt(prec)
        coef = np.linalg.lstsq(design * root[:, None], d * root, rcond=None)[0]
        fit = design @ coef
        prec = precision(cells.pbar + fit)
    rss = float(np.sum(prec * (d - fit) ** 2))
    free = k - design.shape[1] - 2
    shrink = min(1.0, free / rss) if rss > 0 else 1.0
    out = fit + (1.0 - shrink) * (d - fit)
    return (out, prec) if with_precision else out


def _noise_sd(cells):
    # the outcome's sd in the cell, from the mean outcome pulled slightly
    # towards the mean score (a cell of all-correct rows is not noiseless)
    q = (cells.n * cells.ybar + cells.pbar) / (cells.n + 1.0)
    return np.sqrt(q * (1.0 - q) / np.maximum(cells.n, 1.0))


def _statistic(cells, ybar, kind):
    """The estimator from cell means ``ybar`` of shape (..., n_cells):
    ``kind="l1"`` / ``"l2"`` the plug-in binned error (the L2 error of every
    group, then their mean), ``"debiased"`` the squared debiased error (per
    group clipped at 0, then averaged), ``"debiased_raw"`` the same before
    any clipping (unbiased for the squared error of the cell means), and
    ``"l2_debiased"`` the mean over groups of the root of the group's
    clipped debiased square (the L2 error with each bin's noise removed)."""
    # a group without cells adds 0
    return _group_statistic(cells, ybar, kind).sum(axis=-1) / cells.n_groups


def _noise(cells, ybar, kind):
    """Unbiased estimate of a bin mean's variance, ``ybar (1 - ybar) / (n -
    1)``; a bin of one row has none: 0 for the debiased error (which drops
    such bins), the variance at its mean score for ``"l2_debiased"``."""
    n = cells.n
    single = 0.0 if kind != "l2_debiased" else cells.pbar * (1.0 - cells.pbar)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 1, ybar * (1.0 - ybar) / (n - 1.0), single)


def _truth(cells, mu, kind):
    """The population value of the statistic at cell accuracies ``mu``:
    the L1/L2 error of the gaps ``mu - pbar`` (for ``"debiased"`` its
    square, which the raw debiased statistic estimates without bias)."""
    d = np.clip(mu, 0.0, 1.0) - cells.pbar
    if kind == "l1":
        groups = cells.group_sums(cells.share * np.abs(d))
    else:
        groups = cells.group_sums(cells.share * d * d)
        if kind == "l2":
            groups = np.sqrt(groups)
    return float(groups.sum() / cells.n_groups)


def _group_statistic(cells, ybar, kind):
    """Per draw and group the group's term of the statistic (before the
    mean over groups): (n_draws, n_groups)."""
    d = ybar - cells.pbar
    if kind == "l1":
        per_cell = cells.share * np.abs(d)
    elif kind == "l2":
        per_cell = cells.share * d * d
    else:
        per_cell = cells.share * (d * d - _noise(cells, ybar, kind))
    groups = cells.group_sums(per_cell)
    if kind in ("l2", "l2_debiased"):
        groups = np.sqrt(np.maximum(groups, 0.0))
    elif kind == "debiased":
        groups = np.maximum(groups, 0.0)
    return groups


def _slopes(cells, ybar, kind):
    """The weights of the statistic's linear part in every cell mean, from
    the draws ``ybar`` (n_draws, n_cells): per cell the least-squares slope
    of its group's term on the cell's mean (the cells are drawn
    independently, so this is the slope of the statistic's projection on
    that cell). A derivative would be wrong at small counts: a cell of
    twelve rows at 0.999 has its term ``|ybar - 0.999|`` folded between 0
    and one error, nearly linear over the counts it can take, where the
    mean sign of its gap is 0.65."""
    groups = _group_statistic(cells, ybar, kind)
    size = np.diff(np.r_[cells.starts, ybar.shape[-1]])
    own = np.repeat(np.arange(size.shape[0]), size)
    centred = ybar - ybar.mean(axis=0)
    term = groups[:, own]
    cov = np.mean((term - term.mean(axis=0)) * centred, axis=0)
    var = np.mean(centred * centred, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(var > 0, cov / var, 0.0)
    return slope / cells.n_groups


#: rows whose cross-class covariances are summed exactly; above it a fixed
#: random subset stands for them
_CROSS_ROWS = 2_000_000


def _dependence_scale(cells, ybar, kind, rows):
    """Factor on the simulated statistic's spread for the dependence the
    per-cell simulation leaves out: a row's outcomes in two classes have
    covariance ``-q_j q_k`` (exactly one is 1). With ``c`` the statistic's
    slopes, the cross-class covariance of its linear part is ``-sum_rows
    [(sum_k a_k)^2 - sum_k a_k^2]``, ``a_k = c_cell mu_cell w / mass_cell``
    of the row's cell in class k; the factor is the root of the linear
    variance with it over the linear variance without it (1 for a top-label
    error, or where the statistic is folded and its slopes are 0)."""
    if cells.codes is None:
        return 1.0
    c = _slopes(cells, ybar, kind)
    mu = ybar.mean(axis=0)
    independent = float(np.sum(c * c * mu * (1.0 - mu) / np.maximum(cells.n, 1.0)))
    if not independent > 0:
        return 1.0
    a = np.append(c * mu / cells.mass, 0.0)  # index -1: a row in no cell
    codes = cells.codes[rows]
    per_row = a[codes]
    if cells.weights is not None:
        per_row = per_row * cells.weights[rows][:, None]
    total = per_row.sum(axis=1)
    cross = -float(np.sum(total * total - np.sum(per_row * per_row, axis=1)))
    cross *= cells.codes.shape[0] / rows.shape[0]
    # never below 1: a dependence that would narrow the law is not trusted
    # to a linearisation
    return float(np.sqrt(max(independent + cross, independent) / independent))


# ---------------------------------------------------------------------------
# binomial cell means with common random numbers
# ---------------------------------------------------------------------------

#: a cell whose expected count of its rarer outcome is at least this is drawn
#: from the normal law with the binomial's skewness (Cornish-Fisher); below
#: it, exactly, by inverting the binomial distribution function
_EXACT_BELOW = 50.0


class CellDraws:
    """Draws of every cell's mean outcome as a binomial proportion at given
    accuracies, from uniforms fixed once (common random numbers): the same
    uniform gives a larger count at a larger accuracy, so the simulated
    statistic moves smoothly with the accuracies and a root in them is a
    root of a deterministic function.

    ``trials`` (n_cells,) are the cells' numbers of rows (rounded effective
    numbers with weights), ``rng`` draws ``n_draws`` uniforms per cell."""

    def __init__(self, trials, rng, n_draws):
        self.trials = np.maximum(np.rint(trials), 1.0)
        m = self.trials.shape[0]
        # Latin hypercube: every cell's uniforms are one per stratum of width
        # 1 / n_draws, in an independent random order, so that each cell's
        # law is drawn almost exactly and the bounds vary less between seeds
        strata = rng.permuted(np.tile(np.arange(n_draws)[:, None], (1, m)), axis=0)
        u = (strata + rng.random((n_draws, m))) / n_draws
        # per cell its uniforms sorted once: a binomial quantile table is then
        # placed on them by one sorted search for all cells, and the counts
        # are read back in draw order through every uniform's rank
        order = np.argsort(u, axis=0, kind="stable")
        self.flat_sorted = (
            np.take_along_axis(u, order, axis=0) + 2.0 * np.arange(m)[None, :]
        ).T.ravel()
        self.rank = np.empty_like(order)
        np.put_along_axis(self.rank, order, np.arange(n_draws)[:, None], axis=0)
        self.u = u
        self.n_draws = n_draws
        self._z = None

    @property
    def z(self):
        if self._z is None:
            self._z = ndtri(self.u)
        return self._z

    def means(self, mu):
        """(n_draws, n_cells) cell means at accuracies ``mu``."""
        mu = np.clip(mu, 0.0, 1.0)
        t = self.trials
        out = np.empty((self.n_draws, t.shape[0]))
        rare = np.minimum(mu, 1.0 - mu)
        exact = t * rare < _EXACT_BELOW
        if not np.all(exact):
            big = ~exact
            q, n = mu[big], t[big]
            var = q * (1.0 - q)
            sd = np.sqrt(var / n)
            skew = (1.0 - 2.0 * q) / np.sqrt(n * var)
            z = self.z[:, big]
            out[:, big] = np.clip(q + sd * (z + skew / 6.0 * (z * z - 1.0)), 0.0, 1.0)
        if np.any(exact):
            cols = np.flatnonzero(exact)
            out[:, cols] = self._exact(cols, mu[cols]) / t[cols]
        return out

    def _exact(self, cols, mu):
        """Binomial counts of cells ``cols`` at accuracies ``mu``: the count
        drawn by a uniform is the number of distribution-function values
        below it, on a table of the rarer outcome's plausible counts (the
        tail past 8 standard deviations is merged into the table's end)."""
        t = self.trials[cols]
        flip = mu > 0.5
        rare = np.where(flip, 1.0 - mu, mu)
        m = t * rare
        top = np.minimum(t, np.ceil(m + 8.0 * np.sqrt(m) + 10.0))
        sizes = top.astype(np.int64) + 1
        cell = np.repeat(np.arange(cols.shape[0]), sizes)
        starts = np.cumsum(sizes) - sizes
        i = (np.arange(sizes.sum()) - starts[cell]).astype(np.float64)
        tc, rc, topc, fc = t[cell], rare[cell], top[cell], flip[cell]
        # the table's counts of the rarer outcome, P(X <= j) = I_{1-r}(t - j,
        # j + 1); a flipped cell's table is of successes t - top .. t, with
        # P(S <= t - top + i) = P(F >= top - i) = I_r(top - i, t - top + i + 1)
        j = np.where(fc, topc - i, i)
        with np.errstate(invalid="ignore"):
            cdf = np.where(
                fc,
                betainc(np.maximum(j, 1.0), tc - j + 1.0, rc),
                betainc(np.maximum(tc - j, 1.0), j + 1.0, 1.0 - rc),
            )
        cdf = np.where(fc & (j <= 0), 1.0, cdf)
        cdf = np.where(~fc & (j >= tc), 1.0, cdf)
        cdf[starts + sizes - 1] = 1.0  # the truncated tail: mass ~ 0
        base = np.where(flip, t - top, 0.0)
        # positions of the table's values among each cell's sorted uniforms
        # (cells offset by 2 in one sorted array: one search for all)
        b = self.n_draws
        keys = 2.0 * cols[cell] + cdf
        pos = np.searchsorted(self.flat_sorted, keys, side="right")
        pos -= cols[cell] * b
        runs = np.diff(pos, prepend=0)
        runs[starts] = pos[starts]
        values = base[cell] + i
        in_order = np.repeat(values, runs)  # cell by cell, uniforms sorted
        at = self.rank[:, cols] + (np.arange(cols.shape[0]) * b)[None, :]
        return in_order[at]


# ---------------------------------------------------------------------------
# the interval: a test inverted along a path of configurations
# ---------------------------------------------------------------------------


#: the statistic whose test is inverted, per error: the plug-in L1 error;
#: for the L2 errors the root of the debiased square, whose law depends far
#: less on the bins' noise than the plug-in's (biased by that noise, and, for
#: the classwise error of many classes averaged to a narrow law, a noise
#: slightly misjudged moves the plug-in's law by more than its width); the
#: debiased error's unbiased square itself
STATISTIC_OF = {"l1": "l1", "l2": "l2_debiased", "debiased": "debiased_raw"}


class PathInterval(NamedTuple):
    """Bounds of the statistic's population value (for ``"debiased"``: of
    its square), the tested statistic's null draws (every gap 0) and the
    cell means drawn at the shrunk configuration."""

    low: float
    high: float
    null: np.ndarray
    shrunk: np.ndarray


def path_interval(cells, kind, observed, alpha, draws, direction=None):
    """Invert the two one-sided tests of the statistic along the path of
    cell accuracies ``pbar + s * g`` (``g`` the shrunk gaps, ``s`` of either
    sign).

    At every point of the path the statistic's law is simulated with the
    cells' binomial noise at those accuracies (so the noise of a cell is that
    of its accuracy, not of its mean score; a cell whose rows are all right is
    not simulated as noiseless unless its accuracy is 1), and the point is
    kept when the observed statistic lies within that law's ``alpha / 2`` and
    ``1 - alpha / 2`` quantiles. The population value of the statistic is
    monotone along each half of the path, so the kept points form an interval
    on each half, found by root-finding on the simulated quantiles (common
    random numbers make them deterministic in ``s``); the bounds are the
    extremes over both halves. At ``s = 0`` every gap is 0: the lower bound
    is 0 exactly when the consistency test does not reject at level
    ``alpha / 2``.

    The half of the path opposite to the shrunk gaps (every gap's sign
    flipped) is dropped when the data rule it out: when the projection of
    the observed gaps on ``g`` lies beyond the ``1 - alpha / 20`` quantile of
    its law at ``s = 0`` (the point of that half most favourable to it). The
    statistic itself, an unsigned sum, cannot tell the halves apart away from
    calibration; kept, the flipped half widens the interval for nothing.

    ``direction``, when given, replaces the shrunk gaps as the path's
    direction (:func:`direction_union`)."""
    stat_kind = STATISTIC_OF[kind]
    truth_kind = kind
    g, prec = _shrunk_gaps(cells, with_precision=True)
    if direction is not None:
        g = np.asarray(direction, dtype=np.float64)
    if not np.any(np.abs(g) > 1e-12):
        g = np.ones_like(g)  # no signal: a common shift of every cell
    b = draws.n_draws
    k = max(int(np.floor(alpha / 2.0 * (b + 1))), 1)
    tol = 1e-12 * max(abs(observed), 1e-3)
    rows = None
    if cells.codes is not None:
        n_rows = cells.codes.shape[0]
        step = max(1, int(np.ceil(n_rows * cells.n_groups / _CROSS_ROWS)))
        rows = np.arange(0, n_rows, step)

    def law(mu):
        ybar = draws.means(mu)
        stat = _statistic(cells, ybar, stat_kind)
        scale = _dependence_scale(cells, ybar, stat_kind, rows)
        if scale != 1.0:
            centre = stat.mean()
            stat = centre + scale * (stat - centre)
        return stat, ybar

    null, null_means = law(cells.pbar)
    shrunk, shrunk_means = law(cells.pbar + g)
    weight = prec * g
    projection = (null_means - cells.pbar) @ weight
    seen = float((cells.ybar - cells.pbar) @ weight)
    beyond = np.count_nonzero(projection >= seen - 1e-12 * abs(seen))
    signs = (1.0,) if (1 + beyond) / (1 + b) < alpha / 20.0 else (1.0, -1.0)
    lows, highs = [], []
    for sign in signs:
        direction = sign * g
        with np.errstate(divide="ignore", invalid="ignore"):
            reach = np.where(
                direction > 0,
                (1.0 - cells.pbar) / direction,
                np.where(direction < 0, -cells.pbar / direction, 0.0),
            )
        s_max = float(reach.max())
        cache = {0.0: null}
        if sign > 0:
            cache[1.0] = shrunk
        probe = 1.0

        def stats(s, direction=direction, cache=cache):
            if s not in cache:
                cache[s] = law(cells.pbar + s * direction)[0]
            return cache[s]

        def kth_low(s):  # the k-th smallest draw, minus the observed value
            return float(np.partition(stats(s), k - 1)[k - 1]) - observed - tol

        def kth_high(s):  # the k-th largest draw, minus the observed value
            return float(np.partition(stats(s), b - k)[b - k]) - observed + tol

        def value(s, direction=direction):
            return _truth(cells, cells.pbar + s * direction, truth_kind)

        # upper end: the largest s whose law still puts alpha/2 below
        # observed. The law's lower tail can first fall as s grows (the
        # debiased statistic of bins of two or three rows: more noise, a
        # larger correction), so when s = 0 is not kept the path is climbed
        # by doubling steps to the first kept point
        start = 0.0
        if kth_low(0.0) > 0:
            start = None
            step = min(1.0, s_max)
            while step < s_max:
                if kth_low(step) <= 0:
                    start = step
                    break
                step *= 2.0
            if start is None:
                continue  # observed below every law of this half
        if s_max <= 0 or kth_low(s_max) <= 0:
            s_hi = s_max
        else:
            s_hi = _root(kth_low, start, s_max, value, probe=probe)
        # lower end: the smallest s whose law puts alpha/2 above observed
        if kth_high(0.0) >= 0:
            s_lo = 0.0
        elif s_max <= 0 or kth_high(s_max) < 0:
            continue  # observed above every law of this half
        else:
            s_lo = _root(kth_high, 0.0, s_max, value, probe=probe)
        if s_lo <= s_hi:
            lows.append(value(s_lo))
            highs.append(value(max(s_hi, 0.0)))
    if not lows:
        return PathInterval(0.0, 0.0, null, shrunk_means)
    return PathInterval(min(lows), max(highs), null, shrunk_means)


#: the direction's noise is measured on this many of the draws at the
#: shrunk configuration, and the union takes the directions at these
#: quantiles of the L2 statistic's spread along them
_DIRECTION_DRAWS = 100
_DIRECTION_QUANTILE = 0.05
#: the union is taken when the spread along those two directions differs
#: by this factor or more
_DIRECTION_SPREAD = 1.15
#: from this many cells a binary classwise error's shrinkage target has a
#: slope (:func:`_shrunk_gaps`): below it the direction is not fitted
_DIRECTION_CELLS = 6


def _path_spread(cells, g):
    """The linear-part standard deviation of the L2 error of the cell means
    at the accuracies ``q = pbar + g``: ``sqrt(sum share^2 g^2 q (1 - q) /
    n) / sqrt(sum share g^2)``, the same at every point ``pbar + s g`` of
    the path but for ``q``: how wide the law that tests an error is, given
    the direction the error takes, whatever its size."""
    q = np.clip(cells.pbar + g, 1e-6, 1.0 - 1e-6)
    num = np.sum(cells.share**2 * g * g * q * (1.0 - q) / np.maximum(cells.n, 1.0))
    den = np.sum(cells.share * g * g)
    return float(np.sqrt(num / den)) if den > 0 else 0.0


def direction_union(cells, kind, observed, alpha, draws):
    """:func:`path_interval`, and where the path's direction is too poorly
    determined for its test, the union with the intervals along two other
    plausible directions.

    The direction (the shrunk gaps) is estimated from the same rows as the
    statistic. The L2 error's spread grows with the gaps of its noisy cells
    (a cell's term ``share d^2`` moves by ``2 share d`` per unit of its
    mean), so the law that tests an error depends on how the direction
    shares it between well-measured and sparse cells; a test set whose
    sparse cells saw few events has both a low statistic and a direction
    that puts the error in the quiet cells, whose law is too narrow just
    then (a binary model predicted too low at 2 % prevalence on 10^4 rows:
    one cell of 9 900 rows, a few of 2-100 above it: the interval covered
    92.7 %, 94.8 % with this union). The L1 error's spread in a cell does
    not depend on its gap.

    The direction's own noise is measured on the interval's draws at the
    shrunk configuration (no new random numbers): the shrunk gaps of
    ``_DIRECTION_DRAWS`` of them, each a test set the shrunk configuration
    could have given. Where the L2 statistic's spread along them
    (:func:`_path_spread`) differs by ``_DIRECTION_SPREAD`` or more
    between their 5 % and 95 % quantiles, the interval is the union of the
    intervals along the shrunk gaps and along those two directions: a test
    that keeps an error when any plausible direction's law keeps it. Only
    for the L2 error of one column (a binary classwise error) whose
    shrinkage target has a slope (``_DIRECTION_CELLS`` cells or more), and
    only where the lower bound is above 0: where the data do not reject
    calibration the shrunk gaps are mostly noise, and at an error of 0 the
    path's point is ``s = 0`` whatever its direction (taken there, the union
    widened the calibrated models' intervals at every ``n``). The interval
    is never narrower than :func:`path_interval`'s, and is the
    same, to the bit, where the union is not taken."""
    res = path_interval(cells, kind, observed, alpha, draws)
    if (
        kind != "l2"
        or not cells.columns
        or cells.n_groups != 1
        or cells.n.shape[0] < _DIRECTION_CELLS
        or not res.low > 0
    ):
        return res
    m = min(_DIRECTION_DRAWS, res.shrunk.shape[0])
    directions = [_shrunk_gaps(_with_means(cells, res.shrunk[j])) for j in range(m)]
    spread = np.array([_path_spread(cells, g) for g in directions])
    order = np.argsort(spread, kind="stable")
    ends = [
        order[round(q * (m - 1))]
        for q in (_DIRECTION_QUANTILE, 1.0 - _DIRECTION_QUANTILE)
    ]
    lo, hi = spread[ends[0]], spread[ends[1]]
    if not (lo > 0 and hi >= _DIRECTION_SPREAD * lo):
        return res
    low, high = res.low, res.high
    for j in ends:
        other = path_interval(cells, kind, observed, alpha, draws, directions[j])
        low, high = min(low, other.low), max(high, other.high)
    return res._replace(low=low, high=high)


def _with_means(cells, ybar):
    """A shallow copy of ``cells`` with the cell means ``ybar``."""
    out = copy.copy(cells)
    out.ybar = ybar
    return out


def _root(f, lo, hi, value, rtol=5e-3, probe=None):
    """The crossing of the increasing step-like ``f`` between ``lo`` (f <= 0)
    and ``hi`` (f > 0), to a relative precision ``rtol`` of the population
    value there: regula falsi with the Illinois rule, every step kept a
    tenth of the bracket away from its ends (the function has steps), after
    a first look at ``probe`` when it lies inside."""
    f_lo, f_hi = f(lo), f(hi)
    if probe is not None and lo < probe < hi:
        f_p = f(probe)
        if f_p <= 0:
            lo, f_lo = probe, f_p
        else:
            hi, f_hi = probe, f_p
    side = 0
    for _ in range(60):
        if value(hi) - value(lo) <= rtol * max(value(hi), 1e-4):
            break
        width = hi - lo
        mid = lo - f_lo * width / (f_hi - f_lo) if f_hi > f_lo else lo + 0.5 * width
        mid = min(max(mid, lo + 0.1 * width), hi - 0.1 * width)
        f_mid = f(mid)
        if f_mid <= 0:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi *= 0.5
            side = -1
        else:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo *= 0.5
            side = 1
    return 0.5 * (lo + hi)
