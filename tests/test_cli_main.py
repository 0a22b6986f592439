"""The ``sklcalib`` entry point: where it lives, what it dispatches, and that
the command line is the top layer (nothing below imports it)."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import sklcalib
from sklcalib.cli import main
from sklcalib.cli.main import COMMANDS, build_parser, missing_extra_message

ROOT = Path(__file__).resolve().parents[1]


def test_console_script_and_python_dash_m_point_at_the_cli_package():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"sklcalib": "sklcalib.cli:main"}
    module, _, name = scripts["sklcalib"].partition(":")
    assert getattr(__import__(module, fromlist=[name]), name) is main
    # -X importtime: stderr names every module the process imported
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sklcalib", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        out.returncode == 0 and out.stdout.strip() == f"sklcalib {sklcalib.__version__}"
    )
    # no command runs, so no command's module (nor scikit-learn) is imported
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    assert "sklcalib.cli.main" in imported
    assert not imported & {module for module, _, _ in COMMANDS.values()}
    assert "sklearn" not in imported


def _subparsers(parser):
    return next(a for a in parser._actions if a.dest == "command").choices


def test_each_command_has_its_module():
    handlers = {
        name: p.get_default("handler").__module__
        for name, p in _subparsers(build_parser()).items()
    }
    assert handlers == {
        "benchmark": "sklcalib.cli.benchmark_command",
        "report": "sklcalib.cli.report_command",
    }


def test_a_parser_for_one_command_lists_the_others_by_their_summary(capsys):
    parser = build_parser("report")
    commands = _subparsers(parser)
    assert commands["report"].get_default("handler").__name__ == "run_report"
    assert commands["benchmark"].get_default("handler") is None
    parser.print_help()
    out = " ".join(capsys.readouterr().out.split())
    for _, _, summary in COMMANDS.values():
        assert summary in out


def _imports_of(path):
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_nothing_below_the_command_line_imports_it():
    offending = []
    for path in (ROOT / "sklcalib").rglob("*.py"):
        relative = path.relative_to(ROOT / "sklcalib")
        if relative.parts[0] == "cli" or relative.name == "__main__.py":
            continue
        if any(m.startswith("sklcalib.cli") for m in _imports_of(path)):
            offending.append(str(relative))
    assert offending == []


@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("tqdm", "torch"),
        ("numba", "fast"),
        ("pyarrow", "parquet"),
        ("netcal", "netcal"),
    ],
)
def test_missing_extra_message_names_the_extra(module, extra):
    exc = ModuleNotFoundError(f"No module named '{module}'", name=module)
    message = missing_extra_message(exc)
    assert f'pip install "sklcalib[{extra}]"' in message and module in message


def test_a_missing_module_of_sklcalib_is_not_an_extra():
    exc = ModuleNotFoundError("No module named 'sklcalib.gone'", name="sklcalib.gone")
    assert missing_extra_message(exc) is None


def test_no_command_prints_help_and_returns_2(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert "benchmark" in out and "report" in out
