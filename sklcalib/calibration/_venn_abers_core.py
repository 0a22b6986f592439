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


def _gap_slopes(x, y, shift_left, shift_right):
    """Bridge slope between the hulls of ``A[:c+1]`` and ``B[c:]`` for every c.

    ``A = P + shift_left``, ``B = P + shift_right`` (shifts as (dx, dy)).
    The cross products are written out (no helper calls): this loop is the
    whole cost of a fit.
    """
    k = len(x) - 1
    ax = (x + shift_left[0]).tolist()
    ay = (y + shift_left[1]).tolist()
    bx = (x + shift_right[0]).tolist()
    by = (y + shift_right[1]).tolist()

    # suffix hulls from the right: list end = leftmost vertex
    right = []
    popped = [None] * (k + 1)
    for c in range(k, -1, -1):
        removed = []
        cx, cy = bx[c], by[c]
        while len(right) >= 2:
            m, r = right[-1], right[-2]
            # keep m only if c -> m -> r turns left (strictly convex below)
            if (bx[m] - cx) * (by[r] - cy) - (by[m] - cy) * (bx[r] - cx) <= 0:
                removed.append(right.pop())
            else:
                break
        popped[c] = removed
        right.append(c)

    left = []  # prefix hull, list end = rightmost vertex
    slopes = [0.0] * (k + 1)
    for c in range(k + 1):
        cx, cy = ax[c], ay[c]
        while len(left) >= 2:
            m, l_ = left[-1], left[-2]
            if (ax[m] - ax[l_]) * (cy - ay[l_]) - (ay[m] - ay[l_]) * (cx - ax[l_]) <= 0:
                left.pop()
            else:
                break
        left.append(c)
        # walk outward from the gap to the lower common tangent
        i, j = len(left) - 1, len(right) - 1
        ux, uy = cx, cy
        v = right[j]
        vx, vy = bx[v], by[v]
        moved = True
        while moved:
            moved = False
            while j > 0:  # along B to the right while the slope from u drops
                w = right[j - 1]
                wx, wy = bx[w], by[w]
                if (vx - ux) * (wy - uy) - (vy - uy) * (wx - ux) <= 0:
                    j -= 1
                    vx, vy = wx, wy
                    moved = True
                else:
                    break
            while i > 0:  # along A to the left while the slope to v rises
                w = left[i - 1]
                wx, wy = ax[w], ay[w]
                if (ux - wx) * (vy - wy) - (uy - wy) * (vx - wx) <= 0:
                    i -= 1
                    ux, uy = wx, wy
                    moved = True
                else:
                    break
        slopes[c] = (vy - uy) / (vx - ux)
        # the suffix hull of c + 1: drop c, restore what c had popped
        right.pop()
        removed = popped[c]
        if removed:
            right.extend(reversed(removed))
    return np.array(slopes)


def venn_abers_table(scores, labels, weights=None):
    """``(distinct, p0, p1)``: the Venn–ABERS outputs for every gap.

    ``p0[c]`` and ``p1[c]`` are the isotonic values of a test point inserted
    after the first c groups, with label 0 and with label 1.
    """
    distinct, x, y = csd_points(scores, labels, weights)
    # label 0: the points after the test point move right by one
    p0 = _gap_slopes(x, y, (0.0, 0.0), (1.0, 0.0))
    # label 1: they move by (1, 1); shift all by -(1, 1) to keep P for B
    p1 = _gap_slopes(x, y, (-1.0, -1.0), (0.0, 0.0))
    return distinct, np.clip(p0, 0.0, 1.0), np.clip(p1, 0.0, 1.0)


def venn_abers_lookup(table, test_scores):
    """``(p0, p1)`` of every test score: one binary search each."""
    distinct, p0, p1 = table
    return (
        p0[np.searchsorted(distinct, test_scores, side="right")],
        p1[np.searchsorted(distinct, test_scores, side="left")],
    )
