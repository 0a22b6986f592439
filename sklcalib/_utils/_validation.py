"""Input validation shared by every metric, the scorers and the Display.

The checks follow ``sklearn.metrics.log_loss`` (values in [0, 1], rows summing
to one within :func:`row_sum_tolerance`, labels from
``y_true`` or ``labels=``) but raise a ``ValueError`` where log_loss only
warns: a calibration metric of something that is not a probability is
meaningless.
"""

import math
import numbers
import sys
import warnings

import numpy as np

from ._scores import (
    rounding_tolerance,
    row_sum_tolerance,
    written_decimals,
)

STRATEGIES = ("uniform", "quantile")
NORMS = ("l1", "l2", "max")

# Every binned quantity allocates a few float64 arrays of n_bins entries; a
# million bins (8 MB each) is far more than any sample can fill, while
# n_bins=10**12 would otherwise fail with a MemoryError instead of a ValueError.
MAX_N_BINS = 10**6


def check_scalar(value, name, *, integer=False, low=None, high=None, low_open=False):
    """Return ``value`` as an int (``integer``) or a finite float in the range.

    ``sklearn.utils.check_scalar`` raises TypeError for a wrong type; every bad
    parameter of sklcalib raises a ValueError naming it, hence this helper.
    Booleans are refused although Python counts them as integers.
    """
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        what = "an integer" if integer else "a real number"
        raise ValueError(f"{name} must be {what}, got {value!r}.")
    value = int(value) if integer else float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(
            f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}."
        )
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}.")
    return value


def check_solver_params(max_iter, tol):
    """Check an iterative fit's ``max_iter`` (an integer >= 1) and ``tol``
    (a real >= 0), the pair every Newton or L-BFGS calibrator takes."""
    check_scalar(max_iter, "max_iter", integer=True, low=1)
    check_scalar(tol, "tol", low=0)


def check_n_resamples(n_resamples):
    """Return ``n_resamples`` as an int >= 1 or raise."""
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, numbers.Integral)
        or n_resamples < 1
    ):
        raise ValueError(f"n_resamples must be an integer >= 1, got {n_resamples!r}.")
    return int(n_resamples)


def check_confidence_level(confidence_level):
    """Return ``confidence_level`` as a float in (0, 1) or raise.

    A string or None is a ValueError naming the argument, not the TypeError
    of comparing it with a number.
    """
    if (
        isinstance(confidence_level, bool)
        or not isinstance(confidence_level, numbers.Real)
        or not 0.0 < confidence_level < 1.0
    ):
        raise ValueError(
            f"confidence_level must be a number in (0, 1), got {confidence_level!r}."
        )
    return float(confidence_level)


def check_bool(value, name):
    """Return ``value`` if it is a bool (numpy's included), else raise."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a bool, got {value!r}.")
    return bool(value)


def is_dask_array(x):
    """Whether ``x`` is a dask array, without importing dask."""
    return type(x).__module__.startswith("dask.") and hasattr(x, "chunks")


def any_dask(*arrays):
    """Whether any of ``arrays`` is a dask array."""
    return any(is_dask_array(a) for a in arrays)


def reject_dask(what, instead, **arrays):
    """Raise a ValueError if one of ``arrays`` (name -> value) is a dask array.

    For the metrics that need all rows at once: ``what`` says why, ``instead``
    what to use.
    """
    for name, value in arrays.items():
        if is_dask_array(value):
            raise ValueError(
                f"{name} is a dask array, but {what}, so it cannot be computed "
                f"chunk by chunk. {instead}"
            )


class Bfloat16Values(np.ndarray):
    """The float32 values of a bfloat16 tensor (numpy has no bfloat16), marked
    so that their row sums are held to bfloat16's tolerance, not float32's:
    a bfloat16 softmax's rows are off by up to about 2**-8.

    Views (slices, reshapes) keep the mark; ufunc results (sums, maxima,
    arithmetic) are plain arrays.
    """

    tolerance_dtype = "bfloat16"

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        def plain(x):
            return x.view(np.ndarray) if isinstance(x, Bfloat16Values) else x

        inputs = tuple(plain(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(plain(x) for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)


def tolerance_dtype(p):
    """The dtype whose round-off the rows of ``p`` carry: ``p.dtype``, or
    ``"bfloat16"`` for :class:`Bfloat16Values`."""
    return getattr(p, "tolerance_dtype", p.dtype)


def as_numpy(x):
    """A torch tensor as a numpy array (no copy for a CPU tensor of a numpy
    dtype); anything else unchanged.

    torch is looked up in ``sys.modules`` only: a tensor cannot exist unless
    torch was imported, so other inputs never import it. A tensor that
    requires grad is detached; a CUDA (or other device) tensor is copied to
    the host. float16 stays float16 (numpy has it), so a half-precision
    softmax is held to float16's row-sum tolerance as a numpy float16 array
    is; bfloat16, which numpy lacks, becomes float32 values marked as
    :class:`Bfloat16Values` (a copy), held to bfloat16's tolerance. A pandas
    object of nullable numeric dtypes (``Float64``, ``Int64``, ``boolean``)
    becomes the numpy array of those numbers (``pd.NA`` as NaN, which the
    checks then refuse by name), not an array of Python objects.
    """
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(x, pandas.Series | pandas.DataFrame):
        return _pandas_values(pandas, x)
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(x, torch.Tensor):
        return x
    x = x.detach()
    if x.device.type != "cpu":
        x = x.cpu()
    if x.dtype == torch.bfloat16:
        return x.float().numpy().view(Bfloat16Values)
    return x.numpy()


def _pandas_values(pandas, x):
    """A Series or DataFrame of nullable numeric dtypes as a numpy array of
    their numbers (``pd.NA`` as NaN); other pandas objects unchanged."""
    dtypes = [x.dtype] if isinstance(x, pandas.Series) else list(x.dtypes)
    is_extension = pandas.api.types.is_extension_array_dtype
    if not any(is_extension(d) and d.kind in "fiub" for d in dtypes):
        return x
    if not all(d.kind in "fiub" for d in dtypes):
        return x  # strings or categories among them: labels, left as they are
    if bool(np.any(x.isna())):
        return x.to_numpy(dtype=np.float64, na_value=np.nan)
    return x.to_numpy(
        dtype=np.result_type(*(getattr(d, "numpy_dtype", d) for d in dtypes))
    )


_STREAMING_HINT = (
    "Use expected_calibration_error(strategy='uniform'), "
    "maximum_calibration_error, classwise_calibration_error or "
    "sklcalib.metrics.CalibrationAccumulator, which stream, or compute this "
    "metric on an in-memory sample (y_prob[idx].compute())."
)


def check_n_bins(n_bins, name="n_bins"):
    """Return ``n_bins`` as an int in [1, MAX_N_BINS], or raise."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral):
        raise ValueError(
            f"{name} must be an integer >= 1, got {n_bins!r} of type "
            f"{type(n_bins).__name__}."
        )
    if n_bins < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {n_bins}.")
    if n_bins > MAX_N_BINS:
        raise ValueError(
            f"{name} must be at most {MAX_N_BINS:,} (more bins than any sample "
            f"can fill), got {n_bins}."
        )
    return int(n_bins)


def check_option(value, name, allowed):
    """Raise unless ``value`` is one of the strings in ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}.")
    return value


# Weights are used in sums of products (weight x loss, weight x count): a sum
# above 2**500 can overflow once multiplied by a loss term, a weight below
# 2**-500 can underflow to a subnormal or zero. Inside this range they are
# used as given.
_WEIGHT_EXPONENT_RANGE = (-500, 500)


def check_sample_weight(sample_weight, n_samples, *, allow_zero_sum=False):
    """Return float64 weights of length ``n_samples`` or None.

    Weights whose sum exceeds ``2**500`` (all 1e308, say) or whose maximum is
    below ``2**-500`` (subnormal weights) are multiplied by the power of two
    that brings their maximum into [0.5, 1) (``np.ldexp``: exact, unless a
    weight is more than 2**1000 times smaller than the largest). Every
    weighted mean is unchanged by that; without it the sums overflow to
    infinity or lose their digits to underflow, and the metrics return NaN.

    ``allow_zero_sum`` is for one chunk of a larger input, where only the
    total weight must be positive; a chunk cannot be rescaled on its own
    (its scale must match the other chunks'), so weights outside that range
    are refused there.
    """
    if sample_weight is None:
        return None
    w = np.asarray(as_numpy(sample_weight))
    if w.ndim != 1:
        raise ValueError(f"sample_weight must be 1-D, got an array of shape {w.shape}.")
    if w.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight has {w.shape[0]} entries but there are {n_samples} samples."
        )
    if not (np.issubdtype(w.dtype, np.number) or w.dtype == bool):
        raise ValueError(f"sample_weight must be numeric, got dtype {w.dtype}.")
    w = w.astype(np.float64)
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinity.")
    if np.any(w < 0):
        raise ValueError("sample_weight contains negative values.")
    top = float(w.max()) if w.size else 0.0
    if top == 0.0:
        if not allow_zero_sum:
            raise ValueError("sample_weight sums to zero: no sample would be counted.")
        return w
    exponent = math.frexp(top)[1]  # top = m * 2**exponent, 0.5 <= m < 1
    scaled = np.ldexp(w, -exponent)
    low, high = _WEIGHT_EXPONENT_RANGE
    sum_exponent = exponent + math.log2(float(scaled.sum()))
    if low <= exponent - 1 and sum_exponent <= high:
        return w
    if allow_zero_sum:
        raise ValueError(
            f"sample_weight (maximum {top!r}, sum about 2**{sum_exponent:.0f}) is "
            f"outside [2**{low}, 2**{high}], where weighted sums neither overflow "
            "nor underflow: rescale all the weights by one factor (the result "
            "does not depend on it)."
        )
    return scaled


def _check_y_true(y_true):
    y = np.asarray(as_numpy(y_true))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if _one_hot(y):
        raise ValueError(
            f"y_true looks one-hot encoded (shape {y.shape}, a single 1 per row), "
            "but it must hold one label per row: pass np.argmax(y_true, axis=1) "
            f"with labels=np.arange({y.shape[1]}) (or the labels of the columns "
            "in their order, indexed the same way)."
        )
    if y.ndim != 1:
        raise ValueError(
            f"y_true must be a 1-D array of labels, got an array of shape {y.shape}."
        )
    if y.shape[0] == 0:
        raise ValueError("y_true is empty: at least one sample is required.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y_true contains NaN or infinity.")
    return y


def _one_hot(y):
    """Whether a 2-D ``y`` of several columns holds a single 1 per row."""
    if y.ndim != 2 or y.shape[1] < 2 or y.shape[0] == 0 or y.dtype.kind not in "biuf":
        return False
    return bool(np.all((y == 0) | (y == 1)) and np.all(y.sum(axis=1) == 1))


def _check_labels(labels):
    lab = np.asarray(as_numpy(labels))
    if lab.ndim != 1 or lab.shape[0] == 0:
        raise ValueError(
            f"labels must be a non-empty 1-D array-like, got shape {lab.shape}."
        )
    if np.unique(lab).shape[0] != lab.shape[0]:
        raise ValueError(f"labels contains duplicates: {lab.tolist()!r}.")
    return lab


def _integer_span(*arrays):
    """``(lo, span)`` covering integer arrays when a lookup table of that span
    is cheap, else None."""
    if not all(a.dtype.kind in "iu" for a in arrays):
        return None
    lo = min(int(a.min()) for a in arrays)
    hi = max(int(a.max()) for a in arrays)
    span = hi - lo + 1
    small = span <= max(4 * arrays[0].shape[0], 1 << 16)
    return (lo, span) if small and -(2**62) < lo and hi < 2**62 else None


def _offsets(y, lo):
    """``y - lo`` as intp (no copy for intp labels starting at 0)."""
    y = y.astype(np.intp, copy=False)
    return y - lo if lo else y


def unique_and_encode(y):
    """Sorted unique labels (as ``np.unique``) and the index of each label.

    Integer labels of a bounded range are counted with ``np.bincount`` and
    encoded through a lookup table instead of sorted: O(n), ~20x faster than
    ``np.unique`` on a million labels, which matters because the metrics
    promise a single pass over ``y_prob``.
    """
    found = _integer_span(y)
    if found is None:
        classes = np.unique(y)
        return classes, encode_labels(y, classes)
    lo, span = found
    offsets = _offsets(y, lo)
    present = np.bincount(offsets, minlength=span) > 0
    classes = (np.flatnonzero(present) + lo).astype(y.dtype)
    table = np.cumsum(present, dtype=np.intp) - 1
    return classes, table[offsets]


def encode_labels(y, classes):
    """Map labels ``y`` to their indices in ``classes`` (any order, any type).

    Raises if a label of ``y`` is not in ``classes``.
    """
    found = _integer_span(y, classes)
    if found is not None:  # O(n) lookup table instead of a binary search
        lo, span = found
        table = np.full(span, -1, dtype=np.intp)
        table[_offsets(classes, lo)] = np.arange(classes.shape[0])
        idx = table[_offsets(y, lo)]
        if idx.min() < 0:
            missing = np.unique(y[idx < 0])
            raise ValueError(
                f"y_true contains labels not in labels={classes.tolist()!r}: "
                f"{missing.tolist()[:10]!r}."
            )
        return idx
    sorter = np.argsort(classes, kind="stable")
    sorted_classes = classes[sorter]
    text = [a.dtype.kind in "US" for a in (classes, y)]
    if text[0] != text[1] and "O" not in (classes.dtype.kind, y.dtype.kind):
        # strings against numbers: numpy < 1.25 compares them as one scalar
        # False, with a FutureWarning, instead of raising
        raise ValueError(
            f"y_true labels cannot be compared with labels {classes.tolist()!r}."
        )
    try:
        pos = np.searchsorted(sorted_classes, y)
    except TypeError as exc:  # e.g. str labels against int classes
        raise ValueError(
            f"y_true labels cannot be compared with labels {classes.tolist()!r}."
        ) from exc
    pos = np.clip(pos, 0, classes.shape[0] - 1)
    found = sorted_classes[pos] == y
    if not np.all(found):
        missing = np.unique(y[~np.asarray(found, dtype=bool)])
        raise ValueError(
            f"y_true contains labels not in labels={classes.tolist()!r}: "
            f"{missing.tolist()[:10]!r}."
        )
    return sorter[pos].astype(np.intp)


def check_prob_array(y_prob):
    """Shape and dtype checks on ``y_prob`` (the values are checked later).

    Returns a float array of shape (n, K) with K >= 2, or (n,) for binary
    positive-class scores, keeping float16 and float32 as they are (the row-sum
    tolerance is that of the input's dtype).
    """
    p = np.asanyarray(as_numpy(y_prob))  # "any": keeps Bfloat16Values
    if type(p) not in (np.ndarray, Bfloat16Values):
        p = np.asarray(p)  # matrices, masked arrays and other subclasses
    if p.dtype == bool or not np.issubdtype(p.dtype, np.number):
        raise ValueError(f"y_prob must be numeric, got dtype {p.dtype}.")
    if np.issubdtype(p.dtype, np.complexfloating):
        raise ValueError("y_prob must be real, got a complex array.")
    if p.ndim not in (1, 2):
        raise ValueError(
            "y_prob must be 1-D (binary positive-class probabilities) or 2-D "
            f"(n_samples, n_classes), got an array of shape {p.shape}."
        )
    if p.shape[0] == 0:
        raise ValueError("y_prob is empty: at least one sample is required.")
    if p.ndim == 2 and p.shape[1] == 0:
        raise ValueError("y_prob has no columns.")
    if p.ndim == 2 and p.shape[1] == 1:
        p = p[:, 0]  # as log_loss: one column is the positive-class probability
    if p.dtype not in (np.float16, np.float32, np.float64):
        p = p.astype(np.float64)
    return p


def row_sum_message(name, tol, dtype, row, total, decimals=None, n_classes=2):
    """The one wording of a row-sum failure (numpy path and fused kernel)."""
    text = (
        f"{name} rows must sum to 1 (within {tol:.2g}, the larger of the square "
        f"root of the machine epsilon of {dtype} and float32 round-off summed over "
        "the columns"
    )
    if decimals is not None:
        text += (
            f"; or within {rounding_tolerance(decimals, n_classes):.2g}, what "
            f"rounding {n_classes} values to the {decimals} decimals they are "
            "written with can explain"
        )
    return f"{text}); row {row} sums to {float(total)!r}."


def logits_hint(name):
    return (
        f" {name} must hold probabilities: if these are logits or decision "
        "scores, pass their softmax (scipy.special.softmax(scores, axis=1)) "
        "or the model's predict_proba."
    )


def check_prob_values(p, name="y_prob"):
    """Return ``p`` if it holds probabilities, renormalised if it holds them
    rounded to a few decimals; raise otherwise.

    Every value finite and in [0, 1]; for a 2-D array of more than one column,
    every row summing to 1 within :func:`row_sum_tolerance` of ``p.dtype`` (the
    sums are taken in float64). Rows written with a few decimals (a CSV saved
    with ``float_format="%.4f"``, a spreadsheet export) sum to 1 only up to
    their rounding: when every value is written with ``d`` decimals and every
    row sums to 1 within :func:`rounding_tolerance` (``K * 0.5 * 10**-d``
    for K columns), the rows are divided by their sums, with a warning that
    says so, and the renormalised copy (float64) is returned. This is the one
    definition of "is this a probability matrix" (the fused kernel of the
    metrics does the same in its single pass and is tested against it).
    """
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} contains NaN or infinity.")
    if np.any(p < 0):
        # scikit-learn's wording first: its estimator checks look for it
        raise ValueError(
            f"Negative values in data: {name} contains negative values, min "
            f"{p.min()}." + logits_hint(name)
        )
    if np.any(p > 1):
        raise ValueError(
            f"{name} contains values greater than 1: max {p.max()}." + logits_hint(name)
        )
    if p.ndim != 2 or p.shape[1] < 2:
        return p
    sums = p.sum(axis=1, dtype=np.float64)
    dtype = tolerance_dtype(p)
    n_classes = p.shape[1]
    tol = row_sum_tolerance(dtype, n_classes)
    deviation = np.abs(sums - 1.0)
    bad = deviation > tol
    if not np.any(bad):
        return p
    decimals = written_decimals(p, dtype)
    i = int(np.argmax(deviation))
    if (
        decimals is None
        or deviation[i] > rounding_tolerance(decimals, n_classes)
        or not np.all(sums > 0)
    ):
        i = int(np.flatnonzero(bad)[0]) if decimals is None else i
        raise ValueError(
            row_sum_message(name, tol, dtype, i, sums[i], decimals, n_classes)
        )
    warnings.warn(
        f"{name} holds probabilities written with {decimals} decimals: "
        f"{int(np.count_nonzero(bad))} of {p.shape[0]} rows do not sum to 1 "
        f"(row {i} sums to {float(sums[i])!r}), within the "
        f"{rounding_tolerance(decimals, n_classes):.2g} that rounding "
        f"{n_classes} values to {decimals} decimals can explain; every row was "
        "divided by its sum. Save probabilities with more decimals to avoid this.",
        UserWarning,
        stacklevel=_outside_stacklevel(),
    )
    return np.asarray(p, dtype=np.float64) / sums[:, None]


def check_found_classes(classes, n_columns, prob_ndim):
    """Raise unless the labels found in ``y_true`` name the columns of y_prob."""
    if prob_ndim == 1 and classes.shape[0] == 1:
        raise ValueError(
            f"y_true contains only one label ({classes[0]!r}) and y_prob is "
            "1-D: pass the two labels explicitly through the labels argument."
        )
    if classes.shape[0] > n_columns:
        if prob_ndim == 1:
            raise ValueError(
                f"y_true has {classes.shape[0]} distinct labels but y_prob has one "
                "column (or is 1-D), which is read as the probability of the "
                "second of two labels: pass one column per class, in the order "
                "of labels (e.g. the model's predict_proba and labels="
                "estimator.classes_)."
            )
        raise ValueError(
            f"y_true has {classes.shape[0]} distinct labels but y_prob has "
            f"{n_columns} columns: pass one column per class."
        )
    if classes.shape[0] < n_columns:
        raise ValueError(
            f"y_true has {classes.shape[0]} distinct labels but y_prob has "
            f"{n_columns} columns: pass the label of every column through the "
            "labels argument (e.g. labels=estimator.classes_)."
        )


def check_labels_for(labels, n_columns, prob_ndim):
    """Validated ``labels`` of the ``n_columns`` columns of y_prob."""
    classes = _check_labels(labels)
    if classes.shape[0] != n_columns:
        raise ValueError(
            f"labels has {classes.shape[0]} entries but y_prob has {n_columns} "
            "columns" + (" (1-D y_prob is binary)." if prob_ndim == 1 else ".")
        )
    return classes


def _outside_stacklevel():
    """The ``stacklevel`` of the first frame outside sklcalib (the user's
    call), so that a warning raised deep inside points at it and shows once
    per user line however many internal calls repeat it."""
    frame = sys._getframe(2)
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
        "sklcalib."
    ):
        frame = frame.f_back
        level += 1
    return level


#: nats by which one column order of string labels must beat every other on
#: the data (a likelihood ratio of e**10, about 22 000) to be taken as known
ORDER_EVIDENCE_NATS = 10.0
#: probabilities are floored here when orders are compared: one row rounded
#: to 0.00 on its true class costs at most 9.2 nats, not 708
_ORDER_FLOOR = 1e-4
#: beyond this many classes only the best order is compared with the sorted
#: one (the runner-up needs one assignment per class)
_ORDER_MAX_CLASSES = 50


def _is_text(classes):
    return classes.shape[0] > 0 and isinstance(classes[0], str | np.str_ | bytes)


def _shown(classes):
    shown = ", ".join(repr(str(c)) for c in classes[:10])
    if classes.shape[0] > 10:
        shown += f", ... ({classes.shape[0]} labels)"
    return f"[{shown}]"


def _order_log_likelihoods(y_idx, p):
    """(K, K): entry ``[k, j]`` is the log-likelihood of the rows labelled k
    if column j were theirs (probabilities floored at 1e-4)."""
    from ._scores import as_columns

    columns = as_columns(p)
    n_classes = columns.shape[1]
    order = np.argsort(y_idx, kind="stable")
    counts = np.bincount(y_idx, minlength=n_classes)
    logp = np.log(np.maximum(columns[order].astype(np.float64), _ORDER_FLOOR))
    table = np.zeros((n_classes, n_classes))
    present = np.flatnonzero(counts)
    starts = np.concatenate([[0], np.cumsum(counts)])[present]
    table[present] = np.add.reduceat(logp, starts, axis=0)
    return table


def _best_order(table, forbid=None):
    """The assignment of columns to labels of largest log-likelihood (one
    column each), and its total; ``forbid`` (k) keeps label k off column k."""
    from scipy.optimize import linear_sum_assignment

    cost = table.copy()
    if forbid is not None:
        cost[forbid, forbid] = -1e300
    rows, cols = linear_sum_assignment(cost, maximize=True)
    return cols[np.argsort(rows)], float(table[rows, cols].sum())


def check_string_order(y_idx, p, classes):
    """For string labels found in ``y_true`` (no ``labels=``), check that the
    data show the columns of ``p`` to be in sorted label order (the order of
    every scikit-learn classifier's ``classes_``, which
    ``sklearn.metrics.log_loss`` assumes too); raise a ValueError otherwise.

    A string order cannot be known from ``y_true`` alone: a model whose
    columns are in file order (cat, dog, bird) would be scored against the
    wrong columns. So the log-likelihood of the data under the sorted order
    is compared with that under every other order of the columns
    (probabilities floored at 1e-4): the sorted order is used when it beats
    every other by at least :data:`ORDER_EVIDENCE_NATS` nats; when another
    order beats it by that much the error names that order; in between the
    data cannot tell, and the error asks for ``labels=``.
    """
    if not _is_text(classes):
        return
    table = _order_log_likelihoods(y_idx, p)
    n_classes = table.shape[0]
    identity = float(np.trace(table))
    best, best_total = _best_order(table)
    fix = (
        "Pass labels= in the order of y_prob's columns: labels=estimator.classes_ "
        "for a scikit-learn classifier's predict_proba, or the header of the "
        "file they came from."
    )
    if best_total - identity >= ORDER_EVIDENCE_NATS:
        # label k sits in column best[k]: read the labels in column order
        in_columns = classes[np.argsort(best)]
        raise ValueError(
            f"y_true holds string labels and labels was not given, and y_prob's "
            f"columns do not look like the sorted order {_shown(classes)}: the "
            f"order {_shown(in_columns)} fits the data better by "
            f"{best_total - identity:.0f} nats of log-likelihood. {fix}"
        )
    if n_classes <= _ORDER_MAX_CLASSES and np.array_equal(best, np.arange(n_classes)):
        runner_up = max(_best_order(table, k)[1] for k in range(n_classes))
        if identity - runner_up >= ORDER_EVIDENCE_NATS:
            return
    raise ValueError(
        "y_true holds string labels and labels was not given, and the data "
        f"cannot tell whether y_prob's columns are in sorted order {_shown(classes)} "
        f"(no order of the columns fits the labels better than every other by "
        f"{ORDER_EVIDENCE_NATS:.0f} nats of log-likelihood). {fix}"
    )


def refuse_string_order(classes, why):
    """Raise for string labels found in ``y_true`` where the column order
    cannot be checked against the data (``why`` says where)."""
    if _is_text(classes):
        raise ValueError(
            f"y_true holds string labels and labels was not given; {why}, so "
            f"the order of y_prob's columns (sorted: {_shown(classes)}?) cannot "
            "be checked against the data. Pass labels= in the order of y_prob's "
            "columns (e.g. labels=estimator.classes_)."
        )


def drop_zero_weight_rows(params, *arrays, named=True):
    """The raw ``arrays`` (``y_true`` first, rows first) and the metric
    ``params`` without the rows whose ``params["sample_weight"]`` is 0, for
    the entry points that resample or redraw rows (bootstrap, consistency
    test, comparison): there too a row of weight 0 is no row. The weights are
    checked first (NaN, negative or all-zero weights are named). As in
    :func:`check_targets`, the classes are those of every row: without
    ``labels``, those found in ``y_true`` become ``labels`` (not for string
    labels, whose order the data must show). Unchanged without weights,
    without a zero weight, or when the lengths disagree (validation then says
    so)."""
    w = params.get("sample_weight")
    if w is None:
        return (*arrays, params)
    arrays = [np.asanyarray(as_numpy(a)) for a in arrays]
    raw = np.asarray(as_numpy(w))
    if raw.ndim != 1 or any(a.shape[:1] != raw.shape for a in arrays):
        return (*arrays, params)
    keep = check_sample_weight(raw, raw.shape[0]) > 0
    if np.all(keep):
        return (*arrays, params)
    params = {**params, "sample_weight": raw[keep]}
    if named and params.get("labels") is None and arrays[0].ndim == 1:
        classes = np.unique(arrays[0])
        if not _is_text(classes):
            params["labels"] = classes
    return (*(a[keep] for a in arrays), params)


def positive_weight_rows(w, *arrays):
    """``arrays`` and ``w`` without the rows of weight 0: a row of weight 0 is
    the same as no row, for equal-mass bin edges, bandwidths and row counts
    alike. Unchanged (no copy) when no weight is 0."""
    if w is None:
        return (*arrays, w)
    keep = w > 0
    if np.all(keep):
        return (*arrays, w)
    return (*(a[keep] for a in arrays), w[keep])


def check_targets(
    y_true,
    y_prob,
    labels=None,
    sample_weight=None,
    *,
    allow_zero_weight=False,
    keep_zero_weight=False,
):
    """Validate the metric inputs; the values of ``y_prob`` are checked by
    the caller (:func:`check_prob_values`, or the fused kernel in the same
    pass as its statistics).

    Torch tensors are read without a copy where numpy shares their memory;
    pandas objects of nullable dtypes are read as numbers. Dask arrays are
    refused here: the metrics that stream dispatch them to their own path
    before calling this.

    Rows of weight 0 are dropped (after their labels are checked and the
    classes found): weight 0 is the same as no row everywhere. With
    ``allow_zero_weight`` (one piece of a larger input) they are kept, and
    the piece may weigh 0 in all; with ``keep_zero_weight`` they are kept for
    a caller that drops them itself along with other arrays of its rows.

    String labels found in ``y_true`` (no ``labels``) are matched to the
    columns in sorted order only when the data show it
    (:func:`check_string_order`); that check needs the values, so ``p`` is
    checked (:func:`check_prob_values`) here then.

    Returns
    -------
    y_idx : ndarray of shape (n,), intp
        Column index of the true label of every sample.
    p : ndarray of shape (n, K) or (n,)
        Float probabilities ((n,) for binary positive-class scores).
    classes : ndarray of shape (K,)
        The label of every column.
    sample_weight : ndarray of shape (n,) float64, or None
    """
    reject_dask(
        "this metric needs all rows in memory at once",
        _STREAMING_HINT,
        y_true=y_true,
        y_prob=y_prob,
        sample_weight=sample_weight,
    )
    y = _check_y_true(y_true)
    p = check_prob_array(y_prob)
    if p.shape[0] != y.shape[0]:
        raise ValueError(
            f"y_true has {y.shape[0]} samples but y_prob has {p.shape[0]} rows."
        )
    n_columns = 2 if p.ndim == 1 else p.shape[1]
    if labels is None:
        classes, y_idx = unique_and_encode(y)
        check_found_classes(classes, n_columns, p.ndim)
    else:
        classes = check_labels_for(labels, n_columns, p.ndim)
        y_idx = encode_labels(y, classes)
    w = check_sample_weight(sample_weight, y.shape[0], allow_zero_sum=allow_zero_weight)
    if not (allow_zero_weight or keep_zero_weight):
        y_idx, p, w = positive_weight_rows(w, y_idx, p)
    if labels is None and _is_text(classes):
        p = check_prob_values(p)
        check_string_order(y_idx, p, classes)
    return y_idx, p, classes, w
