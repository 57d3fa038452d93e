"""What every reading stage shares: the diagnostics of one file and where each key of the model came from."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernel_builder.common.diagnostics import DiagnosticList
from kernel_builder.config.positions import KeyPath, Positions
from kernel_builder.config.schema import GENERAL_SUBTABLES


def describe(path: KeyPath) -> str:
    """``("kernel", "gelu", "src")`` -> ``[kernel.gelu] src``, the way users write it."""
    names = [str(p) for p in path if not isinstance(p, int)]
    if not names:
        return "the file"
    sub_table = names[0] == "general" and len(names) > 1 and names[1] in GENERAL_SUBTABLES
    if (names[0] == "kernel" and len(names) >= 2) or sub_table:
        table, keys = names[:2], names[2:]
    else:
        table, keys = names[:1], names[1:]
    text = "[" + ".".join(table) + "]"
    if keys:
        text += " `" + ".".join(keys) + "`"
    return text


@dataclass
class Context:
    diags: DiagnosticList
    positions: Positions
    #: model path prefix -> path in the original file (filled by migration when keys move).
    origin: dict[KeyPath, KeyPath] = field(default_factory=dict)

    def source_path(self, path: KeyPath) -> KeyPath:
        for cut in range(len(path), 0, -1):
            prefix = path[:cut]
            if prefix in self.origin:
                return self.origin[prefix] + path[cut:]
        return path

    def line(self, path: KeyPath) -> int | None:
        return self.positions.line(self.source_path(path))

    def key_line(self, path: KeyPath) -> int | None:
        return self.positions.key_line(self.source_path(path))

    def error(self, message: str, path: KeyPath = (), hint: str | None = None, *, key: bool = False) -> None:
        line = self.key_line(path) if key else self.line(path)
        self.diags.error(message, line if path else None, hint)

    def warning(self, message: str, path: KeyPath = (), hint: str | None = None) -> None:
        self.diags.warning(message, self.line(path) if path else None, hint)

    def note(self, message: str, path: KeyPath = (), hint: str | None = None) -> None:
        self.diags.note(message, self.line(path) if path else None, hint)
