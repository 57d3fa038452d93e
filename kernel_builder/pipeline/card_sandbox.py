"""The child process that renders one kernel card in Jinja's sandbox (``kernel_builder.pipeline.card``).

It reads ``{"template": ..., "context": {...}}`` on standard input and writes the filled card on standard output,
or one line saying what is wrong with the card on standard error (exit status 3). It limits its own address
space and CPU time first, and imports nothing of kernel-builder's beyond this module, so it starts quickly.
"""

from __future__ import annotations

import json
import sys
from typing import Any

#: The largest filled card: a card is a page of text.
MAX_FILLED_CHARS = 1 << 20
#: Seconds of wall time (the parent's timeout) and CPU time, and bytes of address space, for one card.
RENDER_SECONDS = 10
RENDER_MEMORY = 1 << 30
#: The exit status that says the card is at fault (anything else is the renderer's own failure).
CARD_ERROR = 3


def _render(template: str, context: dict[str, Any]) -> str:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    environment = ImmutableSandboxedEnvironment(
        undefined=StrictUndefined, trim_blocks=True, keep_trailing_newline=True, autoescape=False
    )
    out: list[str] = []
    size = 0
    for chunk in environment.from_string(template).generate(**context):
        size += len(chunk)
        if size > MAX_FILLED_CHARS:
            raise OverflowError(f"the filled card would be larger than {MAX_FILLED_CHARS >> 10} KiB")
        out.append(chunk)
    return "".join(out)


def _describe(error: Exception) -> str:
    from jinja2 import TemplateNotFound, TemplateSyntaxError
    from jinja2.exceptions import SecurityError

    if isinstance(error, TemplateSyntaxError):
        return f"line {error.lineno}: {error.message}"
    if isinstance(error, SecurityError):
        return f"it uses what a card may not ({error}); a card may only format the variables it is given"
    if isinstance(error, TemplateNotFound) or "no loader for this environment" in str(error):
        return "it includes or imports another template; a card cannot read other files"
    if isinstance(error, MemoryError):
        return f"it needs more than {RENDER_MEMORY >> 20} MiB"
    return f"{type(error).__name__}: {error}"


def _child() -> int:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (RENDER_MEMORY, RENDER_MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (RENDER_SECONDS, RENDER_SECONDS))
    request = json.loads(sys.stdin.read())
    import jinja2.sandbox  # noqa: F401  (before the work: an import error is not the card's)

    try:
        filled = _render(request["template"], request["context"])
    except Exception as error:  # the card's fault, whatever it is: say so in one line
        print(_describe(error).replace("\n", " "), file=sys.stderr)
        return CARD_ERROR
    sys.stdout.write(filled)
    return 0


if __name__ == "__main__":
    sys.exit(_child())
