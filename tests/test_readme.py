"""The README's two fresh-machine commands stay true.

CI (``.ci/run``) must run exactly the README's test command, and the README must
open with the main job and the tests, before anything else that is code.
"""

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def _commands(block):
    return [ln.strip() for ln in block.splitlines() if ln.strip() and ln[0] != "#"]


def test_readme_opens_with_main_job_and_tests():
    blocks = _bash_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 2
    main_job, tests = _commands(blocks[0]), _commands(blocks[1])
    assert len(main_job) == 1 and "sklcalib benchmark" in main_job[0]
    assert len(tests) == 1 and tests[0].endswith("pytest")
    for cmd in (main_job[0], tests[0]):
        assert "pip install torch==2.13.0" in cmd  # the CPU build; see .ci/run


def test_ci_runs_the_readme_test_command_verbatim():
    tests_cmd = _commands(_bash_blocks((ROOT / "README.md").read_text())[1])[0]
    # CI creates and activates its own venv first; the rest must match verbatim.
    install_and_test = tests_cmd.split("&& ", 2)[-1]
    ci_lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert install_and_test in ci_lines


@pytest.mark.slow
def test_readme_quickstart_runs(tmp_path, monkeypatch):
    """The README's Python quickstart is executed as it stands."""
    blocks = re.findall(
        r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S
    )
    assert blocks, "the README has a Python quickstart"
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    search, scaler = namespace["search"], namespace["scaler"]
    assert set(search.best_params_) == {
        "netclassifier__criterion__gamma",
        "netclassifier__criterion__lam",
    }
    assert 0.0 <= namespace["report"]["ece"] <= 1.0
    assert scaler.temperature_ > 0
    # the point the text makes: the tuned FCL net is at least as well
    # calibrated as cross-entropy on the test split
    ece = namespace["ece"]
    assert ece["tuned FCL"] <= ece["cross-entropy"], ece
    # the prose says the gap is weak evidence, with an interval holding 0,
    # and quotes the comparison's p
    res = namespace["res"]
    assert 0.01 < res.pvalue < 0.1 and res.low <= 0 <= res.high, res
    readme = (ROOT / "README.md").read_text()
    assert f"p = {res.pvalue:.2f}" in readme, res
    # the temperature is fitted on the validation split, not on the test split
    fit_lines = [ln for ln in blocks[0].splitlines() if "TemperatureScaler()" in ln]
    assert fit_lines and all("X_val" in ln and "X_test" not in ln for ln in fit_lines)


def _sphinx_lines(text):
    return [ln.strip() for ln in text.splitlines() if "-m sphinx" in ln]


def test_docs_build_command_is_the_same_and_names_the_docs_extra():
    readme = (ROOT / "README.md").read_text()
    quickstart = (ROOT / "docs" / "quickstart.rst").read_text()
    assert _sphinx_lines(readme) == _sphinx_lines(quickstart)
    assert len(_sphinx_lines(readme)) == 1
    for text in (readme, quickstart):
        # the extra is installed where the build command is shown
        before = text[: text.index(_sphinx_lines(text)[0])]
        previous = [ln for ln in before.splitlines() if ln.strip()][-1]
        assert previous.strip() == 'pip install -e ".[docs]"'


def test_scorer_names_go_through_get_scorer():
    """A bare "neg_ece" fails inside scikit-learn; get_scorer("neg_ece") works,
    and the README and the metrics page show the latter and say why."""
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    from sklcalib.metrics import get_scorer

    X, y = make_classification(n_samples=120, random_state=0)
    model = LogisticRegression()
    with pytest.raises(ValueError, match="neg_ece"):
        cross_val_score(model, X, y, scoring="neg_ece", cv=2)
    scores = cross_val_score(model, X, y, scoring=get_scorer("neg_ece"), cv=2)
    assert np.all(scores <= 0)
    metrics_page = (ROOT / "docs" / "user_guide" / "metrics.rst").read_text()
    for text in ((ROOT / "README.md").read_text(), metrics_page):
        assert 'scoring=get_scorer("neg_ece")' in text
        assert "no public way to add names" in text


def _fresh_machine_commands(text):
    """The one-line fresh-machine commands (venv, install, run) of a page."""
    return [
        ln.strip()
        for ln in text.splitlines()
        if "python -m venv" in ln and "pip install" in ln
    ]


def test_one_install_story_everywhere():
    """The quickstart page repeats the README's two commands verbatim and the
    same Python floor as pyproject.toml (it once had its own install line, with
    no extras, after which ``sklcalib benchmark`` failed on a missing module)."""
    readme = (ROOT / "README.md").read_text()
    quickstart = (ROOT / "docs" / "quickstart.rst").read_text()
    readme_cmds = _fresh_machine_commands(readme)
    assert len(readme_cmds) == 2
    assert _fresh_machine_commands(quickstart) == readme_cmds
    floor = re.search(
        r'requires-python = ">=([\d.]+)"', (ROOT / "pyproject.toml").read_text()
    ).group(1)
    for text in (readme, quickstart):
        stated = set(re.findall(r"Python ≥ (\d+\.\d+)", text))
        assert stated == {floor}, stated


def _section(text, title):
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start : end if end > 0 else None]


def _public(module_name, *, functions=True):
    import importlib

    module = importlib.import_module(module_name)
    names = []
    for name in module.__all__:
        obj = getattr(module, name)
        if name.isupper() or name.endswith("_scorer"):
            continue  # constants and the scorer objects (listed by their names)
        if isinstance(obj, type) or (functions and callable(obj)):
            names.append(name)
    return names


def test_what_is_inside_lists_every_public_class_and_function():
    pytest.importorskip("torch")
    inside = _section((ROOT / "README.md").read_text(), "## What is inside")
    names = [
        *_public("sklcalib.losses"),
        *_public("sklcalib.callbacks"),
        *_public("sklcalib.calibration"),
        *_public("sklcalib.metrics"),
    ]
    missing = [n for n in names if not re.search(rf"`{n}[`(]", inside)]
    assert not missing, f"README's 'What is inside' omits {missing}"


def test_docs_front_page_names_every_calibrator_and_the_uncertainty_api():
    index = (ROOT / "docs" / "index.rst").read_text()
    import sklcalib.calibration as calibration

    calibrators = [
        n
        for n in _public("sklcalib.calibration")
        if hasattr(getattr(calibration, n), "predict_proba")
    ]
    uncertainty = [
        "calibration_error_interval",
        "bootstrap_interval",
        "calibration_test",
        "compare_calibration",
    ]
    names = [*calibrators, "select_calibrator", *uncertainty]
    missing = [n for n in names if f".{n}`" not in index]
    assert not missing, f"docs/index.rst omits {missing}"


def test_stated_times_are_one_figure_per_thing(capsys):
    """README, ``--help`` and the docs quote the benchmark's times from one place."""
    from sklcalib.cli import benchmark_command as cli
    from sklcalib.cli import main

    readme = (ROOT / "README.md").read_text()
    main_job = _bash_blocks(readme)[0]
    assert f"({cli._DEFAULT_WALL} on 2 idle cores)" in main_job
    assert f"`sklcalib benchmark --quick` runs a reduced grid in {cli._QUICK_WALL}" in (
        " ".join(readme.split())
    )
    for page in ("quickstart.rst", "benchmark.rst"):
        text = (ROOT / "docs" / page).read_text()
        # written out (a reader of the .rst file sees no substitution)
        flat = " ".join(text.split())
        assert cli._DEFAULT_WALL in flat and cli._QUICK_WALL in flat, page
    bench = " ".join((ROOT / "docs" / "benchmark.rst").read_text().split())
    assert cli._TABULAR_WALL in bench
    try:
        main(["benchmark", "--help"])
    except SystemExit:
        pass
    help_text = " ".join(capsys.readouterr().out.split())
    for figure in (cli._DEFAULT_WALL, cli._QUICK_WALL, cli._TABULAR_WALL):
        assert f"{figure} on 2 idle cores" in help_text
    # no other figure for the same runs anywhere a newcomer reads
    for text in (readme, *(p.read_text() for p in (ROOT / "docs").glob("*.rst"))):
        flat = " ".join(text.split())
        for stale in ("a few minutes", "about 8 min", "about 45 seconds"):
            if stale not in (cli._DEFAULT_WALL, cli._QUICK_WALL, cli._TABULAR_WALL):
                assert stale not in flat
