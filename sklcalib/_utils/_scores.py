"""The shapes scores take, one definition each: 1-D binary scores as one
column, positive-class probabilities as ``[1 - p, p]``, a binary decision
score as the logits ``[0, s]``, and the logarithm of probabilities floored
at the smallest positive normal float64 (so that a zero probability gives a
large negative number, not ``-inf``)."""

import numpy as np

#: the floor of :func:`log_floored`: the smallest positive normal float64
TINY = np.finfo(np.float64).tiny


def as_2d(X):
    """1-D scores as one column (numpy or dask, no copy); others unchanged.

    Lists and objects with ``__array__`` become arrays first.
    """
    if getattr(X, "ndim", None) is None:
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
