"""The tabular part of the benchmark: gradient boosting with post-hoc calibrators."""

import contextlib
import csv
import io
import math

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import brier_score_loss, log_loss

from sklcalib.benchmark import boosting_tables as tabular_tables
from sklcalib.benchmark import tabular
from sklcalib.benchmark.boosting_tables import (
    auto_check,
    boosting_markdown,
    boosting_summary,
    calibrator_scores,
    chance_cells,
)
from sklcalib.benchmark.runner import METRICS, derive_seed, subsample_train
from sklcalib.benchmark.tabular import (
    CALIBRATORS,
    RAW,
    available_calibrators,
    run_boosting,
)
from sklcalib.cli import benchmark_command as cli
from sklcalib.cli import main
from sklcalib.cli.main import build_parser
from sklcalib.datasets import TABULAR_DATASETS, load_dataset


def _parse(argv):
    parser = build_parser()
    args = parser.parse_args(["benchmark", *argv])
    return args, args.command_parser


def test_default_run_has_diamonds_and_a_rare_positive_binary_set():
    args, parser = _parse([])
    datasets, *_ = cli._resolve(args, parser)
    assert "diamonds" in datasets
    rare = [
        d
        for d in datasets
        if d in TABULAR_DATASETS
        and load_dataset(d).n_classes == 2
        and load_dataset(d).y_train.mean() < 0.1
    ]
    assert rare == ["lending_club"]
    # nets train on a subsample of diamonds' 32 364 training rows
    assert cli._net_max_train(args, "diamonds") == 5000
    assert cli._net_max_train(args, "moons") is None
    boost, calibrators = cli._resolve_boosting(args, parser, datasets)
    assert boost == ["diamonds", "lending_club"]
    assert calibrators == available_calibrators()


def test_default_losses_resolve_without_importing_the_registry(monkeypatch):
    # the default criteria are registry names, taken without the registry's
    # (torch's) import in the command's own process; named ones are checked
    from sklcalib.losses import CRITERIA

    assert set(cli.DEFAULT_LOSSES) <= set(CRITERIA)
    checked = []
    monkeypatch.setattr(cli, "_loss_names", lambda: checked.append(1) or ["ce"])
    args, parser = _parse([])
    assert cli._resolve(args, parser)[1] == list(cli.DEFAULT_LOSSES)
    assert checked == []
    args, parser = _parse(["--losses", "ce"])
    assert cli._resolve(args, parser)[1] == ["ce"] and checked == [1]


def test_suite_tabular_selects_the_real_sets():
    args, parser = _parse(["--suite", "tabular"])
    datasets, losses, seeds, epochs = cli._resolve(args, parser)
    assert datasets == list(TABULAR_DATASETS)
    assert seeds == [0, 1, 2] and losses == list(cli.DEFAULT_LOSSES)
    assert all(epochs[d] == cli.DEFAULT_EPOCHS[d] for d in datasets)
    # --quick keeps the per-dataset epochs of the real sets, not 300 for all
    args, parser = _parse(["--suite", "tabular", "--quick"])
    assert cli._resolve(args, parser)[3]["diamonds"] == cli.DEFAULT_EPOCHS["diamonds"]
    args, parser = _parse(["--suite", "tabular", "--max-train", "100"])
    assert cli._net_max_train(args, "diamonds") == 100
    args, parser = _parse(["--suite", "tabular", "--no-boosting"])
    assert cli._resolve_boosting(args, parser, list(TABULAR_DATASETS))[0] == []


def test_calibrator_registry():
    assert list(CALIBRATORS)[:4] == [
        "temperature",
        "isotonic",
        "histogram",
        "beta_netcal",
    ]
    assert {"temperature", "isotonic", "histogram", "beta", "auto"} <= set(
        available_calibrators()
    )


def _without_netcal(monkeypatch):
    """Make the registry see netcal as not installed."""
    import sklcalib.calibration._registry as registry

    real = registry.is_installed
    monkeypatch.setattr(registry, "is_installed", lambda m: m != "netcal" and real(m))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--calibrators", "platt_typo"], "unknown calibrator(s) platt_typo"),
        (["--calibrators", "bbq"], "bbq needs an optional package"),
        (["--calibrators", "enir"], 'pip install "sklcalib[netcal]"'),
        (["--suite", "nope"], "invalid choice: 'nope'"),
        (["--max-train", "0"], "must be a positive integer"),
    ],
)
def test_bad_arguments(argv, message, capsys, monkeypatch, tmp_path):
    # a calibrator whose optional package is missing: the error names its extra
    _without_netcal(monkeypatch)
    code = main(["benchmark", "--datasets", "cells", *argv, "--out", str(tmp_path)])
    assert code == 2
    assert message in capsys.readouterr().err


def test_subsample_train_is_stratified_and_keeps_val_and_test():
    data = load_dataset("lending_club")
    small = subsample_train(data, 1000)
    assert len(small.y_train) == 1000
    assert abs(small.y_train.mean() - data.y_train.mean()) < 1e-3
    assert small.X_val is data.X_val and small.X_test is data.X_test
    # the rows kept are rows of the training split
    rows = {r.tobytes() for r in data.X_train}
    assert all(r.tobytes() in rows for r in small.X_train)
    assert subsample_train(data, None) is data
    assert subsample_train(data, 10**6) is data
    assert len(data.y_train) == 5915  # the original is untouched


def test_run_boosting_raw_metrics_match_scikit_learn():
    rows = run_boosting("cells", 1, calibrators=["temperature", "isotonic"])
    assert [r["calibrator"] for r in rows] == [RAW, "temperature", "isotonic"]
    # an independent fit with the same seed and split gives the raw numbers
    data = load_dataset("cells", random_state=1)
    booster = HistGradientBoostingClassifier(random_state=derive_seed("cells", 1))
    proba = booster.fit(data.X_train, data.y_train).predict_proba(data.X_test)
    raw = rows[0]
    assert raw["nll"] == pytest.approx(log_loss(data.y_test, proba), rel=1e-9)
    # the multiclass Brier score (sum over the classes): twice the binary one
    assert raw["brier"] == pytest.approx(
        2 * brier_score_loss(data.y_test, proba[:, 1]), rel=1e-9
    )
    assert raw["error"] == pytest.approx(np.mean(proba.argmax(1) != data.y_test))
    # temperature scaling keeps every prediction; all rows have every metric
    assert rows[1]["error"] == raw["error"]
    for row in rows:
        assert row["n_train"] == len(data.y_train)
        assert all(math.isfinite(row[k]) for k in METRICS)
    # fitted on the validation split, it improves the NLL of this booster
    assert rows[1]["nll"] < raw["nll"]


def _fake(rows_spec, model="hgb"):
    rows = []
    for ds, cal, seed, ece in rows_spec:
        row = {
            "dataset": ds,
            "model": model,
            "calibrator": cal,
            "seed": seed,
            "n_train": 100,
        }
        row.update(dict.fromkeys(METRICS, 0.1))
        row["ece"] = ece
        rows.append(row)
    return rows


def test_metric_tables_have_no_bold():
    # bold means one thing in results.md: a cell a paired test finds lower
    # than every other of its line (the nets' Table-1 layout); the lowest mean
    # of a boosting table is not that
    rows = _fake(
        [
            ("a", RAW, 0, 0.10),
            ("a", RAW, 1, 0.12),
            ("a", "isotonic", 0, 0.02),
            ("a", "isotonic", 1, 0.04),
            ("b", RAW, 0, 0.01),
            ("b", RAW, 1, 0.01),
            ("b", "isotonic", 0, 0.05),
            ("b", "isotonic", 1, 0.03),
        ]
    )
    md = boosting_markdown(rows)
    assert "| Dataset | raw | isotonic |" in md
    # mean ± sample std over the two seeds, ECE in %
    assert "| a | 11.00 ± 1.41 | 3.00 ± 1.41 |" in md
    assert "| b | 1.00 ± 0.00 | 4.00 ± 1.41 |" in md
    assert "**" not in md
    for title in ("Test ECE (%)", "Test NLL", "Test Brier"):
        assert title in md


def _change_rows(spec):
    """Rows with given NLL and paired log-loss changes: (dataset, model,
    calibrator, nll, change, se)."""
    rows = []
    for ds, model, cal, nll, change, se in spec:
        row = {"dataset": ds, "model": model, "calibrator": cal, "seed": 0}
        row.update(dict.fromkeys(METRICS, 0.1), n_train=100, nll=nll)
        row.update(
            nll_change=change,
            nll_change_low=change - 1.96 * se,
            nll_change_high=change + 1.96 * se,
            nll_change_se=se,
        )
        rows.append(row)
    return rows


def test_paired_change_is_the_mean_row_difference_with_its_normal_interval():
    rng = np.random.default_rng(0)
    raw = rng.exponential(0.5, 400)
    cal = raw * 0.9 + rng.normal(0, 0.05, 400)
    change, low, high, se = tabular._paired_change(cal, raw)
    diff = cal - raw
    assert change == pytest.approx(diff.mean() / raw.mean())
    assert se == pytest.approx(diff.std(ddof=1) / np.sqrt(400) / raw.mean())
    assert low == pytest.approx(change - 1.96 * se)
    assert high == pytest.approx(change + 1.96 * se)
    assert low < change < high < 0  # a clear improvement


def test_change_tables_mark_only_what_the_interval_supports():
    rows = _change_rows(
        [
            ("a", "hgb", RAW, 0.50, 0.0, 0.0),
            ("a", "hgb", "temperature", 0.40, -0.20, 0.02),  # better
            ("a", "hgb", "isotonic", 0.60, 0.20, 0.02),  # worse
            ("a", "hgb", "auto", 0.49, -0.02, 0.05),  # not distinguishable
        ]
    )
    md = boosting_markdown(rows)
    assert "| a | 0.5000 |  | -20.0 [-23.9, -16.1] ▼ | +20.0 [+16.1, +23.9] ▲ |" in md
    assert "| -2.0 [-11.8, +7.8] |" in md
    scores = calibrator_scores(rows)
    assert scores["temperature"]["better"] == 1 and scores["temperature"]["worse"] == 0
    assert scores["isotonic"]["worse"] == 1
    assert scores["auto"]["better"] == scores["auto"]["worse"] == 0
    assert scores["temperature"]["ratio"] == pytest.approx(0.8)
    assert scores["temperature"]["mean_rank"] == 1
    assert scores[RAW]["mean_rank"] == 3
    summary = boosting_summary(rows)
    # one cell: a line of its own, the lowest calibrator and auto beside raw
    assert "| a | hgb | 0.5000 |  | temperature -20.0 [-23.9, -16.1] ▼ |" in summary
    assert "-2.0 [-11.8, +7.8] |" in summary


def _prior_rows(spec):
    """Rows with a prior: (dataset, calibrator, seed, nll, nll_vs_prior, se)."""
    rows = []
    for ds, cal, seed, nll, vs_prior, se in spec:
        row = {"dataset": ds, "model": "hgb", "calibrator": cal, "seed": seed}
        row.update(dict.fromkeys(METRICS, 0.1), n_train=100, nll=nll)
        change = 0.0 if cal == RAW else (nll - 0.30) / 0.30
        row.update(
            nll_change=change,
            nll_change_low=change - 0.01,
            nll_change_high=change + 0.01,
            nll_change_se=0.005,
            prior_nll=0.25,
            nll_vs_prior=vs_prior,
            nll_vs_prior_se=se,
        )
        rows.append(row)
    return rows


def test_cells_no_better_than_the_prior_are_flagged_and_not_counted():
    # lending_club's booster is worse than the prior; a calibrator that only
    # brings it back to the prior "wins" against raw but is flagged, and the
    # cell leaves the win table
    rows = _prior_rows(
        [
            ("lc", RAW, 0, 0.30, 0.05, 0.01),
            ("lc", RAW, 1, 0.30, 0.05, 0.01),
            ("lc", "sms", 0, 0.25, 0.00, 0.01),
            ("lc", "sms", 1, 0.25, -0.001, 0.01),
            ("ok", RAW, 0, 0.20, -0.05, 0.01),
            ("ok", RAW, 1, 0.20, -0.05, 0.01),
            ("ok", "sms", 0, 0.18, -0.07, 0.01),
            ("ok", "sms", 1, 0.18, -0.07, 0.01),
        ]
    )
    assert chance_cells(rows) == [("lc", "hgb")]
    md = boosting_markdown(rows)
    line = next(ln for ln in md.splitlines() if ln.startswith("| lc | 0.3000"))
    assert line.startswith("| lc | 0.3000 ⚠ | 0.2500 |") and line.endswith("⚠ |")
    ok = next(ln for ln in md.splitlines() if ln.startswith("| ok | 0.2000"))
    assert "⚠" not in ok
    assert "Left out, their raw model at chance (⚠): lc/hgb." in md
    assert calibrator_scores(rows)["sms"]["cells"] == 1
    # the same rule in the csv's columns: the seeds' standard errors combine
    stats = tabular_tables._stats(rows)
    low, high = stats["lc", "hgb", "sms"]["nll_vs_prior"][1:]
    se = np.sqrt(2 * 0.01**2) / 2
    assert high == pytest.approx(-0.0005 + 1.96 * se) and low < 0 < high


def test_run_boosting_measures_the_prior():
    rows = run_boosting("breast_cancer", 0, calibrators=["temperature"])
    data = load_dataset("breast_cancer", random_state=0)
    freq = np.bincount(data.y_train) / len(data.y_train)
    prior = -np.log(freq[data.y_test]).mean()
    for row in rows:
        assert row["prior_nll"] == pytest.approx(prior)
        assert row["nll_vs_prior"] == pytest.approx(row["nll"] - prior, abs=1e-9)
        assert row["nll_vs_prior"] < 0  # a useful model on breast cancer


def test_summary_of_many_cells_is_the_table_across_them():
    spec = [
        (f"d{i}", "hgb", c, 0.5 - 0.1 * (c != RAW), -0.2 * (c != RAW), 0.01)
        for i in range(7)
        for c in (RAW, "temperature")
    ]
    summary = boosting_summary(_change_rows(spec))
    assert "across 7 (dataset, model) cells" in summary
    assert len(summary.splitlines()) <= 10


def test_auto_check_against_the_hindsight_best():
    rows = _change_rows(
        [
            ("a", "hgb", RAW, 0.50, 0.0, 0.0),
            ("a", "hgb", "temperature", 0.40, -0.2, 0.01),
            ("a", "hgb", "isotonic", 0.45, -0.1, 0.01),
            ("a", "hgb", "auto", 0.41, -0.18, 0.01),
            ("b", "hgb", RAW, 0.20, 0.0, 0.0),
            ("b", "hgb", "temperature", 0.25, 0.25, 0.01),
            ("b", "hgb", "isotonic", 0.10, -0.5, 0.01),
            ("b", "hgb", "auto", 0.22, 0.1, 0.01),  # significantly worse
        ]
    )
    check = auto_check(rows)
    assert check["cells"] == 2
    assert check["worse_cells"] == [("b", "hgb")]
    # geometric means over the cells: temperature sqrt(.40 * .25), isotonic
    # sqrt(.45 * .10): isotonic is the single best with hindsight
    assert check["best"] == "isotonic"
    expected = np.sqrt((0.41 / 0.45) * (0.22 / 0.10)) - 1
    assert check["excess"] == pytest.approx(expected)
    assert auto_check(_change_rows([("a", "hgb", RAW, 0.5, 0.0, 0.0)])) is None


def test_run_boosting_compares_base_models_paired_with_their_raw_rows():
    rows = run_boosting(
        "breast_cancer", 0, calibrators=["temperature"], models=["hgb", "logreg"]
    )
    assert [(r["model"], r["calibrator"]) for r in rows] == [
        ("hgb", RAW),
        ("hgb", "temperature"),
        ("logreg", RAW),
        ("logreg", "temperature"),
    ]
    for raw, cal in (rows[:2], rows[2:]):
        assert raw["nll_change"] == 0.0
        # the relative change is the NLL ratio minus one (same test rows)
        assert cal["nll_change"] == pytest.approx(cal["nll"] / raw["nll"] - 1, rel=1e-9)
        assert cal["nll_change_low"] < cal["nll_change"] < cal["nll_change_high"]


@pytest.mark.slow
def test_tabular_suite_end_to_end_on_a_subsample(tmp_path):
    argv = ["benchmark", "--suite", "tabular", "--datasets", "cells,lending_club"]
    argv += ["--losses", "ce", "--seeds", "2", "--epochs", "2", "--max-train", "300"]
    argv += ["--hessian-samples", "0", "--n-jobs", "1", "--out", str(tmp_path)]
    argv += ["--models", "hgb,logreg"]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(argv) == 0
    out = (tmp_path / "latest").resolve()  # the run's own folder
    with open(out / "boosting.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    calibrators = [RAW, *available_calibrators()]
    assert [(r["dataset"], r["seed"], r["model"], r["calibrator"]) for r in rows] == [
        (d, str(s), m, c)
        for d in ("cells", "lending_club")
        for s in (0, 1)
        for m in ("hgb", "logreg")
        for c in calibrators
    ]
    assert {r["n_train"] for r in rows} == {"300"}
    for row in rows:
        assert all(math.isfinite(float(row[k])) for k in METRICS)
    md = (out / "results.md").read_text()
    assert "## Post-hoc calibrators on tabular models" in md
    assert "### hgb: test log-loss change (%)" in md
    assert "### logreg: test log-loss change (%)" in md
    assert "at most 300 training rows of cells, 300 training rows of lending_club" in md
    assert "| cells |" in md and "| lending_club |" in md
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == [
        "reliability_boosting_cells.png",
        "reliability_boosting_lending_club.png",
        "reliability_cells.png",
        "reliability_lending_club.png",
    ]
    printed = stdout.getvalue()
    # the main job's table first, then the post-hoc calibrators, then where
    # the files are; every line within 100 columns but those naming the
    # output folder, whose length is the caller's (pytest-xdist's is long)
    nets = printed.index("Test ECE (%) before/after temperature scaling")
    posthoc = printed.index("Post-hoc calibrators:")
    assert nets < posthoc < printed.index("boosting.csv")
    ours = [line for line in printed.splitlines() if str(tmp_path) not in line]
    assert max(map(len, ours)) <= 100


def test_binary_only_calibrators_are_left_out_on_multiclass_sets():
    from sklcalib.benchmark.tabular import available_calibrators, run_boosting

    binary_only = ["quadratic", "beta"]
    assert set(binary_only) <= set(available_calibrators())
    rows = run_boosting("wine", 0, calibrators=["temperature", *binary_only])
    assert [r["calibrator"] for r in rows] == ["none", "temperature"]
    rows = run_boosting("breast_cancer", 0, calibrators=binary_only)
    assert [r["calibrator"] for r in rows] == ["none", *binary_only]


def test_help_lists_only_the_calibrators_this_installation_has(capsys, monkeypatch):
    import sklcalib.benchmark.tabular as tabular

    _without_netcal(monkeypatch)
    try:
        main(["benchmark", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert "beta_netcal" not in text
    assert ", ".join(tabular.available_calibrators()) in text


def test_frozen_scores_are_computed_once_per_array():
    # every calibrator of the table asks the frozen model for the same arrays'
    # scores: the model is asked once per array, each caller gets a copy, and
    # the wrapper has exactly the model's score methods
    from sklearn.naive_bayes import GaussianNB
    from sklearn.tree import DecisionTreeClassifier

    from sklcalib.benchmark.tabular import _FrozenWithScores

    X, y = np.random.default_rng(0).normal(size=(60, 3)), np.arange(60) % 2
    calls = []

    class Counting(DecisionTreeClassifier):
        def predict_proba(self, X):
            calls.append(id(X))
            return super().predict_proba(X)

    model = Counting(max_depth=2, random_state=0).fit(X, y)
    frozen = _FrozenWithScores(model)
    first = frozen.predict_proba(X)
    first[:] = -1.0  # a caller's own copy
    np.testing.assert_array_equal(frozen.predict_proba(X), model.predict_proba(X))
    assert calls.count(id(X)) == 2  # the wrapper's one call and the check's
    assert not hasattr(frozen, "decision_function")
    assert hasattr(_FrozenWithScores(GaussianNB().fit(X, y)), "predict_proba")
    known = _FrozenWithScores(model, {id(X): np.zeros((60, 2))})
    np.testing.assert_array_equal(known.predict_proba(X), 0.0)
