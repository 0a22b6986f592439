"""Modules that were renamed for what they hold keep their old import paths
working, with a FutureWarning that names the new home."""

import ast
import importlib
from pathlib import Path

import pytest

MOVED = [
    ("sklcalib.benchmark.report", "markdown_report", "sklcalib.benchmark.tables"),
    ("sklcalib.benchmark.report", "significance_marks", "sklcalib.benchmark.tables"),
    ("sklcalib.benchmark.report", "plot_reliability", "sklcalib.benchmark.figures"),
    ("sklcalib.cli.report", "run_report", "sklcalib.cli.report_command"),
    ("sklcalib.cli.report", "CALIBRATORS", "sklcalib.calibration"),
    ("sklcalib.cli.benchmark", "run_benchmark", "sklcalib.cli.benchmark_command"),
    ("sklcalib.cli.readers", "read_predictions", "sklcalib.io"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_an_old_path_returns_the_new_object_and_says_where(old, name, new):
    module = importlib.import_module(old)
    with pytest.warns(FutureWarning, match=rf"moved to {new}\.{name};"):
        found = getattr(module, name)
    assert found is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize("old", sorted({old for old, _, _ in MOVED}))
def test_an_old_path_has_no_other_names(old):
    with pytest.raises(AttributeError, match="no_such_name"):
        importlib.import_module(old).no_such_name  # noqa: B018


def _imported_modules(path):
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_nothing_in_the_repository_imports_an_old_path():
    root = Path(__file__).resolve().parents[1]
    olds = {old for old, _, _ in MOVED}
    offending = [
        str(path.relative_to(root))
        for folder in ("sklcalib", "benchmarks", "examples", "docs")
        for path in (root / folder).rglob("*.py")
        if _imported_modules(path) & olds
    ]
    assert offending == []
