"""Squared kernel calibration error (SKCE) of Widmann, Lindsten & Zachariah,
"Calibration tests in multi-class classification: A unifying framework"
(NeurIPS 2019), with the Laplacian kernel on the probability simplex.

With residuals ``r_i = e_{y_i} - p_i`` and ``k(p, q) = exp(-||p - q||_2 / nu)``,
``h_ij = k(p_i, p_j) r_i^T r_j``. The estimators are means of ``h_ij`` over
pairs, and none holds an n x n matrix:

- binary scores lie on a line, where the Laplacian kernel factorises along
  the sorted scores: ``exp(-(x_j - x_i)) = exp(-x_j) exp(x_i)`` for
  ``x_i <= x_j``. One sort and running sums give the exact U-statistic over
  all pairs in O(n log n) (the sums run in segments of bounded exponent, so
  nothing overflows);
- with more columns the quadratic estimator runs tile by tile (O(n) memory),
  the block estimator on stacks of blocks.

Tiles and blocks convert their own rows to float64: float32 input is never
copied whole. Pair weights ``w_i w_j`` are summed as ``2 sum_j w_j sum_{i<j}
w_i`` and the diagonal ``i == j`` is left out of every tile rather than
subtracted from the total, so a dominant weight cancels nothing.
"""

import numbers

import numpy as np
from threadpoolctl import threadpool_limits

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._validation import (
    check_option,
    check_prob_values,
    check_scalar,
    check_targets,
)

ESTIMATORS = ("auto", "unbiased", "linear", "block")
#: ``estimator="auto"`` with more than two columns: the quadratic unbiased
#: estimator up to this many rows, the block estimator beyond.
AUTO_QUADRATIC_MAX_ROWS = 10_000
# rows per tile of the quadratic estimator: a 256 x 256 float64 tile (512 kB)
# stays in cache through its five passes, where a tile of 1024 goes to memory
_TILE = 256
_MEDIAN_SUBSAMPLE = 2000  # rows used by the median heuristic, at most
_MEDIAN_TERMS = 1 << 23  # (pair, column) differences of the median, at most
_SCRATCH_VALUES = 1 << 19  # float64 scratch entries per step (4 MB)
_STACK_VALUES = 1 << 20  # kernel entries per stack of blocks
_ROW_CHUNK = 1 << 16  # rows converted to float64 at a time (linear estimator)
_EXP_SPAN = 500.0  # exponent range of one segment of the sorted running sums


def _two_columns(p):
    """A 1-D binary ``p`` as the float64 rows ``[1 - p, p]`` (the same numbers
    as two columns given that way); 2-D ``p`` unchanged."""
    if p.ndim == 1:
        p = p.astype(np.float64)
        return np.column_stack([1.0 - p, p])
    return p


def _binary_scores(p):
    """Coordinates on the line of binary rows: ``||p_i - p_j|| = |t_i - t_j|``
    (exactly for rows summing to the same total; float64, shape (n,))."""
    return (p[:, 1].astype(np.float64) - p[:, 0]) / np.sqrt(2.0)


def _sample_size(n, columns):
    return min(n, _MEDIAN_SUBSAMPLE, max(200, int(np.sqrt(_MEDIAN_TERMS / columns))))


def _sample_positions(n, m):
    """Seeded positions (sorted) of ``m`` of ``n`` rows put in a canonical
    order: the sample depends on the multiset of rows, not on their order."""
    return np.sort(np.random.default_rng(0).choice(n, m, replace=False))


def _median_sample(p):
    """The rows the median heuristic looks at (float64): rows sorted by a
    fixed random projection (identical rows tie, and their order does not
    matter), then a seeded choice of positions."""
    n, columns = p.shape
    m = _sample_size(n, columns)
    if m == n:
        return p.astype(np.float64)
    v = np.random.default_rng(12345).standard_normal(columns)
    key = np.zeros(n)
    for k in range(columns):  # column by column: a row's key is the same bits
        key += v[k] * p[:, k].astype(np.float64)  # wherever the row sits
    order = np.argsort(key)
    return p[order[_sample_positions(n, m)]].astype(np.float64)


def _median_of_pairs(distances):
    """Median of the distances between distinct rows, each pair once (the
    upper triangle of the symmetric distance matrix, whose entries are the
    same numbers either way round); 0 (most rows identical) gives the median
    of the positive distances."""
    pairs = distances.shape[0]
    if pairs == 0:
        return 1.0
    lo, hi = (pairs - 1) // 2, pairs // 2
    part = np.partition(distances, [lo, hi])
    median = 0.5 * (part[lo] + part[hi])
    if median > 0:
        return float(median)
    positive = distances[distances > 0]
    return float(np.median(positive)) if positive.size else 1.0


def median_bandwidth(p):
    """Median of the pairwise distances between rows of ``p`` (a 1-D ``p``
    stands for the rows ``[1 - p, p]``).

    On at most 2000 rows (fewer with many columns) chosen independently of
    the row order, from the differences themselves (identical rows are
    exactly 0 apart, where ``|a|^2 + |b|^2 - 2 a.b`` leaves rounding noise).
    A median of 0 (most rows identical) gives the median of the positive
    distances; no positive distance gives 1 (every row identical: any
    bandwidth gives the same kernel)."""
    p = _two_columns(p)
    if p.shape[1] == 2:  # binary rows lie on a line
        t = np.sort(_binary_scores(p))
        m = _sample_size(t.shape[0], 1)
        if m < t.shape[0]:
            t = t[_sample_positions(t.shape[0], m)]
        # sorted: the pairs k apart are t[k:] - t[:-k], each pair once
        gaps = [t[k:] - t[:-k] for k in range(1, t.shape[0])]
        return _median_of_pairs(np.concatenate(gaps) if gaps else t[:0])
    q = _median_sample(p)
    m = q.shape[0]
    step = max(1, _SCRATCH_VALUES // (m * q.shape[1]))
    upper = []
    for i0 in range(0, m, step):
        # rows i0.. against the rows after each of them (j > i)
        diff = q[i0 : i0 + step, None, :] - q[None, i0 + 1 :, :]
        block = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        after = np.arange(i0 + 1, m)[None, :] > np.arange(i0, i0 + len(block))[:, None]
        upper.append(block[after])
    return _median_of_pairs(np.concatenate(upper))


def check_bandwidth(bandwidth):
    """Return a positive float bandwidth or the string "median"."""
    if isinstance(bandwidth, str):
        return check_option(bandwidth, "bandwidth", ("median",))
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Real):
        raise ValueError(
            f'bandwidth must be a positive number or "median", got {bandwidth!r}.'
        )
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be positive and finite, got {bandwidth!r}.")
    return float(bandwidth)


def _pair_weight_sum(w):
    """``sum_{i != j} w_i w_j`` of non-negative weights without cancellation
    (``w.sum()**2 - w @ w`` loses every digit when one weight dominates)."""
    before = np.zeros_like(w)  # sum of the weights before each row (not
    np.cumsum(w[:-1], out=before[1:])  # cumsum(w) - w: that cancels too)
    return 2.0 * float(np.dot(w, before))


def _residuals(p, y_idx, w, nu):
    """float64 rows ``p / nu``, their squared norms and the weighted residuals
    ``w_i (e_{y_i} - p_i)`` of a slice of rows."""
    p = p.astype(np.float64)
    r = -p
    r[np.arange(p.shape[0]), y_idx] += 1.0
    if w is not None:
        r *= w[:, None]
    p /= nu
    return p, np.einsum("ij,ij->i", p, p), r


def _binary_sums(p, y_idx, w, nu):
    """``sum_{i != j} w_i w_j h_ij`` of binary rows, exactly (all pairs), by
    running sums along the sorted scores.

    With ``x = t / nu`` sorted, ``S_j = sum_{i<j} a_i exp(x_i - x_j)`` for the
    weighted residual columns ``a``; the total is ``2 sum_j a_j . S_j``. The
    scores are cut into segments spanning at most ``_EXP_SPAN`` in ``x``;
    inside a segment the running sum is scaled by ``exp(x_i - x_start)``
    (at most ``exp(_EXP_SPAN)``), and one carry per segment brings in the
    earlier ones.
    """
    x = _binary_scores(p) / nu
    order = np.argsort(x)
    x = x[order]
    a = -p[order].astype(np.float64)  # residuals e_y - p of the sorted rows
    a[np.arange(order.shape[0]), y_idx[order]] += 1.0
    if w is not None:
        a *= w[order][:, None]
    segment = np.floor((x - x[0]) / _EXP_SPAN).astype(np.int64)
    starts = np.flatnonzero(np.diff(segment, prepend=-1))
    total = 0.0
    carry = np.zeros(a.shape[1])  # sum over earlier segments of a_i exp(x_i - ref)
    ref_prev = x[0]
    for s, start in enumerate(starts):
        stop = starts[s + 1] if s + 1 < starts.shape[0] else x.shape[0]
        ref = x[start]
        carry *= np.exp(ref_prev - ref)
        up = np.exp(x[start:stop] - ref)  # in [1, exp(_EXP_SPAN)]
        scaled = a[start:stop] * up[:, None]
        running = np.zeros_like(scaled)  # exclusive running sums, this segment
        np.cumsum(scaled[:-1], axis=0, out=running[1:])
        sums = (running + carry) / up[:, None]
        total += 2.0 * float(np.einsum("ij,ij->", a[start:stop], sums))
        carry += scaled.sum(axis=0)
        ref_prev = ref
    return total


def _quadratic_sums(p, y_idx, w, nu):
    """``sum_{i != j} w_i w_j h_ij`` without an n x n matrix: tiles of the
    upper triangle, each counted twice off the diagonal; the diagonal tiles
    leave out ``i == j`` themselves."""
    n = p.shape[0]
    total = 0.0
    for i0 in range(0, n, _TILE):
        i1 = min(i0 + _TILE, n)
        a, sq_a, ra = _residuals(p[i0:i1], y_idx[i0:i1], _take(w, i0, i1), nu)
        for j0 in range(i0, n, _TILE):
            j1 = min(j0 + _TILE, n)
            if j0 == i0:
                b, sq_b, rb = a, sq_a, ra
            else:
                b, sq_b, rb = _residuals(p[j0:j1], y_idx[j0:j1], _take(w, j0, j1), nu)
            kern = _kernel_tile(a, sq_a, b, sq_b)
            kern *= ra @ rb.T
            if i0 == j0:
                np.fill_diagonal(kern, 0.0)
                total += kern.sum()
            else:
                total += 2.0 * kern.sum()
    return total


def _take(w, start, stop):
    return None if w is None else w[start:stop]


def _kernel_tile(a, sq_a, b, sq_b):
    """``exp(-||a_i - b_j||)`` of rows already divided by the bandwidth."""
    kern = a @ b.T
    kern *= -2.0
    kern += sq_a[:, None]
    kern += sq_b[None, :]
    np.maximum(kern, 0.0, out=kern)  # rounding can make d^2 negative
    np.sqrt(kern, out=kern)
    np.negative(kern, out=kern)
    return np.exp(kern, out=kern)


def _block_sums(p, y_idx, w, nu, block_size):
    """Unbiased sums of consecutive blocks, computed a stack of blocks at a
    time (one batched product per stack instead of Python work per block);
    a trailing block of one row is left out (it has no pair). Returns the
    sum of ``w_i w_j h_ij`` and of ``w_i w_j`` over the pairs of every block."""
    n = p.shape[0]
    full = n // block_size
    per_stack = max(
        1,
        min(
            _STACK_VALUES // (block_size * block_size),
            _SCRATCH_VALUES // (block_size * p.shape[1]),
        ),
    )
    total = pairs = 0.0
    for b0 in range(0, full, per_stack):
        b1 = min(b0 + per_stack, full)
        lo, hi = b0 * block_size, b1 * block_size
        wb = _take(w, lo, hi)
        a, sq, r = _residuals(p[lo:hi], y_idx[lo:hi], wb, nu)
        shape = (b1 - b0, block_size)
        # d^2_ij = |a_i|^2 + |a_j|^2 - 2 a_i.a_j as one product of augmented
        # rows [-2 a, |a|^2, 1] and [a, 1, |a|^2]: no passes over the kernel
        # entries to add the squares
        ones = np.ones((a.shape[0], 1))
        left = np.hstack([-2.0 * a, sq[:, None], ones]).reshape(*shape, -1)
        right = np.hstack([a, ones, sq[:, None]]).reshape(*shape, -1)
        r = r.reshape(*shape, -1)
        kern = np.matmul(left, right.transpose(0, 2, 1))
        np.maximum(kern, 0.0, out=kern)  # rounding can make d^2 negative
        np.sqrt(kern, out=kern)
        np.negative(kern, out=kern)
        np.exp(kern, out=kern)
        diag = np.arange(block_size)
        kern[:, diag, diag] = 0.0  # pairs i != j only
        # sum of kern * (r_i . r_j): one dot product of the two stacks
        total += float(np.vdot(kern, np.matmul(r, r.transpose(0, 2, 1))))
        if wb is None:
            pairs += (b1 - b0) * block_size * (block_size - 1.0)
        else:
            wb = wb.reshape(shape)
            before = np.zeros_like(wb)
            np.cumsum(wb[:, :-1], axis=1, out=before[:, 1:])
            pairs += 2.0 * float(np.einsum("ij,ij->", wb, before))
    if n - full * block_size >= 2:
        lo = full * block_size
        wt = _take(w, lo, n)
        total += _quadratic_sums(p[lo:], y_idx[lo:], wt, nu)
        pairs += _pair_weight_sum(np.ones(n - lo) if wt is None else wt)
    return total, pairs


def _linear_sums(p, y_idx, w, nu):
    """Sums of ``w_i w_j h_ij`` and ``w_i w_j`` over the pairs (2i, 2i + 1)."""
    m = p.shape[0] // 2
    total = pairs = 0.0
    for c0 in range(0, m, _ROW_CHUNK):
        c1 = min(c0 + _ROW_CHUNK, m)
        lo, hi = 2 * c0, 2 * c1
        a, _, r = _residuals(p[lo:hi], y_idx[lo:hi], None, nu)
        diff = a[0::2] - a[1::2]
        kern = np.exp(-np.sqrt(np.einsum("ij,ij->i", diff, diff)))
        hr = kern * np.einsum("ij,ij->i", r[0::2], r[1::2])
        if w is None:
            total += float(hr.sum())
            pairs += c1 - c0
        else:
            ww = w[lo:hi:2] * w[lo + 1 : hi : 2]
            total += float(np.dot(ww, hr))
            pairs += float(ww.sum())
    return total, pairs


def _pair_weights(w):
    """Weights rescaled to a maximum of 1 (products of weights near 1e+-170
    neither overflow nor underflow), or None for unit weights."""
    if w is None:
        return None
    if np.count_nonzero(w) < 2:
        raise ValueError(
            "sample_weight has fewer than two positive weights: the SKCE averages "
            "over pairs of samples."
        )
    return w / w.max()


@fill_doc
def kernel_calibration_error(
    y_true,
    y_prob,
    *,
    bandwidth="median",
    estimator="auto",
    block_size=100,
    labels=None,
    sample_weight=None,
):
    """Squared kernel calibration error (SKCE) of Widmann et al. (2019).

    With residuals ``r_i = e_{y_i} - p_i`` (one-hot label minus the predicted
    probability vector) and the Laplacian kernel on the simplex
    ``k(p, q) = exp(-||p - q||_2 / nu)``, let ``h_ij = k(p_i, p_j) r_i^T r_j``.
    The SKCE is the expectation of ``h_ij`` over independent pairs; it is 0
    exactly when the model is calibrated (the kernel is characteristic). The
    estimators are

    - ``"unbiased"``: the mean of ``h_ij`` over all pairs ``i != j``. For
      binary problems (1-D ``y_prob`` or two columns) it is computed exactly
      in O(n log n) time (the rows lie on a line, where the Laplacian kernel
      factorises along the sorted scores; it agrees with the pairwise sum to
      rounding, within a relative 1e-9 in the tests); otherwise in O(n^2)
      time, tile by tile (O(n) memory);
    - ``"linear"``: the mean of ``h_{2i, 2i+1}`` over consecutive pairs
      (O(n) time, larger variance);
    - ``"block"``: the unbiased estimate on consecutive blocks of
      ``block_size`` rows, averaged (O(n * block_size) time).

    All three are unbiased, so they can be negative; a calibrated model scores
    about 0.

    Parameters
    ----------
    y_true, y_prob : array-like
        The labels (n_samples,) and the predicted probabilities (n_samples,
        n_classes) or (n_samples,), as
        :func:`~sklcalib.metrics.expected_calibration_error` takes them; a
        1-D binary ``y_prob`` counts as the two columns ``[1 - p, p]``.
    bandwidth : float or "median", default="median"
        The kernel bandwidth ``nu > 0``. ``"median"``: the median distance
        between the rows of ``y_prob``, the usual heuristic, on at most 2000
        rows (fewer for many columns) drawn with a fixed seed in a way that
        depends on the rows, not on their order; when most rows are identical
        (median 0), the median of the non-zero distances.
    estimator : {"auto", "unbiased", "linear", "block"}, default="auto"
        Which estimator, see above. ``"auto"``: ``"unbiased"`` for binary
        problems at any size and up to 10 000 rows otherwise, ``"block"``
        beyond (the quadratic estimator would take minutes), so the default
        stays affordable at a million rows.
    block_size : int, default=100
        Rows per block of the ``"block"`` estimator (>= 2). A trailing block
        of at least two rows is included, weighted by its number of pairs.
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights: the pair ``(i, j)`` weighs ``w_i w_j``. At least two
        weights must be positive (an estimator that finds no pair of positive
        weight raises a ValueError). A row of zero weight is no row: the
        blocks and consecutive pairs of the ``"block"`` and ``"linear"``
        estimators, the size that ``"auto"`` looks at and the ``"median"``
        bandwidth are those of the rows of positive weight. Rescaling all
        the weights by one factor changes nothing.

    Returns
    -------
    skce : float
        About 0 for a calibrated model, positive otherwise (estimates can be
        slightly negative); lower is better.

    References
    ----------
    D. Widmann, F. Lindsten and D. Zachariah. Calibration tests in multi-class
    classification: A unifying framework. NeurIPS 2019.

    Examples
    --------
    >>> from scipy.special import softmax
    >>> from sklcalib.datasets import make_logits
    >>> from sklcalib.metrics import kernel_calibration_error
    >>> logits, y = make_logits(1000)  # calibrated logits
    >>> abs(kernel_calibration_error(y, softmax(logits, axis=1))) < 1e-3
    True
    >>> p_sharp = softmax(4 * logits, axis=1)  # over-confident
    >>> kernel_calibration_error(y, p_sharp) > 1e-2
    True
    """
    bandwidth = check_bandwidth(bandwidth)
    check_option(estimator, "estimator", ESTIMATORS)
    block_size = check_scalar(block_size, "block_size", integer=True, low=2)
    y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
    p = check_prob_values(p)
    return validated_skce(y_idx, p, w, bandwidth, estimator, block_size)


def validated_skce(y_idx, p, w, bandwidth="median", estimator="auto", block_size=100):
    """:func:`kernel_calibration_error` of validated inputs (``w`` without
    zero weights, the parameters checked)."""
    n = p.shape[0]
    if n < 2 and w is None:
        raise ValueError("y_prob has one row: the SKCE needs at least two samples.")
    w = _pair_weights(w)
    p = _two_columns(p)
    nu = median_bandwidth(p) if bandwidth == "median" else bandwidth
    binary = p.shape[1] == 2
    if estimator == "auto":
        quadratic = binary or n <= AUTO_QUADRATIC_MAX_ROWS
        estimator = "unbiased" if quadratic else "block"
    if estimator == "unbiased" and binary:
        total = _binary_sums(p, y_idx, w, nu)
        pairs = n * (n - 1.0) if w is None else _pair_weight_sum(w)
        return _ratio(total, pairs, "pair of samples of positive weight")
    # the products are small (blocks or tiles of a few hundred rows): a
    # threaded BLAS spends more time waking its threads than multiplying
    # (measured 20x slower); limited once for the whole call
    with threadpool_limits(limits=1, user_api="blas"):
        if estimator == "unbiased":
            total = _quadratic_sums(p, y_idx, w, nu)
            pairs = n * (n - 1.0) if w is None else _pair_weight_sum(w)
            return _ratio(total, pairs, "pair of samples of positive weight")
        if estimator == "block":
            total, pairs = _block_sums(p, y_idx, w, nu, int(block_size))
            return _ratio(total, pairs, "block with two samples of positive weight")
    total, pairs = _linear_sums(p, y_idx, w, nu)
    return _ratio(total, pairs, "pair (2i, 2i + 1) of positive weights")


def _ratio(total, pairs, what):
    if not pairs > 0:
        raise ValueError(
            f"sample_weight leaves no {what}: the SKCE estimate averages over "
            "pairs of samples."
        )
    return float(total / pairs)
