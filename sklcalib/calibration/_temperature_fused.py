"""Compiled one-pass kernel for temperature scaling on large logit matrices.

The numpy path of ``_temperature`` reads the (n, K) logits about seven times
per Newton step (scale, exp, four reductions) and needs two (n, K) float64
scratch arrays. This kernel reads each row once per step, in parallel over
blocks of rows, with scratch space of one row per block.

It also computes ``exp`` itself. numba without Intel's SVML calls the scalar
libm ``exp`` for every element, and 20 million of those per step are the
whole cost of a fit on 200k x 100 logits. The inline version below (Cody-Waite
range reduction ``x = n ln2 + r``, a degree-12 Taylor polynomial for
``exp(r)`` on ``|r| <= ln2 / 2``, and ``2**n`` built from its bits) has no
calls or branches, so LLVM vectorises it; its relative error is below 1e-13
(tested against ``numpy.exp``), far below what the optimisation needs.

The numpy functions in ``_temperature`` are the reference this module is
tested against. This module imports numba at import time; it is imported only
when large logits arrive, so ``import sklcalib.calibration`` stays free of it.
"""

import numpy as np
from numba import njit, prange

from sklcalib._utils._optional import parallel_kernel_section

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693147180369123816490  # ln 2 split in two: n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
# Adding 1.5 * 2**52 rounds a float64 of magnitude < 2**51 to an integer that
# then sits in the low bits of the sum's bit pattern.
_ROUND = 6755399441055744.0
_ROUND_BITS = np.array([_ROUND]).view(np.int64)[0]
_EXP_FLOOR = -700.0  # exp(-700) ~ 1e-304: nothing next to the row maximum's 1
_BLOCK = 64  # rows per parallel task


# Only "contract" (fused multiply-add): "reassoc" would let LLVM simplify
# (x + _ROUND) - _ROUND to x and break the rounding trick.
@njit(cache=True, fastmath={"contract"})
def _exp_nonpositive(x, out, scale):
    """out = exp(x) for x <= 0 (x below _EXP_FLOOR is taken as _EXP_FLOOR).

    ``scale`` is a scratch float64 array of the same length.
    """
    for j in range(x.shape[0]):
        v = max(x[j], _EXP_FLOOR)
        rounded = v * _LOG2E + _ROUND
        n = rounded - _ROUND
        r = v - n * _LN2_HI - n * _LN2_LO
        p = 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        out[j] = p * r + 1.0
        scale[j] = rounded
    bits = scale.view(np.int64)
    for j in range(x.shape[0]):
        bits[j] = (bits[j] - _ROUND_BITS + 1023) << 52  # the float 2**n
    for j in range(x.shape[0]):
        out[j] *= scale[j]


# "reassoc" lets LLVM vectorise the four row sums (only the order of the
# additions changes).
@njit(cache=True, fastmath={"reassoc", "contract", "nsz"})
def _moment_sums(e, d):
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for j in range(e.shape[0]):
        ed = e[j] * d[j]
        s0 += e[j]
        s1 += ed
        s2 += ed * d[j]
        s3 += ed * d[j] * d[j]
    return s0, s1, s2, s3


@njit(parallel=True, cache=True)
def _block_derivatives(logits, y_idx, beta, out):
    """Per block of ``_BLOCK`` rows, the sums of the NLL and its first three
    derivatives in beta, written to ``out[block]``.

    With d = z - max(z) per row and p = softmax(beta d): NLL = mean(log sum
    exp(beta d) - beta d_y); its derivatives are the mean, variance and third
    central moment of d under p, minus d_y for the first.
    """
    n, k = logits.shape
    for b in prange(out.shape[0]):
        d = np.empty(k)
        x = np.empty(k)
        e = np.empty(k)
        scale = np.empty(k)
        nll = 0.0
        grad = 0.0
        hess = 0.0
        third = 0.0
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            m = logits[i, 0]
            for j in range(1, k):
                m = max(m, logits[i, j])
            for j in range(k):
                d[j] = logits[i, j] - m
                x[j] = beta * d[j]
            _exp_nonpositive(x, e, scale)
            s0, s1, s2, s3 = _moment_sums(e, d)
            mean = s1 / s0
            second = s2 / s0
            d_true = logits[i, y_idx[i]] - m
            nll += np.log(s0) - beta * d_true
            grad += mean - d_true
            hess += max(second - mean * mean, 0.0)
            third += s3 / s0 - 3.0 * mean * second + 2.0 * mean**3
        out[b, 0] = nll
        out[b, 1] = grad
        out[b, 2] = hess
        out[b, 3] = third


@njit(cache=True)
def _sum_blocks(out):
    """The block sums added in block order: the same bits on any number of
    threads (a prange reduction into scalars adds the threads' partial sums
    in an order that depends on how many threads there are)."""
    total = np.zeros(4)
    for b in range(out.shape[0]):
        for c in range(4):
            total[c] += out[b, c]
    return total


def nll_derivatives(logits, y_idx, beta):
    """Mean NLL of softmax(beta z) and its first three derivatives in beta.

    Blocks of rows run in parallel; their sums are combined in block order, so
    the result does not depend on the number of threads.
    """
    n = logits.shape[0]
    out = np.empty(((n + _BLOCK - 1) // _BLOCK, 4))
    with parallel_kernel_section():
        _block_derivatives(logits, y_idx, float(beta), out)
    total = _sum_blocks(out)
    return total[0] / n, total[1] / n, total[2] / n, total[3] / n


@njit(cache=True)
def exp_nonpositive(x):
    """exp of a 1-D array of non-positive values (exposed for testing)."""
    out = np.empty_like(x)
    _exp_nonpositive(x, out, np.empty_like(x))
    return out
