"""Fitting calibrators on dask arrays by streaming passes over row blocks.

A pass runs one task per row block of the scores on the active Dask scheduler
(a ``distributed.Client`` if there is one); each task validates its block as
the in-memory ``fit`` does and returns a few sums, which the client adds in
block order. The scores are never gathered on the client.

- :class:`TemperatureScaler` (``objective="nll"``): the same safeguarded
  Halley/Newton iteration on the inverse temperature as in memory, each step
  one pass summing the NLL and its first three derivatives (the same kernel,
  compiled on large blocks); it starts from the optimum of the first block,
  as the in-memory fit starts from a subsample.
- :class:`PlattScaler`: one pass for the mean and standard deviation of the
  score (merged per block with Chan's formula) and the class balance, then
  Newton's method with backtracking on the same penalised logistic loss that
  scikit-learn's ``LogisticRegression`` minimises in memory, each step one
  pass summing the loss, gradient and Hessian.
- :class:`HistogramBinningCalibrator` (``strategy="uniform"``): one pass of
  per-bin counts.

``predict_proba`` and ``predict`` map dask to dask lazily (``map_blocks``).
Imported only once a dask array has arrived.
"""

import dask.array as da
import numpy as np
from scipy.special import expit, logit
from sklearn.utils.multiclass import check_classification_targets

from sklcalib._utils._binning import bin_index
from sklcalib._utils._dask import map_row_blocks, row_blocks, unique_values
from sklcalib._utils._validation import is_dask_array

from ._base import binary_logits
from ._binning import HistogramBinningCalibrator
from ._scaling import PlattScaler
from ._temperature import (
    TEMPERATURE_BOUNDS,
    TemperatureScaler,
    _safeguarded_newton,
    _warn_if_at_bound,
    fit_temperature_nll,
    nll_derivatives,
)

_STREAMING = (TemperatureScaler, PlattScaler, HistogramBinningCalibrator)
_SAMPLE_HINT = (
    "fit it on an in-memory sample of the scores (X[idx].compute()), or use "
    "TemperatureScaler, PlattScaler or HistogramBinningCalibrator("
    "strategy='uniform'), which fit on dask arrays by streaming passes."
)


def _as_2d(X):
    return X.reshape(-1, 1) if X.ndim == 1 else X


def _prepare(estimator, X, y):
    """Align X and y on X's row blocks, find the classes (one pass over y)
    and set ``classes_`` and ``n_features_in_``."""
    if y is None:
        raise ValueError("y is required: the targets of the calibration scores.")
    if not is_dask_array(X):
        raise ValueError(
            "y is a dask array but X is not: pass X as a dask array too (the fit "
            "streams over X's row blocks), or compute y."
        )
    if X.ndim not in (1, 2):
        raise ValueError(f"X must be 1-D or 2-D, got a dask array of shape {X.shape}.")
    X, y = row_blocks(_as_2d(X), "X", {"y": y})
    classes = unique_values(y)
    check_classification_targets(classes)
    if len(classes) < 2:
        raise ValueError(
            "y must hold at least two classes to calibrate; got "
            f"{len(classes)} class: {classes.tolist()}."
        )
    n_columns = X.shape[1]
    if not (n_columns == len(classes) or (n_columns == 1 and len(classes) == 2)):
        raise ValueError(
            f"scores has {n_columns} columns but y has {len(classes)} classes; "
            "give one score column per class (or, for a binary problem, "
            "the positive-class score as one column)."
        )
    estimator.classes_ = classes
    estimator.n_features_in_ = n_columns
    return X, y


def _block_inputs(estimator, X, y):
    """One block validated as ``fit`` validates it, and its class indices."""
    X = estimator._validate_scores(X, reset=False)
    y = np.asarray(y).ravel()
    return X, np.searchsorted(estimator.classes_, y)


def fit_streaming(estimator, X, y, sample_weight=None):
    """Fit ``estimator`` on dask ``X``/``y`` by streaming passes."""
    if not isinstance(estimator, _STREAMING):
        raise ValueError(
            f"{type(estimator).__name__} cannot be fitted on dask arrays: it needs "
            f"all scores at once; {_SAMPLE_HINT}"
        )
    if sample_weight is not None:
        raise ValueError(
            "sample_weight is not supported with dask arrays yet; fit on an "
            "in-memory sample to use weights."
        )
    estimator._check_params()
    if isinstance(estimator, TemperatureScaler) and estimator.objective != "nll":
        raise ValueError(
            "TemperatureScaler(objective='ece') cannot be fitted on dask arrays "
            "(a grid search would take one pass per temperature); use "
            "objective='nll', or fit on an in-memory sample."
        )
    if (
        isinstance(estimator, HistogramBinningCalibrator)
        and estimator.strategy != "uniform"
    ):
        raise ValueError(
            "HistogramBinningCalibrator(strategy='quantile') cannot be fitted on "
            "dask arrays: its edges are quantiles of all scores; use "
            "strategy='uniform', or fit on an in-memory sample."
        )
    X, y = _prepare(estimator, X, y)
    if isinstance(estimator, PlattScaler) and len(estimator.classes_) != 2:
        raise ValueError(
            "Only binary classification is supported by PlattScaler. y holds "
            f"{len(estimator.classes_)} classes; use TemperatureScaler, "
            "VectorScaler or MatrixScaler for multiclass logits."
        )
    if isinstance(estimator, TemperatureScaler):
        _fit_temperature(estimator, X, y)
    elif isinstance(estimator, PlattScaler):
        _fit_platt(estimator, X, y)
    else:
        _fit_histogram(estimator, X, y)
    return estimator


# --- temperature ------------------------------------------------------------


def _temperature_sums(X, y, estimator, beta):
    X, y_idx = _block_inputs(estimator, X, y)
    derivatives = nll_derivatives(binary_logits(X), y_idx)(beta)
    return len(y_idx) * np.array([1.0, *derivatives])


def _block_temperature(X, y, estimator):
    X, y_idx = _block_inputs(estimator, X, y)
    return fit_temperature_nll(binary_logits(X), y_idx)


def _fit_temperature(estimator, X, y):
    lo, hi = 1.0 / TEMPERATURE_BOUNDS[1], 1.0 / TEMPERATURE_BOUNDS[0]
    beta = 1.0
    if X.numblocks[0] > 1:  # start from the first block's optimum
        first = map_row_blocks(
            _block_temperature, [X.blocks[0], y.blocks[0]], estimator
        )
        beta = 1.0 / first[0] if first else beta

    def derivatives(beta):
        sums = np.sum(
            map_row_blocks(_temperature_sums, [X, y], estimator, beta), axis=0
        )
        return tuple(sums[1:] / sums[0])

    beta = _safeguarded_newton(derivatives, beta, lo, hi, 100)
    estimator.temperature_ = float(1.0 / min(max(beta, lo), hi))
    _warn_if_at_bound(estimator.temperature_)


# --- Platt --------------------------------------------------------------------


def _platt_moments(X, y, estimator):
    X, y_idx = _block_inputs(estimator, X, y)
    s = PlattScaler._score(X)
    mean = s.mean()
    return np.array([s.shape[0], mean, np.sum((s - mean) ** 2), y_idx.sum()])


def _platt_sums(X, y, estimator, center, scale, theta):
    X, y_idx = _block_inputs(estimator, X, y)
    x = (PlattScaler._score(X) - center) / scale
    t = theta[0] * x + theta[1]
    sigma = expit(t)
    residual = sigma - y_idx
    curvature = sigma * (1.0 - sigma)
    return np.array(
        [
            np.sum(np.logaddexp(0.0, t) - y_idx * t),
            np.dot(residual, x),
            residual.sum(),
            np.dot(curvature, x * x),
            np.dot(curvature, x),
            curvature.sum(),
        ]
    )


def _fit_platt(estimator, X, y):
    # mean and variance merged block by block (Chan et al.): stable where
    # sum(s^2) - n mean^2 would cancel
    n = mean = m2 = positives = 0.0
    for nb, mb, m2b, pb in map_row_blocks(_platt_moments, [X, y], estimator):
        delta = mb - mean
        total = n + nb
        mean += delta * nb / total
        m2 += m2b + delta * delta * n * nb / total
        n, positives = total, positives + pb
    center, scale = mean, np.sqrt(m2 / n)
    scale = scale if scale > 0 else 1.0
    C = float(estimator.C)

    # scikit-learn's LogisticRegression objective on the standardised score:
    # C * sum(log-loss) + a^2 / 2 (the intercept is not penalised)
    def evaluate(theta):
        sums = np.sum(
            map_row_blocks(_platt_sums, [X, y], estimator, center, scale, theta),
            axis=0,
        )
        loss = C * sums[0] + 0.5 * theta[0] ** 2
        grad = C * sums[1:3] + np.array([theta[0], 0.0])
        hess = C * np.array([[sums[3], sums[4]], [sums[4], sums[5]]])
        hess[0, 0] += 1.0
        return loss, grad, hess

    rate = min(max(positives / n, 1e-12), 1 - 1e-12)
    theta = np.array([0.0, logit(rate)])
    loss, grad, hess = evaluate(theta)
    for _ in range(100):
        step = -np.linalg.solve(hess, grad)
        if np.all(np.abs(step) <= 1e-12 * (1.0 + np.abs(theta))):
            theta = theta + step  # quadratic convergence: this step is exact
            break
        slope = float(np.dot(grad, step))
        length = 1.0
        while True:  # backtracking (Armijo) keeps Newton safe far from the optimum
            candidate = theta + length * step
            new = evaluate(candidate)
            if new[0] <= loss + 1e-4 * length * slope or length < 1e-10:
                break
            length /= 2
        theta = candidate
        loss, grad, hess = new
    a = theta[0] / scale
    estimator.coef_ = float(a)
    estimator.intercept_ = float(theta[1] - a * center)


# --- histogram binning ----------------------------------------------------------


def _histogram_counts(X, y, estimator, edges):
    X, y_idx = _block_inputs(estimator, X, y)
    n_bins = len(edges) - 1
    out = []
    for c, k in estimator._columns(X):
        idx = bin_index(X[:, c], edges)
        out.append(
            [
                np.bincount(idx, minlength=n_bins).astype(np.float64),
                np.bincount(idx, weights=(y_idx == k) * 1.0, minlength=n_bins),
            ]
        )
    return np.array(out)


def _fit_histogram(estimator, X, y):
    edges = np.linspace(0.0, 1.0, estimator.n_bins + 1)
    counts, hits = np.sum(
        map_row_blocks(_histogram_counts, [X, y], estimator, edges), axis=0
    ).transpose(1, 0, 2)
    centres = (edges[:-1] + edges[1:]) / 2
    estimator.calibrators_ = [
        (edges, np.divide(h, c, out=centres.copy(), where=c > 0))
        for c, h in zip(counts, hits, strict=True)
    ]
    estimator.bin_edges_ = [e for e, _ in estimator.calibrators_]
    estimator.bin_values_ = [v for _, v in estimator.calibrators_]


# --- prediction -----------------------------------------------------------------


def _rows(X):
    X = _as_2d(X)
    return X.rechunk({1: -1}) if X.numblocks[1] > 1 else X


def predict_proba_dask(estimator, X):
    """``estimator.predict_proba`` block by block, lazily (dask to dask)."""
    X = _rows(X)
    k = len(estimator.classes_)
    return da.map_blocks(
        estimator.predict_proba,
        X,
        chunks=(X.chunks[0], (k,)),
        dtype=np.float64,
        meta=np.empty((0, k)),
    )


def predict_dask(estimator, X):
    """``estimator.predict`` block by block, lazily (dask to dask)."""
    X = _rows(X)
    dtype = estimator.classes_.dtype
    return da.map_blocks(
        estimator.predict,
        X,
        drop_axis=1,
        chunks=(X.chunks[0],),
        dtype=dtype,
        meta=np.empty((0,), dtype=dtype),
    )
