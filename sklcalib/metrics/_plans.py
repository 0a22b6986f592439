"""Resampling plans of the named metrics (see ``_resampling``).

A plan exists for the uniform-bin metrics (ECE with any norm, MCE, classwise
ECE), NLL and Brier: the metrics whose value is a function of per-cell sums
that resampling leaves the cells of. Every other metric (equal-mass bins, whose
edges move with the resample; smooth ECE; the sweep; SKCE; any callable) is
recomputed on each resample. Under the consistency test's label draws the
scores do not move, so equal-mass bins are fixed too: the adaptive ECE (and
the ECE and MCE with ``strategy="quantile"``) and the debiased L2 error have a
consistency plan (not a bootstrap one).
"""

from typing import NamedTuple

import numpy as np

from sklcalib._utils._binning import (
    bin_index,
    quantile_groups,
    top_label,
    uniform_edges,
    weighted_bin_sums,
)
from sklcalib._utils._binning import binned_error as error_of_bins
from sklcalib._utils._scores import as_columns, row_brier, row_log_loss
from sklcalib._utils._validation import (
    NORMS,
    check_n_bins,
    check_option,
    check_prob_values,
    check_targets,
)

from ._debiased import MODES, debiased_layout, debiased_terms_sum


class Plan(NamedTuple):
    """A resampling plan (see ``_resampling``).

    ``codes`` (n, m) int32: the cell of the ``m``-th contribution of each row
    (for a consistency plan, ``m`` runs over the class drawn); ``values``
    (n, m, v) float64: what the contribution adds besides a count of one;
    ``finalize`` maps cell sums of shape ``(..., n_cells, 1 + v)``
    (the count first) to the metric; ``cumulative`` (n, K): the rows'
    cumulative probabilities (consistency plans only). A top-label
    consistency plan only needs to know whether the drawn class is the top
    label: ``top_label_bounds`` (n, 3) holds the cumulative probability below
    and at the top label and the row total, and ``codes``/``values`` have two
    columns, (wrong, right).
    """

    codes: np.ndarray
    values: np.ndarray
    n_cells: int
    finalize: object
    cumulative: object = None
    top_label_bounds: object = None


def binned_error(stats, norm):
    """Calibration error from per-bin ``(..., n_bins, 3)`` (count,
    confidence sum, correctness sum), vectorised over the leading axes."""
    return error_of_bins(stats[..., 0], stats[..., 1], stats[..., 2], norm)


def _unfold(sums, weighted):
    """Per-bin (count, confidence, correctness) from sums over the cells
    ``2 * bin + correct``. The correctness lives in the cell code, so a row
    carries one value (its confidence; and its weight if weighted): a small
    table, which keeps the random reads of the bootstrap in cache."""
    weight = sums[..., 1] if weighted else sums[..., 0]
    conf = sums[..., 2] if weighted else sums[..., 1]
    weight = weight.reshape(*weight.shape[:-1], -1, 2)
    conf = conf.reshape(*conf.shape[:-1], -1, 2)
    return np.stack([weight.sum(-1), conf.sum(-1), weight[..., 1]], axis=-1)


def _row_values(w, *columns):
    """(n, m, v) values: the columns, each times the weight, after the weight
    itself when weighted."""
    stacked = [np.broadcast_to(c, columns[0].shape) for c in columns]
    if w is not None:
        wb = np.broadcast_to(
            w.reshape(-1, *([1] * (columns[0].ndim - 1))), columns[0].shape
        )
        stacked = [wb] + [wb * c for c in stacked]
    values = np.stack(stacked, axis=-1)
    return values if values.ndim == 3 else values[:, None, :]


_BINNED_PARAMS = {"n_bins", "strategy", "norm", "labels", "sample_weight"}


def _binned_settings(name, params):
    """``(n_bins, norm)`` if the named metric with these parameters has a
    plan, else None."""
    if name not in ("ece", "mce", "classwise_ece") or set(params) - _BINNED_PARAMS:
        return None
    if params.get("strategy", "uniform") != "uniform":
        return None
    if name == "mce":
        if "norm" in params:
            return None
        norm = "max"
    else:
        norm = check_option(params.get("norm", "l1"), "norm", NORMS)
    return check_n_bins(params.get("n_bins", 15)), norm


def _validated(y_true, y_prob, params):
    y_idx, p, _, w = check_targets(
        y_true, y_prob, params.get("labels"), params.get("sample_weight")
    )
    p = check_prob_values(p)
    return y_idx, p, as_columns(p), w


def _has_plan(name, params):
    if not isinstance(name, str):
        return False
    if name in ("nll", "brier"):
        return not set(params) - {"labels", "sample_weight"}
    return _binned_settings(name, params) is not None


def _mean_finalize(weighted):
    # the Brier terms are non-negative by construction: no floor needed
    def finalize(sums):
        if weighted:
            return sums[..., 0, 2] / sums[..., 0, 1]
        return sums[..., 0, 1] / sums[..., 0, 0]

    return finalize


def _terms(name, columns, k):
    return (row_log_loss if name == "nll" else row_brier)(columns, k)


def bootstrap_plan(name, y_true, y_prob, params):
    """The bootstrap :class:`Plan` of a named metric, or None."""
    if not _has_plan(name, params):
        return None
    y_idx, p, columns, w = _validated(y_true, y_prob, params)
    n = y_idx.shape[0]
    weighted = w is not None
    if name in ("nll", "brier"):
        codes = np.zeros((n, 1), dtype=np.int32)
        values = _row_values(w, _terms(name, columns, y_idx))
        return Plan(codes, values, 1, _mean_finalize(weighted))
    n_bins, norm = _binned_settings(name, params)
    edges = uniform_edges(n_bins)
    if name in ("ece", "mce"):
        conf, correct = top_label(p, y_idx)
        conf = conf.astype(np.float64)
        codes = (2 * bin_index(conf, edges) + correct)[:, None]
        values = _row_values(w, conf)

        def finalize(sums):
            return binned_error(_unfold(sums, weighted), norm)

        return Plan(codes.astype(np.int32), values, 2 * n_bins, finalize)
    columns = columns.astype(np.float64)
    n_classes = columns.shape[1]
    hit = y_idx[:, None] == np.arange(n_classes)
    codes = 2 * (bin_index(columns, edges) + np.arange(n_classes) * n_bins)
    codes += hit
    values = _row_values(w, columns)

    def finalize(sums):
        stats = _unfold(sums, weighted).reshape(*sums.shape[:-2], n_classes, n_bins, 3)
        return binned_error(stats, norm).mean(axis=-1)

    return Plan(codes.astype(np.int32), values, 2 * n_classes * n_bins, finalize)


def _top_label_bounds(p, cumulative):
    """(n, 3): the cumulative probability below and at each row's top label,
    and the row total (see :class:`Plan`)."""
    n, n_classes = cumulative.shape
    pred = (p > 0.5).astype(np.intp) if p.ndim == 1 else np.argmax(p, axis=1)
    # the class drawn from u is the top label iff below <= u * total < at
    # (drawn_classes' rule; the last class also takes u * total == total)
    rows = np.arange(n)
    bounds = np.empty((n, 3))
    bounds[:, 0] = np.where(pred > 0, cumulative[rows, pred - 1], -np.inf)
    bounds[:, 1] = np.where(pred < n_classes - 1, cumulative[rows, pred], np.inf)
    bounds[:, 2] = cumulative[:, -1]
    return bounds


_DEBIASED_PARAMS = {"n_bins", "mode", "labels", "sample_weight"}


def _debiased_consistency_plan(y_true, y_prob, params):
    """The debiased L2 error under label draws: its equal-mass bins depend on
    the scores only, so a draw changes nothing but every bin's outcome sum
    (the hits: count, or weight, of the rows whose drawn outcome is 1)."""
    n_bins = check_n_bins(params.get("n_bins", 15))
    mode = check_option(params.get("mode", "top_label"), "mode", MODES)
    y_idx, p, columns, w = _validated(y_true, y_prob, params)
    n, n_classes = columns.shape
    cumulative = np.cumsum(columns.astype(np.float64), axis=1)
    weighted = w is not None
    if mode == "top_label":
        conf, _ = top_label(p, y_idx)
        layouts = [debiased_layout(conf, n_bins, w)]
        # cells 2 * bin + (drawn class is the top label)
        codes = 2 * layouts[0].idx[:, None] + np.arange(2)
        n_cells = 2 * layouts[0].n_edges
        m = 2
    else:
        layouts = [debiased_layout(columns[:, k], n_bins, w) for k in range(n_classes)]
        # drawing class k makes the row's outcome 1 in column k's bin only
        offsets = np.cumsum([0] + [lay.n_edges for lay in layouts])
        codes = np.stack(
            [offsets[k] + lay.idx for k, lay in enumerate(layouts)], axis=1
        )
        n_cells = int(offsets[-1])
        m = n_classes
    values = (
        np.broadcast_to(w[:, None, None], (n, m, 1)).copy()
        if weighted
        else np.zeros((n, m, 0))
    )

    def finalize(sums):
        hits = sums[..., 1] if weighted else sums[..., 0]
        if mode == "top_label":
            lay = layouts[0]
            ybar = hits[..., 1::2][..., lay.used] / lay.mass
            return np.sqrt(np.maximum(debiased_terms_sum(lay, ybar), 0.0))
        total = 0.0
        for k, lay in enumerate(layouts):
            cells = hits[..., offsets[k] : offsets[k + 1]]
            ybar = cells[..., lay.used] / lay.mass
            total = total + np.maximum(debiased_terms_sum(lay, ybar), 0.0)
        return np.sqrt(total / n_classes)

    bounds = _top_label_bounds(p, cumulative) if mode == "top_label" else None
    return Plan(codes.astype(np.int32), values, n_cells, finalize, cumulative, bounds)


def _equal_mass_settings(name, params):
    """``(n_bins, norm)`` of a top-label error on equal-mass (rank) bins —
    the adaptive ECE, or the ECE/MCE with ``strategy="quantile"`` — else
    None. Its groups depend on the confidences only, so label draws leave
    them fixed (a bootstrap moves them: no bootstrap plan)."""
    if not isinstance(name, str):
        return None
    if name == "adaptive_ece":
        if set(params) - {"n_bins", "norm", "labels", "sample_weight"}:
            return None
        norm = params.get("norm", "l1")
    elif name in ("ece", "mce") and params.get("strategy") == "quantile":
        if set(params) - _BINNED_PARAMS or (name == "mce" and "norm" in params):
            return None
        norm = "max" if name == "mce" else params.get("norm", "l1")
    else:
        return None
    return check_n_bins(params.get("n_bins", 15)), check_option(norm, "norm", NORMS)


def consistency_plan(name, y_true, y_prob, params):
    """The consistency-resampling :class:`Plan` of a named metric (labels
    drawn from ``y_prob``; bins stay fixed), or None."""
    if name == "debiased_ece" and not set(params) - _DEBIASED_PARAMS:
        return _debiased_consistency_plan(y_true, y_prob, params)
    equal_mass = _equal_mass_settings(name, params)
    if equal_mass is None and not _has_plan(name, params):
        return None
    y_idx, p, columns, w = _validated(y_true, y_prob, params)
    n, n_classes = columns.shape
    weighted = w is not None
    cumulative = np.cumsum(columns.astype(np.float64), axis=1)
    every = np.arange(n_classes)
    if name in ("nll", "brier"):
        codes = np.zeros((n, n_classes), dtype=np.int32)
        terms = np.stack([_terms(name, columns, np.full(n, k)) for k in every], axis=1)
        values = _row_values(w, terms)
        return Plan(codes, values, 1, _mean_finalize(weighted), cumulative)
    n_bins, norm = equal_mass or _binned_settings(name, params)
    edges = uniform_edges(n_bins)
    if name in ("ece", "mce", "adaptive_ece"):
        conf, _ = top_label(p, y_idx)
        conf = conf.astype(np.float64)
        bounds = _top_label_bounds(p, cumulative)
        if equal_mass is None:
            idx = bin_index(conf, edges)
        else:
            idx = quantile_groups(conf, n_bins)[0]
        codes = 2 * idx[:, None] + np.arange(2)
        values = _row_values(w, np.broadcast_to(conf[:, None], (n, 2)))

        def finalize(sums):
            return binned_error(_unfold(sums, weighted), norm)

        return Plan(
            codes.astype(np.int32), values, 2 * n_bins, finalize, cumulative, bounds
        )
    # classwise: the drawn class k changes the outcome of every column, but
    # only column k's outcome becomes 1: count and confidence sums per
    # (class, bin) are fixed, the drawn class adds its weight to its cell
    columns = columns.astype(np.float64)
    cells = bin_index(columns, edges) + every * n_bins
    fixed_count, fixed_conf = weighted_bin_sums(
        cells.ravel(),
        n_classes * n_bins,
        None if w is None else np.repeat(w, n_classes),
        columns.ravel(),
    )
    values = (
        _row_values(w, np.zeros((n, n_classes)))[..., :1]
        if weighted
        else (np.zeros((n, n_classes, 0)))
    )

    def finalize(sums):
        hits = sums[..., 1] if weighted else sums[..., 0]
        shape = hits.shape
        stats = np.stack(
            [
                np.broadcast_to(fixed_count, shape),
                np.broadcast_to(fixed_conf, shape),
                hits,
            ],
            axis=-1,
        ).reshape(*shape[:-1], n_classes, n_bins, 3)
        return binned_error(stats, norm).mean(axis=-1)

    return Plan(
        cells.astype(np.int32), values, n_classes * n_bins, finalize, cumulative
    )
