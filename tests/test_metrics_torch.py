"""Torch tensors in every metric: the values of the numpy arrays, read without
a copy from CPU tensors of a numpy dtype."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklcalib._utils._validation import as_numpy, check_prob_array  # noqa: E402
from sklcalib.metrics import (  # noqa: E402
    CalibrationAccumulator,
    adaptive_calibration_error,
    bin_statistics,
    calibration_report,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    smooth_calibration_error,
)

METRICS = (
    expected_calibration_error,
    adaptive_calibration_error,
    classwise_calibration_error,
    maximum_calibration_error,
    smooth_calibration_error,
)


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(4, 0.5), size=300).astype(np.float32)
    p /= p.sum(axis=1, keepdims=True)
    return rng.integers(0, 4, 300), p, rng.random(300)


def test_cpu_tensors_give_the_numpy_values(problem):
    y, p, w = problem
    ty, tp, tw = torch.from_numpy(y), torch.from_numpy(p), torch.from_numpy(w)
    for metric in METRICS:
        assert metric(ty, tp, sample_weight=tw) == metric(y, p, sample_weight=w)
    assert calibration_report(ty, tp, random_state=0) == calibration_report(
        y, p, random_state=0
    )
    acc = CalibrationAccumulator(labels=torch.arange(4)).update(ty, tp, tw)
    assert (
        acc.compute()
        == CalibrationAccumulator(labels=range(4)).update(y, p, w).compute()
    )
    conf = tp.max(dim=1).values
    ours = bin_statistics(conf, tp.argmax(dim=1) == ty, n_bins=5)
    ref = bin_statistics(conf.numpy(), (p.argmax(1) == y), n_bins=5)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(a, b)


def test_cpu_tensors_are_not_copied(problem):
    _, p, _ = problem
    tp = torch.from_numpy(p.copy())
    assert np.shares_memory(check_prob_array(tp), tp.numpy())
    # a tensor that requires grad is detached, still without a copy
    leaf = torch.tensor(p, requires_grad=True)
    assert np.shares_memory(as_numpy(leaf), leaf.detach().numpy())
    y = torch.zeros(300, dtype=torch.long)
    assert expected_calibration_error(y, leaf, labels=range(4)) == pytest.approx(
        expected_calibration_error(np.zeros(300), p, labels=range(4))
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_dtypes(dtype):
    # dyadic probabilities: exact in every dtype, rows sum to 1 exactly
    rng = np.random.default_rng(1)
    p = rng.permuted(np.tile([0.5, 0.25, 0.125, 0.125], (200, 1)), axis=1)
    y = rng.integers(0, 4, 200)
    got = expected_calibration_error(torch.from_numpy(y), torch.tensor(p, dtype=dtype))
    assert got == pytest.approx(expected_calibration_error(y, p), rel=1e-12)


def test_bad_tensor_values_name_the_argument(problem):
    y, p, _ = problem
    tp = torch.from_numpy(p.copy())
    tp[7, 1] = float("nan")
    with pytest.raises(ValueError, match="y_prob contains NaN"):
        expected_calibration_error(torch.from_numpy(y), tp)


@pytest.mark.parametrize(
    "procedure",
    ["bootstrap_interval", "compare_calibration", "calibration_test",
     "calibration_error_interval"],
)  # fmt: skip
def test_tensors_that_require_grad_in_the_resampling_procedures(problem, procedure):
    # np.asarray of such a tensor raises torch's RuntimeError; every
    # procedure must read it as the metrics do (detached)
    import sklcalib.metrics as metrics

    y, p, w = problem
    logits = torch.from_numpy(np.log(p)).requires_grad_(True)
    tp = torch.softmax(logits, dim=1)  # requires grad, as a model's output
    tw = torch.from_numpy(w).requires_grad_(True)
    p_np = tp.detach().numpy()
    func = getattr(metrics, procedure)
    if procedure == "compare_calibration":
        args, plain = (y, tp, tp), (y, p_np, p_np)
    elif procedure == "bootstrap_interval":
        args, plain = ("ece", y, tp), ("ece", y, p_np)
    else:
        args, plain = (y, tp), (y, p_np)
    kwargs = {"random_state": 0}
    if procedure != "calibration_error_interval":
        kwargs["n_resamples"] = 20
    got = func(*args, sample_weight=tw, **kwargs)
    expected = func(*plain, sample_weight=w, **kwargs)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
