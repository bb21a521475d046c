"""The package's layers, read from its imports (function-local ones included): no module imports
a layer above its own, and session/ and experiments/ sit side by side (neither imports the other)."""

from __future__ import annotations

import ast
from pathlib import Path

import visiontune

PACKAGE = Path(visiontune.__file__).resolve().parent
#: From the top down; a layer may import only layers below it (and itself).
LAYERS = {"app": 6, "report": 5, "session": 4, "experiments": 4, "refraction": 3, "acquisition": 2, "display": 2,
          "gp": 1, "optics": 1}  # fmt: skip


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "visiontune" and parts[1] in LAYERS else None


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_no_module_imports_a_higher_layer_or_its_sibling():
    wrong = []
    for layer, height in LAYERS.items():
        for path in (PACKAGE / layer).rglob("*.py"):
            for name in _imports(path):
                other = _layer_of(name)
                if other is None or other == layer:
                    continue
                if LAYERS[other] >= height:
                    wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert wrong == []


def test_the_check_sees_an_upward_import(tmp_path):
    bad = tmp_path / "x.py"
    bad.write_text("def f():\n    from visiontune.report.pdf import pdf_bytes\n")
    assert "visiontune.report.pdf" in _imports(bad) and LAYERS[_layer_of("visiontune.report.pdf")] > LAYERS["session"]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_circle_between_modules():
    """No module imports, directly or through others, a module that imports it (function-local
    imports included): Tarjan's strongly connected components of the import graph are single."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {m: sorted(n for n in _imports(p) if n in modules and n != m and not modules[n].name == "__init__.py")
             for m, p in modules.items()}  # fmt: skip
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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
                circles.append(sorted(component))

    for m in graph:
        if m not in index:
            visit(m)
    assert circles == []
