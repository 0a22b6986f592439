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
