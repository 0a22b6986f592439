"""The metric names and labels every table uses come from the one registry:
the functions (``metrics._registry.METRICS``), their display (label, percent),
the scorers, the intervals, the report, the callbacks, the benchmark tables
and ``sklcalib report`` agree."""

import pytest

from sklcalib._utils._metric_display import DISPLAY
from sklcalib.metrics import CALIBRATION_SCORERS, calibration_report, get_scorer_names
from sklcalib.metrics._calibration_report import CI_METRICS
from sklcalib.metrics._intervals import INTERVAL_METRICS
from sklcalib.metrics._registry import METRICS

# the report keys that are not the registry's names, and the registry's
# metrics the report leaves out
REPORT_NAME = {"skce": "kernel_calibration_error"}


def test_every_registry_metric_has_one_display():
    assert list(DISPLAY) == list(METRICS)


def test_the_ece_family_is_shown_in_percent_the_scoring_rules_not():
    # proportions of samples in [0, 1] in percent; NLL, Brier and the
    # squared kernel error are not proportions
    percent = {key for key, shown in DISPLAY.items() if shown.percent}
    assert percent == set(METRICS) - {"nll", "brier", "kernel_calibration_error"}
    assert DISPLAY["ece"].label() == "ECE (%)"
    assert DISPLAY["nll"].label(long=True) == "NLL"


def test_scorers_are_the_registry_minus_sklearns_own():
    assert set(CALIBRATION_SCORERS) == {
        f"neg_{key}" for key in METRICS if key not in ("nll", "brier")
    }
    assert set(CALIBRATION_SCORERS) <= set(get_scorer_names())


def test_intervals_and_report_intervals_are_one_list_of_registry_metrics():
    assert CI_METRICS is INTERVAL_METRICS
    assert set(INTERVAL_METRICS) <= set(METRICS)


def test_report_keys_are_registry_names():
    report = calibration_report([0, 1, 1, 0], [0.2, 0.7, 0.6, 0.4])
    names = {REPORT_NAME.get(key, key) for key in report}
    assert set(METRICS) <= names


def test_benchmark_tables_use_the_registry_labels():
    from sklcalib.benchmark import runner
    from sklcalib.benchmark import tables as report

    for key in runner.METRICS:
        if key in DISPLAY:
            assert report._LABELS[key] == DISPLAY[key].short
            assert (key in report._PERCENT) == DISPLAY[key].percent


def test_cli_report_rows_use_the_registry_labels():
    from sklcalib.cli.report_command import TABLE_ROWS

    for key, label, percent in TABLE_ROWS:
        name = REPORT_NAME.get(key, key)
        if name in DISPLAY:
            assert (label, percent) == (
                DISPLAY[name].label(long=True),
                DISPLAY[name].percent,
            )


def test_callback_metrics_are_registry_calibration_errors():
    pytest.importorskip("skorch")
    from sklcalib import callbacks

    assert set(callbacks._METRICS) <= {
        key for key, shown in DISPLAY.items() if shown.percent
    }
