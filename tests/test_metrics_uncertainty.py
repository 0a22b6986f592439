"""Debiased ECE, ECE-sweep and SKCE against references and known answers."""

import calibration as kumar  # uncertainty-calibration, the authors' package
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

from sklcalib.metrics import (
    CALIBRATION_SCORERS,
    debiased_calibration_error,
    ece_sweep,
    get_scorer,
    kernel_calibration_error,
)


def _softmax_data(rng, n, k, scale=2.0, dtype=np.float64):
    z = rng.normal(size=(n, k)) * scale
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p.astype(dtype)


def _draw_labels(rng, p):
    """Labels drawn from the rows of ``p``: a calibrated model."""
    u = rng.uniform(size=(p.shape[0], 1))
    return np.minimum((u > p.cumsum(axis=1)).sum(axis=1), p.shape[1] - 1)


@pytest.mark.parametrize("n, k", [(500, 5), (37, 3), (1000, 2), (12, 4)])
@pytest.mark.parametrize("n_bins", [15, 4, 40])
def test_debiased_equals_authors_package(n, k, n_bins):
    rng = np.random.default_rng(n * k + n_bins)
    p = _softmax_data(rng, n, k)
    y = rng.integers(0, k, n)
    labels = np.arange(k)
    for mode, theirs in [("top_label", "top-label"), ("classwise", "marginal")]:
        expected = kumar.lower_bound_scaling_ce(
            p, y, p=2, debias=True, num_bins=n_bins, mode=theirs
        )
        got = debiased_calibration_error(y, p, n_bins=n_bins, mode=mode, labels=labels)
        assert got == pytest.approx(expected, abs=1e-9)


def test_debiased_float32_matches_authors_midpoints():
    # the bin edges are midpoints in float32, as theirs; their bin means are
    # float32 sums, hence the looser tolerance
    rng = np.random.default_rng(3)
    p = _softmax_data(rng, 800, 5, dtype=np.float32)
    y = rng.integers(0, 5, 800)
    expected = kumar.lower_bound_scaling_ce(
        p, y, p=2, debias=True, num_bins=15, mode="top-label"
    )
    assert debiased_calibration_error(y, p) == pytest.approx(expected, abs=1e-6)


def test_debiased_is_unbiased_where_the_plug_in_is_not():
    # labels drawn from the model: the squared debiased error averages ~0 while
    # the plug-in squared error is pushed up by the label noise
    rng = np.random.default_rng(0)
    squares, plug_in = [], []
    for _ in range(60):
        p = rng.uniform(size=300)
        y = rng.uniform(size=300) < p
        squares.append(debiased_calibration_error(y, p, n_bins=10) ** 2)
        plug_in.append(
            kumar.lower_bound_scaling_ce(
                np.column_stack([1 - p, p]),
                y.astype(int),
                p=2,
                debias=False,
                num_bins=10,
                mode="top-label",
            )
            ** 2
        )
    # clipping at 0 moves the debiased mean up a little; the plug-in moves a lot
    assert np.mean(squares) < 0.3 * np.mean(plug_in)


def test_debiased_detects_miscalibration():
    rng = np.random.default_rng(1)
    p = rng.uniform(0.5, 1.0, size=5000)
    y = rng.uniform(size=5000) < p**2
    assert debiased_calibration_error(y, p) == pytest.approx(
        np.sqrt(np.mean((p - p**2) ** 2)), abs=0.02
    )


def _sweep_reference(y, p, norm):
    """Roelofs et al.'s sweep written plainly with numpy.array_split."""
    conf = p.max(axis=1)
    corr = (p.argmax(axis=1) == y).astype(float)
    order = np.argsort(conf, kind="stable")
    conf, corr = conf[order], corr[order]
    best = 1
    for b in range(2, len(conf) + 1):
        acc = [g.mean() for g in np.array_split(corr, b)]
        if np.any(np.diff(acc) < 0):
            break
        best = b
    gaps = np.array(
        [
            abs(c.mean() - a.mean())
            for c, a in zip(
                np.array_split(conf, best), np.array_split(corr, best), strict=True
            )
        ]
    )
    frac = np.array([len(c) for c in np.array_split(conf, best)]) / len(conf)
    return frac @ gaps if norm == "l1" else np.sqrt(frac @ gaps**2)


@pytest.mark.parametrize("n", [5, 60, 2000])
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_ece_sweep_matches_plain_reference(n, norm):
    rng = np.random.default_rng(n)
    p = _softmax_data(rng, n, 4)
    y = _draw_labels(rng, p)
    expected = _sweep_reference(y, p, norm)
    got = ece_sweep(y, p, norm=norm, labels=np.arange(4))
    assert got == pytest.approx(expected, abs=1e-12)


def test_ece_sweep_weights_of_one_change_nothing():
    rng = np.random.default_rng(2)
    p = _softmax_data(rng, 300, 3)
    y = _draw_labels(rng, p)
    assert ece_sweep(y, p, sample_weight=np.ones(300), labels=[0, 1, 2]) == (
        pytest.approx(ece_sweep(y, p, labels=[0, 1, 2]), abs=1e-14)
    )


def _skce_pairs(y, p, nu, w):
    r = np.eye(p.shape[1])[y] - p
    d = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(axis=2))
    h = np.exp(-d / nu) * (r @ r.T) * np.outer(w, w)
    return h, np.outer(w, w)


def _unbiased(h, ww):
    return (h.sum() - np.trace(h)) / (ww.sum() - np.trace(ww))


def test_skce_estimators_match_the_n_by_n_definition():
    rng = np.random.default_rng(4)
    n, k = 301, 4  # odd n: the linear estimator drops the last row
    p = _softmax_data(rng, n, k)
    y = rng.integers(0, k, n)
    w = rng.uniform(0.5, 2.0, size=n)
    d = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(axis=2))
    median = np.median(d[np.triu_indices(n, 1)])
    h, ww = _skce_pairs(y, p, median, np.ones(n))
    assert kernel_calibration_error(y, p) == pytest.approx(_unbiased(h, ww), rel=1e-8)
    h, ww = _skce_pairs(y, p, 0.3, w)
    got = kernel_calibration_error(y, p, bandwidth=0.3, sample_weight=w)
    assert got == pytest.approx(_unbiased(h, ww), rel=1e-8)
    pairs = np.arange(0, n - 1, 2)
    linear = h[pairs, pairs + 1].sum() / ww[pairs, pairs + 1].sum()
    got = kernel_calibration_error(
        y, p, bandwidth=0.3, sample_weight=w, estimator="linear"
    )
    assert got == pytest.approx(linear, rel=1e-10)
    num = den = 0.0
    for s in range(0, n, 50):  # the last block has one row: no pair
        hb, wb = h[s : s + 50, s : s + 50], ww[s : s + 50, s : s + 50]
        num += hb.sum() - np.trace(hb)
        den += wb.sum() - np.trace(wb)
    got = kernel_calibration_error(
        y, p, bandwidth=0.3, sample_weight=w, estimator="block", block_size=50
    )
    assert got == pytest.approx(num / den, rel=1e-8)


def test_skce_averages_zero_on_calibrated_data_and_not_otherwise():
    rng = np.random.default_rng(5)
    calibrated, sharp = [], []
    for _ in range(40):
        p = rng.dirichlet(np.ones(3), size=200)
        y = _draw_labels(rng, p)
        calibrated.append(kernel_calibration_error(y, p, bandwidth=0.5))
        q = p**3 / (p**3).sum(axis=1, keepdims=True)
        sharp.append(kernel_calibration_error(y, q, bandwidth=0.5))
    calibrated, sharp = np.array(calibrated), np.array(sharp)
    se = calibrated.std(ddof=1) / np.sqrt(calibrated.size)
    assert abs(calibrated.mean()) < 3.5 * se
    assert sharp.mean() > 10 * se


def test_skce_binary_1d_is_the_two_column_case():
    rng = np.random.default_rng(6)
    p = rng.uniform(size=100)
    y = rng.uniform(size=100) < p
    both = np.column_stack([1 - p, p])
    assert kernel_calibration_error(y, p) == pytest.approx(
        kernel_calibration_error(y, both), rel=1e-12
    )


@pytest.mark.parametrize(
    "name, func",
    [
        ("neg_debiased_ece", debiased_calibration_error),
        ("neg_ece_sweep", ece_sweep),
        ("neg_kernel_calibration_error", kernel_calibration_error),
    ],
)
def test_new_scorers(name, func):
    X, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=500).fit(X, y)
    assert name in CALIBRATION_SCORERS
    expected = -func(y, model.predict_proba(X))
    assert get_scorer(name)(model, X, y) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda y, p: debiased_calibration_error(y, p, mode="marginal"), "mode"),
        (lambda y, p: debiased_calibration_error(y, p, n_bins=0), "n_bins"),
        (lambda y, p: ece_sweep(y, p, norm="max"), "norm"),
        (lambda y, p: kernel_calibration_error(y, p, bandwidth=0.0), "bandwidth"),
        (lambda y, p: kernel_calibration_error(y, p, bandwidth=-1), "bandwidth"),
        (lambda y, p: kernel_calibration_error(y, p, bandwidth="mean"), "bandwidth"),
        (lambda y, p: kernel_calibration_error(y, p, estimator="x"), "estimator"),
        (lambda y, p: kernel_calibration_error(y, p, block_size=1), "block_size"),
        (lambda y, p: kernel_calibration_error(y, p[:1], labels=[0, 1]), "y_true"),
        (lambda y, p: debiased_calibration_error(y, p + 0.1), "y_prob"),
        (lambda y, p: ece_sweep(y, np.where(p > 0.7, np.nan, p)), "y_prob"),
    ],
)
def test_bad_input(call, match):
    p = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    y = np.array([0, 1, 1, 1])
    with pytest.raises(ValueError, match=match):
        call(y, p)
