"""The ``sklcalib report`` output shown in docs/report.rst is what the command
prints on the files the page describes (numbers computed, not typed)."""

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.special import softmax

from sklcalib.cli import main

PAGE = Path(__file__).resolve().parents[1] / "docs" / "report.rst"
COMMAND = "$ sklcalib report test.csv --calibrate temperature --fit-on val.csv"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?")


def _write(path, n, seed):
    rng = np.random.default_rng(seed)
    z = 1.5 * rng.normal(size=(n, 3))
    p = softmax(z, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    names = ["cat", "dog", "bird"]
    lines = ["y_true,cat,dog,bird"] + [
        names[k] + "," + ",".join(repr(float(v)) for v in row)
        for k, row in zip(y, softmax(2.5 * z, axis=1), strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")


def _documented():
    lines = PAGE.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith(COMMAND))
    argv = lines[start].split()[2:]
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("   "):
            break
        block.append(line[3:])
    return argv, block


def test_documented_output_is_reproduced(tmp_path, monkeypatch, capsys):
    _write(tmp_path / "val.csv", 1000, 0)
    _write(tmp_path / "test.csv", 2000, 1)
    monkeypatch.chdir(tmp_path)
    argv, want = _documented()
    assert main(argv) == 0
    got = capsys.readouterr().out.splitlines()
    # a verdict line, where the library gives one, is not part of the example
    got = [ln for ln in got if not ln.startswith("verdict")]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        label = re.split(r"\s{2,}", w.strip())[0]
        assert g.strip().startswith(label.split()[0]), (g, w)
        # equal at the precision shown (one unit of the last digit)
        got_numbers = [float(t) for t in NUMBER.findall(g)]
        tokens = NUMBER.findall(w)
        assert len(got_numbers) == len(tokens), (g, w)
        for a, token in zip(got_numbers, tokens, strict=True):
            assert a == pytest.approx(float(token), abs=_unit(token)), (g, w)


def _unit(token):
    """One unit of the last digit shown: 0.01 for "15.96", 1e-7 for "-9.59e-05"."""
    mantissa, _, exponent = token.partition("e")
    digits = len(mantissa.partition(".")[2])
    return 1.01 * 10.0 ** (int(exponent or 0) - digits)


def test_readme_example_is_an_excerpt_of_the_checked_one():
    """README's ``sklcalib report`` example: the same command and lines as the
    page's (checked above), with "..." standing for the lines left out."""
    readme = (PAGE.parents[1] / "README.md").read_text()
    block = re.search(r"```\n(\$ sklcalib report .*?)```", readme, flags=re.S)
    assert block, "README shows a sklcalib report example"
    lines = block.group(1).splitlines()
    page = [ln[3:] for ln in PAGE.read_text().splitlines() if ln.startswith("   ")]
    assert lines[0] in page  # the command, verbatim
    for line in lines[1:]:
        assert line == "..." or line in page, line
