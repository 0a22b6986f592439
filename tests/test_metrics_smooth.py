"""Smooth ECE against relplot 1.0.3 (the reference implementation)."""

from importlib.metadata import version

import numpy as np
import pytest
import relplot

from sklcalib.metrics import smooth_calibration_error


def test_reference_version():
    assert version("relplot") == "1.0.3"


def top_label_pairs(y, p):
    """Independent top-label pairs, as relplot.multiclass_logits_to_confidences."""
    conf, correct = relplot.multiclass_logits_to_confidences(p, y, probs=True)
    return conf, correct


def cases():
    rng = np.random.default_rng(0)
    out = {}
    p = rng.dirichlet(np.ones(4), size=1500)
    out["random"] = (rng.integers(0, 4, 1500), p)
    p = rng.dirichlet(np.full(3, 0.5), size=2000)
    y = (rng.random(2000)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, 2)
    out["calibrated"] = (y, p)
    p1 = rng.random(800)
    out["binary"] = ((rng.random(800) < p1**2).astype(int), np.c_[1 - p1, p1])
    p = np.zeros((60, 3))
    p[:20, 0] = 1.0  # confidence exactly 1, right and wrong
    p[20:40] = [0.5, 0.25, 0.25]  # on an edge of most grids
    p[40:] = 1 / 3
    out["edges"] = (np.arange(60) % 3, p)
    p = rng.dirichlet(np.full(10, 0.05), size=400)  # very peaked, over-confident
    out["peaked"] = (rng.integers(0, 10, 400), p)
    out["tiny"] = (np.array([0, 1]), np.array([[0.9, 0.1], [0.6, 0.4]]))
    return out


@pytest.mark.parametrize("name", list(cases()))
def test_equals_relplot(name):
    y, p = cases()[name]
    conf, correct = top_label_pairs(y, p)
    ref, ref_sigma = relplot.smECE(conf, correct, return_width=True)
    ours, sigma = smooth_calibration_error(y, p, return_bandwidth=True)
    assert sigma == pytest.approx(ref_sigma, abs=1e-12)
    assert ours == pytest.approx(ref, abs=1e-6)


def test_binary_1d_and_float32():
    y, p = cases()["binary"]
    conf, correct = top_label_pairs(y, p)
    ref = relplot.smECE(conf, correct)
    assert smooth_calibration_error(y, p[:, 1]) == pytest.approx(ref, abs=1e-6)
    p32 = p.astype(np.float32)
    conf32, correct32 = top_label_pairs(y, p32)
    ref32 = relplot.smECE(conf32.astype(np.float64), correct32)
    assert smooth_calibration_error(y, p32) == pytest.approx(ref32, abs=1e-6)


def test_sample_weight():
    y, p = cases()["random"]
    unweighted = smooth_calibration_error(y, p)
    assert smooth_calibration_error(y, p, sample_weight=np.ones(len(y))) == (
        pytest.approx(unweighted, abs=1e-12)
    )
    w = np.random.default_rng(1).integers(1, 4, len(y)).astype(float)
    weighted = smooth_calibration_error(y, p, sample_weight=w)
    # weights are relative: scaling them changes nothing
    assert smooth_calibration_error(y, p, sample_weight=w / w.sum()) == (
        pytest.approx(weighted, abs=1e-12)
    )
    # integer weights act as repetitions (up to relplot's 1e-4 density floor,
    # which counts samples)
    rep = smooth_calibration_error(
        np.repeat(y, w.astype(int)), np.repeat(p, w.astype(int), 0)
    )
    assert weighted == pytest.approx(rep, abs=1e-6)
