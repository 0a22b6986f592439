"""Metrics by name, and their resampling plans (see ``_resampling``).

A plan exists for the uniform-bin metrics (ECE with any norm, MCE, classwise
ECE), NLL and Brier: the metrics whose value is a function of per-cell sums
that resampling leaves the cells of. Every other metric (equal-mass bins, whose
edges move with the resample; smooth ECE; the sweep; SKCE; any callable) is
recomputed on each resample.
"""

from typing import NamedTuple

import numpy as np

from sklcalib._utils._binning import top_label, uniform_bin_index, uniform_edges
from sklcalib._utils._validation import (
    NORMS,
    STRATEGIES,
    check_n_bins,
    check_option,
    check_prob_values,
    check_targets,
)

from ._calibration_error import (
    adaptive_calibration_error,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from ._debiased import debiased_calibration_error
from ._kernel import kernel_calibration_error
from ._smooth import smooth_calibration_error
from ._sweep import ece_sweep


def _true_class_probability(y_true, y_prob, labels, sample_weight):
    y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
    check_prob_values(p)
    columns = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    return columns, y_idx, w


def _weighted_mean(values, w):
    return float(np.mean(values) if w is None else np.dot(values, w) / w.sum())


def _nll_terms(columns, y_idx):
    p_true = columns[np.arange(columns.shape[0]), y_idx].astype(np.float64)
    return -np.log(np.clip(p_true, np.finfo(columns.dtype).eps, 1.0))


def _brier_terms(columns, y_idx):
    p_true = columns[np.arange(columns.shape[0]), y_idx].astype(np.float64)
    return np.square(columns.astype(np.float64)).sum(axis=1) - 2.0 * p_true + 1.0


def negative_log_likelihood(y_true, y_prob, *, labels=None, sample_weight=None):
    """Mean ``-log p_y`` (probabilities clipped at the machine epsilon of the
    dtype, as ``sklearn.metrics.log_loss``); the report's ``"nll"``."""
    columns, y_idx, w = _true_class_probability(y_true, y_prob, labels, sample_weight)
    return _weighted_mean(_nll_terms(columns, y_idx), w)


def brier_score(y_true, y_prob, *, labels=None, sample_weight=None):
    """Mean ``sum_k (p_k - [y = k])^2``; the report's ``"brier"``."""
    columns, y_idx, w = _true_class_probability(y_true, y_prob, labels, sample_weight)
    return max(_weighted_mean(_brier_terms(columns, y_idx), w), 0.0)


METRICS = {
    "ece": expected_calibration_error,
    "adaptive_ece": adaptive_calibration_error,
    "classwise_ece": classwise_calibration_error,
    "mce": maximum_calibration_error,
    "smooth_ece": smooth_calibration_error,
    "debiased_ece": debiased_calibration_error,
    "ece_sweep": ece_sweep,
    "kernel_calibration_error": kernel_calibration_error,
    "nll": negative_log_likelihood,
    "brier": brier_score,
}


def resolve_metric(metric):
    """The function of a metric name, or the callable itself."""
    if callable(metric):
        return metric
    return METRICS[check_option(metric, "metric", tuple(METRICS))]


class Plan(NamedTuple):
    """Cell codes (n, m), values (n, m, v), number of cells, ``finalize``."""

    codes: np.ndarray
    values: np.ndarray
    n_cells: int
    finalize: object


class TestPlan(NamedTuple):
    """Consistency-resampling plan: row ``i`` drawing class ``k`` adds
    ``values[i, k]`` to cell ``codes[i, k]``; ``finalize`` maps those random
    sums to the metric; ``cumulative`` holds the rows' cumulative
    probabilities."""

    codes: np.ndarray
    values: np.ndarray
    n_cells: int
    finalize: object
    cumulative: np.ndarray


def binned_error(sums, norm):
    """Calibration error from cell sums ``(..., n_bins, 3)`` of (count,
    confidence, correctness), vectorised over the leading axes."""
    counts = sums[..., 0]
    filled = counts > 0
    safe = np.where(filled, counts, 1.0)
    gaps = np.where(filled, np.abs(sums[..., 1] - sums[..., 2]) / safe, 0.0)
    if norm == "max":
        value = gaps.max(axis=-1)
    else:
        frac = counts / counts.sum(axis=-1, keepdims=True)
        if norm == "l1":
            value = (frac * gaps).sum(axis=-1)
        else:
            value = np.sqrt((frac * gaps * gaps).sum(axis=-1))
    return np.clip(value, 0.0, 1.0)


def _weight_column(w, n):
    return np.ones(n) if w is None else w


_BINNED_PARAMS = {"n_bins", "strategy", "norm", "labels", "sample_weight"}


def _binned_settings(name, params):
    """``(n_bins, norm)`` if the named metric with these parameters has a
    plan, else None."""
    if name not in ("ece", "mce", "classwise_ece") or set(params) - _BINNED_PARAMS:
        return None
    if params.get("strategy", "uniform") != "uniform":
        return None
    check_option(params.get("strategy", "uniform"), "strategy", STRATEGIES)
    if name == "mce":
        if "norm" in params:
            return None
        norm = "max"
    else:
        norm = check_option(params.get("norm", "l1"), "norm", NORMS)
    return check_n_bins(params.get("n_bins", 15)), norm


def _validated(y_true, y_prob, params):
    y_idx, p, classes, w = check_targets(
        y_true, y_prob, params.get("labels"), params.get("sample_weight")
    )
    check_prob_values(p)
    return y_idx, p, classes, w


def bootstrap_plan(name, y_true, y_prob, params):
    """The bootstrap :class:`Plan` of a named metric, or None."""
    if not isinstance(name, str):
        return None
    if name in ("nll", "brier"):
        if set(params) - {"labels", "sample_weight"}:
            return None
        y_idx, p, _, w = _validated(y_true, y_prob, params)
        columns = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
        terms = (_nll_terms if name == "nll" else _brier_terms)(columns, y_idx)
        wc = _weight_column(w, terms.shape[0])
        values = np.stack([wc, wc * terms], axis=1)[:, None, :]
        codes = np.zeros((terms.shape[0], 1), dtype=np.intp)
        floor = -np.inf if name == "nll" else 0.0

        def finalize(sums):
            return np.maximum(sums[..., 0, 1] / sums[..., 0, 0], floor)

        return Plan(codes, values, 1, finalize)
    settings = _binned_settings(name, params)
    if settings is None:
        return None
    n_bins, norm = settings
    y_idx, p, _, w = _validated(y_true, y_prob, params)
    edges = uniform_edges(n_bins)
    if name in ("ece", "mce"):
        conf, correct = top_label(p, y_idx)
        conf = conf.astype(np.float64)
        wc = _weight_column(w, conf.shape[0])
        codes = uniform_bin_index(conf, edges)[:, None]
        values = np.stack([wc, wc * conf, wc * correct], axis=1)[:, None, :]
        return Plan(codes, values, n_bins, lambda sums: binned_error(sums, norm))
    columns = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    columns = columns.astype(np.float64)
    n, n_classes = columns.shape
    wc = _weight_column(w, n)
    codes = uniform_bin_index(columns, edges) + np.arange(n_classes) * n_bins
    hit = (y_idx[:, None] == np.arange(n_classes)).astype(np.float64)
    values = np.stack(
        [
            np.broadcast_to(wc[:, None], (n, n_classes)),
            wc[:, None] * columns,
            wc[:, None] * hit,
        ],
        axis=2,
    )

    def finalize(sums):
        per_class = sums.reshape(*sums.shape[:-2], n_classes, n_bins, 3)
        return binned_error(per_class, norm).mean(axis=-1)

    return Plan(codes, values, n_classes * n_bins, finalize)


def consistency_plan(name, y_true, y_prob, params):
    """The consistency-resampling :class:`TestPlan` of a named metric (labels
    drawn from ``y_prob``), or None."""
    base = bootstrap_plan(name, y_true, y_prob, params)
    if base is None:
        return None
    _y_idx, p, _, w = _validated(y_true, y_prob, params)
    columns = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    columns64 = columns.astype(np.float64)
    n, n_classes = columns.shape
    wc = _weight_column(w, n)
    cumulative = np.cumsum(columns64, axis=1)
    every = np.arange(n_classes)
    if name in ("nll", "brier"):
        terms = np.stack(
            [
                (_nll_terms if name == "nll" else _brier_terms)(
                    columns, np.full(n, k, dtype=np.intp)
                )
                for k in range(n_classes)
            ],
            axis=1,
        )
        codes = np.zeros((n, n_classes), dtype=np.intp)
        values = (wc[:, None] * terms)[:, :, None]
        total_weight = wc.sum()

        def finalize(sums):
            counts = np.full((*sums.shape[:-2], 1, 1), total_weight)
            return base.finalize(np.concatenate([counts, sums], axis=-1))

        return TestPlan(codes, values, 1, finalize, cumulative)
    # binned: counts and confidence sums are fixed, only correctness is drawn
    fixed = np.zeros((base.n_cells, 2))
    for j in range(base.codes.shape[1]):
        for v in range(2):
            fixed[:, v] += np.bincount(
                base.codes[:, j], weights=base.values[:, j, v], minlength=base.n_cells
            )
    if name in ("ece", "mce"):
        if p.ndim == 1:
            pred = (p > 0.5).astype(np.intp)
        else:
            pred = np.argmax(p, axis=1)
        codes = np.broadcast_to(base.codes, (n, n_classes))
        values = (wc[:, None] * (every[None, :] == pred[:, None]))[:, :, None]
    else:
        codes = base.codes  # class k's cell of every row
        values = np.broadcast_to(wc[:, None], (n, n_classes))[:, :, None]

    def finalize(sums):
        full = np.concatenate(
            [np.broadcast_to(fixed, (*sums.shape[:-1], 2)), sums], axis=-1
        )
        return base.finalize(full)

    return TestPlan(
        np.ascontiguousarray(codes),
        np.ascontiguousarray(values),
        base.n_cells,
        finalize,
        cumulative,
    )
