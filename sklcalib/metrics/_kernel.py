"""Squared kernel calibration error (SKCE) of Widmann, Lindsten & Zachariah,
"Calibration tests in multi-class classification: A unifying framework"
(NeurIPS 2019), with the Laplacian kernel on the probability simplex.

With residuals ``r_i = e_{y_i} - p_i`` and ``k(p, q) = exp(-||p - q||_2 / nu)``,
``h_ij = k(p_i, p_j) r_i^T r_j``. The estimators are means of ``h_ij`` over
pairs; the quadratic one is computed block by block (each block of pairs is
a few megabytes), so memory stays linear in the number of samples.
"""

import numbers

import numpy as np
from threadpoolctl import threadpool_limits

from sklcalib._utils._validation import check_option, check_prob_values, check_targets

ESTIMATORS = ("unbiased", "linear", "block")
# rows per tile of the quadratic estimator: a 256 x 256 float64 tile (512 kB)
# stays in cache through its five passes, where a tile of 1024 goes to memory
_TILE = 256
_MEDIAN_SUBSAMPLE = 2000  # rows used by the median heuristic


def _pairwise_distances(a, b, sq_a, sq_b):
    """Euclidean distances between the rows of ``a`` and ``b``."""
    d2 = sq_a[:, None] + sq_b[None, :] - 2.0 * (a @ b.T)
    np.maximum(d2, 0.0, out=d2)  # rounding can make tiny squares negative
    return np.sqrt(d2, out=d2)


def median_bandwidth(p):
    """Median of the pairwise distances between rows of ``p`` (on a subsample
    of 2000 rows drawn with a fixed seed when there are more)."""
    n = p.shape[0]
    if n > _MEDIAN_SUBSAMPLE:
        rows = np.random.default_rng(0).choice(n, _MEDIAN_SUBSAMPLE, replace=False)
        p = p[rows]
    sq = np.einsum("ij,ij->i", p, p)
    d = _pairwise_distances(p, p, sq, sq)
    d = d[np.triu_indices(p.shape[0], k=1)]
    return float(np.median(d)) if d.size else 0.0


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


def _quadratic_sums(p, r, w, nu):
    """``sum_{i != j} w_i w_j h_ij`` and ``sum_{i != j} w_i w_j`` without an
    n x n matrix: tiles of the upper triangle, each counted twice off the
    diagonal."""
    # the products are small (256 x K times K x 256): a threaded BLAS spends
    # more time waking its threads than multiplying (measured 20x slower)
    with threadpool_limits(limits=1, user_api="blas"):
        return _quadratic_sums_serial(p, r, w, nu)


def _quadratic_sums_serial(p, r, w, nu):
    n = p.shape[0]
    p = p / nu  # distances of the scaled rows are already divided by nu
    sq = np.einsum("ij,ij->i", p, p)
    ones = np.ones((n, 1))
    # d^2_ij = |p_i|^2 + |p_j|^2 - 2 p_i.p_j as one product of augmented rows
    left = np.hstack([-2.0 * p, sq[:, None], ones])
    right = np.hstack([p, ones, sq[:, None]])
    wr = r * w[:, None]
    total = 0.0
    for i0 in range(0, n, _TILE):
        i1 = min(i0 + _TILE, n)
        for j0 in range(i0, n, _TILE):
            j1 = min(j0 + _TILE, n)
            kern = left[i0:i1] @ right[j0:j1].T
            np.maximum(kern, 0.0, out=kern)  # rounding can make d^2 negative
            np.sqrt(kern, out=kern)
            np.negative(kern, out=kern)
            np.exp(kern, out=kern)
            kern *= wr[i0:i1] @ wr[j0:j1].T
            block = kern.sum()
            total += block if i0 == j0 else 2.0 * block
    # remove the diagonal i == j, where the kernel is 1
    total -= np.einsum("ij,ij->", wr, wr)
    pairs = w.sum() ** 2 - np.dot(w, w)
    return total, pairs


def _block_estimate(p, r, w, nu, block_size):
    """Unbiased estimates on consecutive blocks, averaged with weights equal to
    their (weighted) number of pairs; a trailing block of one row is left out
    (it has no pair)."""
    n = p.shape[0]
    total, pairs = 0.0, 0.0
    for start in range(0, n, block_size):
        stop = min(start + block_size, n)
        if stop - start < 2:
            break
        s, c = _quadratic_sums(p[start:stop], r[start:stop], w[start:stop], nu)
        total += s
        pairs += c
    return total / pairs


def kernel_calibration_error(
    y_true,
    y_prob,
    *,
    bandwidth="median",
    estimator="unbiased",
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

    - ``"unbiased"``: the mean of ``h_ij`` over all pairs ``i != j``
      (O(n^2) time, computed in blocks: O(n) memory);
    - ``"linear"``: the mean of ``h_{2i, 2i+1}`` over consecutive pairs
      (O(n) time, larger variance);
    - ``"block"``: the unbiased estimate on consecutive blocks of
      ``block_size`` rows, averaged (O(n * block_size) time).

    All three are unbiased, so they can be negative; a calibrated model scores
    about 0.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities, see
        :func:`~sklcalib.metrics.expected_calibration_error`. A 1-D binary
        ``y_prob`` counts as the two columns ``[1 - p, p]``.
    bandwidth : float or "median", default="median"
        The kernel bandwidth ``nu > 0``. ``"median"``: the median distance
        between the rows of ``y_prob`` (on 2000 rows drawn with a fixed seed
        when there are more), the usual heuristic.
    estimator : {"unbiased", "linear", "block"}, default="unbiased"
        Which estimator, see above.
    block_size : int, default=100
        Rows per block of the ``"block"`` estimator (>= 2). A trailing block
        of at least two rows is included, weighted by its number of pairs.
    labels : array-like of shape (n_classes,), default=None
        The label of every column of ``y_prob``.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights: the pair ``(i, j)`` weighs ``w_i w_j``.

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
    >>> import numpy as np
    >>> from sklcalib.metrics import kernel_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3), size=1000)
    >>> y = (rng.uniform(size=(1000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> abs(kernel_calibration_error(y, p)) < 1e-3  # drawn from p: calibrated
    True
    >>> p_sharp = p**4 / (p**4).sum(axis=1, keepdims=True)  # over-confident
    >>> kernel_calibration_error(y, p_sharp) > 1e-2
    True
    """
    bandwidth = check_bandwidth(bandwidth)
    check_option(estimator, "estimator", ESTIMATORS)
    if (
        isinstance(block_size, bool)
        or not isinstance(block_size, numbers.Integral)
        or block_size < 2
    ):
        raise ValueError(f"block_size must be an integer >= 2, got {block_size!r}.")
    y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
    check_prob_values(p)
    p = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    p = p.astype(np.float64)
    n = p.shape[0]
    if n < 2:
        raise ValueError("y_prob has one row: the SKCE needs at least two samples.")
    r = -p
    r[np.arange(n), y_idx] += 1.0
    w = np.ones(n) if w is None else w
    nu = median_bandwidth(p) if bandwidth == "median" else bandwidth
    if nu <= 0:  # every row identical: any bandwidth gives the same kernel
        nu = 1.0
    if estimator == "unbiased":
        total, pairs = _quadratic_sums(p, r, w, nu)
        return float(total / pairs)
    if estimator == "block":
        return float(_block_estimate(p, r, w, nu, int(block_size)))
    m = n // 2
    a, b = slice(0, 2 * m, 2), slice(1, 2 * m, 2)
    kern = np.exp(-np.linalg.norm(p[a] - p[b], axis=1) / nu)
    ww = w[a] * w[b]
    return float(np.dot(ww, kern * np.einsum("ij,ij->i", r[a], r[b])) / ww.sum())
