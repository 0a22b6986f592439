"""The shapes scores take, one definition each: 1-D binary scores as one
column, positive-class probabilities as ``[1 - p, p]``, a binary decision
score as the logits ``[0, s]``, and the logarithm of probabilities floored
at the smallest positive normal float64 (so that a zero probability gives a
large negative number, not ``-inf``); and the log-loss of logits, per row
(binary) and as the weighted mean of a softmax with its derivatives, which
every logit calibrator's fit minimises."""

import numpy as np

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


def log_floored(p):
    """``log p`` with ``p`` floored at :data:`TINY` (no ``-inf``)."""
    return np.log(np.maximum(p, TINY))


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
