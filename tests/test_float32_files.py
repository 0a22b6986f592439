"""Probabilities computed in float32 are accepted whatever their stored dtype.

A float32 softmax (torch's default) has row sums off by a few float32 units in
the last place; saved as float32, written to CSV as text or cast to float64 its
rows must still count as probabilities, in the library and in the command line.
Beyond float32 round-off the clear error stays.
"""

import numpy as np
import pytest

from sklcalib.cli import main
from sklcalib.metrics import calibration_report, expected_calibration_error

torch = pytest.importorskip("torch")


def _float32_softmax(n=2000, k=10, seed=0):
    gen = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(n, k, generator=gen, dtype=torch.float32)
    p = torch.softmax(logits, dim=1).numpy()
    y = np.array(
        [
            np.random.default_rng(seed + i).choice(
                k, p=p[i] / p[i].sum(dtype=np.float64)
            )
            for i in range(n)
        ]
    )
    return y, p


def test_a_float32_softmax_has_rows_off_beyond_float64_sqrt_eps():
    # the premise: without the float32 tolerance these rows are refused
    _, p = _float32_softmax()
    off = np.abs(p.astype(np.float64).sum(axis=1) - 1)
    assert off.max() > np.sqrt(np.finfo(np.float64).eps)


@pytest.mark.parametrize("cast", [np.float32, np.float64])
def test_library_accepts_float32_softmax(cast):
    y, p = _float32_softmax()
    value = expected_calibration_error(y, p.astype(cast))
    exact = expected_calibration_error(
        y, p.astype(np.float64) / p.sum(axis=1, dtype=np.float64)[:, None]
    )
    assert value == pytest.approx(exact, abs=1e-5)
    assert np.isfinite(
        calibration_report(y, p.astype(cast), confidence_level=None)["nll"]
    )


def test_beyond_float32_roundoff_the_error_stays():
    y, p = _float32_softmax()
    q = p.astype(np.float64)
    q[7] *= 1 + 1e-4
    with pytest.raises(ValueError, match=r"y_prob rows must sum to 1.*row 7"):
        expected_calibration_error(y, q)


def _run(capsys, *argv):
    status = main(["report", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_accepts_float32_npz(capsys, tmp_path):
    y, p = _float32_softmax()
    path = tmp_path / "probs.npz"
    np.savez(path, y_true=y, y_prob=p)
    status, out, err = _run(capsys, path, "--no-intervals")
    assert status == 0, err
    assert "ECE" in out


def test_cli_accepts_float32_softmax_written_as_csv_text(capsys, tmp_path):
    y, p = _float32_softmax()
    path = tmp_path / "probs.csv"
    header = "y_true," + ",".join(f"c{k}" for k in range(p.shape[1]))
    labels = np.array([f"c{k}" for k in y])
    # repr of each float32 value as text (what writing a float32 frame does)
    rows = [
        ",".join([labels[i], *(repr(float(v)) for v in p[i])]) for i in range(len(y))
    ]
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    status, _out, err = _run(capsys, path, "--no-intervals")
    assert status == 0, err
