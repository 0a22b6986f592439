"""``sklcalib report FILE --segments COL[,COL...]`` and
``read_predictions(..., segments=...)``: the segment audit of a file, its
verdict and worst segments first."""

import json

import numpy as np
import pandas as pd
import pytest

from sklcalib.cli import main
from sklcalib.io import InputFileError, read_predictions
from sklcalib.metrics import multicalibration_audit


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    region = rng.choice(["north", "south", "east"], n)
    age = rng.normal(45, 12, n).round(1)
    p = rng.uniform(0.05, 0.95, n)
    true_p = np.where(region == "east", np.clip(p + 0.12, 0, 1), p)
    y = rng.uniform(size=n) < true_p
    frame = pd.DataFrame(
        {
            "y_true": np.where(y, "yes", "no"),
            "no": 1 - p,
            "yes": p,
            "region": region,
            "age": age,
        }
    )
    frame.loc[::97, "region"] = ""  # a few empty cells: their own level
    path = tmp_path / "preds.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_reader_returns_the_segment_columns(table):
    path, frame = table
    pred = read_predictions(path, segments=["region", "age"])
    assert pred.classes == ["no", "yes"]
    assert list(pred.segments) == ["region", "age"]
    region = pred.segments["region"]
    assert region.dtype == object and region[0] is None
    assert set(region[1:5]) <= {"north", "south", "east"}
    np.testing.assert_allclose(pred.segments["age"], frame["age"])
    plain = read_predictions(path, scores=["no", "yes"])
    np.testing.assert_array_equal(plain.scores, pred.scores)
    assert plain.segments is None


def test_reader_refuses_bad_segment_columns(table, tmp_path):
    path, _ = table
    with pytest.raises(InputFileError, match="no column 'city'"):
        read_predictions(path, segments=["city"])
    with pytest.raises(InputFileError, match="both the labels' column and a segment"):
        read_predictions(path, segments=["y_true"])
    with pytest.raises(InputFileError, match="both a class column and a segment"):
        read_predictions(path, scores=["no", "yes"], segments=["yes"])
    npz = tmp_path / "preds.npz"
    np.savez(npz, y_true=[0, 1], y_prob=[[0.8, 0.2], [0.3, 0.7]])
    with pytest.raises(InputFileError, match=r"need a table \(.csv or .parquet\)"):
        read_predictions(npz, segments=["region"])
    with pytest.raises(ValueError, match="segments must name"):
        read_predictions(path, segments=[""])


def test_report_prints_the_audit_first(table, capsys):
    path, _ = table
    assert main(["report", str(path), "--segments", "region,age"]) == 0
    out = capsys.readouterr().out.splitlines()
    first = next(i for i, line in enumerate(out) if line.startswith("segments:"))
    verdict_at = next(i for i, line in enumerate(out) if line.startswith("verdict:"))
    assert first < verdict_at
    assert out[first].startswith("segments: miscalibrated in at least one of")
    assert "region=east" in " ".join(out[first:verdict_at])
    assert "cumulative error, Kuiper (%)" in "\n".join(out)


def test_report_json_equals_the_audit(table, capsys):
    path, _ = table
    # age is neither a segment nor a class column here: --scores names them
    args = ["report", str(path), "--segments", "region", "--scores", "no,yes"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["report"]
    pred = read_predictions(path, segments=["region"], scores=["no", "yes"])
    segments = np.rec.fromarrays([pred.segments["region"]], names=["region"])
    audit = multicalibration_audit(
        pred.y, pred.proba, segments, labels=[0, 1], random_state=0
    )
    assert report["multicalibration_pvalue"] == audit.pvalue
    assert report["n_segments"] == audit.n_segments
    assert report["worst_segment"] == audit.worst.segment == "region=east"
    assert report["worst_segments"][0]["segment"] == "region=east"


def test_report_audits_before_and_after_a_calibrator(table, capsys):
    path, _ = table
    code = main(
        ["report", str(path), "--segments", "region,age", "--calibrate", "temperature"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "segments (before): " in out and "segments (after temperature): " in out


def test_report_segments_need_a_table(tmp_path, capsys):
    npz = tmp_path / "preds.npz"
    np.savez(npz, y_true=[0, 1] * 50, y_prob=np.tile([[0.8, 0.2], [0.3, 0.7]], (50, 1)))
    assert main(["report", str(npz), "--segments", "region"]) == 2
    assert "segment columns need a table" in capsys.readouterr().err
