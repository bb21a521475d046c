"""The package's layers, read from its imports (function-local ones included): no module imports
a layer above its own, and session/ and validation/ sit side by side (neither imports the other).

The product (optics, display, devices, refraction, instrument_files, session, validation, report,
app) and the papers' reproduction (``visiontune.reproduction``) are two trees: the reproduction
stands above the whole product (it may import the product, the product never imports it; the
loop reaches its GP engines by dotted name, :mod:`visiontune.refraction.engine_registry`), and its
own packages are layered inside it (gp below acquisition below engines below the experiments).

Above the layers, ``cli.py`` and ``__main__.py`` may import anything and nothing imports them;
below them, the shared modules (the package's ``__init__``, ``errors.py``, ``_validate.py``,
``private_files.py``, ``output_guard.py``, ``_argparse.py``) import no layer. An import names the module it loads:
``from visiontune.reproduction.gp import moments`` loads the submodule ``visiontune.reproduction.gp.moments``, ``from
visiontune.reproduction.gp import ProbitGP`` the package's ``__init__``; ``visiontune calibrate`` loading
``visiontune.display.cli`` by name (``cli.COMMANDS``) is an import of it too."""

from __future__ import annotations

import ast
from pathlib import Path

import visiontune
from visiontune import cli

PACKAGE = Path(visiontune.__file__).resolve().parent
#: From the top down; a layer may import only layers below it (and itself). A dotted key is a
#: package inside a layer (the longest key that prefixes a module's name places it).
LAYERS = {
    "reproduction": 7.4,  # the papers' experiments: benchmark functions, sweeps, tables, ``bench``, ``simulate``
    "reproduction.engines": 7.3,  # the refraction loop's GP engines, registered by dotted name
    "reproduction.acquisition": 7.2,
    "reproduction.gp": 7.1,
    "app": 6,
    "app.logic": 5.5,  # the app's Qt-free controllers, engine process and messages: below the widgets
    "report": 5,
    "session": 4,
    "validation": 4,
    "instrument_files": 3.5,
    "refraction": 3,
    "display": 2,
    "devices": 2,
    "optics": 1,
}
#: The product's layers: none of them may import the reproduction, lazily or not.
PRODUCT = (
    "app",
    "app.logic",
    "report",
    "session",
    "validation",
    "instrument_files",
    "refraction",
    "display",
    "devices",
    "optics",
)
TOP = {"visiontune.cli", "visiontune.__main__"}
SHARED = {
    "visiontune",
    "visiontune.errors",
    "visiontune._validate",
    "visiontune.private_files",
    "visiontune.output_guard",
    "visiontune._argparse",
}
_HEIGHTS = {**LAYERS, "top": max(LAYERS.values()) + 1, "shared": 0}


def _group(module: str) -> str | None:
    """The layer of a package module, ``"top"``, ``"shared"``, ``"unplaced"``, or None outside the package."""
    parts = module.split(".")
    if parts[0] != "visiontune":
        return None
    if module in TOP:
        return "top"
    if module in SHARED:
        return "shared"
    for k in range(len(parts), 1, -1):
        key = ".".join(parts[1:k])
        if key in LAYERS:
            return key
    return "unplaced"


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(source: str, module: str, modules: set[str], *, is_package: bool = False) -> set[str]:
    """The package modules that ``source`` (module ``module``) imports, anywhere in it: ``import
    a.b``, ``from a import b`` (``a.b`` when that is a module, else ``a``), relative imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + is_package]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {name for name in found if name in modules and name != module}


def package_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package modules it imports, for every ``.py`` file under ``package``."""
    paths = {_module_name(p, package): p for p in package.rglob("*.py")}
    graph = {
        m: _imports(p.read_text(encoding="utf-8"), m, set(paths), is_package=p.name == "__init__.py")
        for m, p in paths.items()
    }
    return graph


def _real_graph() -> dict[str, set[str]]:
    graph = package_graph()
    graph["visiontune.cli"] |= {path for path, *_ in cli.COMMANDS.values()}
    return graph


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module of the same height or higher in another group (a layer above,
    a sibling layer, the top from below, a layer from a shared module)."""
    wrong = []
    for module, names in graph.items():
        group = _group(module)
        for name in sorted(names):
            other = _group(name)
            if other is None or other == group:
                continue
            if "unplaced" in (group, other) or _HEIGHTS[other] >= _HEIGHTS[group]:
                wrong.append(f"{module} imports {name}")
    return wrong


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return circles


def test_every_module_has_a_place():
    assert [m for m in _real_graph() if _group(m) == "unplaced"] == []


def test_no_module_imports_a_higher_layer_or_its_sibling():
    assert upward_imports(_real_graph()) == []


def test_the_product_imports_nothing_of_the_reproduction():
    """The clinic's product and the papers' reproduction are two trees: no product module names a
    module of ``visiontune.reproduction`` in an import (lazy ones included); the GP engines are
    reached through the engine registry's dotted names."""
    graph = _real_graph()
    assert _group("visiontune.reproduction.gp") == "reproduction.gp"
    assert _group("visiontune.reproduction.engines.gp_engine") == "reproduction.engines"
    assert _group("visiontune.reproduction.sweep") == "reproduction"
    wrong = [
        f"{m} imports {n}"
        for m, names in graph.items()
        if _group(m) in PRODUCT
        for n in sorted(names)
        if n.startswith("visiontune.reproduction")
    ]
    assert wrong == []


def test_no_import_circle_between_modules():
    """No module imports, directly or through others, a module that imports it (function-local
    imports and imports of a package's ``__init__`` included)."""
    assert import_circles(_real_graph()) == []


def test_the_reader_resolves_every_kind_of_import():
    modules = {
        "visiontune",
        "visiontune.reproduction.gp",
        "visiontune.reproduction.gp.moments",
        "visiontune.reproduction.gp.kernels",
        "visiontune.report.pdf",
        "visiontune.errors",
        "visiontune.cli",
    }
    source = (
        "import numpy\n"
        "from visiontune.reproduction.gp import moments, ProbitGP\n"
        "from . import kernels\n"
        "from ... import errors\n"
        "def f():\n"
        "    from visiontune.report.pdf import pdf_bytes\n"
        "    import visiontune.cli\n"
    )
    found = _imports(source, "visiontune.reproduction.gp.laplace", modules)
    assert found == {
        "visiontune.reproduction.gp.moments",
        "visiontune.reproduction.gp",
        "visiontune.reproduction.gp.kernels",
        "visiontune.errors",
        "visiontune.report.pdf",
        "visiontune.cli",
    }
    assert _imports("from . import moments\n", "visiontune.reproduction.gp", modules, is_package=True) == {
        "visiontune.reproduction.gp.moments"
    }


def test_the_checks_see_an_upward_import_and_a_circle():
    assert upward_imports(
        {
            "visiontune.display.cli": {"visiontune.cli"},  # a layer importing the top
            "visiontune.errors": {"visiontune.reproduction.gp.kernels"},  # a shared module importing a layer
            "visiontune.session.store": {
                "visiontune.reproduction.sweep",
                "visiontune.refraction.loop",
                "visiontune.errors",
            },
            "visiontune.reproduction.gp.laplace": {"visiontune.reproduction.gp"},
            "visiontune.cli": {"visiontune.app.cli", "visiontune.display.cli"},
            "visiontune.tools": {"visiontune.errors"},  # a module in no layer
        }
    ) == [
        "visiontune.display.cli imports visiontune.cli",
        "visiontune.errors imports visiontune.reproduction.gp.kernels",
        "visiontune.session.store imports visiontune.reproduction.sweep",
        "visiontune.tools imports visiontune.errors",
    ]
    through_init = {
        "visiontune.reproduction.gp": {"visiontune.reproduction.gp.laplace"},
        "visiontune.reproduction.gp.laplace": {"visiontune.reproduction.gp.moments"},
        "visiontune.reproduction.gp.moments": {"visiontune.reproduction.gp"},
        "visiontune.optics": set(),
    }
    assert import_circles(through_init) == [
        ["visiontune.reproduction.gp", "visiontune.reproduction.gp.laplace", "visiontune.reproduction.gp.moments"]
    ]
    assert import_circles({**through_init, "visiontune.reproduction.gp.moments": set()}) == []


def test_the_reader_sees_a_circle_through_a_submodule_import(tmp_path):
    package = tmp_path / "visiontune"
    (package / "reproduction" / "gp").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "reproduction" / "__init__.py").write_text("")
    (package / "reproduction" / "gp" / "__init__.py").write_text("from visiontune.reproduction.gp.laplace import fit\n")
    (package / "reproduction" / "gp" / "laplace.py").write_text(
        "def fit():\n    from visiontune.reproduction.gp import moments\n"
    )
    (package / "reproduction" / "gp" / "moments.py").write_text("from visiontune.reproduction.gp import laplace\n")
    graph = package_graph(package)
    assert graph["visiontune.reproduction.gp.laplace"] == {"visiontune.reproduction.gp.moments"}
    assert import_circles(graph) == [["visiontune.reproduction.gp.laplace", "visiontune.reproduction.gp.moments"]]
