"""The import graph of sklcalib: no cycle, and no private module of another
public package imported.

Every ``import`` and ``from ... import`` of every module is read with ``ast``,
function-level (lazy) imports included, relative imports resolved. An edge
``a -> b`` means that module ``a`` imports module ``b`` (``from pkg import
name`` points at ``pkg.name`` when that is a module, else at ``pkg``). The
implicit import of a package's ``__init__`` before its submodules is not an
edge: otherwise every submodule importing a sibling would close a loop
through the package's ``__init__``, which Python resolves fine.
"""

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "sklcalib"


def _modules():
    """Dotted name -> path of every module of sklcalib."""
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ("sklcalib", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_targets(node, name, is_package, modules):
    """Dotted names an ``import`` statement of module ``name`` imports:
    relative imports resolved, ``from pkg import x`` pointing at ``pkg.x``
    when that is a module, else at ``pkg``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = name if is_package else name.rpartition(".")[0]
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    subs = [f"{base}.{alias.name}" for alias in node.names]
    return [sub if sub in modules else base for sub in subs]


def _imports(name, path, modules):
    """The sklcalib modules that module ``name`` imports (anywhere in it)."""
    is_package = path.name == "__init__.py"
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            targets.update(import_targets(node, name, is_package, modules))
    return {t for t in targets if t in modules and t != name}


@functools.cache  # read once for the tests below (they do not change it)
def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _public_package(name):
    """The public package (or top-level module) a module belongs to."""
    return name.split(".")[1] if name.count(".") else None


def _is_private(name):
    return any(part.startswith("_") for part in name.split(".")[2:])


def test_the_graph_is_read():
    graph = _graph()
    # known edges, lazy ones included, so that a broken parser cannot pass
    assert "sklcalib._utils._binning" in graph["sklcalib.metrics._calibration_error"]
    assert "sklcalib.metrics._fused" in graph["sklcalib.metrics._statistics"]
    assert "sklcalib.calibration._binning" in graph["sklcalib.calibration"]


def test_no_import_cycle():
    # lazy imports included: a function-level import that closes a loop still
    # ties the modules into one, which cannot be read, tested or moved apart
    assert _cycles(_graph()) == []


def test_cycle_detection_works():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_private_module_of_another_package_is_imported():
    offending = []
    for name, targets in _graph().items():
        for target in targets:
            other = _public_package(target)
            if other not in (_public_package(name), "_utils") and _is_private(target):
                offending.append(f"{name} -> {target}")
    assert offending == []


def _calibrator_modules():
    """The modules of sklcalib.calibration that define a public calibrator."""
    import sklcalib.calibration as calibration
    from sklcalib.calibration._base import BaseCalibrator

    return {
        obj.__module__
        for obj in map(calibration.__getattribute__, calibration.__all__)
        if isinstance(obj, type) and issubclass(obj, BaseCalibrator)
    }


# a calibrator built of another, not sharing its numerics: scaling-binning is
# Platt scaling then binning, and its fitted PlattScaler is a documented
# attribute
COMPOSED = {("sklcalib.calibration._scaling_binning", "sklcalib.calibration._scaling")}


def test_no_calibrator_module_imports_another_for_its_numerics():
    # calibrators share their numerics through modules that define none
    # (_logistic, _temperature_nll, _one_vs_rest, sklcalib._utils._solvers, ...)
    modules = _calibrator_modules()
    assert len(modules) >= 13  # the rule is about something
    graph = _graph()
    offending = sorted(
        f"{a} -> {b}"
        for a in modules
        for b in graph[a]
        if b in modules and (a, b) not in COMPOSED
    )
    assert offending == []
    for a, b in COMPOSED:  # the exception still exists, or it goes
        assert b in graph[a]
