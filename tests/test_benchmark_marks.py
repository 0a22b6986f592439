"""The benchmark's bold and * marks call a loss the best only when the paired
comparison says so; temperatures at the grid's edge are flagged, not ranked."""

import numpy as np

from sklcalib.benchmark.report import _best_losses, _edge_counts, markdown_report
from sklcalib.benchmark.runner import METRICS
from sklcalib.benchmark.summary import terminal_summary


def _rows(gap, temperature=1.5, n_resamples=400):
    """Two losses on one dataset, two seeds; loss "b" has an ECE ``gap``
    lower than "a", and every resample shares its rows' noise (paired)."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in (0, 1):
        shared = rng.normal(0.0, 0.01, size=n_resamples)
        own = {loss: rng.normal(0.0, 0.01, size=n_resamples) for loss in "ab"}
        for loss, ece in (("a", 0.05), ("b", 0.05 - gap)):
            row = {"dataset": "d", "loss": loss, "seed": seed, "epochs": 1}
            row["temperature"] = temperature if loss == "b" else 1.5
            for key in METRICS:
                row[f"{key}_pre"] = row[f"{key}_post"] = ece
            for when in ("pre", "post"):
                row[f"ece_{when}_bootstrap"] = ece + shared + own[loss]
            row.update(
                error_pre=0.1,
                error_post=0.1,
                train_error=0.0,
                chance_error=0.5,
                n_test=400,
                hessian_trace=1.0,
                hessian_trace_se=0.1,
                train_seconds=1.0,
            )
            rows.append(row)
    return rows


def _table_row(rows):
    text = markdown_report(rows)
    return next(line for line in text.splitlines() if line.startswith("| d |"))


def test_bold_only_when_the_paired_comparison_says_so():
    clear = _rows(gap=0.03)
    assert _best_losses(clear, "post") == {"d": "b"}
    assert "**2.00(1.5)**" in _table_row(clear)
    assert "2.0/2.0*" in terminal_summary(clear)
    noise = _rows(gap=0.001)  # lowest mean, but not distinguishable
    assert _best_losses(noise, "post") == {}
    assert "**" not in _table_row(noise)
    assert "*" not in terminal_summary(noise).split("\n", 3)[3]


def test_temperature_at_the_grid_edge_is_flagged_and_never_best():
    rows = _rows(gap=0.03, temperature=10.0)
    assert _edge_counts(rows) == {("d", "b"): 2}
    row = _table_row(rows)
    assert "2.00(10.0) ⊣2/2" in row and "**2.00(10.0)" not in row
    summary = terminal_summary(rows)
    assert "2.0/2.0^" in summary and "*" not in summary.split("\n", 3)[3]
