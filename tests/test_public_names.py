"""A public module exposes what its ``__all__`` says, and nothing it borrowed.

A helper imported from a private module under its own name (``load_tabular``
in :mod:`sklcalib.datasets`) reads as public API: tab completion offers it and
nothing documents it.
"""

import importlib
import inspect

import pytest

BENCHMARK_MODULES = [
    "sklcalib.benchmark",
    "sklcalib.benchmark.chance",
    "sklcalib.benchmark.boosting_tables",
    "sklcalib.benchmark.figures",
    "sklcalib.benchmark.outputs",
    "sklcalib.benchmark.runner",
    "sklcalib.benchmark.summary",
    "sklcalib.benchmark.tables",
    "sklcalib.benchmark.tabular",
]
MODULES = [
    "sklcalib.datasets",
    "sklcalib.io",
    "sklcalib.metrics.binning",
    *BENCHMARK_MODULES,
]


def _borrowed_public_names(module):
    """Non-underscore functions and classes of sklcalib that a module imports
    from elsewhere without listing them in ``__all__``."""
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_") or name in module.__all__:
            continue
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        origin = getattr(obj, "__module__", "") or ""
        if origin.startswith("sklcalib") and origin != module.__name__:
            names.append(name)
    return names


@pytest.mark.parametrize("name", MODULES)
def test_no_borrowed_public_names(name):
    module = importlib.import_module(name)
    assert _borrowed_public_names(module) == []


def test_datasets_public_surface_is_its_all():
    import sklcalib.datasets as datasets

    for leaked in ("load_tabular", "split_indices", "SPECS", "check_random_state_int"):
        assert not hasattr(datasets, leaked), leaked


def test_bin_statistics_live_in_a_public_module():
    from sklcalib import metrics
    from sklcalib.metrics import binning

    for name in ("BinStatistics", "bin_statistics"):
        obj = getattr(metrics, name)
        assert obj is getattr(binning, name)
        assert obj.__module__ == "sklcalib.metrics.binning"
        assert name in binning.__all__


def _defined_public_names(module):
    """Non-underscore functions, classes and constants a module defines."""
    import ast

    tree = ast.parse(inspect.getsource(module))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("name", MODULES)
def test_every_public_name_defined_is_in_all(name):
    # a public name outside __all__ is neither private nor documented
    module = importlib.import_module(name)
    assert sorted(_defined_public_names(module) - set(module.__all__)) == []
