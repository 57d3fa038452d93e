"""The package's import graph: no import cycle of any length, and the layers point one way.

The graph is read from the source with :mod:`ast` (nothing is imported), counting every import: at module level,
inside functions and under ``if TYPE_CHECKING:``, since a lazy import is still a dependency. ``from pkg import
name`` is an edge to ``pkg`` and, where ``name`` is a submodule, to ``pkg.name`` too. The layering follows the
package layout in the README: the shared formats depend on neither the builder nor the loader (nor the
publishing, authoring or command layers), the loader does not depend on the builder, and no build stage
reaches back into another (:data:`FORBIDDEN` lists each rule, with why). The pipeline's parts (its sub-packages
and modules, each taken whole) import each other in no loop either.

Cycles are the strongly connected components of the graph, so a cycle through three or more modules is found
as surely as two modules importing each other. The package's own ``__init__`` is the lazy public facade
(``kernel_builder.get_kernel`` and friends, imported on first access; its imports are ``TYPE_CHECKING`` only):
every module may import ``kernel_builder`` for ``__version__``, so the facade's edges are left out of the cycle
search (:data:`FACADES`), and nothing else is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

import kernel_builder

PACKAGE_DIR = Path(kernel_builder.__file__).parent

_LATE_STAGES = (
    "kernel_builder.pipeline.package",
    "kernel_builder.pipeline.record",
    "kernel_builder.pipeline.builder",
)
_STAGES = (
    "kernel_builder.pipeline.plan",
    "kernel_builder.pipeline.environment",
    "kernel_builder.pipeline.generate",
    "kernel_builder.pipeline.compile",
    "kernel_builder.pipeline.check",
    "kernel_builder.pipeline.options",
    *_LATE_STAGES,
)
_LOADER_COMMANDS = (
    "kernel_builder.loader.lock",
    "kernel_builder.loader.download",
    "kernel_builder.loader.describe",
)
_ABOVE_COMMON = (
    "kernel_builder.formats",
    "kernel_builder.config",
    "kernel_builder.pipeline",
    "kernel_builder.hub",
    "kernel_builder.loader",
    "kernel_builder.publish",
    "kernel_builder.authoring",
    "kernel_builder.commands",
    "kernel_builder.cli",
    "kernel_builder.layers",
)
#: Packages whose own ``__init__`` is a lazy re-exporting facade: their outgoing edges are not followed in the
#: cycle search (the module docstring says why).
FACADES = frozenset({"kernel_builder"})

#: Package prefix → the packages it must not import (the prefix itself and every module below it).
FORBIDDEN = {
    "kernel_builder.formats": (
        "kernel_builder.pipeline",
        "kernel_builder.loader",
        "kernel_builder.publish",
        "kernel_builder.authoring",
        "kernel_builder.commands",
        "kernel_builder.cli",
    ),
    # The loader runs code strangers publish and is imported by users' programs: nothing of building,
    # publishing, authoring or the CLI. The Hub package is below the loader and the publisher, and knows
    # neither. The shared helpers (common) and the backend table sit below everything.
    "kernel_builder.loader": (
        "kernel_builder.pipeline",
        "kernel_builder.config",
        "kernel_builder.publish",
        "kernel_builder.authoring",
        "kernel_builder.commands",
        "kernel_builder.cli",
        "kernel_builder.layers",
    ),
    # The load sequence and its sources do not depend on the commands over them (lock, download, describe).
    "kernel_builder.loader.hub_steps": _LOADER_COMMANDS,
    "kernel_builder.loader.remote": _LOADER_COMMANDS,
    "kernel_builder.loader.local": _LOADER_COMMANDS,
    "kernel_builder.loader.locked": _LOADER_COMMANDS,
    "kernel_builder.loader.hub_dependencies": _LOADER_COMMANDS,
    "kernel_builder.loader.warm": _LOADER_COMMANDS,
    "kernel_builder.hub": (
        "kernel_builder.loader",
        "kernel_builder.pipeline",
        "kernel_builder.config",
        "kernel_builder.publish",
        "kernel_builder.authoring",
        "kernel_builder.commands",
        "kernel_builder.cli",
        "kernel_builder.layers",
    ),
    "kernel_builder.common": _ABOVE_COMMON,
    "kernel_builder.backends": _ABOVE_COMMON,
    "kernel_builder.publish": ("kernel_builder.authoring", "kernel_builder.commands", "kernel_builder.cli"),
    "kernel_builder.config": (
        "kernel_builder.pipeline",
        "kernel_builder.loader",
        "kernel_builder.hub",
        "kernel_builder.publish",
        "kernel_builder.authoring",
        "kernel_builder.commands",
        "kernel_builder.cli",
    ),
    # The build stages: configuration knows nothing of the build; planning asks the build environment what can be
    # built, never the compile stage; the environment (interpreters, toolchain, isolated environments) depends
    # on no stage; compiling takes its inputs as values, not the plan's or the generator's types; generating
    # does not reach into the checks (the manylinux policy they share lives below both, in pipeline/abi_policy.py).
    # The later stages (packaging, the build record, the builder that runs them all) are reached by no earlier
    # one; the build state and the ABI policy sit below every stage.
    "kernel_builder.pipeline.plan": (
        "kernel_builder.pipeline.compile",
        "kernel_builder.pipeline.generate",
        "kernel_builder.pipeline.check",
        *_LATE_STAGES,
    ),
    "kernel_builder.pipeline.environment": (
        "kernel_builder.pipeline.plan",
        "kernel_builder.pipeline.generate",
        "kernel_builder.pipeline.compile",
        "kernel_builder.pipeline.check",
        "kernel_builder.pipeline.options",
        *_LATE_STAGES,
    ),
    "kernel_builder.pipeline.compile": (
        "kernel_builder.pipeline.plan",
        "kernel_builder.pipeline.generate",
        "kernel_builder.pipeline.check",
        *_LATE_STAGES,
    ),
    "kernel_builder.pipeline.generate": (
        "kernel_builder.pipeline.check",
        "kernel_builder.pipeline.compile",
        *_LATE_STAGES,
    ),
    "kernel_builder.pipeline.check": (
        "kernel_builder.pipeline.compile",
        "kernel_builder.pipeline.generate",
        *_LATE_STAGES,
    ),
    "kernel_builder.pipeline.package": (
        "kernel_builder.pipeline.compile",
        "kernel_builder.pipeline.check",
        "kernel_builder.pipeline.record",
        "kernel_builder.pipeline.builder",
    ),
    "kernel_builder.pipeline.state": _STAGES,
    "kernel_builder.pipeline.abi_policy": _STAGES,
}


def module_files(package_dir: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (its file, whether it is a package's ``__init__``), for every module below."""
    modules = {}
    for file in sorted(package_dir.rglob("*.py")):
        parts = list(file.relative_to(package_dir.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (file, is_package)
    return modules


def _imported(node: ast.AST, package: str) -> Iterable[str]:
    """The dotted names an import statement may import (its module, and each name as a submodule)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports, anywhere in its body."""
    modules = module_files(package_dir)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (file, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), str(file))):
            graph[name].update(t for t in _imported(node, package) if t in modules and t != name)
    return graph


def mutual_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every pair of modules that import each other, sorted."""
    return sorted({(a, b) if a < b else (b, a) for a in graph for b in graph[a] if a in graph.get(b, ())})


def import_cycles(graph: dict[str, set[str]], facades: frozenset[str] = frozenset()) -> list[list[str]]:
    """Every import cycle, of any length: the strongly connected components of more than one module (each
    sorted, the list sorted), found with Tarjan's algorithm. The edges out of ``facades`` are left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in () if module in facades else sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def collapsed(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The graph of ``package``'s direct sub-packages and modules: each module below ``package`` stands for the
    one of them it is in (``pipeline.plan.selected`` → ``pipeline.plan``), edges inside one of them dropped."""
    prefix = package + "."

    def part(module: str) -> str | None:
        return prefix + module[len(prefix) :].split(".")[0] if module.startswith(prefix) else None

    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = part(module)
        if source is None:
            continue
        edges = parts.setdefault(source, set())
        edges.update(t for t in map(part, targets) if t is not None and t != source)
    return parts


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


#: Edges that break the layering but are tolerated for a while: ``(importer, imported)``. None today; a change
#: that cannot remove a forbidden edge at once lists it here, with why, and the change that removes the edge
#: removes the entry. An entry no longer in the graph is harmless.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()


def layering_violations(
    graph: dict[str, set[str]],
    forbidden: dict[str, tuple[str, ...]],
    known: frozenset[tuple[str, str]] = frozenset(),
) -> list[str]:
    """``importer -> imported`` for every edge from a layer to a package it must not depend on, but ``known``."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for layer, banned in forbidden.items()
        if _within(module, layer)
        for target in targets
        if any(_within(target, b) for b in banned) and (module, target) not in known
    )


# --- the package ----------------------------------------------------------------------------------------------


def test_no_two_modules_import_each_other() -> None:
    assert mutual_imports(import_graph(PACKAGE_DIR)) == []


def test_no_import_cycle_of_any_length() -> None:
    assert import_cycles(import_graph(PACKAGE_DIR), FACADES) == []


def test_no_loop_between_the_pipelines_parts() -> None:
    """The build stages and the modules beside them (``plan/``, ``options.py``, ``generate/``, ...) taken whole:
    a loop between two of them would make them one stage in two places, even where no two modules loop."""
    assert import_cycles(collapsed(import_graph(PACKAGE_DIR), "kernel_builder.pipeline")) == []


def test_every_layer_keeps_to_its_place() -> None:
    assert layering_violations(import_graph(PACKAGE_DIR), FORBIDDEN, KNOWN_VIOLATIONS) == []


def test_the_graph_covers_the_package() -> None:
    graph = import_graph(PACKAGE_DIR)
    # the loader's lazy, function-level import of the Hub half and a TYPE_CHECKING import are both edges
    assert "kernel_builder.loader.remote" in graph["kernel_builder.loader"]
    assert "kernel_builder.hub" in graph["kernel_builder.loader.remote"]
    assert "kernel_builder.formats.variants" in graph["kernel_builder.formats.matrix"]


# --- the walker itself, on a small package made for it ---------------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "toy"


def test_a_planted_cycle_is_found(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "toy/__init__.py": "",
            "toy/a.py": "from toy import b\n",
            "toy/b.py": "def f():\n    from toy.a import thing\n",
            "toy/sub/__init__.py": "from .c import x\n",
            "toy/sub/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import sub\n",
            "toy/d.py": "import toy.a\n",
        },
    )
    graph = import_graph(package)
    assert graph["toy.d"] == {"toy.a"}
    assert mutual_imports(graph) == [("toy.a", "toy.b"), ("toy.sub", "toy.sub.c")]


def test_a_planted_three_module_cycle_is_found(tmp_path: Path) -> None:
    """a → b → c → a, with a lazy import closing it, and a tail d → a outside the cycle: no two modules import
    each other, so only the search for cycles of any length sees it."""
    package = _package(
        tmp_path,
        {
            "toy/__init__.py": "",
            "toy/a.py": "from toy import b\n",
            "toy/b.py": "import toy.c\n",
            "toy/c.py": "def f():\n    from toy.a import thing\n",
            "toy/d.py": "from toy import a\n",
            "toy/e.py": "",
        },
    )
    graph = import_graph(package)
    assert mutual_imports(graph) == []
    assert import_cycles(graph) == [["toy.a", "toy.b", "toy.c"]]
    assert import_cycles(graph, frozenset({"toy.c"})) == []  # a facade's edges are not followed


def test_cycles_are_found_apart_and_whole() -> None:
    graph = {
        "p.a": {"p.b"},
        "p.b": {"p.a"},
        "p.c": {"p.d"},
        "p.d": {"p.e"},
        "p.e": {"p.f", "p.c"},
        "p.f": {"p.g"},
        "p.g": {"p.h"},
        "p.h": {"p.f", "p.a"},
        "p.z": set(),
    }
    assert import_cycles(graph) == [["p.a", "p.b"], ["p.c", "p.d", "p.e"], ["p.f", "p.g", "p.h"]]


def test_a_planted_layering_violation_is_found(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "toy/__init__.py": "",
            "toy/formats/__init__.py": "",
            "toy/formats/names.py": "def f():\n    import toy.build.plan\n",
            "toy/build/__init__.py": "from toy.formats import names\n",
            "toy/build/plan.py": "",
        },
    )
    graph = import_graph(package)
    assert layering_violations(graph, {"toy.formats": ("toy.build",)}) == [
        "toy.formats.names -> toy.build.plan"
    ]
    assert layering_violations(graph, {"toy.build": ("toy.loader",)}) == []
    known = frozenset({("toy.formats.names", "toy.build.plan")})
    assert layering_violations(graph, {"toy.formats": ("toy.build",)}, known) == []


def test_a_loop_between_two_sub_packages_is_found_where_no_modules_loop(tmp_path: Path) -> None:
    """``stage.options`` imports ``stage.plan.select`` and ``stage.plan.run`` imports ``stage.options``: no module
    cycle, but the sub-package ``plan`` and the module ``options`` import each other."""
    package = _package(
        tmp_path,
        {
            "toy/__init__.py": "",
            "toy/stage/__init__.py": "",
            "toy/stage/options.py": "from toy.stage.plan.select import Selection\n",
            "toy/stage/plan/__init__.py": "",
            "toy/stage/plan/select.py": "",
            "toy/stage/plan/run.py": "from toy.stage import options\n",
            "toy/stage/state.py": "import toy.stage.options\n",
            "toy/other.py": "from toy.stage import state\n",
        },
    )
    graph = import_graph(package)
    assert import_cycles(graph) == []
    parts = collapsed(graph, "toy.stage")
    assert parts == {
        "toy.stage.options": {"toy.stage.plan"},
        "toy.stage.plan": {"toy.stage.options"},
        "toy.stage.state": {"toy.stage.options"},
    }
    assert import_cycles(parts) == [["toy.stage.options", "toy.stage.plan"]]


@pytest.mark.parametrize("text", ["from . import b\n", "from .b import g\n", "import toy.b\n"])
def test_relative_and_absolute_imports_are_edges(tmp_path: Path, text: str) -> None:
    package = _package(tmp_path, {"toy/__init__.py": "", "toy/a.py": text, "toy/b.py": "from toy import a\n"})
    assert mutual_imports(import_graph(package)) == [("toy.a", "toy.b")]
