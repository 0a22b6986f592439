"""Sphinx configuration for the sklcalib documentation.

The build runs offline and with warnings as errors (``sphinx -W``): no
extension may fetch anything from the network (no intersphinx inventories,
no analytics, no remote icons), and every gallery example is executed.
"""

import os
import pkgutil
import sys
from pathlib import Path

# Headless plotting for the gallery: set before anything imports pyplot.
os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib
from sphinx.pycode import ModuleAnalyzer

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
# Document the checkout this conf.py belongs to, even without an editable install.
sys.path.insert(0, str(HERE.parent))
# The numpydoc validation settings, shared with the tests.
sys.path.insert(0, str(HERE))

import _numpydoc_checks

import sklcalib

# -- Project ---------------------------------------------------------------
project = "sklcalib"
author = "sklcalib developers"
copyright = "2026, sklcalib developers"
version = release = sklcalib.__version__

# -- General -----------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
root_doc = "index"
default_role = "literal"
# Every cross-reference to sklcalib itself must resolve (a renamed function
# breaks the build); references to other projects cannot resolve offline (no
# intersphinx), so they are ignored.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(?!sklcalib\b).*"),
    (r"py:.*", r"sklcalib\..*\.(BaseEstimator|Module|Callback).*"),
    # private modules (``sklcalib.losses._autograd``) are not documented
    (r"py:.*", r"sklcalib(\.\w+)*\._\w+.*"),
]

# -- autodoc / autosummary / numpydoc ---------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"  # numpydoc's Parameters section carries the types
autodoc_member_order = "bysource"
# A class page (templates/autosummary/class.rst) lists what sklcalib defines
# for it, its own base classes included (a calibrator's fit and predict_proba
# come from BaseCalibrator), and nothing of torch, scikit-learn or skorch (see
# foreign_bases). Only there: an automodule given the option would document
# every member of the module a second time.
autosummary_context = {"foreign_bases": _numpydoc_checks.foreign_bases()}

# numpydoc lists class members itself unless told not to; autosummary pages
# already document them, and both together give duplicate-object warnings.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Every docstring of the API pages is validated; a finding is a warning, so
# ``sphinx -W`` fails on it. The checks ("all" less the exclusions, each with its
# reason) and the excluded names are defined in _numpydoc_checks.py, which
# tests/test_docstrings.py applies too (a bad docstring fails the test run).
numpydoc_validation_checks = _numpydoc_checks.CHECKS
# scikit-learn's generated set_*_request methods, and the documented values
# (constants, scorers, a loss's ``name``): numpydoc would validate the
# docstring of their type (dict, str, scikit-learn's _Scorer), not their
# ``#:`` comment.
numpydoc_validation_exclude = _numpydoc_checks.validation_exclude()
numpydoc_xref_param_type = False

# -- intersphinx ------------------------------------------------------------
# Deliberately empty: fetching objects.inv from numpy/scikit-learn/torch needs
# the network, and the docs must build offline (CI machines have none).
intersphinx_mapping = {}

# -- doctest (``sphinx -b doctest docs OUT``) --------------------------------
# Only the explicit ``.. doctest::`` / ``.. testcode::`` blocks of the user
# guide are run by that builder; docstring examples are tested with the modules.
doctest_test_doctest_blocks = ""
doctest_global_setup = """
import os
os.environ.setdefault("MPLBACKEND", "Agg")
import numpy as np
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
"""

# -- sphinx-gallery ---------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # Every ``plot_*.py`` is executed at build time (CI runs every example).
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    # Mini-galleries "examples using X" on the API pages.
    "doc_module": ("sklcalib",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"sklcalib": None},
}

# -- HTML -------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sklcalib {release}"
html_static_path = ["_static"]
html_show_sourcelink = False
html_theme_options = {
    # Nothing that needs the network at build or view time: no analytics, no
    # remote icons, no version switcher JSON.
    "icon_links": [],
    "navbar_end": ["theme-switcher", "navbar-icon-links"],
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}


# -- Cross-references to top-level aliases -----------------------------------
# ``sklcalib.NetClassifier`` is the public spelling of ``sklcalib.net.NetClassifier``
# (sklcalib re-exports its main names lazily); docstrings use both, and the API
# pages document each object once, under its defining module. Resolve the alias.
def _resolve_toplevel_alias(app, env, node, contnode):
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("sklcalib."):
        return None
    name = target.removeprefix("sklcalib.")
    module = sklcalib._LAZY.get(name.split(".", 1)[0])
    if module is None:
        return None
    py = env.domains["py"]
    return py.resolve_xref(
        env,
        node["refdoc"],
        app.builder,
        node["reftype"],
        f"{module}.{name}",
        node,
        contnode,
    )


# A module-level constant (a scorer, a grid array) without a ``#:`` doc comment
# would otherwise be documented with the docstring of its *type* (numpy's
# ndarray docstring, a private scorer class's): show only its value then.
# Runs before numpydoc (priority 100 < 500) so the raw docstring is compared.
def _drop_type_docstring(app, what, name, obj, options, lines):
    type_doc = getattr(type(obj), "__doc__", None)
    if what != "data" or not lines or not isinstance(type_doc, str):
        return
    head = [ln.strip() for ln in type_doc.splitlines() if ln.strip()][:10]
    first = [ln.strip() for ln in lines if ln.strip()][:3]
    if any(ln in head for ln in first):
        lines[:] = []


# A constant a package re-exports from a private module (``TEMPERATURE_BOUNDS``
# of sklcalib.calibration, defined in calibration/_temperature_nll.py) has its
# ``#:`` comment there, where autodoc, reading the package's source, does not
# look: take the comment from the submodule that defines the same object.
# Runs after _drop_type_docstring, before numpydoc.
def _reexported_doc_comment(app, what, name, obj, options, lines):
    if what != "data" or lines:
        return
    package_name, _, attr = name.rpartition(".")
    package = sys.modules.get(package_name)
    for info in pkgutil.iter_modules(getattr(package, "__path__", [])):
        module_name = f"{package_name}.{info.name}"
        module = sys.modules.get(module_name)
        if module is None or getattr(module, attr, None) is not obj:
            continue
        comment = ModuleAnalyzer.for_module(module_name).find_attr_docs()
        if comment.get(("", attr)):  # a module may re-export it again
            lines[:] = list(comment[("", attr)])
            return


# scikit-learn generates ``set_fit_request``/``set_score_request``/... methods
# on every estimator (metadata routing); their docstrings refer to
# scikit-learn's own glossary and labels, which do not exist here. The fields
# of a NamedTuple result carry Python's "Alias for field number 0"; the class
# docstring documents them.
def _skip_generated(app, what, name, obj, skip, options):
    if _numpydoc_checks.skip_member(name, obj):
        return True
    return None


# -- Values of the benchmark command, read from its code ----------------------
# benchmark.rst quotes the defaults of ``sklcalib benchmark``; taking them from
# the command's module keeps the page true when the defaults are retuned.
def _benchmark_substitutions():
    from sklcalib.benchmark import runner
    from sklcalib.benchmark.tabular import CALIBRATORS
    from sklcalib.cli import benchmark_command as cli
    from sklcalib.datasets import TABULAR_DATASETS, list_datasets

    def literals(names):
        return ", ".join(f"``{n}``" for n in names)

    values = {
        "bench_datasets": literals(cli.DEFAULT_DATASETS),
        "all_datasets": literals(list_datasets()),
        "tabular_datasets": literals(TABULAR_DATASETS),
        "bench_losses": literals(runner.DEFAULT_LOSSES),
        "bench_seeds": str(cli.DEFAULT_SEEDS),
        "bench_epochs": ", ".join(
            f"{d} {e}" for d, e in cli.DEFAULT_EPOCHS.items() if d in list_datasets()
        ),
        "net_max_train": ", ".join(
            f"{n} rows of {d}" for d, n in cli.NET_MAX_TRAIN.items()
        ),
        "calibrators": literals(CALIBRATORS),
        "quick_datasets": literals(cli.QUICK_DATASETS),
        "quick_seeds": str(cli.QUICK_SEEDS),
        "quick_epochs": str(cli.QUICK_EPOCHS),
    }
    return "\n".join(f".. |{k}| replace:: {v}" for k, v in values.items())


rst_epilog = _benchmark_substitutions()

# the tabular page's tables: the committed run's results.md, as reST
from _tabular_results import write_tabular_results

write_tabular_results()


def setup(app):
    app.connect("autodoc-skip-member", _skip_generated)
    app.connect("missing-reference", _resolve_toplevel_alias)
    app.connect("autodoc-process-docstring", _drop_type_docstring, priority=100)
    app.connect("autodoc-process-docstring", _reexported_doc_comment, priority=200)
