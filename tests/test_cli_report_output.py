"""What ``sklcalib report`` prints and writes: the figure's real path, the
calibrators this installation has, a missing extra in one line, the MCE's bin
count, significant digits, the verdict first, intervals that can be turned
off, and 100 columns."""

import os
import re

import numpy as np
import pytest
from scipy.special import softmax

from sklcalib.cli import main
from sklcalib.cli import report_command as report_module
from sklcalib.cli.main import build_parser
from sklcalib.metrics import calibration_report


def _run(capsys, *argv):
    status = main(["report", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def scores_csv(tmp_path):
    rng = np.random.default_rng(0)
    z = 1.5 * rng.normal(size=(600, 3))
    p = softmax(z, axis=1)
    y = (rng.random(600)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    q = softmax(2.5 * z, axis=1)
    lines = ["y_true,cat,dog,bird"] + [
        f"{'cat dog bird'.split()[k]}," + ",".join(repr(float(v)) for v in row)
        for k, row in zip(y, q, strict=True)
    ]
    path = tmp_path / "test.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


# ----------------------------------------------------------------------------
# --plot
# ----------------------------------------------------------------------------
def test_plot_without_suffix_prints_the_path_written(capsys, tmp_path, scores_csv):
    pytest.importorskip("matplotlib")
    target = tmp_path / "figure"
    status, out, err = _run(capsys, scores_csv, "--plot", target)
    assert status == 0, err
    written = tmp_path / "figure.png"
    assert written.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not target.exists()
    assert _printed_path(written, out)


def test_plot_pdf_is_a_pdf(capsys, tmp_path, scores_csv):
    pytest.importorskip("matplotlib")
    target = tmp_path / "figure.pdf"
    assert _run(capsys, scores_csv, "--plot", target)[0] == 0
    assert target.read_bytes()[:5] == b"%PDF-"


def test_plot_unknown_suffix_is_refused(capsys, tmp_path, scores_csv):
    pytest.importorskip("matplotlib")
    status, out, err = _run(capsys, scores_csv, "--plot", tmp_path / "fig.docx")
    assert status == 2 and out == "" and "unknown image type '.docx'" in err
    assert list(tmp_path.glob("fig*")) == []


@pytest.mark.skipif(os.name != "posix", reason="needs /dev/null")
def test_plot_never_writes_at_or_beside_a_device(capsys, tmp_path, scores_csv):
    pytest.importorskip("matplotlib")
    # the device itself (no suffix: the old command wrote /dev/null.png)
    status, _, err = _run(capsys, scores_csv, "--plot", os.devnull)
    assert status == 2 and "not a regular file" in err
    assert not os.path.exists(os.devnull + ".png")
    # an image path that is a link to a device
    link = tmp_path / "fig.png"
    link.symlink_to(os.devnull)
    status, _, err = _run(capsys, scores_csv, "--plot", link)
    assert status == 2 and "not a regular file" in err
    # a folder
    status, _, err = _run(capsys, scores_csv, "--plot", tmp_path)
    assert status == 2 and "a directory" in err


def test_plot_into_a_missing_folder_is_one_line(capsys, tmp_path, scores_csv):
    pytest.importorskip("matplotlib")
    status, _, err = _run(capsys, scores_csv, "--plot", tmp_path / "no" / "f.png")
    assert status == 2 and err.count("\n") == 1 and "cannot write" in err


# ----------------------------------------------------------------------------
# calibrators and extras
# ----------------------------------------------------------------------------
def _calibrate_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    report = sub.choices["report"]
    return next(a.help for a in report._actions if a.dest == "calibrate")


def _without_netcal(monkeypatch):
    import sklcalib.calibration._registry as registry

    real = report_module.is_installed
    for module in (report_module, registry):
        monkeypatch.setattr(module, "is_installed", lambda m: m != "netcal" and real(m))


def test_help_lists_only_the_calibrators_this_installation_has(monkeypatch):
    _without_netcal(monkeypatch)
    text = _calibrate_help()
    assert "temperature" in text and "isotonic" in text
    for name in ("bbq", "enir", "beta_netcal"):
        assert name not in text.split(": ", 1)[1].split(", ")


def test_a_calibrator_without_its_extra_is_one_line(capsys, monkeypatch, scores_csv):
    _without_netcal(monkeypatch)
    status, out, err = _run(
        capsys, scores_csv, "--calibrate", "beta_netcal", "--fit-on", scores_csv
    )
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert 'needs the optional dependency netcal: pip install "sklcalib[netcal]"' in err


def test_a_missing_module_inside_the_report_is_one_line(
    capsys, monkeypatch, scores_csv
):
    def needs_numba(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'numba'", name="numba")

    monkeypatch.setattr(report_module, "calibration_report", needs_numba)
    status, out, err = _run(capsys, scores_csv)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert 'pip install "sklcalib[fast]"' in err


def test_a_bug_is_not_hidden_as_a_missing_extra(monkeypatch, scores_csv):
    def broken(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'sklcalib.nothing'", name="x")

    monkeypatch.setattr(report_module, "calibration_report", broken)
    with pytest.raises(ModuleNotFoundError):
        main(["report", str(scores_csv)])


# ----------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------
def test_mce_shows_the_count_of_its_bin(capsys, tmp_path):
    # 2 000 calibrated rows, and 3 rows alone at confidence 0.55 that are all
    # wrong: the MCE (45 %) comes from a bin of 3 rows
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.7, 1.0, size=2000)
    y = (rng.random(2000) > conf).astype(int)  # class 0 right with prob conf
    p = np.column_stack([conf, 1 - conf])
    p = np.vstack([p, [[0.55, 0.45]] * 3])
    y = np.concatenate([y, [1, 1, 1]])
    path = tmp_path / "p.npz"
    np.savez(path, y_true=y, y_prob=p)
    status, out, err = _run(capsys, path)
    assert status == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("MCE (%)"))
    assert "55.00 (bin of 3)" in line
    want = calibration_report(y, p)["mce"]
    assert float(line.split()[2]) == pytest.approx(100 * want, abs=0.006)


def test_skce_has_significant_digits(capsys, scores_csv, monkeypatch):
    def tiny_skce(*args, **kwargs):
        report = calibration_report(*args, **kwargs)
        report["skce"] = 2.345e-5
        return report

    monkeypatch.setattr(report_module, "calibration_report", tiny_skce)
    status, out, _ = _run(capsys, scores_csv)
    assert status == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("SKCE"))
    assert line.split()[-1] == "2.35e-05"


def test_verdict_is_printed_first(capsys, scores_csv, monkeypatch):
    def with_verdict(*args, **kwargs):
        report = calibration_report(*args, **kwargs)
        report["verdict"] = "over-confident: ECE 4.1 % [2.9, 5.3]"
        return report

    monkeypatch.setattr(report_module, "calibration_report", with_verdict)
    status, out, _ = _run(capsys, scores_csv)
    assert status == 0
    lines = out.splitlines()
    at = lines.index("verdict: over-confident: ECE 4.1 % [2.9, 5.3]")
    assert lines[at + 1].startswith("metric")  # first, right above the table


@pytest.mark.parametrize("argv", [["--no-intervals"], ["--confidence-level", "none"]])
def test_intervals_can_be_turned_off(capsys, scores_csv, monkeypatch, argv):
    seen = {}

    def spy(*args, confidence_level="library default", **kwargs):
        seen["level"] = confidence_level
        return calibration_report(*args, **kwargs)

    monkeypatch.setattr(report_module, "calibration_report", spy)
    assert _run(capsys, scores_csv, *argv)[0] == 0
    assert seen["level"] is None
    # without the option the library's default applies
    assert _run(capsys, scores_csv)[0] == 0
    assert seen["level"] == "library default"
    assert _run(capsys, scores_csv, "--confidence-level", "0.9")[0] == 0
    assert seen["level"] == 0.9


def test_bad_confidence_level_is_a_usage_error(capsys, scores_csv):
    status, _, err = _run(capsys, scores_csv, "--confidence-level", "1.5")
    assert status == 2 and "(0, 1) or 'none'" in err


def test_everything_fits_100_columns_with_intervals_and_a_long_path(
    capsys, tmp_path, scores_csv, monkeypatch
):
    def wide(*args, **kwargs):
        kwargs.pop("confidence_level", None)
        report = calibration_report(*args, **kwargs)
        for key in ("ece", "adaptive_ece", "classwise_ece", "smooth_ece", "nll"):
            report[f"{key}_ci"] = (report[key] / 2, report[key] * 2)
        report["verdict"] = "over-confident: " + "very " * 30 + "much"
        return report

    monkeypatch.setattr(report_module, "calibration_report", wide)
    folder = tmp_path / ("long-folder-name-" * 3)
    folder.mkdir()
    path = folder / "predictions.csv"
    path.write_text(scores_csv.read_text())
    status, out, err = _run(
        capsys, path, "--calibrate", "scaling_binning", "--fit-on", path
    )
    assert status == 0, err
    lines = [ln for ln in out.splitlines() if str(path) not in ln]
    assert max(map(len, lines)) <= 100, out
    assert "|" not in out and "**" not in out


def _printed_path(path, out):
    # a long path goes on its own line to keep the output within 100 columns
    return re.search(r"reliability diagram:\s+" + re.escape(str(path)) + r"\n", out)
