"""A newcomer's own prediction files in ``sklcalib report`` and
``sklcalib.io.read_predictions``: other array and column names, float16 and
structured arrays, a calibrator fitted on a split of one file, the auto
selection's table, the figure's title, and the memory limit taken from what the
process may use."""

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
from _report_files import draw_labels, write_csv
from _report_files import run_report as _run
from scipy.special import softmax

from sklcalib._utils import _memory
from sklcalib.cli import report_command
from sklcalib.io import InputFileError, read_predictions
from sklcalib.metrics import calibration_report, expected_calibration_error

CLASSES = ["cat", "dog", "bird"]


def _draw(n, seed, scale=1.0):
    y, z = draw_labels(n, seed)
    return y, softmax(scale * z, axis=1)


# ----------------------------------------------------------------------------
# names: the arrays and columns of other layouts
# ----------------------------------------------------------------------------
def test_npz_with_its_own_keys(capsys, tmp_path):
    # a published CIFAR-10 file names its arrays labels / probs
    y, p = _draw(400, 0)
    path = tmp_path / "cifar.npz"
    np.savez(path, labels=y, probs=p.astype(np.float32))
    status, _, err = _run(capsys, path)
    assert status == 2 and "--y-true, --scores" in err
    status, out, err = _run(
        capsys, path, "--y-true", "labels", "--scores", "probs", "--json"
    )
    assert status == 0, err
    got = json.loads(out)["report"]
    want = calibration_report(y, p.astype(np.float32), confidence_level=None)
    assert got["ece"] == pytest.approx(want["ece"], abs=1e-6)
    pred = read_predictions(path, y_true="labels", scores="probs")
    assert pred.y.tolist() == y.tolist() and pred.kind == "probabilities"
    # the same names as logits
    np.savez(path, labels=y, z=np.log(p))
    pred = read_predictions(path, y_true="labels", scores="z", logits=True)
    np.testing.assert_allclose(pred.proba, p, rtol=1e-9)


def test_table_with_other_columns_names_its_class_columns(capsys, tmp_path):
    y, p = _draw(300, 1)
    path = tmp_path / "with_id.csv"
    lines = ["row_id,label,cat,dog,bird,comment"] + [
        f"{i},{CLASSES[k]},{float(a)!r},{float(b)!r},{float(c)!r},x"
        for i, (k, (a, b, c)) in enumerate(zip(y, p, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
    status, out, err = _run(
        capsys, path, "--y-true", "label", "--scores", "cat,dog,bird", "--json"
    )
    assert status == 0, err
    assert json.loads(out)["classes"] == CLASSES
    pred = read_predictions(path, y_true="label", scores=["cat", "dog", "bird"])
    np.testing.assert_allclose(pred.scores, p, rtol=1e-12)
    with pytest.raises(InputFileError, match="no column 'cow'"):
        read_predictions(path, y_true="label", scores=["cat", "cow"])
    with pytest.raises(InputFileError, match="give a list of column names"):
        read_predictions(path, y_true="label", scores="cat")
    with pytest.raises(ValueError, match="y_true must be a non-empty str"):
        read_predictions(path, y_true=3)


# ----------------------------------------------------------------------------
# dtypes and layouts that were refused
# ----------------------------------------------------------------------------
def test_float16_files_are_held_to_float16_round_off(capsys, tmp_path):
    # float16 rows sum to 1 only within about 1e-3: they were refused against
    # float64's tolerance; each is held to its own dtype now
    y, p = _draw(500, 2)
    p16 = p.astype(np.float16)
    assert np.abs(p16.astype(np.float64).sum(axis=1) - 1).max() > 1e-4
    npy = tmp_path / "half.npy"
    np.save(npy, np.column_stack([y, p16]).astype(np.float16))
    npz = tmp_path / "half.npz"
    np.savez(npz, y_true=y, y_prob=p16)
    for path in (npy, npz):
        status, out, err = _run(capsys, path, "--json", "--no-intervals")
        assert status == 0, (path, err)
        got = json.loads(out)["report"]["ece"]
        assert got == pytest.approx(expected_calibration_error(y, p), abs=2e-3)
        # rows in float64 summing to 1, for every function of the library
        pred = read_predictions(path)
        np.testing.assert_allclose(pred.scores.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert np.abs(pred.scores - p).max() < 2e-3
    # rows that do not sum to 1 even in float16 are still refused
    bad = (p16 * np.float16(0.9)).astype(np.float16)
    np.savez(npz, y_true=y, y_prob=bad)
    with pytest.raises(InputFileError, match="sum to 1"):
        read_predictions(npz)


def test_structured_npy_with_integer_labels_as_in_an_npz(capsys, tmp_path):
    y, p = _draw(300, 3)
    table = np.zeros(len(y), dtype=[("y_true", "i8")] + [(c, "f8") for c in CLASSES])
    table["y_true"] = y
    for k, c in enumerate(CLASSES):
        table[c] = p[:, k]
    path = tmp_path / "table.npy"
    np.save(path, table)
    npz = tmp_path / "same.npz"
    np.savez(npz, y_true=y, y_prob=p, classes=np.array(CLASSES))
    a, b = read_predictions(path), read_predictions(npz)
    assert a.classes == b.classes == CLASSES
    assert a.y.tolist() == b.y.tolist() == y.tolist()
    assert _run(capsys, path, "--no-intervals")[0] == 0
    # labels that name a class are matched by name, as before; a mix of names
    # and numbers is an error, not a guess
    labels = np.array([*CLASSES, "0"])[np.r_[y[:-1], 3]]
    mixed = np.zeros(len(y), dtype=[("y_true", "U4")] + [(c, "f8") for c in CLASSES])
    mixed["y_true"] = labels
    for k, c in enumerate(CLASSES):
        mixed[c] = p[:, k]
    np.save(path, mixed)
    with pytest.raises(InputFileError, match="match no class column: '0'"):
        read_predictions(path)


def test_integer_labels_beyond_the_columns_are_refused(tmp_path):
    y, p = _draw(50, 4)
    path = tmp_path / "t.csv"
    write_csv(path, y, p, CLASSES)
    text = path.read_text().splitlines()
    body = [
        f"{k + 5}," + ln.split(",", 1)[1] for k, ln in zip(y, text[1:], strict=True)
    ]
    path.write_text("\n".join([text[0], *body]) + "\n")
    with pytest.raises(InputFileError, match="match no class column"):
        read_predictions(path)
    body = [f"{k}," + ln.split(",", 1)[1] for k, ln in zip(y, text[1:], strict=True)]
    path.write_text("\n".join([text[0], *body]) + "\n")
    assert read_predictions(path).y.tolist() == y.tolist()


def test_nullable_float64_parquet(capsys, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    y, p = _draw(200, 5)
    frame = pd.DataFrame(
        {c: pd.array(p[:, k], dtype="Float64") for k, c in enumerate(CLASSES)}
    )
    frame.insert(0, "y_true", pd.array(y, dtype="Int64"))
    path = tmp_path / "nullable.parquet"
    frame.to_parquet(path)
    pred = read_predictions(path)
    assert pred.y.tolist() == y.tolist()
    np.testing.assert_allclose(pred.scores, p, rtol=1e-12)
    frame.loc[7, "dog"] = pd.NA
    frame.to_parquet(path)
    status, _, err = _run(capsys, path)
    assert status == 2 and "class 'dog'" in err and "row 8" in err


# ----------------------------------------------------------------------------
# --calibrate on one file
# ----------------------------------------------------------------------------
def test_calibrate_on_a_seeded_split_of_one_file(capsys, tmp_path):
    y, p = _draw(2000, 6, scale=2.5)  # over-confident by a temperature of 2.5
    path = write_csv(tmp_path / "preds.csv", y, p, CLASSES)
    status, out, err = _run(capsys, path, "--calibrate", "temperature", "--json")
    assert status == 0, err
    got = json.loads(out)
    split = got["calibration"]["split"]
    assert split == {"fit_fraction": 0.5, "seed": 0, "n_fit": 1000, "n_report": 1000}
    assert got["n_samples"] == 2000
    assert got["calibration"]["fitted"]["temperature_"] == pytest.approx(2.5, rel=0.15)
    assert got["calibration"]["report"]["ece"] < got["report"]["ece"]
    # the same seed gives the same numbers; another seed another split
    again = json.loads(_run(capsys, path, "--calibrate", "temperature", "--json")[1])
    assert again["calibration"]["fitted"] == got["calibration"]["fitted"]
    other = json.loads(
        _run(
            capsys,
            path,
            "--calibrate",
            "temperature",
            "--json",
            "--split-seed",
            "3",
            "--fit-fraction",
            "0.3",
        )[1]
    )
    assert other["calibration"]["split"]["n_fit"] == 600
    assert other["calibration"]["fitted"] != got["calibration"]["fitted"]
    # the printed header says where the calibrator was fitted
    status, out, _ = _run(capsys, path, "--calibrate", "temperature", "--no-intervals")
    assert "fitted on 1000 rows of" in " ".join(out.split())
    assert "the report is on the other 1000 rows" in " ".join(out.split())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fit-on", "x.csv"], "--fit-on goes with --calibrate"),
        (["--fit-fraction", "0.3"], "--fit-fraction goes with --calibrate"),
        (
            ["--calibrate", "temperature", "--fit-on", "x.csv", "--split-seed", "1"],
            "split PATH when there is no --fit-on",
        ),
        (["--calibrate", "temperature", "--fit-fraction", "1.5"], "must be in (0, 1)"),
    ],
)
def test_split_options_usage(capsys, tmp_path, argv, message):
    y, p = _draw(100, 7)
    path = write_csv(tmp_path / "p.csv", y, p, CLASSES)
    status, _, err = _run(capsys, path, *argv)
    assert status == 2 and message in err


def test_a_split_of_too_few_rows_says_so(capsys, tmp_path):
    path = write_csv(
        tmp_path / "tiny.csv", np.array([0, 1, 2]), np.eye(3) * 0.7 + 0.1, CLASSES
    )
    status, _, err = _run(capsys, path, "--calibrate", "temperature")
    assert status == 2 and "cannot be split" in err and "--fit-on" in err


# ----------------------------------------------------------------------------
# --calibrate auto: the winner named, the rule checkable from the table
# ----------------------------------------------------------------------------
@pytest.mark.slow
def test_auto_names_the_winner_and_prints_the_numbers_of_its_rule(capsys, tmp_path):
    val = write_csv(tmp_path / "val.csv", *_draw(1500, 8, scale=2.5), CLASSES)
    test = write_csv(tmp_path / "test.csv", *_draw(800, 9, scale=2.5), CLASSES)
    status, out, err = _run(
        capsys, test, "--calibrate", "auto", "--fit-on", val, "--no-intervals"
    )
    assert status == 0, err
    head = " ".join(out.split())
    assert "auto chose temperature (temperature 2." in head
    assert "after auto (temperature)" in out
    header = next(ln for ln in out.splitlines() if ln.startswith("candidate "))
    assert "vs best" in header and "within 1 SE" in header
    status, out, _ = _run(
        capsys, test, "--calibrate", "auto", "--fit-on", val, "--json"
    )
    rows = json.loads(out)["calibration"]["candidates"]
    # the rule, checked from the printed numbers alone: among the candidates
    # within one standard error of the best, the fewest parameters win
    best = next(r for r in rows if r["best"])
    for r in rows:
        if r["mean_log_loss"] is None:
            continue
        assert r["within_one_se"] == (r["vs_best"] <= r["vs_best_se"] + 1e-12)
    within = [r for r in rows if r["within_one_se"]]
    chosen = next(r for r in rows if r["status"] == "chosen")
    assert chosen["n_parameters"] == min(r["n_parameters"] for r in within)
    assert best["vs_best"] == 0.0


def test_selection_table_against_the_best_not_none():
    cv = {
        "candidate": ["passthrough", "temperature", "matrix", "isotonic"],
        "n_parameters": [0, 1, 12, 20],
        "status": ["evaluated", "chosen", "evaluated", "too few rows: 4 < 10"],
        "mean_log_loss": [0.70, 0.60, 0.59, float("nan")],
        "within_one_se": [False, True, True, False],
        "split0_log_loss": [0.71, 0.61, 0.60, float("nan")],
        "split1_log_loss": [0.69, 0.60, 0.58, float("nan")],
        "split2_log_loss": [0.70, 0.59, 0.59, float("nan")],
    }
    rows = report_command.selection_rows(cv)
    assert [r["candidate"] for r in rows] == [
        "matrix",
        "temperature",
        "passthrough",
        "isotonic",
    ]
    temperature = rows[1]
    d = np.array([0.01, 0.02, 0.0])
    assert temperature["vs_best"] == pytest.approx(d.mean())
    assert temperature["vs_best_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(3))
    text = report_command.format_selection(cv)
    assert "best" in text.splitlines()[1] and "+0.0100 ± 0.0058" in text


# ----------------------------------------------------------------------------
# the figure names the file once
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("calibrate", [False, True])
def test_figure_names_the_file_once(tmp_path, calibrate):
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text

    y, p = _draw(300, 10)
    path = write_csv(tmp_path / "my_model_preds.csv", y, p, CLASSES)
    pred = read_predictions(path)
    after = p if calibrate else None
    fig = report_command._plot(tmp_path / "f.png", "png", pred, after, "after x")
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert sum("my_model_preds" in t for t in texts) == 1, texts


# ----------------------------------------------------------------------------
# memory: the limit of what this process may use, read before reading
# ----------------------------------------------------------------------------
def test_budget_reads_meminfo_rlimits_and_cgroups(tmp_path, monkeypatch):
    import resource

    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text("MemTotal: 64000000 kB\nMemAvailable: 32000000 kB\n")
    (proc / "self" / "status").write_text("VmSize:  1048576 kB\nVmData:  524288 kB\n")
    (proc / "self" / "cgroup").write_text("4:memory:/job/7\n0::/app\n")
    cg = tmp_path / "cgroup"
    (cg / "memory" / "job" / "7").mkdir(parents=True)
    (cg / "memory" / "job" / "7" / "memory.limit_in_bytes").write_text(f"{1 << 62}\n")
    (cg / "memory" / "job" / "memory.limit_in_bytes").write_text(f"{20 << 30}\n")
    (cg / "memory" / "job" / "memory.usage_in_bytes").write_text(f"{2 << 30}\n")
    (cg / "app").mkdir()
    (cg / "app" / "memory.max").write_text("max\n")
    budget = _memory.memory_budget(proc=proc, cgroup=cg)
    # unlimited resource limits: the v1 parent's 20 GiB less 2 GiB in use
    assert budget.available == 18 << 30 and "cgroup memory limit" in budget.reason
    (cg / "app" / "memory.max").write_text(f"{8 << 30}\n")
    (cg / "app" / "memory.current").write_text(f"{1 << 30}\n")
    assert _memory.memory_budget(proc=proc, cgroup=cg).available == 7 << 30
    # a 6 GiB address-space limit with 1 GiB mapped binds first
    limits = {resource.RLIMIT_AS: (6 << 30, resource.RLIM_INFINITY)}
    real = resource.getrlimit
    monkeypatch.setattr(
        resource, "getrlimit", lambda which: limits.get(which, real(which))
    )
    budget = _memory.memory_budget(proc=proc, cgroup=cg)
    assert budget.available == 5 << 30
    assert "address-space limit (RLIMIT_AS, ulimit -v) of 6.0 GiB" in budget.reason


def test_default_limit_sets_the_reports_peak_aside(monkeypatch):
    budget = _memory.MemoryBudget(6 << 30, "the address-space limit")
    monkeypatch.setattr(_memory, "memory_budget", lambda **k: budget)
    limit = _memory.data_limit()
    assert limit.max_bytes == ((6 << 30) - _memory.PEAK_FIXED) // _memory.PEAK_FACTOR
    assert "address-space limit" in limit.explanation
    monkeypatch.setattr(_memory, "memory_budget", lambda **k: None)
    assert _memory.default_max_bytes() == 4 << 30


def test_the_reports_peak_is_within_its_budget(tmp_path):
    """The factor the default limit divides by holds: reading a file and
    computing the report (intervals included) peaks below PEAK_FACTOR times
    the scores' float64 size plus PEAK_FIXED (numpy's allocations are traced
    by tracemalloc). benchmarks/bench_report_memory.py measures more shapes."""
    import contextlib
    import io
    import tracemalloc

    from sklcalib.cli import main

    for n, k in ((20_000, 10), (20_000, 2)):
        rng = np.random.default_rng(0)
        p = softmax(2 * rng.normal(size=(n, k)), axis=1)
        y = rng.integers(0, k, size=n)
        path = tmp_path / f"p{k}.npz"
        np.savez(path, y_true=y, y_prob=p)
        main(["report", str(path), "--json"])  # compiled kernels, caches
        tracemalloc.start()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["report", str(path)]) == 0
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak <= _memory.PEAK_FACTOR * n * k * 8 + _memory.PEAK_FIXED, (n, k)


def _deflated_npz(path, n, k):
    """An .npz of n x k float64 zeros written in chunks (a few MB on disk,
    n * k * 8 bytes once read), without holding the array in memory; deflate's
    fastest level (zeros shrink 200-fold even so, in half the CPU time)."""
    header = {"descr": "<f8", "fortran_order": False, "shape": (n, k)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("y_true.npy", "w") as fh:
            np.lib.format.write_array(fh, np.zeros(n, dtype=np.int8))
        with archive.open("y_prob.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, header)
            chunk = np.zeros(1 << 20).tobytes()
            for _ in range(n * k * 8 // len(chunk)):
                fh.write(chunk)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS, /proc")
def test_an_address_space_limit_refuses_a_file_before_reading(tmp_path):
    # 256 MiB of scores fit under the limit, the report's peak on them does
    # not: refused at once, naming the limit (the machine's physical memory
    # used to be the reference, and such a file was read, then ran out)
    path = tmp_path / "inflates.npz"
    _deflated_npz(path, 4 << 20, 8)
    assert path.stat().st_size < 4 << 20
    script = textwrap.dedent(
        f"""
        import resource, sys
        from sklcalib.cli import main
        from sklcalib._utils._memory import _kib_field
        used = _kib_field("/proc/self/status", "VmSize")
        limit = used + (768 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        sys.exit(main(["report", {str(path)!r}]))
        """
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert "refused before reading" in out.stderr
    assert "address-space limit (RLIMIT_AS, ulimit -v)" in out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_auto_is_refused_before_its_fits_when_they_would_not_fit(
    capsys, tmp_path, monkeypatch
):
    # its matrix-type candidates need rows x classes^2: 1000 rows of 3
    # classes need 128 MiB + 3 * 1000 * 9 float64; a budget of 128 MiB + 100
    # kB is too small, one of 129 MiB is not
    y, p = _draw(2000, 11)
    path = write_csv(tmp_path / "p.csv", y, p, CLASSES)
    fixed = _memory.PEAK_FIXED
    small = _memory.MemoryBudget(fixed + 100_000, "the cgroup memory limit")
    monkeypatch.setattr(report_command, "memory_budget", lambda: small)
    status, _, err = _run(capsys, path, "--calibrate", "auto")
    assert status == 2
    assert "--calibrate auto on 1000 rows of 3 classes would take about" in err
    assert "the cgroup memory limit" in err
    # a named calibrator is not held to it
    assert _run(capsys, path, "--calibrate", "temperature", "--no-intervals")[0] == 0


def test_rows_in_the_unit_interval_never_get_a_logits_hint(capsys, tmp_path):
    # rows in [0, 1] that do not sum to 1 are not logits either: the hint used
    # to say "pass --logits", which turns such a file into a confident, wrong
    # report
    y, p = _draw(200, 13)
    path = write_csv(tmp_path / "short.csv", y, 0.8 * p, CLASSES)
    status, _, err = _run(capsys, path)
    assert status == 2 and "sum to 1" in err
    assert "logits" not in err
    # values outside [0, 1] may be logits: there the hint stays
    path = write_csv(tmp_path / "z.csv", y, np.log(p) + 1.0, CLASSES)
    status, _, err = _run(capsys, path)
    assert status == 2 and "--logits" in err


def test_a_one_column_binary_table_says_what_to_give(capsys, tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("y_true,dog\ncat,0.2\ndog,0.9\n")
    status, _, err = _run(capsys, path)
    assert status == 2
    assert "one class column ('dog')" in err and "shape (n,)" in err


# ----------------------------------------------------------------------------
# probabilities written with a few decimals (a spreadsheet, float_format)
# ----------------------------------------------------------------------------
def _rounded_csv(path, y, p, decimals):
    lines = ["y_true," + ",".join(CLASSES)] + [
        CLASSES[k] + "," + ",".join(f"{v:.{decimals}f}" for v in row)
        for k, row in zip(y, p, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("decimals", [6, 4, 2])
def test_rounded_probabilities_are_accepted_and_said(capsys, tmp_path, decimals):
    # they were refused with a hint to pass --logits; calibrated labels drawn
    # from p, so the report on the rounded file must match the exact one
    y, p = _draw(2000, 12)
    path = _rounded_csv(tmp_path / f"r{decimals}.csv", y, p, decimals)
    status, out, err = _run(capsys, path, "--json", "--no-intervals")
    assert status == 0, err
    got = json.loads(out)
    want = expected_calibration_error(y, p)
    assert got["report"]["ece"] == pytest.approx(want, abs=3 * 10.0**-decimals)
    assert any(f"{decimals} decimals" in note for note in got["notes"]), got["notes"]
    status, out, _ = _run(capsys, path, "--no-intervals")
    assert f"note: {path}" in out and "decimals" in out
    with pytest.warns(
        UserWarning, match=f"scores holds probabilities written with {decimals}"
    ):
        pred = read_predictions(path)
    np.testing.assert_allclose(pred.scores.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_logits_is_refused_on_rounded_probabilities(capsys, tmp_path):
    # --logits on a 2-decimal file gave a confident, wrong report (an ECE of
    # 21.6 % where the truth is 6.8 %): refused now, as for exact rows
    y, p = _draw(2000, 14)
    path = _rounded_csv(tmp_path / "r2.csv", y, p, 2)
    status, out, err = _run(capsys, path, "--logits")
    assert status == 2 and out == ""
    assert "these are probabilities" in err
    with pytest.raises(InputFileError, match="these are probabilities"):
        read_predictions(path, logits=True)
