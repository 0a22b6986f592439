"""Isotonic regression on many training subsets of one calibration set (the
folds of the harm check and of the calibrator selection), sharing one sort."""

import numpy as np

try:
    from scipy.optimize import isotonic_regression
except ImportError:  # scipy < 1.12: every split takes the general path
    isotonic_regression = None

from ._base import renormalise, within_unit_interval

#: scikit-learn's ``IsotonicRegression`` merges sorted scores less than this
#: apart (``np.finfo(np.float64).resolution``) into one threshold
_MERGE_GAP = np.finfo(np.float64).resolution


def isotonic_fold_proba(proba, y_idx, n_classes, w, splits):
    """Held-out probabilities of :class:`IsotonicCalibrator` fitted on each
    split's training rows, as ``IsotonicCalibrator().fit(proba[train],
    y[train], w[train]).predict_proba(proba[test])`` gives them, with one sort
    per column for all splits instead of scikit-learn's sort, checks and
    interpolator per split and column (the harm check's and the selection's
    folds). The same steps: rows of zero weight dropped, tied scores merged
    into their weighted mean target, pool-adjacent-violators by scipy (which
    scikit-learn calls), linear interpolation clipped to the fitted range,
    then one-vs-rest renormalisation. None where a split needs the general
    path (a class missing from its training rows, a training weight sum of
    zero: the calibrator's own checks say what is wrong), and everywhere with
    a scipy older than 1.12, which has no ``isotonic_regression``."""
    if isotonic_regression is None:
        return None
    n_rows, n_columns = proba.shape
    n_folds = len(splits)
    positive = np.ones(n_rows, dtype=bool) if w is None else w > 0
    in_train = np.zeros((n_folds, n_rows), dtype=bool)
    for f, (train, _) in enumerate(splits):
        in_train[f, train] = True
        if not (
            np.all(np.bincount(y_idx[train], minlength=n_classes) > 0)
            and (w is None or w[train].sum() > 0)
        ):
            return None
    in_train &= positive  # scikit-learn drops the rows of zero weight
    columns = (
        [(n_columns - 1, 1)] if n_classes == 2 else [(k, k) for k in range(n_columns)]
    )
    # ties in any order: the sums over a threshold's rows are of integers
    # (exact in any order) unless weighted (then equal to rounding)
    orders = np.argsort(proba[:, [c for c, _ in columns]].T, axis=1).T
    out = [np.empty((len(test), len(columns))) for _, test in splits]
    part_of, place = _partition(splits, n_rows)
    for j, (c, k) in enumerate(columns):
        order = orders[:, j]
        x = proba[order, c]
        gaps = np.diff(x)
        if part_of is not None and not np.any((gaps > 0) & (gaps < _MERGE_GAP)):
            _fold_columns_by_subtraction(
                out, j, x, gaps, order, y_idx == k, w, part_of, place, n_folds
            )
        else:
            _fold_columns(
                out, j, x, order, y_idx == k, w, in_train, splits, proba[:, c]
            )
    held_out = []
    for values in out:
        values = within_unit_interval(values, "isotonic regression")
        if n_classes == 2:
            held_out.append(np.column_stack([1.0 - values[:, 0], values[:, 0]]))
        else:
            held_out.append(renormalise(values))
    return held_out


def _threshold_starts(x, firsts):
    """Where each threshold's run of sorted scores ``x`` starts, merged as
    scikit-learn merges them: a score opens a new threshold when it is at
    least the merge gap above the score that opened the current one.
    ``firsts``: positions that open a new sorted sequence (the next split's
    rows)."""
    gaps = np.diff(x)
    starts = np.concatenate([[True], gaps >= _MERGE_GAP])
    starts[firsts] = True
    # a score closer than the gap to the one before may still be a gap above
    # the run's first score: only these few need the run's start, in order
    unsure = np.flatnonzero((gaps > 0) & (gaps < _MERGE_GAP)) + 1
    unsure = unsure[~starts[unsure]]
    if unsure.size:
        sure = np.flatnonzero(starts)
        last = 0
        for j in unsure:
            first = max(sure[np.searchsorted(sure, j) - 1], last)
            if x[j] - x[first] >= _MERGE_GAP:
                starts[j] = True
                last = j
    return np.flatnonzero(starts)


def _partition(splits, n_rows):
    """``(split of each row's held-out part, its place in that part)`` when
    the held-out parts partition the rows (k-fold), else ``(None, None)``."""
    part_of = np.full(n_rows, -1)
    place = np.empty(n_rows, dtype=np.intp)
    for f, (_, test) in enumerate(splits):
        if np.any(part_of[test] >= 0):
            return None, None
        part_of[test] = f
        place[test] = np.arange(len(test))
    if np.any(part_of < 0):
        return None, None
    return part_of, place


def _fold_columns_by_subtraction(
    out, j, x, gaps, order, is_k, w, part_of, place, n_folds
):
    """Column ``j`` of every split's held-out probabilities when the held-out
    parts partition the rows and no two distinct scores are closer than the
    merge gap: the thresholds are then the distinct scores, and a split's
    per-threshold mass and hits are those of all rows less those of its
    held-out part (integers when unweighted: exact)."""
    part = part_of[order]
    weights = None if w is None else w[order]
    hits = is_k[order].astype(np.float64)
    if np.all(gaps > 0):
        # every row its own threshold, its mean target its label: a split's
        # training rows in score order are the sequence to fit
        for f in range(n_folds):
            keep = part != f
            if weights is not None:
                keep &= weights > 0
            fitted = isotonic_regression(
                hits[keep], weights=None if weights is None else weights[keep]
            ).x
            _interpolate(out[f], j, x, x[keep], fitted, part == f, order, place)
        return
    first = np.concatenate([[True], gaps > 0])
    threshold = np.cumsum(first) - 1
    n_thresholds = threshold[-1] + 1
    knots = x[first]
    cell = part * n_thresholds + threshold
    size = n_folds * n_thresholds
    if weights is not None:
        hits *= weights
    mass = np.bincount(cell, weights=weights, minlength=size).astype(np.float64)
    mass = mass.reshape(n_folds, -1)
    hits = np.bincount(cell, weights=hits, minlength=size).reshape(n_folds, -1)
    mass = mass.sum(axis=0) - mass  # the training rows of each split
    hits = hits.sum(axis=0) - hits
    kept = mass > 0
    mean = np.divide(hits, mass, out=np.zeros_like(hits), where=kept)
    for f in range(n_folds):
        keep = kept[f]
        fitted = isotonic_regression(mean[f][keep], weights=mass[f][keep]).x
        _interpolate(out[f], j, x, knots[keep], fitted, part == f, order, place)


def _interpolate(out, j, x, knots, fitted, held, order, place):
    """Column ``j`` of a split's held-out probabilities: the fitted step
    function (clipped to [0, 1]) interpolated at its held-out rows, which
    ``held`` marks among the sorted scores ``x``, clipped to the knots'
    range (the scores in order make ``np.interp``'s searches short)."""
    at = np.flatnonzero(held)
    values = np.interp(
        np.clip(x[at], knots[0], knots[-1]), knots, np.clip(fitted, 0.0, 1.0)
    )
    out[place[order[at]], j] = values


def _fold_columns(out, j, x_all, order, is_k, w, in_train, splits, p):
    """Column ``j`` of every split's held-out probabilities, each split's
    training rows gathered in score order (any splits)."""
    n_folds = len(splits)
    fold, at = np.nonzero(in_train[:, order])
    rows = order[at]
    x = p[rows]
    starts = _threshold_starts(x, np.flatnonzero(np.diff(fold)) + 1)
    hits = is_k[rows].astype(np.float64)
    if w is None:
        mass = np.diff(np.append(starts, len(rows))).astype(np.float64)
    else:
        hits *= w[rows]
        mass = np.add.reduceat(w[rows], starts)
    mean = np.add.reduceat(hits, starts) / mass
    ends = np.searchsorted(fold[starts], np.arange(n_folds + 1))
    for f, (_, test) in enumerate(splits):
        part = slice(ends[f], ends[f + 1])
        fitted = isotonic_regression(mean[part], weights=mass[part]).x
        knots = x[starts[part]]
        at = np.clip(p[test], knots[0], knots[-1])
        out[f][:, j] = np.interp(at, knots, np.clip(fitted, 0.0, 1.0))
