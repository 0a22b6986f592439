"""The small-set harm bed of SegmentCalibrator(method="auto"), a seeded fast run."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_segment_small_sets as bench


def test_tiny_sets_keep_passthrough_without_errors_or_certain_probabilities():
    rows = bench.table(reps=4, sizes=(36,))
    assert [r["bed"] for r in rows] == list(bench.BEDS)
    for r in rows:
        assert r["errors"] == [], r
        assert r["exact_0_or_1"] == 0, r
        # 36 rows cannot support a segment map: auto keeps the scores
        assert r["methods"] == {"passthrough": 4}, r
        assert r["max_excess"] <= 0.01, r


def test_the_separable_replications_are_separable():
    import numpy as np

    rng = np.random.default_rng(0)
    z, y, seg = bench.draw("sharp", 500, rng)
    assert set(np.unique(z)) == {-7.0, 7.0} and seg.shape == (500, 3)
    # right 95 % of the time (binomial sd about 1 %)
    assert abs(np.mean((z > 0) == y) - 0.95) < 0.04


def test_the_guide_shows_the_table_the_script_renders():
    text = (
        Path(__file__).resolve().parents[1]
        / "docs/user_guide/segment_small_sets_table.txt"
    ).read_text(encoding="utf-8")
    header, rule, *body = text.splitlines()
    assert header == bench.render([]).splitlines()[0] and rule.startswith("|---")
    cells = [line.split("|")[1:3] for line in body if not line.startswith("|   ")]
    assert [(b.strip(), int(n)) for b, n in cells] == [
        (b, n) for b in bench.BEDS for n in bench.SIZES
    ]
    guide = (
        Path(__file__).resolve().parents[1] / "docs/user_guide/segment_calibration.rst"
    ).read_text(encoding="utf-8")
    assert "segment_small_sets_table.txt" in guide


def test_a_platt_gain_of_a_few_rows_keeps_the_raw_scores():
    # calibrated scores, 300 rows, noise segments: on this replication the
    # fold losses favoured Platt scaling by more than a fold standard error
    # and its fit cost +0.015 nats on fresh rows; the per-row step of the
    # rule (its gain is within one standard error of the per-row paired
    # differences) keeps the raw scores
    import numpy as np

    from sklcalib.calibration import SegmentCalibrator

    z, y, seg = bench.draw("calibrated", 300, np.random.default_rng([0, 300, 4]))
    fitted = SegmentCalibrator().fit(z, y, segments=seg)
    r = fitted.cv_results_
    platt = r["candidate"].index("global (platt)")
    assert r["mean_log_loss"][platt] < r["mean_log_loss"][0]  # the folds' favour
    assert fitted.method_ == "passthrough"
    assert "per-row paired differences" in fitted.reason_
    assert bench.replicate("calibrated", 300, 4)[0] == 0.0
