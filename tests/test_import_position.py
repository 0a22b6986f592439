"""Where sklcalib's modules import each other: a module importing another
public package does so at the top of the file, where a reader looks for the
structure, unless that package loads an optional heavy dependency (torch,
skorch, numba, dask, matplotlib) on import; such an import stays inside the
function that needs it, with a comment saying why.

Read with ``ast``: an import counts as module-level when it is a statement of
the module body (or of a top-level ``if``/``try``/``with`` block). A package
is heavy when its module-level imports reach one of those dependencies,
following sklcalib's own module-level imports.
"""

import ast
import functools

from test_import_graph import _modules, import_targets

HEAVY = {"torch", "skorch", "numba", "dask", "distributed", "matplotlib"}


def _top_level(body):
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, ast.If | ast.Try | ast.With):
                yield from _top_level(getattr(node, field, []))
        for handler in getattr(node, "handlers", []):
            yield from _top_level(handler.body)


@functools.cache  # read once for both tests (they do not change it)
def _imports():
    """(module, target, line, module-level?, commented?) of every import."""
    modules = _modules()
    rows = []
    for name, path in modules.items():
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text, str(path))
        top = {id(node) for node in _top_level(tree.body)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            before = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            commented = "#" in lines[node.lineno - 1] or before.startswith("#")
            for target in import_targets(
                node, name, path.name == "__init__.py", modules
            ):
                rows.append((name, target, node.lineno, id(node) in top, commented))
    return modules, rows


def _heavy_modules(modules, rows):
    """sklcalib modules whose import loads a heavy dependency."""
    edges = {}
    for name, target, _, top, _ in rows:
        if top:
            edges.setdefault(name, set()).add(target)
    heavy = set()
    changed = True
    while changed:
        changed = False
        for name in modules:
            if name in heavy:
                continue
            reach = set(edges.get(name, ()))
            parents = [name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)]
            reach.update(p for p in parents if p != "sklcalib")
            if any(t.split(".")[0] in HEAVY or t in heavy for t in reach):
                heavy.add(name)
                changed = True
    return heavy


def _package(name):
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_imports_between_public_packages_are_at_module_level():
    modules, rows = _imports()
    heavy = _heavy_modules(modules, rows)
    misplaced = []
    for name, target, line, top, commented in rows:
        if not target.startswith("sklcalib.") or top:
            continue
        if target not in modules or _package(target) in (_package(name), "_utils"):
            continue
        if target in heavy and commented:
            continue
        why = "loads no heavy dependency" if target not in heavy else "no comment"
        misplaced.append(f"{name}:{line} imports {target} in a function ({why})")
    assert misplaced == []


def test_the_rule_knows_the_heavy_packages():
    modules, rows = _imports()
    heavy = _heavy_modules(modules, rows)
    assert {"sklcalib.net", "sklcalib.callbacks", "sklcalib.losses"} <= heavy
    light = {"sklcalib.metrics", "sklcalib.calibration", "sklcalib.datasets"}
    assert not light & heavy
    assert "sklcalib.plotting" not in heavy  # matplotlib is loaded on first plot
