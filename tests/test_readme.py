"""The README's two fresh-machine commands stay true.

CI (``.ci/run``) must run exactly the README's test command, and the README must
open with the main job and the tests, before anything else that is code.
"""

import re
from pathlib import Path

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
