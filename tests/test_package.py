import subprocess
import sys

import sklcalib


def test_version_is_a_string():
    assert isinstance(sklcalib.__version__, str)
    assert sklcalib.__version__.count(".") == 2


def test_import_is_lazy():
    # ``import sklcalib`` must not pull in torch, skorch, numba or netcal.
    code = (
        "import sys, sklcalib; "
        "heavy = [m for m in ('torch', 'skorch', 'numba', 'netcal') "
        "if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_unknown_attribute_raises():
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        sklcalib.no_such_name  # noqa: B018


def test_no_reference_to_a_file_outside_the_repository():
    """Docstrings, docs and tests state facts; they cite no unshipped file."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    unshipped = "DES" + "IGN.md"  # in two parts, so this file does not match
    skip = {"_build", "auto_examples", "generated", "__pycache__"}
    files = [root / "README.md"]
    for folder in ("docs", "sklcalib", "tests", "examples", "benchmarks"):
        files += [
            p
            for p in (root / folder).rglob("*")
            if p.suffix in {".py", ".rst", ".md", ".txt"}
            and not skip.intersection(p.parts)
        ]
    hits = [
        f"{p.relative_to(root)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if unshipped in line
    ]
    assert hits == []


def test_command_line_version():
    out = subprocess.run(
        [sys.executable, "-m", "sklcalib", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"sklcalib {sklcalib.__version__}"
