"""Compiled (numba) kernels of :mod:`sklcalib.metrics._resampling`.

They draw the same SplitMix64 numbers as the numpy path and add the same
values in the same order per resample, so both give the same sums (tested).
Resamples run in parallel; each owns its stream and its row of the output, so
the result does not depend on the number of threads. Imported only for large
problems: ``import sklcalib`` stays free of numba.
"""

import numpy as np
from numba import njit, prange

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 2.0**-53


@njit(inline="always")
def _uniform(seed, t):
    """Draw ``t`` (from 0) of the SplitMix64 stream of ``seed``, in [0, 1)."""
    z = seed + np.uint64(t + 1) * _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * _TO_UNIT


@njit(parallel=True, cache=True)
def _bootstrap_kernel(codes, values, seeds, out):
    n, m = codes.shape
    n_values = values.shape[2]
    for b in prange(seeds.shape[0]):
        seed = seeds[b]
        for t in range(n):
            i = np.intp(_uniform(seed, t) * n)
            if i > n - 1:
                i = n - 1
            for c in range(m):
                cell = codes[i, c]
                for v in range(n_values):
                    out[b, cell, v] += values[i, c, v]


@njit(parallel=True, cache=True)
def _consistency_kernel(codes, values, cumulative, seeds, out):
    n, n_classes = codes.shape
    n_values = values.shape[2]
    for b in prange(seeds.shape[0]):
        seed = seeds[b]
        for i in range(n):
            target = _uniform(seed, i) * cumulative[i, n_classes - 1]
            k = 0
            while k < n_classes - 1 and cumulative[i, k] <= target:
                k += 1
            cell = codes[i, k]
            for v in range(n_values):
                out[b, cell, v] += values[i, k, v]


def bootstrap_sums_compiled(codes, values, n_cells, seeds):
    out = np.zeros((seeds.shape[0], n_cells, values.shape[2]))
    _bootstrap_kernel(
        np.ascontiguousarray(codes, dtype=np.intp),
        np.ascontiguousarray(values, dtype=np.float64),
        np.ascontiguousarray(seeds, dtype=np.uint64),
        out,
    )
    return out


def consistency_sums_compiled(codes, values, cumulative, n_cells, seeds):
    out = np.zeros((seeds.shape[0], n_cells, values.shape[2]))
    _consistency_kernel(
        np.ascontiguousarray(codes, dtype=np.intp),
        np.ascontiguousarray(values, dtype=np.float64),
        np.ascontiguousarray(cumulative, dtype=np.float64),
        np.ascontiguousarray(seeds, dtype=np.uint64),
        out,
    )
    return out
