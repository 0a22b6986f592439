"""``sklcalib report --calibrate auto`` and the calibrators' warnings, on files
whose labels are drawn from a known model."""

import json

from _report_files import draw_labels, write_csv
from _report_files import run_report as _run
from scipy.special import softmax

CLASSES = ["cat", "dog", "bird"]


def _draw(n, seed, scale):
    y, z = draw_labels(n, seed)
    return y, softmax(scale * z, axis=1)


def _write(path, y, proba):
    return write_csv(path, y, proba, CLASSES)


def _val_and_test(tmp_path, n_val, n_test, seed, scale):
    """A calibration file and a test file (seeds ``seed`` and ``seed + 1``)
    of scores ``scale`` times too confident."""
    val = _write(tmp_path / "val.csv", *_draw(n_val, seed, scale))
    return val, _write(tmp_path / "test.csv", *_draw(n_test, seed + 1, scale))


def test_auto_on_overconfident_scores_chooses_temperature(capsys, tmp_path):
    val, test = _val_and_test(tmp_path, 1500, 1500, 0, 2.5)
    status, out, err = _run(capsys, test, "--calibrate", "auto", "--fit-on", val)
    assert status == 0, err
    assert "auto chose temperature" in out
    table = out[out.index("candidate") :].splitlines()
    assert any(line.startswith("passthrough") for line in table)
    assert all(len(line) <= 100 for line in out.splitlines())
    status, out, _ = _run(
        capsys, test, "--calibrate", "auto", "--fit-on", val, "--json"
    )
    got = json.loads(out)["calibration"]
    assert got["chosen"] == "temperature"
    assert got["fitted"]["temperature_"] > 2
    assert "passthrough" in got["cv_results"]["candidate"]


def test_auto_on_calibrated_scores_keeps_them(capsys, tmp_path):
    val, test = _val_and_test(tmp_path, 1500, 500, 2, 1.0)
    status, out, err = _run(
        capsys, test, "--calibrate", "auto", "--fit-on", val, "--json"
    )
    assert status == 0, err
    got = json.loads(out)
    assert got["calibration"]["chosen"] == "passthrough"
    assert got["calibration"]["report"]["nll"] == got["report"]["nll"]


def test_a_flexible_calibrator_on_a_small_file_warns(capsys, tmp_path):
    val, test = _val_and_test(tmp_path, 90, 300, 4, 1.0)
    status, out, err = _run(capsys, test, "--calibrate", "isotonic", "--fit-on", val)
    assert status == 0, err
    assert "warning: IsotonicCalibrator has about 20 parameter(s) per class" in out
    # one parameter fitted on many rows of a calibrated model: no warning
    big = _write(tmp_path / "big.csv", *_draw(3000, 6, 1.0))
    status, out, _ = _run(
        capsys, test, "--calibrate", "temperature", "--fit-on", big, "--json"
    )
    assert json.loads(out)["calibration"]["warnings"] == []
