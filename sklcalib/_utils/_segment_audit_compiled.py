"""Compiled (numba) null draws of the segment audit (see ``_segment_audit``).

Per resample: the outcomes of every row drawn from the same SplitMix64
stream as the numpy path (draw ``i`` of resample ``b`` decides row ``i``),
then one pass over every segment's members in score order, keeping the
running sum, its maximum and minimum at the ends of tie groups: the work is
the total membership, with no temporary array of it. Imported only for large
problems.

The kernel is serial on purpose: a parallel (``prange``) kernel starts
numba's threading layer, and under its OpenMP layer a later ``fork()`` of the
process (a dask ``LocalCluster``, ``multiprocessing``) aborts it ("fork()
called from a process already using GNU OpenMP"): an audit in a notebook
must not break the user's next cluster. One thread audits 633 segments of
10^4 rows with 1,000 draws in about a second.
"""

import numpy as np
from numba import njit

from ._resampling_compiled import stream_uniform


@njit(cache=True)
def _null_kernel(
    seeds,
    draw_scores,
    cumulative,
    scores,
    weight,
    pos,
    is_end,
    indptr,
    inv,
    kuiper,
    out_max,
    out_gap,
):
    n_col, n = scores.shape
    n_seg = indptr.shape[0] - 1
    classwise = cumulative.shape[0] > 0
    n_classes = cumulative.shape[1]
    drawn = np.empty(n, dtype=np.int64)
    residual = np.empty(n)
    for b in range(seeds.shape[0]):
        seed = seeds[b]
        for i in range(n):
            u = stream_uniform(seed, i)
            if classwise:
                target = u * cumulative[i, n_classes - 1]
                k = 0
                while k < n_classes - 1 and cumulative[i, k] <= target:
                    k += 1
                drawn[i] = k
            else:
                drawn[i] = 1 if u < draw_scores[i] else 0
        best = 0.0
        best_gap = 0.0
        for c in range(n_col):
            hit = c if classwise else 1
            for i in range(n):
                y = 1.0 if drawn[i] == hit else 0.0
                residual[i] = weight[i] * (y - scores[c, i])
            for s in range(n_seg):
                run = 0.0
                high = 0.0
                low = 0.0
                for k in range(indptr[s], indptr[s + 1]):
                    run += residual[pos[c, k]]
                    if is_end[c, k]:
                        if run > high:
                            high = run
                        elif run < low:
                            low = run
                if kuiper:
                    t = (high - low) * inv[s, c]
                else:
                    t = max(high, -low) * inv[s, c]
                if t > best:
                    best = t
                g = abs(run) * inv[s, c]
                if g > best_gap:
                    best_gap = g
        out_max[b] = best
        out_gap[b] = best_gap


def null_maxima_compiled(seeds, draws, scores, weight, layouts, indptr, inv, kuiper):
    """``(max scaled statistic, max |gap| z)`` of every resample: (B,), (B,)."""
    # int32 rows halve the index stream the kernel reads once per resample
    index = np.int32 if scores.shape[1] < 2**31 else np.int64
    pos = np.ascontiguousarray(np.stack([lay.pos for lay in layouts]), dtype=index)
    is_end = np.ascontiguousarray(np.stack([lay.is_end for lay in layouts]))
    draw_scores = (
        np.zeros(0) if draws.scores is None else np.ascontiguousarray(draws.scores)
    )
    cumulative = (
        np.zeros((0, 1))
        if draws.cumulative is None
        else np.ascontiguousarray(draws.cumulative)
    )
    out_max = np.zeros(seeds.shape[0])
    out_gap = np.zeros(seeds.shape[0])
    _null_kernel(
        np.ascontiguousarray(seeds, dtype=np.uint64),
        draw_scores,
        cumulative,
        np.ascontiguousarray(scores, dtype=np.float64),
        np.ascontiguousarray(weight, dtype=np.float64),
        pos,
        is_end,
        np.ascontiguousarray(indptr, dtype=np.int64),
        np.ascontiguousarray(inv, dtype=np.float64),
        bool(kuiper),
        out_max,
        out_gap,
    )
    return out_max, out_gap
