"""Inductive Venn–ABERS for every test score at once, from one sorted pass.

Isotonic regression of binary labels is the slope of the greatest convex
minorant (GCM) of the cumulative sum diagram (CSD): with the calibration
scores sorted and tied scores pooled into k groups, the CSD is the points
``P_j = (W_j, Y_j)``, j = 0..k, of cumulative weight and cumulative weighted
label, ``P_0 = (0, 0)``. A test point of weight 1 and label ``y`` inserted
after group c shifts every point from group c + 1 on by ``(1, y)``; its
isotonic value is the slope of the GCM over the test point's unit of x,
``max_{a <= c} min_{b >= c} slope(A_a, B_b)`` with ``A`` the points up to
``P_c`` and ``B`` the points from ``P_c`` on, one of the two sets shifted
(Barlow et al., 1972, Theorem 1.1). That slope is the lower common tangent
("bridge") of the lower convex hulls of the two sets.

So only k + 1 configurations exist, one per gap between groups. Sweeping c
from 0 to k, the hull of the prefix grows by one point (a monotone-chain
stack) and the hull of the suffix loses its leftmost point (the suffix hulls
are built once from the right, recording what each point popped, and the
sweep undoes those pops). The bridge is found by walking both hulls outward
from the gap. The sweep is O(k) amortised for the hulls; the walks are short
because hulls of a CSD have few vertices near the gap. Each test score then
looks its gap up with one binary search, as Vovk, Petej and Fedorova (2015)
do: ``p0`` places the test point after calibration scores equal to it,
``p1`` before them (the extreme placements, which make ``[p0, p1]`` an
interval containing both).
"""

import numpy as np

from sklcalib._utils._optional import is_installed

from ._base import within_unit_interval


def csd_points(scores, labels, weights=None):
    """Distinct sorted scores and the CSD points of their groups.

    Returns ``(distinct, x, y)``: ``x[j], y[j]`` are the cumulative weight and
    weighted label sum of the first j groups (``x[0] = y[0] = 0``). Samples of
    zero weight are dropped first: a weight-0 row is a row not there.
    """
    if weights is not None:
        keep = weights > 0
        scores, labels, weights = scores[keep], labels[keep], weights[keep]
    else:
        weights = np.ones_like(scores)
    order = np.argsort(scores, kind="stable")
    scores, labels, weights = scores[order], labels[order], weights[order]
    distinct, starts = np.unique(scores, return_index=True)
    group_weight = np.add.reduceat(weights, starts)
    group_label = np.add.reduceat(weights * labels, starts)
    x = np.concatenate([[0.0], np.cumsum(group_weight)])
    y = np.concatenate([[0.0], np.cumsum(group_label)])
    return distinct, x, y


def _gap_slopes_kernel(
    ax, ay, bx, by, right, popped, popped_start, popped_end, left, slopes
):
    """Bridge slope between the hulls of ``A[:c+1]`` and ``B[c:]`` for every c.

    ``ax, ay`` and ``bx, by`` are the coordinates of the k + 1 points of A and
    B; ``right``, ``popped``, ``popped_start``, ``popped_end``, ``left`` are
    integer buffers of length k + 1 and ``slopes`` the output. Written with
    indexing only, so that the same body runs on Python lists (fast in the
    interpreter) and, compiled by numba, on arrays. The cross products are
    written out: this loop is the whole cost of a fit.
    """
    n_points = len(ax)
    # suffix hulls from the right: right[top - 1] is the leftmost vertex
    top = 0
    n_popped = 0
    for c in range(n_points - 1, -1, -1):
        popped_start[c] = n_popped
        cx = bx[c]
        cy = by[c]
        while top >= 2:
            m = right[top - 1]
            r = right[top - 2]
            # keep m only if c -> m -> r turns left (strictly convex below)
            if (bx[m] - cx) * (by[r] - cy) - (by[m] - cy) * (bx[r] - cx) <= 0:
                popped[n_popped] = m
                n_popped += 1
                top -= 1
            else:
                break
        popped_end[c] = n_popped
        right[top] = c
        top += 1

    n_left = 0  # prefix hull: left[n_left - 1] is the rightmost vertex
    for c in range(n_points):
        cx = ax[c]
        cy = ay[c]
        while n_left >= 2:
            m = left[n_left - 1]
            l_ = left[n_left - 2]
            if (ax[m] - ax[l_]) * (cy - ay[l_]) - (ay[m] - ay[l_]) * (cx - ax[l_]) <= 0:
                n_left -= 1
            else:
                break
        left[n_left] = c
        n_left += 1
        # walk outward from the gap to the lower common tangent
        i = n_left - 1
        j = top - 1
        ux = cx
        uy = cy
        vx = bx[right[j]]
        vy = by[right[j]]
        moved = True
        while moved:
            moved = False
            while j > 0:  # along B to the right while the slope from u drops
                w = right[j - 1]
                wx = bx[w]
                wy = by[w]
                if (vx - ux) * (wy - uy) - (vy - uy) * (wx - ux) <= 0:
                    j -= 1
                    vx = wx
                    vy = wy
                    moved = True
                else:
                    break
            while i > 0:  # along A to the left while the slope to v rises
                w = left[i - 1]
                wx = ax[w]
                wy = ay[w]
                if (ux - wx) * (vy - wy) - (uy - wy) * (vx - wx) <= 0:
                    i -= 1
                    ux = wx
                    uy = wy
                    moved = True
                else:
                    break
        slopes[c] = (vy - uy) / (vx - ux)
        # the suffix hull of c + 1: drop c, restore what c had popped
        top -= 1
        for q in range(popped_end[c] - 1, popped_start[c] - 1, -1):
            right[top] = popped[q]
            top += 1


#: Tables with at least this many distinct calibration scores use the
#: numba-compiled kernel when numba is installed.
COMPILED_MIN_POINTS = 2_000

_compiled_kernel = None


def _compiled():
    """The kernel compiled by numba (cached on disk), or None without numba."""
    global _compiled_kernel
    if not is_installed("numba"):  # absent, or disabled by SKLCALIB_DISABLE_NUMBA
        return None
    if _compiled_kernel is None:
        try:
            from numba import njit
        except ImportError:
            return None
        _compiled_kernel = njit(cache=True)(_gap_slopes_kernel)
    return _compiled_kernel


def _gap_slopes(x, y, shift_left, shift_right, *, compiled=None):
    """Bridge slopes for ``A = P + shift_left`` and ``B = P + shift_right``.

    ``compiled=None`` uses the numba kernel for large inputs when numba is
    installed, the same kernel in the interpreter otherwise.
    """
    n_points = len(x)
    coords = (
        x + shift_left[0],
        y + shift_left[1],
        x + shift_right[0],
        y + shift_right[1],
    )
    kernel = None
    if compiled is None:
        compiled = n_points >= COMPILED_MIN_POINTS
    if compiled:
        kernel = _compiled()
    if kernel is not None:
        buffers = [np.empty(n_points, dtype=np.int64) for _ in range(5)]
        slopes = np.empty(n_points)
        kernel(*coords, *buffers, slopes)
        return slopes
    # lists: indexing a list in the interpreter is ~3x faster than an array
    buffers = [[0] * n_points for _ in range(5)]
    slopes = [0.0] * n_points
    _gap_slopes_kernel(*(c.tolist() for c in coords), *buffers, slopes)
    return np.array(slopes)


def venn_abers_table(scores, labels, weights=None, *, compiled=None):
    """``(distinct, p0, p1)``: the Venn–ABERS outputs for every gap.

    ``p0[c]`` and ``p1[c]`` are the isotonic values of a test point inserted
    after the first c groups, with label 0 and with label 1. ``compiled``:
    True or False forces the numba kernel or the interpreter, None decides
    by size.
    """
    distinct, x, y = csd_points(scores, labels, weights)
    # label 0: the points after the test point move right by one
    p0 = _gap_slopes(x, y, (0.0, 0.0), (1.0, 0.0), compiled=compiled)
    # label 1: they move by (1, 1); shift all by -(1, 1) to keep P for B
    p1 = _gap_slopes(x, y, (-1.0, -1.0), (0.0, 0.0), compiled=compiled)
    # slopes of label increments over weight increments: in [0, 1] but for
    # the rounding of the weighted cumulative sums
    p0 = within_unit_interval(p0, "Venn-ABERS (label 0)")
    p1 = within_unit_interval(p1, "Venn-ABERS (label 1)")
    return distinct, p0, p1


def venn_abers_lookup(table, test_scores):
    """``(p0, p1)`` of every test score: one binary search each."""
    distinct, p0, p1 = table
    return (
        p0[np.searchsorted(distinct, test_scores, side="right")],
        p1[np.searchsorted(distinct, test_scores, side="left")],
    )
