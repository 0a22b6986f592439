"""``sklcalib report PATH`` end to end, on files written to a temporary folder.

The numbers are checked against :func:`sklcalib.metrics.calibration_report` on
the same arrays; the calibration step against data with a known answer: labels
drawn from ``softmax(z)`` and scores ``softmax(2.5 z)`` are over-confident by a
temperature of 2.5.
"""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from _report_files import draw_labels, write_csv
from _report_files import run_report as _run
from scipy.special import softmax

from sklcalib.metrics import calibration_report

CLASSES = ["cat", "dog", "bird"]  # not sorted: the columns' order must be kept
TRUE_T = 2.5


def _draw(n, seed):
    """Labels from softmax(z) and over-confident logits 2.5 z."""
    y, z = draw_labels(n, seed)
    return y, TRUE_T * z


def _write_csv(path, y, scores, classes=CLASSES):
    return write_csv(path, y, scores, classes)


def _value(out, label):
    """The first number on the table line starting with ``label``."""
    line = next(ln for ln in out.splitlines() if ln.startswith(label))
    return float(line[len(label) :].split()[0])


@pytest.fixture(scope="module")
def data():
    return _draw(1500, 0), _draw(3000, 1)


@pytest.fixture
def scores_csv(tmp_path, data):
    _, (y, z) = data
    return _write_csv(tmp_path / "test.csv", y, softmax(z, axis=1))


# ----------------------------------------------------------------------------
# reading each format
# ----------------------------------------------------------------------------
def test_csv_table_matches_calibration_report(capsys, scores_csv, data):
    _, (y, z) = data
    want = calibration_report(np.array(CLASSES)[y], softmax(z, axis=1), labels=CLASSES)
    status, out, err = _run(capsys, scores_csv)
    assert status == 0, err
    assert "3000 samples, 3 classes (cat, dog, bird), probabilities" in out
    assert _value(out, "ECE (%)") == pytest.approx(100 * want["ece"], abs=0.006)
    assert _value(out, "NLL") == pytest.approx(want["nll"], abs=6e-5)
    assert _value(out, "accuracy (%)") == pytest.approx(
        100 * want["accuracy"], abs=0.006
    )
    # everything but a long path fits a terminal
    lines = [line for line in out.splitlines() if str(scores_csv) not in line]
    assert max(map(len, lines)) <= 100


def test_json_holds_the_full_report(capsys, scores_csv, data):
    _, (y, z) = data
    want = calibration_report(y, softmax(z, axis=1))
    status, out, _ = _run(capsys, scores_csv, "--json")
    assert status == 0
    got = json.loads(out)
    assert got["classes"] == CLASSES and got["n_samples"] == 3000
    for key in ("ece", "adaptive_ece", "classwise_ece", "smooth_ece", "nll", "brier"):
        assert got["report"][key] == pytest.approx(want[key], rel=1e-12), key


def test_logits_columns(capsys, tmp_path, data):
    _, (y, z) = data
    path = _write_csv(tmp_path / "logits.csv", y, z)
    status, out, _ = _run(capsys, path, "--logits", "--json")
    assert status == 0
    got = json.loads(out)
    assert got["input"] == "logits"
    assert got["report"]["ece"] == pytest.approx(
        calibration_report(y, softmax(z, axis=1))["ece"], rel=1e-12
    )
    # without --logits the same file is refused, with a hint
    status, _, err = _run(capsys, path)
    assert status == 2 and "--logits" in err


@pytest.mark.parametrize("layout", ["names", "indices", "logits", "binary"])
def test_npz_layouts(capsys, tmp_path, data, layout):
    _, (y, z) = data
    proba = softmax(z, axis=1)
    path = tmp_path / "p.npz"
    if layout == "names":
        np.savez(path, y_true=np.array(CLASSES)[y], y_prob=proba, classes=CLASSES)
        want = calibration_report(y, proba)
    elif layout == "indices":
        np.savez(path, y_true=y, y_prob=proba)
        want = calibration_report(y, proba)
    elif layout == "logits":
        np.savez(path, y_true=y, logits=z)
        want = calibration_report(y, proba)
    else:
        yb = (y == 0).astype(int)
        p1 = proba[:, 0]
        np.savez(path, y_true=yb, y_prob=p1)
        want = calibration_report(yb, p1)
    status, out, err = _run(capsys, path, "--json")
    assert status == 0, err
    assert json.loads(out)["report"]["ece"] == pytest.approx(want["ece"], rel=1e-12)


@pytest.mark.parametrize("layout", ["plain", "structured"])
def test_npy_layouts(capsys, tmp_path, data, layout):
    _, (y, z) = data
    proba = softmax(z, axis=1)
    path = tmp_path / "p.npy"
    if layout == "plain":  # the label's column index first, then the K columns
        np.save(path, np.column_stack([y, proba]))
    else:
        dtype = [("y_true", "U4")] + [(c, "f8") for c in CLASSES]
        table = np.empty(len(y), dtype=dtype)
        table["y_true"] = np.array(CLASSES)[y]
        for k, c in enumerate(CLASSES):
            table[c] = proba[:, k]
        np.save(path, table)
    status, out, err = _run(capsys, path, "--json")
    assert status == 0, err
    got = json.loads(out)["report"]["ece"]
    assert got == pytest.approx(calibration_report(y, proba)["ece"], rel=1e-12)


def test_parquet(capsys, tmp_path, data):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow", reason="parquet needs the parquet extra")
    _, (y, z) = data
    proba = softmax(z, axis=1)
    frame = pd.DataFrame(proba, columns=CLASSES)
    frame.insert(0, "y_true", np.array(CLASSES)[y])
    path = tmp_path / "p.parquet"
    frame.to_parquet(path)
    status, out, err = _run(capsys, path, "--json")
    assert status == 0, err
    got = json.loads(out)["report"]["ece"]
    assert got == pytest.approx(calibration_report(y, proba)["ece"], rel=1e-12)


def test_parquet_without_pyarrow_says_which_extra(capsys, tmp_path, monkeypatch):
    path = tmp_path / "p.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import fails
    status, out, err = _run(capsys, path)
    assert status == 2 and out == ""
    assert 'pip install "sklcalib[parquet]"' in err


# ----------------------------------------------------------------------------
# calibration, plot
# ----------------------------------------------------------------------------
def test_temperature_fitted_on_one_file_reported_on_another(capsys, tmp_path, data):
    (y_val, z_val), (y, z) = data
    val = _write_csv(tmp_path / "val.csv", y_val, softmax(z_val, axis=1))
    test = _write_csv(tmp_path / "test.csv", y, softmax(z, axis=1))
    status, out, err = _run(capsys, test, "--calibrate", "temperature", "--fit-on", val)
    assert status == 0, err
    assert "before" in out and "after temperature" in out
    status, out, _ = _run(
        capsys, test, "--calibrate", "temperature", "--fit-on", val, "--json"
    )
    got = json.loads(out)
    # the known answer: the scores are over-confident by T = 2.5
    assert got["calibration"]["fitted"]["temperature_"] == pytest.approx(
        TRUE_T, rel=0.1
    )
    assert got["calibration"]["report"]["ece"] < got["report"]["ece"] / 3
    # a calibrator fitted on val, not on test: the values differ from a fit on test
    status, out, _ = _run(
        capsys, test, "--calibrate", "temperature", "--fit-on", test, "--json"
    )
    assert json.loads(out)["calibration"]["fitted"]["temperature_"] != pytest.approx(
        got["calibration"]["fitted"]["temperature_"], rel=1e-6
    )


def test_isotonic_on_probabilities(capsys, tmp_path, data):
    (y_val, z_val), (y, z) = data
    val = _write_csv(tmp_path / "val.csv", y_val, softmax(z_val, axis=1))
    test = _write_csv(tmp_path / "test.csv", y, softmax(z, axis=1))
    status, out, err = _run(
        capsys, test, "--calibrate", "isotonic", "--fit-on", val, "--json"
    )
    assert status == 0, err
    got = json.loads(out)
    assert got["calibration"]["report"]["ece"] < got["report"]["ece"] / 2


def test_platt_on_a_binary_file_is_scikit_learns_platt(capsys, tmp_path):
    from sklcalib.calibration import PlattScaler

    rng = np.random.default_rng(0)
    margin = rng.normal(scale=2.0, size=(2, 800))
    y = (rng.random((2, 800)) < 1 / (1 + np.exp(-margin))).astype(int)
    files = []
    for name, m, labels in zip(("val", "test"), margin, y, strict=True):
        proba = softmax(np.column_stack([np.zeros_like(m), 3.0 * m]), axis=1)
        files.append(_write_csv(tmp_path / f"{name}.csv", labels, proba, ["no", "yes"]))
    status, out, err = _run(
        capsys, files[1], "--calibrate", "platt", "--fit-on", files[0], "--json"
    )
    assert status == 0, err
    got = json.loads(out)["calibration"]
    # the known answer: the log-odds are 3x too large, so the slope is ~1/3
    want = PlattScaler().fit(3.0 * margin[0], y[0])
    assert got["fitted"]["coef_"] == pytest.approx(want.coef_, rel=1e-6)
    assert got["fitted"]["coef_"] == pytest.approx(1 / 3, rel=0.2)


def test_platt_on_a_multiclass_file_is_refused(capsys, tmp_path, data):
    (y_val, z_val), (y, z) = data
    val = _write_csv(tmp_path / "val.csv", y_val, softmax(z_val, axis=1))
    test = _write_csv(tmp_path / "test.csv", y, softmax(z, axis=1))
    status, _, err = _run(capsys, test, "--calibrate", "platt", "--fit-on", val)
    assert status == 2
    assert "--calibrate platt is for binary problems" in err and "3 classes" in err


def test_plot_writes_a_png(capsys, tmp_path, scores_csv):
    png = tmp_path / "rel.png"
    status, out, _ = _run(capsys, scores_csv, "--plot", png)
    assert status == 0 and _printed_path(png, out)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------
# bad files: one line on stderr, exit status 2
# ----------------------------------------------------------------------------
def _bad_files(tmp_path):
    files = {}
    files["missing y_true"] = tmp_path / "a.csv"
    files["missing y_true"].write_text("label,a,b\na,0.5,0.5\n")
    files["label no column"] = tmp_path / "b.csv"
    files["label no column"].write_text("y_true,a,b\nc,0.5,0.5\n")
    files["NaN"] = tmp_path / "c.csv"
    files["NaN"].write_text("y_true,a,b\na,0.5,nan\n")
    files["not a number"] = tmp_path / "d.csv"
    files["not a number"].write_text("y_true,a,b\na,0.5,half\n")
    files["sum not 1"] = tmp_path / "e.csv"
    files["sum not 1"].write_text("y_true,a,b\na,0.5,0.6\n")
    files["one class column"] = tmp_path / "f.csv"
    files["one class column"].write_text("y_true,a\na,1.0\n")
    files["pickled npz"] = tmp_path / "g.npz"
    np.savez(
        files["pickled npz"],
        y_true=np.array([0, 1], dtype=object),
        y_prob=[[1, 0], [0, 1]],
    )
    files["pickled npy"] = tmp_path / "h.npy"
    np.save(files["pickled npy"], np.array([{"y": 1}], dtype=object), allow_pickle=True)
    files["npz without classes"] = tmp_path / "i.npz"
    np.savez(files["npz without classes"], y_true=["a", "b"], y_prob=[[1, 0], [0, 1]])
    files["npz index out of range"] = tmp_path / "j.npz"
    np.savez(files["npz index out of range"], y_true=[0, 2], y_prob=[[1, 0], [0, 1]])
    files["unknown suffix"] = tmp_path / "k.txt"
    files["unknown suffix"].write_text("x")
    files["no such file"] = tmp_path / "none.csv"
    return files


EXPECTED = {
    "missing y_true": "no column 'y_true'",
    "label no column": "labels that match no class column: 'c'",
    "NaN": "NaN or infinite",
    "not a number": "'half', not a number",
    "sum not 1": "rows must sum to 1",
    "one class column": "one column per class",
    "pickled npz": "refused, because loading a pickle can run arbitrary code",
    "pickled npy": "refused, because loading a pickle can run arbitrary code",
    "npz without classes": "add an array 'classes'",
    "npz index out of range": "match no column",
    "unknown suffix": "unknown file type '.txt'",
    "no such file": "no such file",
}


@pytest.mark.parametrize("case", list(EXPECTED))
def test_bad_file_one_line_error(capsys, tmp_path, case):
    path = _bad_files(tmp_path)[case]
    status, out, err = _run(capsys, path)
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"sklcalib report: error: {path}")
    assert EXPECTED[case] in err


def test_bad_file_no_traceback_through_python_dash_m(tmp_path):
    path = _bad_files(tmp_path)["pickled npz"]
    out = subprocess.run(
        [sys.executable, "-m", "sklcalib", "report", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "allow_pickle" not in out.stderr
    assert out.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fit-on", "x.csv"], "--fit-on goes with --calibrate NAME"),
        (["--calibrate", "magic", "--fit-on", "x.csv"], "unknown calibrator 'magic'"),
        (["--n-bins", "0"], "--n-bins"),
    ],
)
def test_bad_options_exit_2(capsys, scores_csv, argv, message):
    status, _, err = _run(capsys, scores_csv, *argv)
    assert status == 2 and message in err


def test_fit_on_file_with_other_classes(capsys, tmp_path, data):
    _, (y, z) = data
    test = _write_csv(tmp_path / "t.csv", y, softmax(z, axis=1))
    other = _write_csv(
        tmp_path / "o.csv", y, softmax(z, axis=1), classes=["x", "y", "z"]
    )
    status, _, err = _run(capsys, test, "--calibrate", "temperature", "--fit-on", other)
    assert status == 2 and "must be the same columns" in err


def test_intervals_follow_the_values_when_the_report_has_them(
    capsys, monkeypatch, scores_csv
):
    """--confidence-level passes through to calibration_report; its
    ``<key>_ci`` entries are printed after the values."""

    def with_intervals(y_true, y_prob, *, confidence_level=None, **kwargs):
        kwargs.pop("random_state", None)
        report = calibration_report(y_true, y_prob, **kwargs)
        if confidence_level is not None:
            report["ece_ci"] = (report["ece"] - 0.01, report["ece"] + 0.02)
        return report

    monkeypatch.setattr(
        "sklcalib.cli.report_command.calibration_report", with_intervals
    )
    status, out, err = _run(capsys, scores_csv, "--confidence-level", "0.9")
    assert status == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("ECE (%)"))
    value, low, high = (float(v.strip("[],")) for v in line.split()[-3:])
    assert low == pytest.approx(value - 1, abs=0.011)
    assert high == pytest.approx(value + 2, abs=0.011)


def test_a_closed_pipe_ends_quietly(tmp_path):
    # `sklcalib report f.csv | head -1`: the reader is gone before the report
    # is written (deterministically here: no read end at all)
    y, scores = _draw(200, 0)
    path = _write_csv(tmp_path / "p.csv", y, softmax(scores, axis=1))
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "sklcalib", "report", str(path)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert out.returncode == 141
    assert out.stderr == ""


def _printed_path(path, out):
    # a long path goes on its own line to keep the output within 100 columns
    return re.search(r"reliability diagram:\s+" + re.escape(str(path)) + r"\n", out)
