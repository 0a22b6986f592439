"""The score generators of sklcalib.datasets: the labels follow the stated
truth (Monte Carlo against the truth itself), the draws are reproducible, and
bad arguments raise a ValueError naming them."""

import numpy as np
import pytest
from scipy.special import softmax

from sklcalib.calibration import TemperatureScaler
from sklcalib.datasets import make_binary_scores, make_logits


def test_binary_scores_shapes_range_and_seed():
    p, y = make_binary_scores(500, low=0.2, high=0.7, random_state=3)
    assert p.shape == y.shape == (500,)
    assert p.dtype == np.float64 and y.dtype == np.int64
    assert p.min() >= 0.2 and p.max() < 0.7
    assert set(np.unique(y)) <= {0, 1}
    p2, y2 = make_binary_scores(500, low=0.2, high=0.7, random_state=3)
    np.testing.assert_array_equal(p, p2)
    np.testing.assert_array_equal(y, y2)
    p3, _ = make_binary_scores(500, low=0.2, high=0.7, random_state=4)
    assert not np.array_equal(p, p3)


@pytest.mark.parametrize(
    "truth", [None, np.square, lambda p: p**2 / (p**2 + (1 - p) ** 2)]
)
def test_binary_labels_follow_the_truth(truth):
    # within each decile of the scores, the frequency of 1 matches the mean of
    # truth(p) to within 4 binomial standard errors
    n = 200_000
    p, y = make_binary_scores(n, truth=truth, random_state=0)
    q = p if truth is None else truth(p)
    bins = np.minimum((p * 10).astype(int), 9)
    for b in range(10):
        rows = bins == b
        expected = q[rows].mean()
        se = np.sqrt(expected * (1 - expected) / rows.sum())
        assert abs(y[rows].mean() - expected) < 4 * se


def test_logits_labels_follow_softmax_of_the_calibrated_logits():
    # the frequency of every class matches the mean of softmax(logits / T),
    # and so does the accuracy of the argmax the mean top probability
    n, k, temperature = 100_000, 4, 3.0
    logits, y = make_logits(n, k, temperature=temperature, random_state=1)
    assert logits.shape == (n, k) and y.shape == (n,) and y.dtype == np.int64
    proba = softmax(logits / temperature, axis=1)
    onehot = np.eye(k)[y]
    diff = onehot - proba
    se = diff.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(diff.mean(axis=0)) < 4 * se)
    hit = (np.argmax(logits, axis=1) == y) - proba.max(axis=1)
    assert abs(hit.mean()) < 4 * hit.std() / np.sqrt(n)


def test_temperature_scaling_finds_the_temperature_again():
    logits, y = make_logits(20_000, 3, temperature=2.5, random_state=2)
    fitted = TemperatureScaler().fit(logits, y).temperature_
    assert abs(fitted - 2.5) < 0.15


def test_a_generator_is_used_and_advanced():
    rng = np.random.default_rng(0)
    p, _ = make_binary_scores(10, random_state=rng)
    np.testing.assert_array_equal(p, np.random.default_rng(0).uniform(size=10))
    p_next, _ = make_binary_scores(10, random_state=rng)
    assert not np.array_equal(p, p_next)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_samples": 2.5}, "n_samples"),
        ({"low": -0.1}, "low"),
        ({"low": 0.5, "high": 0.5}, "high"),
        ({"high": 1.5}, "high"),
        ({"truth": 0.5}, "truth"),
        ({"truth": lambda p: 2 * p}, "truth"),
        ({"truth": lambda p: p[:3]}, "truth"),
        ({"random_state": -1}, "random_state"),
        ({"random_state": "0"}, "random_state"),
    ],
)
def test_bad_binary_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_binary_scores(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_classes": 1}, "n_classes"),
        ({"temperature": 0}, "temperature"),
        ({"temperature": float("inf")}, "temperature"),
        ({"random_state": 1.5}, "random_state"),
    ],
)
def test_bad_logit_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_logits(**kwargs)
