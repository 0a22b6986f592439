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


def _interval_csv(name):
    """The rows of a committed table of ``docs/_static/interval_coverage``."""
    import csv

    with open(INTERVAL_TABLES / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def _interval_cells():
    return _interval_csv("all_cells")


def _by_cell(name):
    """A committed per-cell table keyed by (bed, n, error)."""
    return {(r["bed"], r["n"], r["error"]): r for r in _interval_csv(name)}


def test_prose_quotes_the_interval_coverage_tables():
    # the guide's words follow the measured cells: the range of coverage,
    # every cell below the 93 % target by name, and how many covering cells
    # are wider than 1.35 times the oracle (the words are written by the
    # benchmark's --render beside the tables, and the guide includes them)
    guide = GUIDE.read_text()
    assert ".. include:: ../_static/interval_coverage/summary.txt" in guide
    summary = (INTERVAL_TABLES / "summary.txt").read_text()
    text = " ".join((guide + summary).split())
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
    keys = (
        "pair",
        "n",
        "truth",
        "rejected",
        "binwise",
        "before",
        "swap",
        "cover",
        "width",
    )
    return [dict(zip(keys, r, strict=True)) for r in rows]


def _null(rows):
    return [r for r in rows if float(r["truth"]) == 0.0]


def test_prose_quotes_the_comparison_tables_ranges():
    text = " ".join(GUIDE.read_text().split())
    rows = _comparison_rows()
    null = _null(rows)
    assert len(null) == 22 and len(rows) == 30
    size = [_percent(r["rejected"]) for r in null]
    # the table itself is the committed run of benchmarks/bench_compare.py
    import csv

    root = GUIDE.parents[2]
    with open(root / "benchmarks/compare_current.csv", newline="") as f:
        run = [(r["bed"], r["n"], r["rejected at 5 %"]) for r in csv.DictReader(f)]
    assert [(r["pair"], r["n"], r["rejected"]) for r in rows] == run
    swap = [_percent(r["swap"]) for r in null]
    assert f"rejected {min(size):.1f}-{max(size):.1f} % of the time" in text
    assert f"the swap test {min(swap):.1f}-{max(swap):.1f} %" in text
    power = {
        (r["pair"].split(" (")[0], r["n"]): _percent(r["rejected"])
        for r in rows
        if r not in null
    }
    assert f"{power['indep 1.0 | 1.5', '500']:.1f} % of the time on 500 rows" in text
    assert f"{power['indep 1.0 | 1.5', '2000']:.1f} % on 2000" in text
    cover = [_percent(r["cover"]) for r in rows if r not in null]
    assert f"covers the true difference in {min(cover):.1f}-{max(cover):.1f} %" in text


def test_comparison_docstring_says_what_its_test_is():
    from sklcalib.metrics import compare_calibration

    doc = " ".join(compare_calibration.__doc__.split())
    assert "paired bootstrap-t" in doc
    rows = _comparison_rows()
    swap = [_percent(r["swap"]) for r in _null(rows) if "same scores" in r["pair"]]
    assert f"{max(swap):.0f} % for two temperatures of the same" in doc


def test_prose_quotes_the_width_anatomy():
    # the guide's words on where the width comes from follow the committed
    # run of benchmarks/bench_interval_width.py

    text = " ".join(GUIDE.read_text().split())
    for name in ("width_anatomy", "oracle_bias"):
        assert f"_static/interval_coverage/{name}.csv" in text
    rows = _by_cell("width_anatomy")
    cell = rows["logistic_under", "300", "ece"]
    low, high = -float(cell["low"]), float(cell["high"])
    o_low, o_high = -float(cell["oracle low"]), float(cell["oracle high"])
    assert (
        f"from {low:.2f} standard deviations below the estimate to {high:.2f} "
        f"above, the oracle from {o_low:.2f} below to {o_high:.2f} above" in text
    )
    large = [r for k, r in rows.items() if k[1] == "10000"]
    slopes = sorted(float(r["slope"]) for r in large)
    ratios = sorted(float(r["ratio"]) for r in large)
    assert f"slope {slopes[0]:.2f}-{slopes[-1]:.2f}" in text
    assert f"oracle ({ratios[0]:.2f}-{ratios[-1]:.2f} times)" in text
    small = [
        r
        for k, r in rows.items()
        if k[0] in ("logistic_under", "logistic_over", "flat_under")
        and k[1] in ("100", "300")
    ]
    slopes = sorted(float(r["slope"]) for r in small)
    ratios = sorted(float(r["ratio"]) for r in small)
    assert f"only {slopes[0]:.2f}-{slopes[-1]:.2f} of the error's change" in text
    assert f"{ratios[0]:.2f}-{ratios[-1]:.2f} times the oracle's" in text


def test_prose_quotes_the_direction_and_few_events_tables():
    # the guide's words on the one real shortfall and on the widest cells
    # follow the committed runs of bench_interval_direction.py and
    # bench_interval_width.py --few-events

    text = " ".join(GUIDE.read_text().split())
    for name in ("direction", "few_events"):
        assert f"_static/interval_coverage/{name}.csv" in text
    rows = _by_cell("direction")
    cell = rows["rare_under", "10000", "classwise_ece_l2"]
    path = _percent(cell["path below"]) + _percent(cell["path above"])
    true = _percent(cell["true below"]) + _percent(cell["true above"])
    assert f"the first misses {path:.1f} % of the time, the second {true:.1f} %" in (
        text
    )
    assert f"below the law's 2.5 % quantile {cell['path below'][:-1]} %" in text
    few = {(r["n"], r["rate"]): r for r in _interval_csv("few_events")}
    tiny = few["36", "0.02"]
    assert f"{float(tiny['bound 95 % / oracle']):.1f} times on 36 rows at 2 %" in text
    assert f"({float(tiny['bound 93 % / oracle']):.1f} times even at the 93 %" in text
