"""No function in the package is longer than :data:`LIMIT` lines: a longer one is split into its steps, each a
function named for what it does, so that the function that runs them reads as the list of steps.

A function's length runs from its ``def`` line to its last line, docstring and comments included (decorators
excluded); nested functions count towards the function around them as well as on their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kernel_builder

PACKAGE_DIR = Path(kernel_builder.__file__).parent
LIMIT = 100

#: ``<module path>:<function>`` → why it may be longer for now. Short, and each entry goes with the change that
#: brings its function under the limit (an entry whose function is gone or short enough fails below).
ALLOWED: dict[str, str] = {}


def long_functions(package_dir: Path, limit: int) -> dict[str, int]:
    """``<module path>:<qualified name>`` → length, for every function of more than ``limit`` lines."""
    found: dict[str, int] = {}
    for file in sorted(package_dir.rglob("*.py")):
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        module = file.relative_to(package_dir).as_posix()
        for name, node in _functions(tree, ""):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                found[f"{module}:{name}"] = length
    return found


def _functions(node: ast.AST, prefix: str) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function below ``node`` with its qualified name (``Class.method``, ``outer.inner``)."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((prefix + child.name, child))
            out += _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            out += _functions(child, f"{prefix}{child.name}.")
        else:
            out += _functions(child, prefix)
    return out


def test_no_function_is_longer_than_the_limit() -> None:
    found = long_functions(PACKAGE_DIR, LIMIT)
    too_long = {name: length for name, length in found.items() if name not in ALLOWED}
    assert too_long == {}, f"split these into their steps (at most {LIMIT} lines each): {too_long}"


def test_every_allowed_function_is_still_too_long() -> None:
    """An entry goes once its function is short (or gone): the list only ever names what is left to do."""
    found = long_functions(PACKAGE_DIR, LIMIT)
    assert sorted(name for name in ALLOWED if name not in found) == []


def test_the_count_sees_methods_nested_functions_and_async_ones(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(4))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        "class C:\n"
        "    @staticmethod\n"  # decorators do not count
        f"    def method():\n{body.replace('    ', '        ')}"
        f"def outer():\n{body}    def inner():\n{body.replace('    ', '        ')}    return inner\n"
        f"async def waits():\n{body}"
        "def short():\n    pass\n",
        encoding="utf-8",
    )
    assert long_functions(tmp_path / "pkg", 4) == {
        "mod.py:C.method": 5,
        "mod.py:outer": 11,
        "mod.py:outer.inner": 5,
        "mod.py:waits": 5,
    }
    assert long_functions(tmp_path / "pkg", 5) == {"mod.py:outer": 11}
