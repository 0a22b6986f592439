"""Intervals of the population calibration error, the paired comparison, and
the debiased error's weights, on data with a known answer."""

import numpy as np
import pytest

from sklcalib.metrics import debiased_calibration_error


def _draw_labels(rng, p):
    u = rng.uniform(size=(p.shape[0], 1))
    return np.minimum((u > p.cumsum(axis=1)).sum(axis=1), p.shape[1] - 1)


@pytest.mark.parametrize("mode", ["top_label", "classwise"])
def test_debiased_weights_are_relative(mode):
    # normalised weights (all <= 1) used to give exactly 0: a bin's count was
    # taken as its summed weight
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=600)
    y = _draw_labels(rng, p**3 / (p**3).sum(axis=1, keepdims=True))
    plain = debiased_calibration_error(y, p, mode=mode)
    assert plain > 0.05
    for w in (np.full(600, 1 / 600), np.full(600, 0.5), np.full(600, 7.0)):
        got = debiased_calibration_error(y, p, mode=mode, sample_weight=w)
        assert got == pytest.approx(plain, rel=1e-12)
    w = rng.uniform(0.1, 1.0, size=600)
    a = debiased_calibration_error(y, p, mode=mode, sample_weight=w)
    b = debiased_calibration_error(y, p, mode=mode, sample_weight=w / w.sum())
    assert a == pytest.approx(b, rel=1e-12) and a > 0.05
