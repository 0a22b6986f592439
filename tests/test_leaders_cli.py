"""``sklcalib report --calibrate`` with the benchmark leaders: each name runs on
a file of its kind, fits what the class fits on the same scores, and the
binary-only ones refuse a multiclass file."""

import json

import numpy as np
import pytest
from _report_files import run_report as _run
from _report_files import write_csv
from scipy.special import softmax

from sklcalib import calibration
from sklcalib.calibration import CALIBRATORS
from sklcalib.cli.report_command import available_calibrators

LEADERS = {
    "sms": "SMSCalibrator",
    "svs": "SVSCalibrator",
    "quadratic": "QuadraticScaler",
    "beta": "BetaScaler",
    "spline": "SplineCalibrator",
}


def _files(tmp_path, k, seed=0):
    """val and test files: labels from softmax(z), probabilities softmax(2.5 z)."""
    rng = np.random.default_rng(seed)
    classes = ["no", "yes"] if k == 2 else ["cat", "dog", "bird"]
    out = []
    for name, n in (("val", 1500), ("test", 2000)):
        z = 1.5 * rng.normal(size=(n, k))
        y = (softmax(z, axis=1).cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
        proba = softmax(2.5 * z, axis=1)
        out.append((write_csv(tmp_path / f"{name}.csv", y, proba, classes), y, proba))
    return out


def test_the_leaders_are_offered():
    for name, cls in LEADERS.items():
        assert CALIBRATORS[name].estimator is getattr(calibration, cls)
        assert name in available_calibrators()


@pytest.mark.parametrize(
    ("name", "k"),
    [("sms", 3), ("svs", 3), ("spline", 3), ("quadratic", 2), ("beta", 2)],
)
def test_leader_calibrates_a_file(capsys, tmp_path, name, k):
    (val, y_val, p_val), (test, _, p_test) = _files(tmp_path, k)
    status, out, err = _run(
        capsys, test, "--calibrate", name, "--fit-on", val, "--json", "--no-intervals"
    )
    assert status == 0, err
    got = json.loads(out)
    # the scores are over-confident: every leader lowers the ECE clearly
    assert got["calibration"]["report"]["ece"] < got["report"]["ece"] / 2
    # and it is the class fitted on the same scores (logits: log p)
    takes = CALIBRATORS[name].input
    model = CALIBRATORS[name].estimator()
    scores = np.log(p_val) if takes == "logits" else p_val
    model.fit(scores, y_val)
    proba = model.predict_proba(np.log(p_test) if takes == "logits" else p_test)
    nll = -np.mean(np.log(proba[np.arange(len(proba)), _labels(test)]))
    assert got["calibration"]["report"]["nll"] == pytest.approx(nll, rel=1e-6)


def _labels(path):
    lines = path.read_text().splitlines()
    classes = lines[0].split(",")[1:]
    return np.array([classes.index(line.split(",")[0]) for line in lines[1:]])


@pytest.mark.parametrize("name", ["quadratic", "beta"])
def test_binary_only_leaders_refuse_a_multiclass_file(capsys, tmp_path, name):
    (val, _, _), (test, _, _) = _files(tmp_path, 3)
    status, _, err = _run(capsys, test, "--calibrate", name, "--fit-on", val)
    assert status == 2
    assert f"--calibrate {name} is for binary problems" in err
