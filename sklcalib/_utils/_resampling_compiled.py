"""Compiled (numba) kernels of :mod:`sklcalib.metrics._resampling`.

They draw the same SplitMix64 numbers as the numpy path and add the same
values in the same order per resample, so both give the same sums (tested).
Resamples run in parallel; each owns its stream and its row of the output, so
the result does not depend on the number of threads. Imported only for large
problems: ``import sklcalib`` stays free of numba.
"""

import numpy as np
from numba import njit, prange

from ._optional import parallel_kernel_section
from ._splitmix import GAMMA, MIX1, MIX2, TO_UNIT


@njit(inline="always")
def stream_uniform(seed, t):
    """Draw ``t`` (from 0) of the SplitMix64 stream of ``seed``, in [0, 1):
    the compiled twin of :func:`~sklcalib._utils._resampling.uniforms`, also
    drawn by the segment audit's kernel."""
    z = seed + np.uint64(t + 1) * GAMMA
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * TO_UNIT


@njit(parallel=True, cache=True)
def _bootstrap_kernel(codes, values, seeds, counts, block, out):
    n, m = codes.shape
    n_values = values.shape[2]
    for b in prange(seeds.shape[0]):
        seed = seeds[b]
        t = 0
        for k in range(counts.shape[1]):
            start = k * block
            size = min(block, n - start)
            for _ in range(counts[b, k]):
                i = np.intp(stream_uniform(seed, t) * size)
                if i > size - 1:
                    i = size - 1
                i += start
                t += 1
                for c in range(m):
                    cell = codes[i, c]
                    out[b, cell, 0] += 1.0
                    for v in range(n_values):
                        out[b, cell, 1 + v] += values[i, c, v]


@njit(parallel=True, cache=True)
def _consistency_kernel(codes, values, cumulative, seeds, out):
    n, n_classes = codes.shape
    n_values = values.shape[2]
    for b in prange(seeds.shape[0]):
        seed = seeds[b]
        for i in range(n):
            target = stream_uniform(seed, i) * cumulative[i, n_classes - 1]
            k = 0
            while k < n_classes - 1 and cumulative[i, k] <= target:
                k += 1
            cell = codes[i, k]
            out[b, cell, 0] += 1.0
            for v in range(n_values):
                out[b, cell, 1 + v] += values[i, k, v]


@njit(parallel=True, cache=True)
def _top_label_kernel(codes, values, bounds, seeds, out):
    n = codes.shape[0]
    n_values = values.shape[2]
    for b in prange(seeds.shape[0]):
        seed = seeds[b]
        for i in range(n):
            target = stream_uniform(seed, i) * bounds[i, 2]
            k = 1 if bounds[i, 0] <= target and target < bounds[i, 1] else 0
            cell = codes[i, k]
            out[b, cell, 0] += 1.0
            for v in range(n_values):
                out[b, cell, 1 + v] += values[i, k, v]


def bootstrap_sums_compiled(codes, values, n_cells, seeds, counts, row_block):
    # row_block (the caller's _ROW_BLOCK) is passed in: importing it back from
    # _resampling would close an import cycle
    out = np.zeros((seeds.shape[0], n_cells, 1 + values.shape[2]))
    args = (
        np.ascontiguousarray(codes, dtype=np.int32),
        np.ascontiguousarray(values, dtype=np.float64),
        np.ascontiguousarray(seeds, dtype=np.uint64),
        np.ascontiguousarray(counts, dtype=np.int64),
        row_block,
        out,
    )
    with parallel_kernel_section():
        _bootstrap_kernel(*args)
    return out


def consistency_sums_compiled(plan, seeds):
    values = np.ascontiguousarray(plan.values, dtype=np.float64)
    out = np.zeros((seeds.shape[0], plan.n_cells, 1 + values.shape[2]))
    codes = np.ascontiguousarray(plan.codes, dtype=np.int32)
    seeds = np.ascontiguousarray(seeds, dtype=np.uint64)
    if plan.top_label_bounds is not None:
        bounds = np.ascontiguousarray(plan.top_label_bounds, dtype=np.float64)
        with parallel_kernel_section():
            _top_label_kernel(codes, values, bounds, seeds, out)
    else:
        cumulative = np.ascontiguousarray(plan.cumulative, dtype=np.float64)
        with parallel_kernel_section():
            _consistency_kernel(codes, values, cumulative, seeds, out)
    return out
