"""Fused compiled path for large probability matrices.

One parallel pass over ``y_prob`` checks every value (finite, in [0, 1]),
sums each row in float64 (float32 rows would lose the tolerance otherwise),
finds the top-label confidence and the first argmax, and accumulates the
uniform-bin sums of :func:`~sklcalib.metrics.bin_statistics` on the fly.
numpy needs one pass per check plus max, argmax and bincount (about eight
reads of the array); this reads it once, which is what makes the validated
ECE about as fast as a bare ``max`` over the rows.

The numpy functions in ``_binning`` and ``_validation`` are the reference
this module is tested against. This module imports numba at import time; it is
itself imported only when a large input arrives, so ``import sklcalib`` stays
free of numba.
"""

import numba
import numpy as np
from numba import njit, prange

from ._binning import BinStatistics, uniform_edges
from ._validation import row_sum_tolerance

# status codes written by the kernels, per chunk: (code, row)
_OK, _NOT_FINITE, _NEGATIVE, _ABOVE_ONE, _ROW_SUM = 0, 1, 2, 3, 4


@njit(cache=True, fastmath=False)
def _scan_row(p, i, tol):
    """Check row ``i`` and return (status, max, first argmax).

    Four independent accumulators break the dependency chain of the float64
    row sum (fastmath is off, so the compiler may not reorder it itself).
    """
    k = p.shape[1]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    m0 = p[i, 0]
    m1 = m0
    m2 = m0
    m3 = m0
    ok = True
    j = 0
    while j + 4 <= k:
        a = p[i, j]
        b = p[i, j + 1]
        c = p[i, j + 2]
        d = p[i, j + 3]
        ok &= (a >= 0.0) & (a <= 1.0) & (b >= 0.0) & (b <= 1.0)
        ok &= (c >= 0.0) & (c <= 1.0) & (d >= 0.0) & (d <= 1.0)
        s0 += a
        s1 += b
        s2 += c
        s3 += d
        m0 = a if a > m0 else m0
        m1 = b if b > m1 else m1
        m2 = c if c > m2 else m2
        m3 = d if d > m3 else m3
        j += 4
    while j < k:
        a = p[i, j]
        ok &= (a >= 0.0) & (a <= 1.0)
        s0 += a
        m0 = a if a > m0 else m0
        j += 1
    if not ok:
        # classify the first bad value (rare path)
        for jj in range(k):
            v = p[i, jj]
            if not np.isfinite(v):
                return _NOT_FINITE, 0.0, 0
            if v < 0.0:
                return _NEGATIVE, 0.0, 0
            if v > 1.0:
                return _ABOVE_ONE, 0.0, 0
    total = (s0 + s1) + (s2 + s3)
    if abs(total - 1.0) > tol:
        return _ROW_SUM, 0.0, 0
    m = max(max(m0, m1), max(m2, m3))
    arg = 0
    for jj in range(k):  # the row is in L1 cache now
        if p[i, jj] == m:
            arg = jj
            break
    return _OK, m, arg


@njit(parallel=True, cache=True, fastmath=False)
def _top_label_kernel(p, y_idx, tol, n_chunks, conf, correct, status):
    n = p.shape[0]
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        start = c * chunk
        stop = min(n, start + chunk)
        for i in range(start, stop):
            code, m, arg = _scan_row(p, i, tol)
            if code != _OK:
                status[c, 0] = code
                status[c, 1] = i
                break
            conf[i] = m
            correct[i] = arg == y_idx[i]


@njit(parallel=True, cache=True, fastmath=False)
def _uniform_kernel(p, y_idx, w, has_w, edges, tol, n_chunks, sums, status):
    n = p.shape[0]
    n_bins = edges.shape[0] - 1
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        start = c * chunk
        stop = min(n, start + chunk)
        for i in range(start, stop):
            code, m, arg = _scan_row(p, i, tol)
            if code != _OK:
                status[c, 0] = code
                status[c, 1] = i
                break
            x = np.float64(m)
            # right-closed bins (edges[b], edges[b + 1]] on the float64 edges:
            # guess from x * n_bins, then settle against the exact edges
            b = min(int(x * n_bins), n_bins - 1)
            while b > 0 and x <= edges[b]:
                b -= 1
            while b < n_bins - 1 and x > edges[b + 1]:
                b += 1
            wi = w[i] if has_w else 1.0
            sums[c, 0, b] += wi
            sums[c, 1, b] += wi * x
            if arg == y_idx[i]:
                sums[c, 2, b] += wi


def _n_chunks(n):
    return max(1, min(n, 8 * numba.get_num_threads()))


def _raise_status(status, p):
    bad = np.flatnonzero(status[:, 0])
    if bad.shape[0] == 0:
        return
    code, row = status[bad[0]]
    if code == _NOT_FINITE:
        raise ValueError(f"y_prob contains NaN or infinity (row {row}).")
    if code == _NEGATIVE:
        raise ValueError(f"y_prob contains negative values (row {row}).")
    if code == _ABOVE_ONE:
        raise ValueError(f"y_prob contains values greater than 1 (row {row}).")
    tol = row_sum_tolerance(p.dtype)
    total = p[row].sum(dtype=np.float64)
    raise ValueError(
        f"y_prob rows must sum to 1 (within {tol:.2g}, the square root of the "
        f"machine epsilon of {p.dtype}); row {row} sums to {total!r}."
    )


def fused_top_label(p, y_idx):
    """Validated top-label ``(confidence, correct)`` of a 2-D float ``p``."""
    p = np.ascontiguousarray(p)
    n = p.shape[0]
    n_chunks = _n_chunks(n)
    conf = np.empty(n, dtype=p.dtype)
    correct = np.empty(n, dtype=np.bool_)
    status = np.zeros((n_chunks, 2), dtype=np.int64)
    tol = row_sum_tolerance(p.dtype)
    _top_label_kernel(p, y_idx.astype(np.intp), tol, n_chunks, conf, correct, status)
    _raise_status(status, p)
    return conf, correct


def fused_uniform_statistics(p, y_idx, n_bins, sample_weight=None):
    """Validated top-label uniform-bin :class:`BinStatistics` of a 2-D ``p``."""
    p = np.ascontiguousarray(p)
    n = p.shape[0]
    n_chunks = _n_chunks(n)
    edges = uniform_edges(n_bins)
    has_w = sample_weight is not None
    w = sample_weight if has_w else np.ones(1)
    sums = np.zeros((n_chunks, 3, n_bins))
    status = np.zeros((n_chunks, 2), dtype=np.int64)
    tol = row_sum_tolerance(p.dtype)
    _uniform_kernel(
        p, y_idx.astype(np.intp), w, has_w, edges, tol, n_chunks, sums, status
    )
    _raise_status(status, p)
    total = sums.sum(axis=0)
    return BinStatistics(total[0], total[1], total[2], edges)
