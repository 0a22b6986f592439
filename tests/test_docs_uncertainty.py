"""The uncertainty guide names, for every calibration error of the package,
the population quantity it estimates (an interval is only meaningful for a
named quantity)."""

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs/user_guide/uncertainty.rst"

ERRORS = [
    "expected_calibration_error",
    "adaptive_calibration_error",
    "classwise_calibration_error",
    "maximum_calibration_error",
    "debiased_calibration_error",
    "ece_sweep",
    "smooth_calibration_error",
    "kernel_calibration_error",
]


def _section(title):
    text = GUIDE.read_text()
    match = re.search(rf"\n{re.escape(title)}\n-+\n(.*?)\n[^\n]+\n-+\n", text, re.S)
    assert match, f"no section {title!r} in {GUIDE.name}"
    return match.group(1)


@pytest.mark.parametrize("name", ERRORS)
def test_every_error_has_its_population_value(name):
    assert f":func:`{name}`" in _section("What each error estimates")


@pytest.mark.parametrize("norm", ["l2", "max"])
def test_every_norm_of_the_binned_error_has_its_population_value(norm):
    assert f'``norm="{norm}"``' in _section("What each error estimates")


def _table(caption_start):
    text = GUIDE.read_text()
    at = text.index(f".. csv-table:: {caption_start}")
    block = text[at:].split("\n\n", 2)[1]
    rows = [
        [cell.strip().strip('"') for cell in line.split('",')]
        for line in block.splitlines()
    ]
    return rows


def _percent(cell):
    return float(cell.rstrip("%"))


INTERVAL_TABLES = GUIDE.parents[1] / "_static/interval_coverage"


def _interval_cells():
    import csv

    with open(INTERVAL_TABLES / "all_cells.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_prose_quotes_the_interval_coverage_tables():
    # the guide's words follow the measured cells: the range of coverage,
    # every cell below the 93 % target by name, and how many covering cells
    # are wider than 1.35 times the oracle
    text = " ".join(GUIDE.read_text().split())
    rows = _interval_cells()
    assert rows
    cover = [_percent(r["coverage"]) for r in rows]
    assert (
        f"{len(rows)} cells of the main table cover the truth in "
        f"{min(cover):.1f}-{max(cover):.1f} % of the replications" in text
    )
    for r in rows:
        if _percent(r["coverage"]) < 93.0:
            assert f"{r['bed']}, n = {r['n']}, {r['error']}: {r['coverage']}" in (
                text.replace(" %", "%")
            ), r
    holding = [r for r in rows if _percent(r["coverage"]) >= 93.0]
    wide = [r for r in holding if float(r["ratio"]) > 1.35]
    assert f"{len(wide)} of the {len(holding)} cells that cover" in text
    for name in ("coverage_by_bed", "ratio_by_bed", "bins", "share"):
        assert f"_static/interval_coverage/{name}.csv" in text
        assert (INTERVAL_TABLES / f"{name}.csv").exists()


def _comparison_rows():
    rows = _table("compare_calibration on the ECE")
    # n, A, B, true difference, rejected, raw swap rejected, coverage, width
    return [
        dict(
            zip(
                ("n", "a", "b", "truth", "rejected", "raw", "cover", "width"),
                r,
                strict=True,
            )
        )
        for r in rows
    ]


# the two null cells the guide names as above nominal, each with its cause
_EXCEPTIONS = {("1/2", "full"), ("c1.5", "1.5")}


def test_prose_quotes_the_comparison_tables_ranges():
    text = " ".join(GUIDE.read_text().split())
    rows = _comparison_rows()
    null = [r for r in rows if r["truth"] == "0"]
    same = [
        _percent(r["rejected"]) for r in null if (r["a"], r["b"]) not in _EXCEPTIONS
    ]
    assert f"told apart {min(same):.1f}-{max(same):.1f} % of the time" in text
    raw = [_percent(r["raw"]) for r in null]
    assert f"(the raw difference: up to {max(raw):.0f} %)" in text
    for pair in _EXCEPTIONS:
        cells = [_percent(r["rejected"]) for r in null if (r["a"], r["b"]) == pair]
        assert f"{min(cells):.1f}-{max(cells):.1f} %" in text
    cover = [_percent(r["cover"]) for r in rows]
    assert f"{min(cover):.0f}-{max(cover):.0f} % of the replications" in text
    assert "conservative" in text


def test_comparison_docstring_says_its_interval_is_conservative():
    from sklcalib.metrics import compare_calibration

    cover = [_percent(r["cover"]) for r in _comparison_rows()]
    doc = " ".join(compare_calibration.__doc__.split())
    assert "conservative" in doc
    assert f"{min(cover):.0f}-{max(cover):.0f} % of the replications" in doc
