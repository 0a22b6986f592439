"""ECE-sweep's O(n log n) search against the plain sweep that checks every
number of groups afresh (the implementation it replaced): the same groups,
hence the same bits, on random, worst-case and weighted data."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklcalib.metrics import ece_sweep
from sklcalib.metrics._sweep import _decreases, _group_sums, prefix_sums, sweep_groups


def _plain_sweep_groups(conf, correct, weights):
    """The previous implementation: every b from 2 checked in O(b), with the
    same notion of a decrease (beyond the prefix sums' round-off)."""
    n = conf.shape[0]
    cum_w, cum_conf, cum_corr = prefix_sums(conf, correct, weights)

    def groups(b):
        return (
            _group_sums(cum_w, b, n),
            _group_sums(cum_conf, b, n),
            _group_sums(cum_corr, b, n),
        )

    best = groups(1)
    for b in range(2, n + 1):
        counts, sum_conf, sum_corr = groups(b)
        filled = counts > 0
        accuracy = sum_corr[filled] / counts[filled]
        c = counts[filled]
        if np.any(_decreases(accuracy[:-1], accuracy[1:], c[:-1], c[1:], cum_w[-1])):
            break
        best = (counts, sum_conf, sum_corr)
    return best


def _assert_same(conf, correct, w=None):
    got = sweep_groups(conf, correct.astype(float), w)
    expected = _plain_sweep_groups(conf, correct.astype(float), w)
    assert len(got[0]) == len(expected[0])
    for a, b in zip(got, expected, strict=True):
        assert a.tobytes() == b.tobytes()


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 400),
    kind=st.sampled_from(["random", "calibrated", "sorted", "almost", "ties"]),
    weights=st.sampled_from([None, "float", "zeros", "tiny"]),
)
def test_same_groups_as_the_plain_sweep(seed, n, kind, weights):
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.3, 1.0, n)
    if kind == "ties":
        conf = np.round(conf, 1)
    if kind == "random":
        correct = rng.uniform(size=n) < 0.7
    elif kind == "calibrated":
        correct = rng.uniform(size=n) < conf
    else:  # correctness non-decreasing in the confidence: the sweep's worst case
        correct = conf >= np.quantile(conf, rng.uniform())
        if kind == "almost" and n > 2:  # one inversion somewhere
            order = np.argsort(conf, kind="stable")
            i = rng.integers(0, n - 1)
            a, b = order[i], order[i + 1]
            correct[a], correct[b] = True, False
    w = None
    if weights == "float":
        w = rng.exponential(size=n)
    elif weights == "zeros":
        w = rng.exponential(size=n) * (rng.uniform(size=n) < 0.6)
    elif weights == "tiny":  # groups whose weight rounds away next to a big one
        w = np.where(rng.uniform(size=n) < 0.5, 1e-20, 1.0)
    _assert_same(conf, correct, w)


@pytest.mark.parametrize("scale", [1e-6, 1 / 120, 1 / 3, 7.3, 1e6])
def test_a_constant_rescaling_of_the_weights_keeps_the_groups(scale):
    # the draw hypothesis found (seed 3000): with weights * 1/120 two groups
    # of equal accuracy read as a decrease by round-off, the sweep stopped
    # early and the ECE fell from 0.117 to 0.048
    rng = np.random.default_rng(3000)
    p = rng.dirichlet(np.ones(3), size=120)
    y = (rng.uniform(size=(120, 1)) > p.cumsum(axis=1)).sum(axis=1).clip(0, 2)
    rng = np.random.default_rng(3000)
    w = rng.integers(0, 4, size=120).astype(float)
    w[0] = 1.0
    conf, correct = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
    base = sweep_groups(conf, correct, w)
    scaled = sweep_groups(conf, correct, w * scale)
    assert len(scaled[0]) == len(base[0])
    np.testing.assert_allclose(scaled[0], base[0] * scale, rtol=1e-12)
    assert ece_sweep(y, p, sample_weight=w * scale) == pytest.approx(
        ece_sweep(y, p, sample_weight=w), rel=1e-12
    )


@pytest.mark.parametrize("n", [3000, 4099])
def test_worst_cases_match_the_plain_sweep(n):
    rng = np.random.default_rng(n)
    conf = rng.uniform(0.5, 1.0, n)
    _assert_same(conf, np.ones(n, bool))  # perfect predictions: b runs to n
    _assert_same(conf, conf > 0.8)  # a step: also to n
    correct = conf > 0.8
    correct[np.argmin(np.abs(conf - 0.9))] = False  # one late inversion
    _assert_same(conf, correct)


def test_perfect_predictions_are_fast():
    # the plain sweep took 54 s at 8e4 rows; O(n log n) takes well under one
    # (loose bound: a timed unit test only catches a return to quadratic)
    rng = np.random.default_rng(0)
    n = 200_000
    p = rng.uniform(0.5, 1.0, n)
    start = time.perf_counter()
    value = ece_sweep(np.ones(n, int), p, labels=[0, 1])
    assert time.perf_counter() - start < 20
    # n groups of one row each: mean |1 - p|
    assert value == pytest.approx(np.mean(1 - p), rel=1e-12)
