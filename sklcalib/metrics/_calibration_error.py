"""Binned calibration errors: ECE (L1, L2, max), adaptive ECE, classwise ECE, MCE."""

import numpy as np

from sklcalib._utils._binning import error_from_stats
from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._validation import (
    NORMS,
    STRATEGIES,
    any_dask,
    check_n_bins,
    check_option,
    check_prob_values,
    check_targets,
    reject_dask,
)

from ._accumulator import stream_statistics
from ._statistics import (
    classwise_statistics,
    uniform_top_label_statistics,
    validated_top_label,
)
from .binning import _bin_statistics

_QUANTILE_HINT = (
    "Use strategy='uniform' (equal-width bins stream), or compute the "
    "equal-mass error on an in-memory sample (y_prob[idx].compute())."
)


def _streamed(y_true, y_prob, n_bins, labels, sample_weight, strategy, part):
    """The accumulator of dask inputs (uniform bins only), or None."""
    if not any_dask(y_true, y_prob, sample_weight):
        return None
    if strategy != "uniform":
        reject_dask(
            "equal-mass (quantile) bins need a global sort of all the samples",
            _QUANTILE_HINT,
            y_prob=y_prob,
            y_true=y_true,
            sample_weight=sample_weight,
        )
    return stream_statistics(
        y_true,
        y_prob,
        n_bins=n_bins,
        labels=labels,
        sample_weight=sample_weight,
        parts=(part,),
    )


def top_label_inputs(y_true, y_prob, labels=None, sample_weight=None):
    """Validate the inputs and return top-label ``(confidence, correct,
    sample_weight, y_idx, p)``.

    With a large 2-D ``y_prob`` the value checks, max and argmax run fused in one
    compiled pass over the array.
    """
    y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
    conf, correct = validated_top_label(p, y_idx)
    return conf, correct, w, y_idx, p


def top_label_statistics(
    y_true, y_prob, *, n_bins=15, strategy="uniform", labels=None, sample_weight=None
):
    """Validated top-label :class:`~sklcalib.metrics.BinStatistics`
    (computed block by block for dask arrays)."""
    n_bins = check_n_bins(n_bins)
    check_option(strategy, "strategy", STRATEGIES)
    acc = _streamed(y_true, y_prob, n_bins, labels, sample_weight, strategy, "top")
    if acc is not None:
        return acc.top_label_statistics()
    y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
    if strategy == "uniform":
        return uniform_top_label_statistics(p, y_idx, n_bins, w)
    conf, correct = validated_top_label(p, y_idx)
    return _bin_statistics(conf, correct, n_bins, strategy, w)


@fill_doc
def expected_calibration_error(
    y_true,
    y_prob,
    *,
    n_bins=15,
    labels=None,
    sample_weight=None,
    strategy="uniform",
    norm="l1",
):
    """Top-label expected calibration error (ECE).

    The confidence of a sample is its largest predicted probability, its
    correctness whether that class (the first maximum) is the true label.
    Samples are binned by confidence and
    ``ECE = sum_b (n_b / N) * |acc_b - conf_b|`` over the non-empty bins.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, of any type a scikit-learn classifier accepts.
    y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities, columns in the order of ``labels`` or of the
        sorted unique labels of ``y_true``: values in [0, 1], rows summing to
        1 within round-off (the larger of the square root of the dtype's
        machine epsilon and float32 round-off over the columns), or within
        their rounding when written with a few decimals (then divided by
        their sums, with a warning). A 1-D array holds the probability of the
        positive class (the second label) of a binary problem. numpy arrays,
        torch tensors (any dtype, device or ``requires_grad``; read without a
        copy where numpy shares their memory) and pandas objects (nullable
        dtypes included) are accepted. A dask array (rows chunked) is reduced
        block by block on the active Dask scheduler, with
        ``strategy="uniform"`` only; pass ``labels`` then to spare a pass over
        ``y_true``.
    n_bins : int, default=15
        Number of bins.
    labels : array-like of shape (n_classes,), default=None
        The label of every column of ``y_prob``, in column order (for
        instance ``estimator.classes_``). Needed when ``y_true`` does not hold
        every class, and for string labels unless the data show their sorted
        order (their log-likelihood under it beats every other order of the
        columns by 10 nats; a ValueError otherwise).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights. A row of weight 0 is no row; rescaling all weights by
        one factor changes nothing.
    strategy : {"uniform", "quantile"}, default="uniform"
        ``"uniform"``: right-closed equal-width bins ``(lower, upper]`` on the
        float64 edges ``np.linspace(0, 1, n_bins + 1)``, the first bin also
        holding 0 (a confidence on an edge goes to the lower bin).
        ``"quantile"``: equal-mass bins in ``numpy.array_split`` order, see
        :func:`adaptive_calibration_error` (groups by rank: tied confidences
        may fall in different bins, unlike the value edges of
        ``HistogramBinningCalibrator(strategy="quantile")``).
    norm : {"l1", "l2", "max"}, default="l1"
        ``"l1"``: the ECE; ``"l2"``: the root of the weighted mean squared gap;
        ``"max"``: the largest gap over the non-empty bins (MCE).

    Returns
    -------
    ece : float
        In [0, 1]; lower is better.

    See Also
    --------
    bin_statistics : The per-bin sums the error is computed from.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import expected_calibration_error
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> y_true = [0, 1, 1, 1]
    >>> round(expected_calibration_error(y_true, y_prob, n_bins=5), 6)
    0.25
    """
    check_option(norm, "norm", NORMS)
    stats = top_label_statistics(
        y_true,
        y_prob,
        n_bins=n_bins,
        strategy=strategy,
        labels=labels,
        sample_weight=sample_weight,
    )
    return error_from_stats(stats, norm)


@fill_doc
def adaptive_calibration_error(
    y_true, y_prob, *, n_bins=15, labels=None, sample_weight=None, norm="l1"
):
    """Adaptive (equal-mass) expected calibration error, AdaECE.

    Samples are sorted by top-label confidence (stable sort) and split into
    ``n_bins`` consecutive groups whose sizes differ by at most one, the larger
    groups first, as ``numpy.array_split`` does. Every sample is counted
    (Mukhoti et al.'s code drops those at the minimum confidence; we do not).
    Groups are formed by count even with ``sample_weight``.

    Parameters
    ----------
    %(inputs_as_ece_takes_them)s
    n_bins : int, default=15
        Number of groups.
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    norm : {"l1", "l2", "max"}, default="l1"
        How the per-group gaps are combined.

    Returns
    -------
    ece : float
        In [0, 1]; lower is better.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import adaptive_calibration_error
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> round(adaptive_calibration_error([0, 1, 1, 1], y_prob, n_bins=2), 6)
    0.35
    """
    return expected_calibration_error(
        y_true,
        y_prob,
        n_bins=n_bins,
        labels=labels,
        sample_weight=sample_weight,
        strategy="quantile",
        norm=norm,
    )


@fill_doc
def maximum_calibration_error(
    y_true, y_prob, *, n_bins=15, labels=None, sample_weight=None, strategy="uniform"
):
    """Maximum calibration error (MCE), the largest gap of a top-label bin.

    The largest top-label gap ``|acc_b - conf_b|`` over the non-empty bins.

    Parameters
    ----------
    %(inputs_as_ece_takes_them)s
    n_bins : int, default=15
        Number of bins.
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights (they weigh the means within a bin).
    strategy : {"uniform", "quantile"}, default="uniform"
        Binning strategy, see :func:`expected_calibration_error`.

    Returns
    -------
    mce : float
        In [0, 1]; lower is better.

    Notes
    -----
    Dask arrays are reduced block by block on the active Dask scheduler
    (uniform bins only), torch tensors read without a copy where possible; see
    :func:`expected_calibration_error`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import maximum_calibration_error
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> round(maximum_calibration_error([0, 1, 1, 1], y_prob, n_bins=5), 6)
    0.4
    """
    return expected_calibration_error(
        y_true,
        y_prob,
        n_bins=n_bins,
        labels=labels,
        sample_weight=sample_weight,
        strategy=strategy,
        norm="max",
    )


@fill_doc
def classwise_calibration_error(
    y_true,
    y_prob,
    *,
    n_bins=15,
    labels=None,
    sample_weight=None,
    strategy="uniform",
    norm="l1",
):
    """Classwise ECE, the mean binned calibration error of the columns.

    The mean over the columns of ``y_prob`` of the binned calibration error of
    ``y_prob[:, k]`` against ``y_true == labels[k]``.

    The mean runs over the K columns of ``y_prob``, also those of classes
    absent from ``y_true`` (a column of a class never seen is judged against
    all-zero outcomes). A 1-D binary ``y_prob`` counts as the two columns
    ``[1 - p, p]``.

    Parameters
    ----------
    %(inputs_as_ece_takes_them)s
    n_bins : int, default=15
        Number of bins per class.
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    strategy : {"uniform", "quantile"}, default="uniform"
        Binning strategy of each column.
    norm : {"l1", "l2", "max"}, default="l1"
        Norm of each per-class error.

    Returns
    -------
    cw_ece : float
        In [0, 1]; lower is better.

    Notes
    -----
    On dask arrays (uniform bins only) each block adds its rows to the
    per-class bin sums of every column, so the whole input is read once.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import classwise_calibration_error
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> round(classwise_calibration_error([0, 1, 1, 1], y_prob, n_bins=5), 6)
    0.375
    """
    n_bins = check_n_bins(n_bins)
    check_option(strategy, "strategy", STRATEGIES)
    check_option(norm, "norm", NORMS)
    acc = _streamed(
        y_true, y_prob, n_bins, labels, sample_weight, strategy, "classwise"
    )
    if acc is not None:
        stats = acc.classwise_statistics()
    else:
        y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
        p = check_prob_values(p)
        stats = classwise_statistics(p, y_idx, n_bins, strategy, w)
    return float(np.mean([error_from_stats(s, norm) for s in stats]))
