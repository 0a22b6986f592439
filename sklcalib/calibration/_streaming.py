"""The class-agnostic parts of fitting and predicting on dask arrays.

A streaming fit runs one task per row block of the scores on the active Dask
scheduler (a ``distributed.Client`` if there is one); each task validates its
block as the in-memory ``fit`` does and returns a few sums, which the client
adds in block order. The scores are never gathered on the client. Each
calibrator that can stream owns its fit, ``_fit_dask``, and its per-block
functions, in its own module:

- :class:`TemperatureScaler` (``objective="nll"``, in ``_temperature``): the
  same safeguarded Halley/Newton iteration on the inverse temperature as in
  memory, each step one pass summing the NLL and its first three derivatives
  (the same kernel, compiled on large blocks); it starts from the optimum of
  the first block, as the in-memory fit starts from a subsample.
- :class:`PlattScaler` (in ``_scaling``): the in-memory fit itself
  (``_logistic.fit_platt``: Newton's method on scikit-learn's
  ``LogisticRegression`` objective), its moments of the score merged over the
  blocks with Chan's formula and each of its steps one pass summing the loss,
  gradient and Hessian.
- :class:`HistogramBinningCalibrator` (``strategy="uniform"``, in
  ``_binning``): one pass of per-bin counts.

Each sum is weighted by ``sample_weight`` when given, so a weighted streaming
fit reaches the weighted in-memory parameters.

The other calibrators refuse dask arrays (``BaseCalibrator._fit_dask``). This
module holds what every streaming fit shares (the targets aligned on the row
blocks of the scores, the classes found, the total weight checked) and
``predict_proba`` and ``predict``, which map dask to dask lazily
(``map_blocks``). It imports dask, so it is imported only once a dask array
has arrived; it imports no calibrator, which all import it lazily.
"""

import dask.array as da
import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from sklcalib._utils._dask import map_row_blocks, row_blocks, unique_values
from sklcalib._utils._scores import as_2d
from sklcalib._utils._validation import check_sample_weight, is_dask_array


def prepare_fit(estimator, X, y, sample_weight, refusal=None):
    """The start of every streaming fit, its checks in the in-memory order.

    Check the parameters (and raise ``refusal``, when given, for those that
    cannot stream), align y and sample_weight on X's row blocks, find the
    classes (one pass over y), check that the weights sum to more than zero
    (one pass over them) and set ``classes_`` and ``n_features_in_``. Returns
    the aligned ``(X, y, sample_weight)``, the last None without weights.
    """
    estimator._check_params()
    if refusal is not None:
        raise ValueError(refusal)
    if y is None:
        raise ValueError("y is required: the targets of the calibration scores.")
    if not is_dask_array(X):
        raise ValueError(
            "y or sample_weight is a dask array but X is not: pass X as a dask "
            "array too (the fit streams over X's row blocks), or compute them."
        )
    if X.ndim not in (1, 2):
        raise ValueError(f"X must be 1-D or 2-D, got a dask array of shape {X.shape}.")
    X, y, w = row_blocks(as_2d(X), "X", {"y": y, "sample_weight": sample_weight})
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
    if w is not None:  # one pass over the weights alone: the total must be > 0
        total = sum(map_row_blocks(_weight_total, [w]))
        if not total > 0:
            raise ValueError("sample_weight sums to zero: no sample would be counted.")
    estimator.classes_ = classes
    estimator.n_features_in_ = n_columns
    return X, y, w


def _weight_total(w):
    return check_sample_weight(w, w.shape[0], allow_zero_sum=True).sum()


def _rows(X):
    X = as_2d(X)
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
