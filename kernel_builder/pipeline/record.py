"""The build record: what a variant was last built from, in ``.kernel-builder/<variant>/record.json``.

A variant whose inputs equal the record's (tool version, id inputs, plan, the options that shape the output and,
for compiled variants, the interpreter, toolchain, manylinux compatibility and nvcc) and whose output is complete
is up to date (docs/layout.md, "Up to date"). For a compiled variant the record also keeps the extension's digest
and the ABI findings of that very file, so a no-op rebuild judges them again (``--werror`` included) without
reading the ELF; and the identity of every file Ninja reads to decide what to build, with its outputs and the
installed extension (``ninja_build.watched_files``): while none changed, the rebuild starts neither CMake nor
Ninja.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_builder import __version__, backends
from kernel_builder.pipeline.environment import toolchain
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter
from kernel_builder.pipeline.plan.planner import VariantPlan
from kernel_builder.pipeline.plan.scan import SourceScan
from kernel_builder.pipeline.state import VariantState

if TYPE_CHECKING:
    from kernel_builder.pipeline.check.abi import Violation


#: Build options that do not shape a variant's output (compared with the record of the last build).
NOT_INPUTS = (
    "verbose", "jobs", "import_check", "strict_import", "python", "backend", "selection", "refresh_envs", "parallel",
    "werror", "offline", "compile_log",
)  # fmt: skip


def variant_inputs(
    sources: SourceScan,
    variant: VariantPlan,
    interpreter: BuildInterpreter | None,
    options: Mapping[str, object],
) -> dict[str, object]:
    """Everything that decides the output of ``variant``; ``sources`` is the plan's scan (its id inputs' digests
    count, not the files as they are now), ``options`` are the build options as a mapping."""
    inputs: dict[str, object] = {
        "tool": __version__,
        "id-inputs": hashlib.sha256(sources.id_text.encode()).hexdigest(),
        "plan": repr(variant),
        # Neither how the interpreter was named (its fingerprint counts) nor which backends were selected.
        "options": {k: v for k, v in options.items() if k not in NOT_INPUTS},
    }
    if variant.aot and interpreter is not None:
        compiler = toolchain.compiler_for(interpreter.target)
        tools = [toolchain.cmake(), toolchain.ninja(), compiler]
        inputs["interpreter"] = interpreter.fingerprint()
        inputs["toolchain"] = toolchain.fingerprint(*tools)
        if sys.platform == "linux":
            from kernel_builder.pipeline.generate.manylinux import compat_fingerprint

            inputs["manylinux"] = compat_fingerprint(compiler.path)
        if backends.get(variant.backend).needs_nvcc:
            inputs["nvcc"] = toolchain.fingerprint(toolchain.toolkit_for(interpreter))
    return inputs


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stamp(files: Sequence[str]) -> str:
    """A digest of the identity (size, time, inode) of ``files``, missing ones included (what :meth:`Record.watch`
    keeps; here, not in ``ninja_build``, so that a no-op build does not import the compile stage)."""
    digest = hashlib.sha256()
    for name in files:
        try:
            st = os.stat(name)
            digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
        except OSError:
            digest.update(f"{name}\0-\n".encode())
    return digest.hexdigest()


def _is_finding(value: object) -> bool:
    """A recorded ABI finding: ``[kind, detail]``."""
    return isinstance(value, list) and len(value) == 2 and all(isinstance(x, str) for x in value)


@dataclass
class Record:
    """The record of one variant as read at the start of its build (``data`` is None when there is none)."""

    path: Path
    data: dict[str, object] | None

    @classmethod
    def read(cls, root: Path, variant: str) -> Record:
        path = VariantState.of(root, variant).record
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        return cls(path, data if isinstance(data, dict) else None)

    def matches(self, inputs: Mapping[str, object]) -> bool:
        """The last build had exactly these inputs."""
        return self.data is not None and self.data.get("inputs") == inputs

    def describes(self, extension: Path) -> bool:
        """The recorded extension digest is that of ``extension`` (not relinked since)."""
        return self.data is not None and self.data.get("extension") == _sha256(extension)

    def findings(self, extension: Path) -> list[Violation] | None:
        """The ABI findings recorded for ``extension`` (which :meth:`describes` it); None for a record written
        before findings were kept. Same digest and same tool version (an input): the same findings."""
        findings = None if self.data is None else self.data.get("abi")
        if isinstance(findings, list) and all(_is_finding(f) for f in findings):
            if not findings:
                return []  # the common case: no module of the ELF check to import
            from kernel_builder.pipeline.check.abi import Violation

            return [Violation(kind, extension, detail) for kind, detail in findings]
        return None

    def unchanged(self, build_ninja: Path) -> bool:
        """No file Ninja and the install would look at changed since the record was written (:meth:`watch`).
        ``build_ninja``, this build tree's, must be among them: a record copied or moved with its project
        describes the files at the old place."""
        watched = None if self.data is None else self.data.get("watched")
        return (
            isinstance(watched, list)
            and all(isinstance(name, str) for name in watched)
            and str(build_ninja.absolute()) in watched
            and self.data is not None
            and self.data.get("stamp") == stamp(watched)
        )

    def save(
        self,
        inputs: Mapping[str, object],
        extension: Path | None = None,
        findings: list[Violation] | None = None,
        watched: list[str] | None = None,
    ) -> None:
        """Record a finished build: its inputs, and for a compiled variant the extension and its ABI findings,
        and the files to :meth:`watch`."""
        data: dict[str, object] = {"inputs": dict(inputs)}
        if extension is not None:
            data["extension"] = _sha256(extension)
            data["abi"] = [[v.kind, v.detail] for v in findings or []]
        if watched is not None:
            data.update(self._watch(watched))
        self._write(data)

    def watch(self, watched: list[str]) -> None:
        """Keep the identity of ``watched`` (``ninja_build.watched_files``) in a record that matches the build."""
        self._write({**(self.data or {}), **self._watch(watched)})

    @staticmethod
    def _watch(watched: list[str]) -> dict[str, object]:
        return {"watched": watched, "stamp": stamp(watched)}

    def add_findings(self, findings: list[Violation]) -> None:
        """Keep the findings of the recorded extension in a record written before findings were kept."""
        self._write({**(self.data or {}), "abi": [[v.kind, v.detail] for v in findings]})

    def forget(self) -> None:
        """Remove the record: the build directory is about to describe something else until this build succeeds."""
        self.path.unlink(missing_ok=True)

    def _write(self, data: dict[str, object]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
        self.data = data
