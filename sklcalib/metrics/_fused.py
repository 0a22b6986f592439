"""Fused compiled path for large probability matrices.

One parallel pass over the rows of ``y_prob`` checks every value (finite, in
[0, 1]), sums each row in float64 (float32 sums would blur the tolerance),
finds the top-label confidence and whether the first argmax is the true
class, and accumulates the uniform-bin sums of
:func:`~sklcalib.metrics.bin_statistics` on the fly. Each row is loaded from
memory once, by one vectorised loop (sum and range of the bit patterns); the
correctness then needs one look at the true class's column (and, only when it
holds the maximum, a short vectorised scan of the columns before it). numpy
needs one pass per check plus max, argmax and bincount (about eight
reads of the array); this reads it once, which is what makes the validated
ECE about as fast as a bare ``max`` over the rows.

The numpy functions in ``_binning`` and ``_validation`` are the reference
this module is tested against. This module imports numba at import time; it is
itself imported only when a large input arrives, so ``import sklcalib`` stays
free of numba.
"""

import math

import numpy as np
from numba import njit, prange

from sklcalib._utils._binning import uniform_edges
from sklcalib._utils._optional import parallel_kernel_section
from sklcalib._utils._validation import (
    check_prob_values,
    logits_hint,
    row_sum_tolerance,
    tolerance_dtype,
)

from .binning import BinStatistics

# The row helpers below are not cached themselves: a cached function is linked
# into its caller as machine code, which LLVM cannot inline (measured about
# 1.5x slower). They are compiled into the cached kernels that call them.

# status codes written by the kernels, per chunk: (code, row)
_OK, _NOT_FINITE, _NEGATIVE, _ABOVE_ONE, _ROW_SUM = 0, 1, 2, 3, 4


# One loop over the row computes its float64 sum and the range of its bit
# patterns (see below). The float64 sum may be reordered ("reassoc") so that
# LLVM vectorises it: only the order of the float64 additions changes, which
# moves the sum by a few ulps, far below the sqrt(eps) tolerance.
# There is deliberately no "nnan"/"ninf" flag: NaN and infinity still reach the
# sum, and the integer max/min are exact whatever the flags.
@njit(fastmath={"reassoc", "nsz", "contract"})
def _row_sum_and_bit_range(p, bits, i):
    """Float64 sum of row ``i`` and the largest and smallest bit pattern of its
    values read as signed integers.

    For non-negative floats the IEEE-754 order is the integer order of the bit
    patterns, and integer max/min reductions vectorise where LLVM leaves a float
    max reduction scalar (it must respect NaN). Every value is in [0, 1] iff
    ``lo >= 0`` (no sign bit: no negative, -0.0 or -NaN) and
    ``hi <= bits(1.0)`` (no value above 1, +inf or +NaN).
    """
    total = 0.0
    hi = bits[i, 0]
    lo = bits[i, 0]
    for j in range(p.shape[1]):
        total += np.float64(p[i, j])
        b = bits[i, j]
        hi = b if b > hi else hi
        lo = b if b < lo else lo
    return total, hi, lo


@njit(fastmath=False)
def _tie_before(bits, i, value, stop):
    """Whether a column before ``stop`` of row ``i`` holds ``value`` (branch
    free, so it vectorises; the row is in L1 cache by now)."""
    found = False
    for j in range(stop):
        found |= bits[i, j] == value
    return found


@njit(fastmath=False)
def _float_from_bits(b, mant_bits, bias):
    """The non-negative float whose IEEE-754 bit pattern is ``b``, exactly, as
    float64 (numba has no scalar bit cast; ldexp of the integer mantissa is
    exact for float32 and float64)."""
    e = b >> mant_bits
    m = b & ((1 << mant_bits) - 1)
    if e == 0:  # subnormal
        return math.ldexp(np.float64(m), 1 - bias - mant_bits)
    return math.ldexp(np.float64(m + (1 << mant_bits)), e - bias - mant_bits)


@njit(fastmath=False)
def _slow_row(p, i, tol, y):
    """Exact float checks of a row the fast test flagged (the rare path).

    Returns (status, confidence, correct): the first bad value's status, the
    row-sum status, or OK for a valid row holding -0.0 (sign bit set).
    """
    m = p[i, 0]
    arg = 0
    total = 0.0
    for j in range(p.shape[1]):
        v = p[i, j]
        if not np.isfinite(v):
            return _NOT_FINITE, 0.0, False
        if v < 0.0:
            return _NEGATIVE, 0.0, False
        if v > 1.0:
            return _ABOVE_ONE, 0.0, False
        total += np.float64(v)
        if v > m:
            m = v
            arg = j
    if not abs(total - 1.0) <= tol:
        return _ROW_SUM, 0.0, False
    return _OK, np.float64(m), arg == y


@njit(fastmath=False)
def _scan_row(p, bits, i, tol, one_bits, y, mant_bits, bias):
    """Check row ``i``; return (status, top-label confidence, whether the first
    argmax is column ``y``)."""
    total, hi, lo = _row_sum_and_bit_range(p, bits, i)
    # "not <=" is also true for a NaN sum
    if not abs(total - 1.0) <= tol or lo < 0 or hi > one_bits:
        return _slow_row(p, i, tol, y)
    confidence = _float_from_bits(hi, mant_bits, bias)
    # column y is the first argmax iff it holds the max and no column before
    # it does: no argmax search over the row
    correct = bits[i, y] == hi and not _tie_before(bits, i, hi, y)
    return _OK, confidence, correct


@njit(parallel=True, cache=True, fastmath=False)
def _kernel(
    p,
    bits,
    one_bits,
    mant_bits,
    bias,
    y_idx,
    w,
    has_w,
    edges,
    tol,
    rows_per_chunk,
    n_chunks,
    sums,
    status,
    pairs,
    conf,
    correct,
):
    """The one pass: checks, top label, uniform-bin sums and, if ``pairs``,
    the per-row (confidence, correct). One kernel for both uses halves the
    compilation time of a fresh install."""
    n = p.shape[0]
    n_bins = edges.shape[0] - 1
    for c in prange(n_chunks):
        start = c * rows_per_chunk
        stop = min(n, start + rows_per_chunk)
        # thread-local sums: writing to sums[c] row by row would share cache
        # lines between threads
        local = np.zeros((3, n_bins))
        for i in range(start, stop):
            code, x, hit = _scan_row(
                p, bits, i, tol, one_bits, y_idx[i], mant_bits, bias
            )
            if code != _OK:
                status[c, 0] = code
                status[c, 1] = i
                break
            if pairs:
                conf[i] = x
                correct[i] = hit
            # right-closed bins (edges[b], edges[b + 1]] on the float64 edges (the
            # rule of sklcalib._utils._binning.bin_index):
            # guess from x * n_bins, then settle against the exact edges
            b = min(int(x * n_bins), n_bins - 1)
            while b > 0 and x <= edges[b]:
                b -= 1
            while b < n_bins - 1 and x > edges[b + 1]:
                b += 1
            wi = w[i] if has_w else 1.0
            local[0, b] += wi
            local[1, b] += wi * x
            if hit:
                local[2, b] += wi
        sums[c] = local


# Rows per chunk of the parallel loop. It depends on the number of columns only,
# never on the number of threads: each chunk's sums are added in one order and
# the chunk sums are combined in chunk order, so a result has the same bits on
# one thread, on many, and on a Dask worker given a block of whole chunks.
# About 2**18 values per chunk (1 MiB of float32), a power of two of rows so
# that Dask blocks of a round size hold whole chunks.
_CHUNK_VALUES = 1 << 18


def chunk_rows(n_columns):
    """Rows per chunk of the kernel for ``n_columns`` columns (a power of two)."""
    rows = max(1, _CHUNK_VALUES // max(1, n_columns))
    return 1 << (rows.bit_length() - 1)


@njit(cache=True, fastmath=False)
def _combine(sums):
    """Chunk sums added in chunk order (a fixed order, whatever the threads)."""
    total = np.zeros(sums.shape[1:])
    for c in range(sums.shape[0]):
        total += sums[c]
    return total


def _raise_status(status, p, dtype):
    """Raise the error of the first bad row; return True when the only
    problem is a row sum (rows written with a few decimals may still be
    accepted, renormalised, by :func:`check_prob_values`)."""
    bad = np.flatnonzero(status[:, 0])
    if bad.shape[0] == 0:
        return False
    code, row = status[bad[0]]
    hint = logits_hint("y_prob")
    if code == _NOT_FINITE:
        raise ValueError(f"y_prob contains NaN or infinity (row {row}).")
    if code == _NEGATIVE:
        raise ValueError(f"y_prob contains negative values (row {row})." + hint)
    if code == _ABOVE_ONE:
        raise ValueError(f"y_prob contains values greater than 1 (row {row})." + hint)
    return True


def _bit_view(p):
    """``p`` as signed integers of its width, the bits of 1.0, the number of
    mantissa bits and the exponent bias of the dtype."""
    int_type = np.int32 if p.dtype == np.float32 else np.int64
    info = np.finfo(p.dtype)
    bias = 2 ** (info.nexp - 1) - 1
    one_bits = p.dtype.type(1.0).view(int_type)
    return p.view(int_type), one_bits, int_type(info.nmant), int_type(bias)


def _run(p, y_idx, n_bins, sample_weight, pairs):
    dtype = tolerance_dtype(p)  # before the plain copy below drops the mark
    p = np.ascontiguousarray(p)
    n = p.shape[0]
    rows = chunk_rows(p.shape[1])
    n_chunks = max(1, -(-n // rows))
    edges = uniform_edges(n_bins)
    has_w = sample_weight is not None
    w = sample_weight if has_w else np.ones(1)
    sums = np.zeros((n_chunks, 3, n_bins))
    status = np.zeros((n_chunks, 2), dtype=np.int64)
    size = n if pairs else 1
    conf = np.empty(size, dtype=p.dtype)
    correct = np.empty(size, dtype=np.bool_)
    tol = row_sum_tolerance(dtype, p.shape[1])
    y_idx = y_idx.astype(np.intp, copy=False)
    bit_layout = _bit_view(p)  # the bits, those of 1.0, mantissa bits, bias
    outputs = (sums, status, pairs, conf, correct)
    with parallel_kernel_section():
        _kernel(p, *bit_layout, y_idx, w, has_w, edges, tol, rows, n_chunks, *outputs)
    if _raise_status(status, p, dtype):
        # a row sum off by more than round-off: the numpy check raises its
        # error, or accepts rows rounded to a few decimals and renormalises them
        return _run(check_prob_values(p), y_idx, n_bins, sample_weight, pairs)
    total = _combine(sums)
    return BinStatistics(total[0], total[1], total[2], edges), conf, correct


def fused_top_label(p, y_idx):
    """Validated top-label ``(confidence, correct)`` of a 2-D float ``p``."""
    _, conf, correct = _run(p, y_idx, 1, None, True)
    return conf, correct


def fused_uniform_statistics(p, y_idx, n_bins, sample_weight=None):
    """Validated top-label uniform-bin :class:`BinStatistics` of a 2-D ``p``."""
    return _run(p, y_idx, n_bins, sample_weight, False)[0]
