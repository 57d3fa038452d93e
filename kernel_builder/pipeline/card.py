"""The kernel card: ``CARD.md`` filled in as a Jinja template (docs/cli.md, ``fill-card``).

Kernel cards in Hugging Face's kernels-community are Jinja templates (``{{ repo_id }}``, ``{% if functions %}``)
that their builder fills when it builds; the result becomes ``README.md`` on the Hub. ``build`` writes the filled
card to ``build/CARD.md``, ``upload`` fills the kernel's ``CARD.md`` again with the repository it uploads to, and
``fill-card`` prints it. The variables, and how they render, are the ones Hugging Face's builder gives:

- ``repo_id``: ``[general.hub] repo-id`` (or the upload's repository); a template that uses it cannot be filled
  without one;
- ``version``: ``[general] version``;
- ``functions``: the names in ``__all__`` of the kernel's ``__init__.py`` other than ``layers`` (none: null);
- ``layers``: when ``__all__`` names ``layers``, the classes its ``layers`` module defines (none: null);
- ``has_benchmark``: whether ``benchmarks/benchmark.py`` exists;
- ``upstream`` and ``source``: ``[general] upstream`` and ``source`` (or null); ``license``: ``[general] license``
  in lower case.

Rendering follows that builder's template engine: block tags take the newline after them (``trim_blocks``), one
trailing newline of the template is dropped, a name the card does not get renders as nothing (and loops over
nothing), and null, booleans and lists print as ``none``, ``true``/``false`` and ``["a", "b"]``.

A card is text a stranger may have written, so it is rendered in Jinja's immutable sandbox (no attribute of
Python's internals, no loader: an ``include`` or ``import`` reads no file), in a child process with a time and
memory limit and a bound on the filled card's size. Whatever goes wrong is one
:class:`~kernel_builder.errors.ConfigError` naming the card. A card without any Jinja syntax is used as it is,
without starting that process.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, ConfigError
from kernel_builder.pipeline.card_sandbox import CARD_ERROR, RENDER_MEMORY, RENDER_SECONDS
from kernel_builder.pipeline.plan.sources import package_dir

CARD_FILE = "CARD.md"
#: The largest card read: a card is a page of text.
MAX_CARD_BYTES = 256 << 10
_MARKERS = ("{{", "{%", "{#")
_PYTHON_LIMIT = 1 << 20  # the kernel's __init__.py and layers module, read for their names


@dataclass(frozen=True)
class CardFacts:
    """The template's variables (module docstring)."""

    repo_id: str | None
    functions: list[str] | None
    layers: list[str] | None
    has_benchmark: bool
    upstream: str | None
    license: str | None
    version: int = 1
    source: str | None = None


def is_template(text: str) -> bool:
    return any(marker in text for marker in _MARKERS)


def card_facts(
    project: KernelProject,
    repo_id: str | None = None,
    package_files: Mapping[str, bytes] | None = None,
) -> CardFacts:
    """The variables for ``project``'s card; ``repo_id`` overrides ``[general.hub] repo-id``. ``package_files``
    (the package's files by path relative to it, as a build's source scan read them) replaces reading them."""
    general = project.config.general
    package = package_dir(project)

    def module(relative: str) -> ast.Module | None:
        if package_files is None:
            return _module(package / relative)
        data = package_files.get(relative)
        return _parse(data) if data is not None and len(data) <= _PYTHON_LIMIT else None

    exported = _all_names(module("__init__.py"))
    functions = [name for name in exported or [] if name != "layers"] or None
    layers = None
    if exported and "layers" in exported:
        found = _class_names(module("layers/__init__.py"))
        layers = found if found is not None else _class_names(module("layers.py"))
    return CardFacts(
        repo_id=repo_id or general.hub.repo_id,
        functions=functions,
        layers=layers or None,
        has_benchmark=(project.root / "benchmarks" / "benchmark.py").is_file(),
        upstream=str(general.upstream) if general.upstream else None,
        license=general.license.lower() if general.license else None,
        version=general.version,
        source=str(general.source) if general.source else None,
    )


def _module(path: Path) -> ast.Module | None:
    try:
        return _parse(read_bounded(path, _PYTHON_LIMIT))
    except (OSError, UnsafeFileError):
        return None


def _parse(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _all_names(module: ast.Module | None) -> list[str] | None:
    """The strings of the module's ``__all__ = [...]`` (or a tuple), read without running it."""
    for node in module.body if module else []:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, (ast.List, ast.Tuple))
        ):
            names = [
                e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
            return names or None
    return None


def _class_names(module: ast.Module | None) -> list[str] | None:
    if module is None:
        return None
    return [node.name for node in module.body if isinstance(node, ast.ClassDef)]


def read_card(path: Path) -> str:
    try:
        return read_bounded(path, MAX_CARD_BYTES).decode("utf-8")
    except UnsafeFileError as exc:
        raise ConfigError(f"{path}: cannot read the kernel card: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the kernel card is not UTF-8 text") from None


def fill_card(path: Path, facts: CardFacts) -> str:
    """The card at ``path`` filled with ``facts``; without template syntax, itself less one trailing newline,
    as a template renders."""
    text = read_card(path)
    if not is_template(text):
        return text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text
    context = {k: v for k, v in asdict(facts).items() if v is not None or k != "repo_id"}
    request = json.dumps({"template": text, "context": context})
    try:
        result = subprocess.run(
            [sys.executable, "-m", "kernel_builder.pipeline.card_sandbox"],
            input=request,
            capture_output=True,
            encoding="utf-8",
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},  # whatever the locale: a card is UTF-8
            timeout=RENDER_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"{path}: cannot fill the card template: it ran for more than {RENDER_SECONDS} s (a loop too "
            "large?); a card may only format the variables it is given"
        ) from None
    last = (result.stderr.strip().splitlines() or [f"it exited with status {result.returncode}"])[-1]
    if result.returncode == CARD_ERROR:
        raise ConfigError(f"{path}: cannot fill the card template: {_explain(last, path)}")
    if result.returncode < 0:  # killed at its CPU limit (or by the system, at its memory limit)
        raise ConfigError(
            f"{path}: cannot fill the card template: it went beyond the limits of a card's rendering "
            f"({RENDER_SECONDS} s, {RENDER_MEMORY >> 20} MiB)"
        )
    if result.returncode != 0:  # not the card: the renderer itself (jinja2 missing, ...)
        raise BuildError(f"cannot fill {path}: the card renderer ({sys.executable}) failed: {last}")
    return result.stdout


def _explain(reason: str, path: Path) -> str:
    if "'repo_id' is undefined" in reason:
        return (
            "it uses repo_id, but there is no repository id: set repo-id in the [general.hub] table of "
            f"{path.parent / 'build.toml'} (upload fills it with the repository it uploads to)"
        )
    return reason


def fill_project_card(
    project: KernelProject,
    cache: Path | None = None,
    repo_id: str | None = None,
    package_files: Mapping[str, bytes] | None = None,
) -> str | None:
    """``project``'s ``CARD.md`` filled (None without one). With ``cache`` (a file under ``.kernel-builder/``),
    a card and variables seen before are not rendered again: a no-op build stays quick."""
    path = project.root / CARD_FILE
    if not path.is_file():
        return None
    facts = card_facts(project, repo_id, package_files)
    if cache is None:
        return fill_card(path, facts)
    import hashlib

    text = read_card(path)
    from kernel_builder import __version__

    key = hashlib.sha256(json.dumps([__version__, text, asdict(facts)], sort_keys=True).encode()).hexdigest()
    try:
        kept = json.loads(cache.read_text(encoding="utf-8"))
        if isinstance(kept, dict) and kept.get("key") == key and isinstance(kept.get("card"), str):
            return str(kept["card"])
    except (OSError, ValueError):
        pass
    filled = fill_card(path, facts)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"key": key, "card": filled}), encoding="utf-8")
    except OSError:  # the next build renders it again
        pass
    return filled
