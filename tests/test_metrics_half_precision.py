"""Half-precision torch softmax outputs are probabilities: float16 is held to
float16's row-sum tolerance (as a numpy float16 array), bfloat16 (which numpy
lacks) to bfloat16's, on the numpy path and in the fused kernel."""

import numpy as np
import pytest

from sklcalib._utils._validation import Bfloat16Values, row_sum_tolerance
from sklcalib.metrics import (
    calibration_report,
    expected_calibration_error,
    kernel_calibration_error,
)

torch = pytest.importorskip("torch")


def _softmax(n, k, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(n, k, generator=gen) * 3
    y = torch.multinomial(torch.softmax(z, dim=1), 1, generator=gen)[:, 0]
    return y, torch.softmax(z.to(dtype), dim=1)


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("k", [2, 10, 100])
def test_half_precision_softmax_is_accepted(dtype_name, k):
    dtype = getattr(torch, dtype_name)
    y, p = _softmax(3000, k, dtype)
    sums = p.float().sum(dim=1)
    assert float((sums - 1).abs().max()) > 1e-4  # really off by half round-off
    expected = expected_calibration_error(
        y.numpy(), p.float().numpy().astype(float) / sums.numpy()[:, None].astype(float)
    )
    got = expected_calibration_error(y, p)
    assert got == pytest.approx(expected, abs=2e-3)
    report = calibration_report(y, p)
    assert np.isfinite(report["nll"]) and np.isfinite(report["skce"])
    assert np.isfinite(kernel_calibration_error(y, p))


def test_bfloat16_in_the_fused_kernel():
    pytest.importorskip("numba")
    y, p = _softmax(1 << 17, 10, torch.bfloat16)  # 2**20 values: fused path
    got = expected_calibration_error(y, p)
    small = expected_calibration_error(y[:1000], p[:1000])  # numpy path
    assert np.isfinite(got) and np.isfinite(small)


def test_bfloat16_rows_beyond_their_tolerance_are_refused():
    y, p = _softmax(100, 4, torch.bfloat16)
    p[7] = torch.tensor([0.5, 0.5, 0.5, 0.0], dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"bfloat16.*row 7"):
        expected_calibration_error(y, p, labels=[0, 1, 2, 3])


def test_tolerances():
    assert row_sum_tolerance("bfloat16", 10) == pytest.approx(2.0**-3.5)
    assert row_sum_tolerance(np.float16, 10) == pytest.approx(2.0**-5)
    values = np.ones((2, 2), dtype=np.float32).view(Bfloat16Values)
    assert type(values.sum(axis=1)) is np.ndarray  # ufunc results are plain
    assert type(values[:1]) is Bfloat16Values  # views keep the mark
