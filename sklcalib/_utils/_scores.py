"""Per-row scores and the shapes scores take, one definition each.

- shapes: 1-D binary scores as one column (:func:`as_2d`), positive-class
  probabilities as ``[1 - p, p]`` (:func:`as_columns`), a binary decision
  score as the logits ``[0, s]`` (:func:`binary_logits`);
- logits and probabilities: :func:`softmax` and :func:`log_softmax` of logits,
  and :func:`log_floored`, the logarithm of probabilities floored at the
  smallest positive normal float64 (a zero probability gives a large negative
  number, not ``-inf``; ``softmax(log_floored(p)) == p`` for rows summing to 1);
- the log-loss of logits that the calibrators minimise: :func:`logistic_nll`
  per row (binary) and :func:`softmax_nll_terms`, the weighted mean NLL of a
  softmax with its probabilities and its gradient in the logits;
- per-row proper scores of probabilities: :func:`row_log_loss` and
  :func:`row_brier` (every metric, the calibrator selection and the benchmark
  compute the NLL and the Brier score with these), and
  :func:`mean_standard_error`, the standard error of their (weighted) mean,
  or of a paired difference of two models' scores;
- what counts as a probability matrix: :func:`row_sum_tolerance` (round-off)
  and :func:`rounding_tolerance` (values written with a few decimals),
  :func:`written_decimals` and :func:`looks_like_probabilities`. Validation
  (:mod:`sklcalib._utils._validation`) refuses or renormalises with these; a
  calibrator taking logits warns with :func:`looks_like_probabilities`.
"""

import numpy as np
from scipy.special import log_softmax as _log_softmax
from scipy.special import softmax as _softmax

#: the floor of :func:`log_floored`: the smallest positive normal float64
TINY = np.finfo(np.float64).tiny


def as_2d(X):
    """1-D scores as one column (numpy or dask, no copy); others unchanged.

    Lists, 1-D pandas Series and other objects with ``__array__`` become
    arrays first.
    """
    # a pandas Series has ndim but no reshape (a DataFrame stays one)
    if getattr(X, "ndim", None) is None or (X.ndim == 1 and not hasattr(X, "reshape")):
        X = np.asarray(X)
    return X.reshape(-1, 1) if X.ndim == 1 else X


def as_columns(p):
    """(n, K) probabilities; a 1-D binary ``p`` becomes ``[1 - p, p]``."""
    return np.column_stack([1.0 - p, p]) if p.ndim == 1 else p


def binary_logits(scores):
    """Binary decision scores ``s`` ((n,) or (n, 1)) as the logits ``[0, s]``;
    (n, K) logits with K >= 2 unchanged."""
    if scores.ndim == 1:
        return np.column_stack([np.zeros_like(scores), scores])
    if scores.shape[1] == 1:
        return np.hstack([np.zeros_like(scores), scores])
    return scores


def softmax(logits):
    """Row-wise softmax of (n, K) logits (scipy's: the row maximum is
    subtracted first, so no logit overflows)."""
    return _softmax(logits, axis=1)


def log_softmax(logits):
    """Row-wise log-softmax of (n, K) logits, computed without ``log(softmax)``
    (finite for every finite logit)."""
    return _log_softmax(logits, axis=1)


def log_floored(p):
    """``log p`` with ``p`` floored at :data:`TINY` (no ``-inf``): the logits
    of probabilities, up to a constant per row."""
    return np.log(np.maximum(p, TINY))


def row_log_loss(columns, y_idx):
    """Per-row ``-log p_y`` of (n, K) probabilities, float64.

    The one clipping rule of sklcalib's log-loss: ``p_y`` clipped at the
    machine epsilon of its dtype, as ``sklearn.metrics.log_loss`` does (a
    zero probability on the true class costs 36 nats in float64, 16 in
    float32, not infinity).
    """
    p_true = columns[np.arange(columns.shape[0]), y_idx]
    eps = np.finfo(p_true.dtype).eps
    return -np.log(np.clip(p_true.astype(np.float64), eps, 1.0))


def row_brier(columns, y_idx):
    """Per-row ``sum_k (p_k - [y = k])^2`` of (n, K) probabilities, float64.

    Computed as ``sum_{k != y} p_k^2 + (1 - p_y)^2`` (the squares' array with
    the true class's entry zeroed, no one-hot copy): a sum of non-negative
    terms, so never negative, and a near-certain correct row keeps its small
    value instead of the cancellation of ``sum_k p_k^2 - 2 p_y + 1``.
    """
    rows = np.arange(columns.shape[0])
    p_true = columns[rows, y_idx].astype(np.float64)
    squares = np.square(columns, dtype=np.float64)
    squares[rows, y_idx] = 0.0
    return squares.sum(axis=1) + np.square(1.0 - p_true)


def row_scores(p, y_idx):
    """Per-row log-loss and Brier score, float64, of probabilities ``p``
    (two columns for a 1-D binary ``p``): :func:`row_log_loss` and
    :func:`row_brier`."""
    columns = as_columns(p)
    return row_log_loss(columns, y_idx), row_brier(columns, y_idx)


def weighted_mean(values, w=None):
    """The mean of ``values``, weighted by ``w`` (None: unweighted)."""
    return float(np.mean(values) if w is None else np.dot(values, w) / w.sum())


def mean_standard_error(terms, w=None):
    """Standard error of the (weighted) mean of per-row ``terms``.

    For a paired comparison of two models on the same rows, ``terms`` are
    the per-row differences of their scores.

    The unbiased variance of the rows (reliability weights: the biased
    weighted variance over ``1 - sum(wn^2)``) times ``sum(wn^2)``, ``wn`` the
    normalised weights; the textbook ``std(ddof=1) / sqrt(n)`` for equal
    weights. ``1 - sum(wn^2)`` is summed as ``sum_i wn_i (1 - wn_i)``, with
    the largest weight's ``1 - wn`` from the other weights, so that one
    dominant weight (an effective number of rows just above 1) does not
    cancel to 0. It does not change when the weights are rescaled. Fewer
    than two rows with positive weight have no standard error: a ValueError.
    """
    terms = np.asarray(terms, dtype=np.float64)
    if w is not None:
        w = np.asarray(w, dtype=np.float64)
        positive = w > 0
        terms, w = terms[positive], w[positive]
    if terms.shape[0] < 2:
        raise ValueError(
            "The standard error of a mean needs at least two rows with positive weight."
        )
    if w is None:
        return float(np.std(terms, ddof=1) / np.sqrt(terms.shape[0]))
    w = w / w.max()  # no overflow at any scale
    total = w.sum()
    wn = w / total
    mean = np.dot(wn, terms)
    biased = np.dot(wn, (terms - mean) ** 2)
    top = int(np.argmax(w))
    rest = total - w  # no cancellation: only the largest can exceed total / 2
    rest[top] = np.sum(np.delete(w, top))
    one_minus_sum_sq = np.dot(wn, rest) / total
    return float(np.sqrt(biased / one_minus_sum_sq * np.dot(wn, wn)))


# float32 round-off per class: a float32 softmax (torch's default) is exact to
# a few units in the last place per entry, so its row sums are off by up to
# about K * eps32; stored as float32, as text or cast to float64, such rows are
# probabilities all the same.
_FLOAT32_ROUNDOFF = 2 * float(np.finfo(np.float32).eps)
_BFLOAT16_EPS = 2.0**-7  # 8 significant bits (torch.finfo(torch.bfloat16).eps)
#: the most decimals :func:`written_decimals` looks for: with 7 or more, the
#: rounding of K values is within float32 round-off, which is accepted anyway
MAX_DECIMALS = 6


def _eps(dtype):
    return _BFLOAT16_EPS if str(dtype) == "bfloat16" else float(np.finfo(dtype).eps)


def row_sum_tolerance(dtype, n_classes=2):
    """Tolerance on ``|row sum - 1|`` for ``n_classes`` columns of ``dtype``.

    The larger of the square root of the machine epsilon of ``dtype`` (as
    ``sklearn.metrics.log_loss``) and float32 round-off summed over the
    classes, ``2 * n_classes * eps(float32)``, whatever the stored dtype:
    probabilities computed in float32 and cast to float64 carry float32's
    round-off, not float64's.
    """
    return max(float(np.sqrt(_eps(dtype))), _FLOAT32_ROUNDOFF * int(n_classes))


def rounding_tolerance(decimals, n_classes):
    """How far from 1 the sum of ``n_classes`` probabilities written with
    ``decimals`` decimals can be: each value is off by at most half a unit
    of the last decimal, ``n_classes * 0.5 * 10**-decimals`` in all (0.015
    for three columns written with two decimals)."""
    return 0.5 * int(n_classes) * 10.0 ** -int(decimals)


def written_decimals(values, dtype=None):
    """The fewest decimals (1 to :data:`MAX_DECIMALS`) that every value is
    written with, up to the round-off of ``dtype`` (the stored dtype of the
    values: float32 text read back carries float32's error), or None.

    ``0.25`` and ``0.07`` are written with two decimals; ``1 / 3`` with none
    of these. Half-precision dtypes (float16, bfloat16) return None: their own
    round-off is coarser than the decimals it would tell apart.
    """
    dtype = values.dtype if dtype is None else dtype
    eps = _eps(dtype)
    if eps > 1e-4 or values.size == 0:
        return None
    flat = np.abs(np.asarray(values, dtype=np.float64).ravel())
    probe = flat[:4096]  # most full-precision inputs fail here, cheaply
    for decimals in range(1, MAX_DECIMALS + 1):
        scale = 10.0**decimals
        # a value's stored error is about eps * value, times the scale
        slack = 4.0 * eps * scale + 1e-9
        if np.all(np.abs(probe * scale - np.rint(probe * scale)) <= slack) and np.all(
            np.abs(flat * scale - np.rint(flat * scale)) <= slack
        ):
            return decimals
    return None


def looks_like_probabilities(scores):
    """Whether (n, K) ``scores`` with K >= 2 read as probabilities: every value
    in [0, 1] and every row summing to 1 within :func:`row_sum_tolerance`,
    or within :func:`rounding_tolerance` of the decimals they are written
    with. The one definition behind the metrics' validation, the warning of
    a calibrator given probabilities where it takes logits, and the command
    line's refusal of ``--logits`` on probabilities. A 1-D or one-column
    input has no row sum to go by: values in [0, 1]."""
    dtype = getattr(scores, "tolerance_dtype", None)  # bfloat16 values
    scores = np.asarray(scores)
    dtype = scores.dtype if dtype is None else dtype
    if scores.size == 0 or not np.all(np.isfinite(scores)):
        return False
    if scores.min() < 0 or scores.max() > 1:
        return False
    if scores.ndim < 2 or scores.shape[1] < 2:
        return True
    deviation = np.abs(scores.sum(axis=1, dtype=np.float64) - 1.0)
    n_classes = scores.shape[1]
    if np.all(deviation <= row_sum_tolerance(dtype, n_classes)):
        return True
    decimals = written_decimals(scores, dtype)
    return decimals is not None and bool(
        np.all(deviation <= rounding_tolerance(decimals, n_classes))
    )


def logistic_nll(t, y):
    """Per-row NLL of ``sigmoid(t)`` for labels ``y`` in {0, 1}:
    ``log(1 + e^t) - y t``, without overflow."""
    return np.logaddexp(0.0, t) - y * t


def softmax_nll_terms(logits, y_idx, weights, order=2):
    """Weighted mean NLL of ``softmax(logits)`` and (``order > 0``) the
    probabilities and the residual ``w_i (p_i - e_{y_i})``, the gradient of
    the NLL in the logits.

    ``weights`` sum to 1. In place on ``logits`` (a fresh product of the
    caller), which saves passes over an (n, K) array on large inputs.
    """
    rows = np.arange(len(y_idx))
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    total = exp.sum(axis=1)
    nll = np.dot(weights, np.log(total) - logits[rows, y_idx])
    if order == 0:
        return nll
    exp /= total[:, None]
    residual = exp * weights[:, None]
    residual[rows, y_idx] -= weights
    return nll, exp, residual
