"""The documentation: its build is how CI runs every gallery example.

The slow test builds the site exactly as CI should (``sphinx -W --keep-going``:
any warning fails) into a temporary copy of ``docs/`` and ``examples/``, so that
sphinx-gallery runs every example afresh instead of reusing the outputs of an
earlier local build, and the source tree is left untouched; then it runs the
user guide's code with the doctest builder on the same environment. The fast
tests check the gallery scripts and the API page against the package without
building.
"""

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
PUBLIC_MODULES = [
    "losses",
    "net",
    "callbacks",
    "calibration",
    "metrics",
    "plotting",
    "diagnostics",
    "datasets",
    "io",
]
USER_GUIDE = ["losses", "post_hoc", "metrics", "diagnostics", "dask", "tabular"]
TITLE = re.compile(r"\A\s*(?P<title>\S[^\n]*)\n(?P<rule>=+)\s*(\n|\Z)")


def _docstring(path):
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)


def test_there_are_examples():
    assert EXAMPLES, "examples/ holds no plot_*.py script"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_starts_with_a_rest_title(path):
    # sphinx-gallery takes the page title and the thumbnail text from here
    doc = _docstring(path)
    assert doc, f"{path.name} has no module docstring"
    match = TITLE.match(doc)
    assert match, f"{path.name}: the docstring must start with 'Title\\n====='"
    assert len(match["rule"]) >= len(match["title"].rstrip()), (
        f"{path.name}: the '=' underline is shorter than the title"
    )
    # a paragraph after the title becomes the gallery thumbnail's tooltip
    assert doc[match.end() :].strip(), f"{path.name}: no text below the title"


def test_tabular_page_shows_the_tabular_examples_figures_in_order():
    # the page shows the gallery's copies of the example's figures (one per
    # set of SHOWN, drawn in that order, nothing drawn before them): figure i
    # of the example is the set its alt text names
    tree = ast.parse((ROOT / "examples" / "plot_tabular_calibration.py").read_text())
    shown = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["SHOWN"]
    )
    # the loop over SHOWN draws the example's first figures, one per set
    loop = next(
        n
        for n in tree.body
        if isinstance(n, ast.For) and getattr(n.iter, "id", None) == "SHOWN"
    )
    drawn = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and n.attr in ("figure", "subplots")
    ]
    assert loop.lineno < min(drawn)
    assert len([line for line in drawn if line <= loop.end_lineno]) == 1
    page = (DOCS / "user_guide" / "tabular.rst").read_text(encoding="utf-8")
    images = re.findall(
        r"\.\. image:: /auto_examples/images/"
        r"sphx_glr_plot_tabular_calibration_(\d{3})\.png\n"
        r"   :alt: Reliability diagrams of gradient boosting on (\w+)\.",
        page,
    )
    assert images == [(f"{i:03d}", name) for i, name in enumerate(shown, 1)]


def _api_names():
    """Names documented by the autosummary tables of api.rst, per module."""
    text = (DOCS / "api.rst").read_text(encoding="utf-8")
    names = {}
    module = None
    in_table = False
    for line in text.splitlines():
        if line.startswith(".. currentmodule:: "):
            module = line.split("::")[1].strip()
        elif line.startswith(".. autosummary::"):
            in_table = True
        elif in_table and line.startswith("   ") and not line.strip().startswith(":"):
            names.setdefault(module, set()).add(line.strip())
        elif in_table and line.strip() and not line.startswith("   "):
            in_table = False
    return names


def _defining_module(obj):
    """The public submodule of sklcalib an object is defined in, if any."""
    parts = (getattr(obj, "__module__", None) or "").split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "sklcalib" else None


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_api_page_lists_every_public_name(name):
    module = importlib.import_module(f"sklcalib.{name}")
    documented = _api_names().get(module.__name__, set())
    public = set(getattr(module, "__all__", ()))
    # re-exported from another public module (CurvatureLogger): documented there
    reexported = {
        n
        for n in public
        if _defining_module(getattr(module, n)) in set(PUBLIC_MODULES) - {name}
    }
    missing = public - documented - reexported
    assert not missing, f"api.rst does not document {sorted(missing)}"
    unknown = {n for n in documented if not hasattr(module, n)}
    assert not unknown, f"api.rst lists names {module.__name__} lacks: {unknown}"
    # and the other way: what the page documents is public (in __all__)
    unlisted = documented - public
    assert not unlisted, f"{module.__name__}.__all__ lacks {sorted(unlisted)}"


def _copy_sources(tmp_path):
    """docs/ and examples/ side by side in tmp_path, without earlier outputs."""
    ignore = shutil.ignore_patterns(
        "_build", "generated", "auto_examples", "sg_execution_times.rst", "__pycache__"
    )
    shutil.copytree(DOCS, tmp_path / "docs", ignore=ignore)
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=ignore)
    return tmp_path / "docs"


# The builds run one after the other in one Python process, each through
# Sphinx's own entry point (a fresh application, its docutils registrations
# undone on return): the doctest build finds Sphinx, sklcalib, torch and
# scikit-learn already imported, which a process of its own imported again.
# Each build writes its status and warnings to its own log; a failed build
# ends the run.
_BUILDS = """
import json, sys
from sphinx.cmd.build import build_main

codes = []
for argv, log in json.loads(sys.argv[1]):
    with open(log, "w", encoding="utf-8") as stream:
        sys.stdout = sys.stderr = stream
        try:
            codes.append(build_main(argv))
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    if codes[-1]:
        break
print(json.dumps(codes))
"""


def _sphinx(srcdir, doctrees, builds):
    """Run ``builds`` (builder, output folder) in order on ``srcdir``; return
    each build's exit status (None: not run) and log, and the log paths."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    # --no-color: CI forces colour, and escape codes inside Sphinx's status
    # lines would hide them from the checks below
    common = ["-W", "--keep-going", "--no-color", "-d", str(doctrees)]
    runs = [
        (
            [*common, "-b", builder, str(srcdir), str(outdir)],
            str(outdir.parent / f"{builder}.log"),
        )
        for builder, outdir in builds
    ]
    result = subprocess.run(
        [sys.executable, "-c", _BUILDS, json.dumps(runs)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    codes = json.loads(result.stdout.strip().splitlines()[-1])
    logs = [Path(log) for _, log in runs]
    texts = [log.read_text(encoding="utf-8") if log.exists() else "" for log in logs]
    codes += [None] * (len(runs) - len(codes))
    return codes, texts, logs


def _warnings(log):
    lines = log.splitlines()
    return "\n".join(ln for ln in lines if "WARNING" in ln or "ERROR" in ln)[-6000:]


@pytest.mark.slow
def test_site_builds_and_its_examples_and_user_guide_code_run(tmp_path):
    # One test, two builders over one copy of the sources, in one process: the
    # doctest builder reuses the environment the html build pickled into
    # ``doctrees`` (the pages are read, parsed and their API pages generated
    # once) and sphinx-gallery finds every example unchanged since it ran for
    # the html build (it runs each example once). As one test it stays on one
    # xdist worker, which a fixture shared by two tests would not.
    srcdir = _copy_sources(tmp_path)
    out = tmp_path / "html"
    (html_code, doctest_code), (html_log, doctest_log), logs = _sphinx(
        srcdir,
        tmp_path / "doctrees",
        [("html", out), ("doctest", tmp_path / "doctest")],
    )
    assert html_code == 0, (
        f"sphinx -W failed:\n{_warnings(html_log)}\n{html_log[-3000:]}"
    )
    _check_html(srcdir, out)
    _check_user_guide_code(tmp_path / "doctest", doctest_code, doctest_log)
    # the doctest build ran no example again: every figure is older than the
    # end of the html build (its log's last write)
    html_end = logs[0].stat().st_mtime_ns
    figures = list(srcdir.rglob("sphx_glr_*.png"))
    assert figures
    assert [p.name for p in figures if p.stat().st_mtime_ns > html_end] == []


def _check_html(srcdir, out):
    """The pages, the API pages and every example's gallery page with its figures."""
    for page in [
        "index",
        "quickstart",
        "api",
        "benchmark",
        "references",
        "user_guide/index",
        *(f"user_guide/{p}" for p in USER_GUIDE),
    ]:
        assert (out / f"{page}.html").is_file(), page
    assert (out / "_static" / "reliability_diagram.png").is_file()

    for module, names in _api_names().items():
        for name in names:
            assert (out / "generated" / f"{module}.{name}.html").is_file(), name

    gallery = out / "auto_examples"
    index = (gallery / "index.html").read_text(encoding="utf-8")
    for path in EXAMPLES:
        page = gallery / f"{path.stem}.html"
        assert page.is_file(), f"no gallery page for {path.name}"
        assert f"{path.stem}.html" in index, f"{path.name} missing from the gallery"
        # the example ran and sphinx-gallery captured its figures, which the
        # page shows (sphinx-gallery saves them next to the generated sources,
        # Sphinx copies them to _images/)
        figures = sorted(
            (srcdir / "auto_examples" / "images").glob(f"sphx_glr_{path.stem}_*.png")
        )
        assert figures, f"{path.name} produced no figure"
        html = page.read_text(encoding="utf-8")
        for figure in figures:
            assert (out / "_images" / figure.name).is_file(), figure.name
            assert figure.name in html, f"{figure.name} not shown on {page.name}"


def _check_user_guide_code(out, code, log):
    """The ``.. doctest::`` / ``.. testcode::`` blocks of the narrative pages
    pass (run by Sphinx's doctest builder on the html build's environment)."""
    report = (out / "output.txt").read_text(encoding="utf-8")
    assert code == 0, f"{_warnings(log)}\n{report[-4000:]}"
    assert re.search(r"^\s+0 failures in tests", report, re.M), report[-4000:]
    # the quickstart's search, scaler and report, and the user guide's snippets
    ran = int(re.search(r"Doctest summary\n=+\n\s*(\d+) tests", report)[1])
    assert ran >= 20, report[-2000:]
    # the html build's environment was reused, not read afresh
    assert re.search(r"updating environment: 0 added", log), log[-3000:]


# the places that set a docstring at run time: the tabular loaders are made
# by a factory (one function per data set), so there is no ``def`` to hold one;
# fill_doc puts the shared entries into the literal docstrings' placeholders
_DOC_ASSIGNMENT_ALLOWED = {
    ("sklcalib/datasets/_tabular.py", "_tabular_loader"),
    ("sklcalib/_utils/_docstrings.py", "fill_doc"),
}


def _doc_assignments(tree):
    """(enclosing function or class name, line) of every ``__doc__ = ...``."""
    found = []

    def visit(node, owner):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = getattr(child, "targets", None) or [child.target]
                for target in targets:
                    name = getattr(target, "id", None) or getattr(target, "attr", None)
                    if name == "__doc__":
                        found.append((owner, child.lineno))
            scope = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            visit(child, child.name if isinstance(child, scope) else owner)

    visit(tree, None)
    return found


def test_doc_assignment_finder_sees_class_and_attribute_forms():
    source = 'class A:\n    __doc__ = f"x"\n\ndef f():\n    g.__doc__ = "y"\n'
    assert _doc_assignments(ast.parse(source)) == [("A", 2), ("f", 5)]


def test_docstrings_are_literals_that_static_tools_read():
    # a docstring assigned to ``__doc__`` (an f-string, a concatenation) is
    # invisible to IDEs, linters and numpydoc validation; write it literally
    offenders = []
    for path in sorted((ROOT / "sklcalib").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for owner, line in _doc_assignments(tree):
            if (rel, owner) not in _DOC_ASSIGNMENT_ALLOWED:
                offenders.append(f"{rel}:{line} ({owner})")
    assert not offenders, offenders
