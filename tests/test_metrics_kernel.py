"""The kernel calibration error's fast paths against the n x n definition:
the exact sorted-sum U-statistic of binary scores, the stacked block
estimator, weights at extreme scales, the order-free median bandwidth and
float32 input without a float64 copy."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklcalib.metrics import kernel_calibration_error
from sklcalib.metrics._kernel import AUTO_QUADRATIC_MAX_ROWS, median_bandwidth


def _definition(y, p, nu, w=None):
    """Weighted mean of h_ij over the pairs i != j, from the n x n matrix;
    the diagonal is masked out, not subtracted (no cancellation)."""
    p = np.asarray(p, dtype=np.float64)
    if p.ndim == 1:
        p = np.column_stack([1 - p, p])
    n = p.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    r = np.eye(p.shape[1])[y] - p
    d = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(axis=2))
    off = ~np.eye(n, dtype=bool)
    ww = np.outer(w, w)
    h = np.exp(-d / nu) * (r @ r.T) * ww
    return h[off].sum() / ww[off].sum()


def _binary(rng, n, ties=False):
    s = rng.uniform(size=n)
    if ties:
        s = np.round(s, 1)
    y = (rng.uniform(size=n) < s**1.5).astype(int)
    return y, s


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 120),
    nu=st.sampled_from([1e-4, 0.01, 0.3, 5.0]),
    weighted=st.booleans(),
    two_columns=st.booleans(),
    ties=st.booleans(),
)
def test_binary_sorted_sums_are_the_exact_u_statistic(
    seed, n, nu, weighted, two_columns, ties
):
    # nu = 1e-4 spreads the scores over many segments of the running sums
    rng = np.random.default_rng(seed)
    y, s = _binary(rng, n, ties)
    w = rng.exponential(size=n) if weighted else None
    p = np.column_stack([1 - s, s]) if two_columns else s
    expected = _definition(y, s, nu, w)
    got = kernel_calibration_error(y, p, bandwidth=nu, sample_weight=w, labels=[0, 1])
    # the tolerance of the docs: rounding of the running sums
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-13)


def test_binary_float32_input_within_float32_round_off():
    rng = np.random.default_rng(1)
    y, s = _binary(rng, 500)
    p = np.column_stack([1 - s, s]).astype(np.float32)
    expected = _definition(y, p.astype(np.float64), 0.3)
    got = kernel_calibration_error(y, p, bandwidth=0.3)
    assert got == pytest.approx(expected, rel=1e-6)


def test_binary_default_is_exact_at_a_size_the_quadratic_path_still_handles():
    rng = np.random.default_rng(2)
    y, s = _binary(rng, 3000)
    fast = kernel_calibration_error(y, s, labels=[0, 1])
    nu = median_bandwidth(s)
    tiles = kernel_calibration_error(
        y,
        np.column_stack([1 - s, s]),
        bandwidth=nu,
        estimator="block",
        block_size=3000,
    )  # one block of every row: the tiled quadratic sums
    assert fast == pytest.approx(tiles, rel=1e-9)


def test_auto_is_the_block_estimator_above_the_size():
    rng = np.random.default_rng(3)
    n = AUTO_QUADRATIC_MAX_ROWS + 101
    p = rng.dirichlet(np.ones(3), size=n)
    y = rng.integers(0, 3, n)
    assert kernel_calibration_error(y, p) == kernel_calibration_error(
        y, p, estimator="block"
    )
    small = slice(0, 500)
    assert kernel_calibration_error(y[small], p[small]) == kernel_calibration_error(
        y[small], p[small], estimator="unbiased"
    )


@pytest.mark.parametrize("estimator", ["unbiased", "block", "linear"])
def test_one_positive_weight_is_a_clear_error(estimator):
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3), size=50)
    y = rng.integers(0, 3, 50)
    w = np.zeros(50)
    w[7] = 1.0
    with pytest.raises(ValueError, match="sample_weight"):
        kernel_calibration_error(y, p, sample_weight=w, estimator=estimator)
    s = rng.uniform(size=50)
    with pytest.raises(ValueError, match="sample_weight"):
        kernel_calibration_error(
            y > 0, s, sample_weight=w, estimator=estimator, labels=[False, True]
        )


@pytest.mark.parametrize("scale", [1e-170, 1e170])
@pytest.mark.parametrize("columns", [2, 3])
def test_weights_at_extreme_scales_change_nothing(scale, columns):
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(columns), size=80)
    y = rng.integers(0, columns, 80)
    w = rng.uniform(0.5, 2.0, 80)
    for estimator in ("unbiased", "block", "linear"):
        plain = kernel_calibration_error(
            y, p, sample_weight=w, estimator=estimator, block_size=20
        )
        scaled = kernel_calibration_error(
            y, p, sample_weight=w * scale, estimator=estimator, block_size=20
        )
        assert np.isfinite(scaled)
        assert scaled == pytest.approx(plain, rel=1e-12)


@pytest.mark.parametrize("columns", [2, 3])
def test_one_dominant_weight_gives_the_definition(columns):
    # w.sum()**2 - w @ w and "all pairs minus the diagonal" cancel every digit
    rng = np.random.default_rng(6)
    n = 60
    p = rng.dirichlet(np.ones(columns), size=n)
    y = rng.integers(0, columns, n)
    w = np.full(n, 1e-9)
    w[3] = 1e9
    expected = _definition(y, p, 0.4, w)
    got = kernel_calibration_error(y, p, bandwidth=0.4, sample_weight=w)
    assert np.isfinite(got)
    assert got == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("columns", [2, 4])
@pytest.mark.parametrize("n", [500, 5000])
def test_median_bandwidth_does_not_depend_on_the_row_order(columns, n):
    rng = np.random.default_rng(7)
    p = np.tile(rng.dirichlet(np.ones(columns)), (n, 1))  # mostly identical rows
    odd = rng.choice(n, n // 10, replace=False)
    p[odd] = rng.dirichlet(np.ones(columns), size=odd.shape[0])
    shuffled = rng.permutation(n)
    nu = median_bandwidth(p)
    assert nu == median_bandwidth(p[::-1]) == median_bandwidth(p[shuffled])
    assert nu > 1e-3  # not the rounding noise of identical rows
    y = rng.integers(0, columns, n)
    a = kernel_calibration_error(y, p, estimator="unbiased")
    b = kernel_calibration_error(y[::-1], p[::-1], estimator="unbiased")
    assert a == pytest.approx(b, rel=1e-10)


def test_median_is_the_median_of_the_pairwise_distances():
    rng = np.random.default_rng(8)
    for n, k in ((2, 3), (3, 3), (57, 5), (40, 2)):
        p = rng.dirichlet(np.ones(k), size=n)
        d = np.sqrt(((p[:, None] - p[None]) ** 2).sum(-1))[np.triu_indices(n, 1)]
        assert median_bandwidth(p) == pytest.approx(np.median(d), rel=1e-12)


def test_float32_input_is_not_copied_to_float64():
    rng = np.random.default_rng(9)
    n, k = 20_000, 400  # above AUTO_QUADRATIC_MAX_ROWS: the block estimator
    p = rng.dirichlet(np.ones(k), size=n).astype(np.float32)
    p /= p.sum(axis=1, keepdims=True, dtype=np.float32)
    y = rng.integers(0, k, n)
    labels = np.arange(k)
    kernel_calibration_error(y[:50], p[:50], labels=labels)  # warm up untraced
    tracemalloc.start()
    value = kernel_calibration_error(y, p, labels=labels)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert np.isfinite(value)
    assert peak < 0.5 * n * k * 8  # half of what a float64 copy would take


@pytest.mark.parametrize("estimator", ["auto", "block", "linear", "unbiased"])
def test_zero_weight_rows_take_no_part_in_the_pairs(estimator):
    # sparse positive weights (every 250th row): no block of 100 consecutive
    # rows held two of them, so the default estimator at 20 000 rows (and the
    # report with it) raised; a zero-weight row is no row, for the pairs and
    # the median bandwidth alike: the estimate is that of the positive-weight
    # rows alone
    from sklcalib.metrics._kernel import median_bandwidth

    rng = np.random.default_rng(12)
    n = 20_000 if estimator != "unbiased" else 3000
    p = rng.dirichlet(np.ones(3), size=n)
    y = rng.integers(0, 3, n)
    w = np.zeros(n)
    w[::250] = rng.uniform(0.5, 2.0, size=w[::250].shape[0])
    keep = w > 0
    nu = median_bandwidth(p[keep])
    got = kernel_calibration_error(y, p, sample_weight=w, estimator=estimator)
    alone = kernel_calibration_error(
        y[keep],
        p[keep],
        sample_weight=w[keep],
        estimator=estimator,
        bandwidth=nu,
        labels=[0, 1, 2],
    )
    assert np.isfinite(got) and got == pytest.approx(alone, rel=1e-12, abs=1e-15)


def test_report_with_sparse_weights_above_the_block_size():
    from sklcalib.metrics import calibration_report

    rng = np.random.default_rng(13)
    p = rng.dirichlet(np.ones(3), size=20_000)
    y = rng.integers(0, 3, 20_000)
    w = np.zeros(20_000)
    w[::250] = 1.0
    report = calibration_report(y, p, sample_weight=w, random_state=0)
    assert np.isfinite(report["skce"])
