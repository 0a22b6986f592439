"""The benchmark's outputs a user reads: runs at chance flagged and never marked
best, the curvature figure, the terminal summary, one folder per run."""

import contextlib
import errno
import io
import math
import os
import re
import signal
import sys

import numpy as np
import pytest
from scipy.stats import binom

from sklcalib.benchmark.chance import (
    chance_threshold,
    is_at_chance,
    majority_class_error,
    runs_at_chance,
)
from sklcalib.benchmark.figures import plot_curvature
from sklcalib.benchmark.outputs import INCOMPLETE, discard_run, new_run_dir, run_folder
from sklcalib.benchmark.runner import METRICS
from sklcalib.benchmark.summary import plain_text, terminal_summary
from sklcalib.benchmark.tables import markdown_report
from sklcalib.cli import benchmark_command as cli_benchmark
from sklcalib.cli import main

LONG_NAMES = [
    "moons",
    "blobs",
    "classification",
    "classification_hard",
    "digits",
    "breast_cancer",
    "wine",
]
LOSSES = ["ce", "focal", "flsd53", "dual_focal", "fcl", "brier", "mmce"]


def _rows(datasets=("a",), losses=("ce", "mmce"), seeds=(0, 1), collapsed=()):
    """Hand-made rows; the (dataset, loss) in ``collapsed`` err at chance and
    have the lowest ECE, as a collapsed net can."""
    rows = []
    for d in datasets:
        for i, loss in enumerate(losses):
            for seed in seeds:
                bad = (d, loss) in collapsed
                row = {"dataset": d, "loss": loss, "seed": seed, "epochs": 3}
                row["temperature"] = 1.5
                for key in METRICS:
                    row[f"{key}_pre"] = 0.01 if bad else 0.05 + 0.01 * i
                    row[f"{key}_post"] = 0.005 if bad else 0.02 + 0.01 * i
                row["error_pre"] = row["error_post"] = 0.49 if bad else 0.1
                row.update(
                    train_error=0.0,
                    chance_error=0.5,
                    n_test=400,
                    # one loss with a negative trace, as saddles give
                    hessian_trace=-30.0 if loss == "focal" else 10.0 * (i + 1),
                    hessian_trace_se=2.0,
                    train_seconds=1.0,
                )
                rows.append(row)
    return rows


# ----------------------------------------------------------------------------
# the at-chance rule
# ----------------------------------------------------------------------------
def test_majority_class_error():
    assert majority_class_error([0, 1, 2, 0]) == 0.5
    assert majority_class_error(["a", "a", "b"]) == pytest.approx(1 / 3)


def test_chance_threshold_is_the_larger_of_two_margins():
    # large n: a quarter of e0 dominates
    assert chance_threshold(0.5, 10_000) == pytest.approx(0.375)
    # small n: two binomial standard errors dominate
    assert chance_threshold(0.5, 36) == pytest.approx(0.5 - 2 * math.sqrt(0.25 / 36))
    # balanced 10 classes: 1 - 1/K
    assert chance_threshold(0.9, 10_000) == pytest.approx(0.675)


def test_a_model_that_guesses_is_flagged_and_a_learnt_one_is_not():
    # a classifier that ignores its input errs like e0 up to binomial noise:
    # with the two-standard-error margin, 97% of such runs are flagged
    e0, n = 0.5, 400
    errors = binom(n, e0).ppf([0.03, 0.5, 0.97]) / n
    assert all(is_at_chance(e, e0, n) for e in errors)
    assert not is_at_chance(0.10, e0, n)
    assert not is_at_chance(math.nan, e0, n)  # older csv without the columns


def test_a_rare_class_model_with_signal_is_not_flagged():
    # 3.4 % positives: an error of 2.6 % removes less than a quarter of e0, but
    # a log-loss whose 95 % interval lies below the prior's shows the signal
    e0, n = 0.034, 2000
    assert is_at_chance(0.026, e0, n)  # the error alone flags it
    assert not is_at_chance(0.026, e0, n, -0.07, 0.005)
    # an interval that reaches 0 (or a log-loss above the prior's) is flagged
    assert is_at_chance(0.026, e0, n, -0.009, 0.005)
    assert is_at_chance(0.026, e0, n, 0.05, 0.005)
    # the log-loss never flags a run whose error is well below chance
    assert not is_at_chance(0.01, e0, n, 0.05, 0.005)
    # rows of an older csv (NaN log-loss columns) are judged by the error
    assert is_at_chance(0.026, e0, n, math.nan, math.nan)


def test_prior_log_loss_columns_match_scikit_learn():
    from types import SimpleNamespace

    from sklearn.metrics import log_loss

    from sklcalib.benchmark.runner import _against_prior

    rng = np.random.default_rng(0)
    y_train = rng.integers(0, 3, 200)
    y_test = rng.integers(0, 3, 90)
    proba = rng.dirichlet(np.ones(3), 90)
    data = SimpleNamespace(y_train=y_train, y_test=y_test)
    got = _against_prior(data, proba)
    prior = np.bincount(y_train, minlength=3) / 200
    prior_nll = log_loss(y_test, np.tile(prior, (90, 1)), labels=[0, 1, 2])
    assert got["prior_nll"] == pytest.approx(prior_nll, rel=1e-12)
    diff = log_loss(y_test, proba, labels=[0, 1, 2]) - prior_nll
    assert got["nll_post_vs_prior"] == pytest.approx(diff, rel=1e-12)
    per_row = -np.log(proba[np.arange(90), y_test]) + np.log(prior[y_test])
    se = np.std(per_row, ddof=1) / math.sqrt(90)
    assert got["nll_post_vs_prior_se"] == pytest.approx(se, rel=1e-12)


def test_runs_at_chance_picks_the_collapsed_rows():
    rows = _rows(collapsed={("a", "mmce")})
    assert {(r["loss"], r["seed"]) for r in runs_at_chance(rows)} == {
        ("mmce", 0),
        ("mmce", 1),
    }


# ----------------------------------------------------------------------------
# tables
# ----------------------------------------------------------------------------
def test_collapsed_run_is_flagged_and_not_bold():
    text = markdown_report(_rows(collapsed={("a", "mmce")}))
    row_a = next(line for line in text.splitlines() if line.startswith("| a |"))
    # mmce has the lowest ECE but errs at chance: never bold; ce is alone,
    # and nothing is bold without resamples to compare
    assert row_a == ("| a | 5.00 | 2.00(1.5) | 1.00 ⚠2/2 | 0.50(1.5) ⚠2/2 |"), row_a
    assert "## Runs at or near chance" in text
    assert "| a | mmce | 0 | 49.00 | 50.00 |" in text
    detail = next(line for line in text.splitlines() if line.startswith("| mmce |"))
    assert "49.00 ± 0.00 ⚠2/2" in detail


def test_no_bold_when_every_run_collapsed():
    text = markdown_report(_rows(collapsed={("a", "ce"), ("a", "mmce")}))
    row_a = next(line for line in text.splitlines() if line.startswith("| a |"))
    assert "**" not in row_a


# ----------------------------------------------------------------------------
# curvature figure
# ----------------------------------------------------------------------------
def test_curvature_figure_is_a_grid_with_error_bars(tmp_path):
    rows = _rows(datasets=LONG_NAMES, losses=LOSSES, collapsed={("moons", "mmce")})
    fig = plot_curvature(rows, tmp_path / "c.png")
    width, height = fig.get_size_inches()
    assert width / height < 2  # 7 panels on a 3-column grid, not a strip
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == len(LONG_NAMES)
    ax = axes[0]
    # a negative trace: symmetric-log axis, said in the label
    assert ax.get_xscale() == "symlog"
    assert "not at a local minimum" in ax.get_xlabel()
    # horizontal bars: Hutchinson standard error of the mean over 2 seeds
    bars = ax.containers[0]  # ce; its bar collections: xerr first, then yerr
    (segment,) = bars.lines[2][0].get_segments()
    half_width = (segment[1][0] - segment[0][0]) / 2
    assert half_width == pytest.approx(math.sqrt(2 * 2.0**2) / 2)
    assert (tmp_path / "c.png").stat().st_size > 1000


# ----------------------------------------------------------------------------
# terminal summary
# ----------------------------------------------------------------------------
def test_terminal_summary_fits_100_columns_and_flags():
    rows = _rows(datasets=LONG_NAMES, losses=LOSSES, collapsed={("wine", "mmce")})
    text = terminal_summary(
        rows, run_dir="benchmark-results/run-20260101-000000", files=["results.csv"]
    )
    lines = text.splitlines()
    assert max(map(len, lines)) <= 100
    assert len(lines) < 40
    # one line per dataset with runs at chance, not one per run
    assert re.search(
        r"  wine: 2 of \d+ runs \(mmce\), error 49.0 %, majority class 50.0 %", text
    )
    assert "1.0/0.5!" in text and "1.0/0.5*" not in text
    assert "benchmark-results/run-20260101-000000/results.md" in text


# ----------------------------------------------------------------------------
# one folder per run
# ----------------------------------------------------------------------------
def test_new_run_dir_never_reuses_a_folder(tmp_path):
    first = new_run_dir(tmp_path)
    (first / "reliability_old.png").write_bytes(b"x")
    second = new_run_dir(tmp_path)
    assert first != second and list(second.iterdir()) == []
    assert (first / "reliability_old.png").exists()  # nothing deleted
    # a folder is only created: latest moves when a run completes
    assert not (tmp_path / "latest").exists()


def test_latest_moves_only_when_the_run_completes(tmp_path):
    with run_folder(tmp_path) as first:
        (first / "results.csv").write_text("x\n")
        assert not (tmp_path / "latest").exists()
    assert (tmp_path / "latest").resolve() == first.resolve()
    with pytest.raises(KeyboardInterrupt):
        with run_folder(tmp_path) as second:
            (second / "results.csv").write_text("half\n")
            raise KeyboardInterrupt
    # the interrupted run is gone and latest still shows the complete one
    assert not second.exists()
    assert (tmp_path / "latest").resolve() == first.resolve()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", first.name]


def test_an_undeletable_incomplete_folder_is_marked(tmp_path, monkeypatch):
    run_dir = new_run_dir(tmp_path)
    monkeypatch.setattr("shutil.rmtree", lambda *a, **k: None)
    left = discard_run(run_dir)
    assert left.name == run_dir.name + INCOMPLETE and left.is_dir()


def _tiny(tmp_path):
    return [
        "benchmark",
        "--datasets",
        "wine",
        "--losses",
        "ce",
        "--seeds",
        "1",
        "--epochs",
        "1",
        "--n-jobs",
        "1",
        "--hessian-samples",
        "0",
        "--no-plots",
        "--out",
        str(tmp_path),
    ]


def _fake_run(tmp_path, monkeypatch, exc):
    """A benchmark whose run writes a file, then fails with ``exc``."""

    def run(args, out, *rest):
        (out / "results.csv").write_text("partial\n")
        raise exc

    monkeypatch.setattr(cli_benchmark, "_run", run)
    previous = new_run_dir(tmp_path)
    from sklcalib.benchmark.outputs import _point_latest

    _point_latest(tmp_path, previous.name)
    return previous


def test_interrupted_benchmark_keeps_the_last_good_run(tmp_path, monkeypatch, capsys):
    previous = _fake_run(tmp_path, monkeypatch, KeyboardInterrupt())
    assert main(_tiny(tmp_path)) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err
    assert (tmp_path / "latest").resolve() == previous.resolve()
    assert [p.name for p in tmp_path.glob("run-*")] == [previous.name]


def test_sigterm_ends_the_run_like_ctrl_c(tmp_path, monkeypatch):
    previous = new_run_dir(tmp_path)
    from sklcalib.benchmark.outputs import _point_latest

    _point_latest(tmp_path, previous.name)

    def run(args, out, *rest):
        (out / "results.csv").write_text("partial\n")
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the run")  # pragma: no cover

    monkeypatch.setattr(cli_benchmark, "_run", run)
    assert main(_tiny(tmp_path)) == 128 + signal.SIGTERM
    assert (tmp_path / "latest").resolve() == previous.resolve()
    assert [p.name for p in tmp_path.glob("run-*")] == [previous.name]
    # the handler is the previous one again
    assert signal.getsignal(signal.SIGTERM) is not None


def test_full_disk_is_one_line(tmp_path, monkeypatch, capsys):
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "results.csv")
    previous = _fake_run(tmp_path, monkeypatch, full)
    assert main(_tiny(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("Writing to ") and "Traceback" not in err
    (line,) = err.splitlines()[1:]
    assert line.startswith("sklcalib benchmark: error: ENOSPC: No space left")
    assert (tmp_path / "latest").resolve() == previous.resolve()
    assert [p.name for p in tmp_path.glob("run-*")] == [previous.name]


def test_missing_extra_is_one_line_and_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import fails
    assert main(_tiny(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "needs tqdm" in err and 'pip install "sklcalib[torch]"' in err
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []


def test_boosting_summary_is_plain_text_within_100_columns():
    markdown = (
        "Gradient boosting, test ECE (%):\n"
        "| Dataset | raw | temperature | isotonic | histogram | beta | dirichlet "
        "| ets | scaling_binning | venn_abers | sms | svs | spline |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- |\n"
        "| diamonds | 4.10 | **1.20** | 1.30 | 2.00 | 1.90 | 1.40 | 1.25 | 1.60 "
        "| 1.70 | 1.21 | 1.22 | 1.23 |\n"
    )
    text = plain_text(markdown)
    assert "|" not in text and "**" not in text and "---" not in text
    assert max(map(len, text.splitlines())) <= 100
    lines = text.splitlines()
    # split into two blocks, each starting with the dataset column
    assert sum(ln.startswith("Dataset") for ln in lines) == 2
    assert sum(ln.startswith("diamonds") for ln in lines) == 2
    assert "1.20" in text and "spline" in text


@pytest.mark.slow
def test_a_second_run_does_not_mix_with_the_first(tmp_path):
    tiny = ["--losses", "ce", "--seeds", "1", "--epochs", "1", "--n-jobs", "1"]
    tiny += ["--hessian-samples", "0", "--out", str(tmp_path)]
    assert main(["benchmark", "--datasets", "wine,breast_cancer", *tiny]) == 0
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(["benchmark", "--datasets", "wine", *tiny]) == 0
    runs = sorted(p for p in tmp_path.iterdir() if p.name.startswith("run-"))
    assert len(runs) == 2
    latest = (tmp_path / "latest").resolve()
    assert latest == runs[-1].resolve()
    assert sorted(p.name for p in latest.glob("*.png")) == ["reliability_wine.png"]
    assert (runs[0] / "reliability_breast_cancer.png").exists()
    assert str(latest.name) in stdout.getvalue()
    np.testing.assert_equal(len(list(latest.glob("results.*"))), 2)


def _documented_columns(entry):
    """The ``literal`` names of one file's entry in docs/benchmark.rst, in order."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "benchmark.rst").read_text()
    start = text.index(f"``{entry}``\n")
    block = text[start : text.index("\n``", start + len(entry) + 5)]
    block = block[block.index("Columns:") :]
    return re.findall(r"``([a-z_]+)``", block)


def test_documented_csv_columns_are_the_written_ones(tmp_path):
    """docs/benchmark.rst names every column of results.csv and boosting.csv in
    the order the files have them (it once missed the interval columns)."""
    import csv

    from sklcalib.benchmark.boosting_tables import write_boosting_csv
    from sklcalib.benchmark.runner import METRICS
    from sklcalib.benchmark.tables import write_csv

    write_csv([], tmp_path / "results.csv")
    with open(tmp_path / "results.csv", newline="") as fh:
        results = next(csv.reader(fh))
    documented = _documented_columns("results.csv")
    # "<metric>_pre and <metric>_post for each metric" stands for the pairs
    at = documented.index("temperature") + 1
    pairs = [f"{m}_{when}" for m in METRICS for when in ("pre", "post")]
    expanded = [*documented[:at], *pairs, *documented[at + len(METRICS) :]]
    assert expanded == results
    write_boosting_csv([], tmp_path / "boosting.csv")
    with open(tmp_path / "boosting.csv", newline="") as fh:
        boosting = next(csv.reader(fh))
    documented = _documented_columns("boosting.csv")
    not_columns = {"hgb", "logreg", "net", "lightgbm", "none", "_pre", "_post"}
    assert [c for c in documented if c not in not_columns] == boosting
