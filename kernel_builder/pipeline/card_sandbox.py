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


class _MissingRepoId(Exception):
    """The card prints ``repo_id`` and there is none to give it (``card.py`` says where to set one)."""

    def __str__(self) -> str:
        return "'repo_id' is undefined"


def _card_undefined() -> type:
    """Jinja's lenient ``Undefined``, except for what the sandbox refused: printing, testing or iterating an
    unsafe attribute is the error the sandbox gave, not an empty string."""
    from jinja2 import Undefined
    from jinja2.exceptions import SecurityError

    class CardUndefined(Undefined):
        __slots__ = ()

        def _refused(self) -> None:
            if issubclass(self._undefined_exception, SecurityError):
                self._fail_with_undefined_error()

        def __str__(self) -> str:
            self._refused()
            return ""

        def __iter__(self) -> Any:
            self._refused()
            return iter(())

        def __bool__(self) -> bool:
            self._refused()
            return False

    return CardUndefined


def _render(template: str, context: dict[str, Any]) -> str:
    from jinja2 import meta
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    # Hugging Face's builder renders cards with minijinja's defaults plus trim_blocks: an undefined name prints
    # nothing and iterates as empty (Jinja's default Undefined does the same), one trailing newline is dropped.
    environment = ImmutableSandboxedEnvironment(
        undefined=_card_undefined(),
        trim_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
        finalize=_display,
    )
    parsed = environment.parse(template)
    if "repo_id" not in context and "repo_id" in meta.find_undeclared_variables(parsed):
        raise _MissingRepoId()
    out: list[str] = []
    size = 0
    for chunk in environment.from_string(parsed).generate(**context):
        size += len(chunk)
        if size > MAX_FILLED_CHARS:
            raise OverflowError(f"the filled card would be larger than {MAX_FILLED_CHARS >> 10} KiB")
        out.append(chunk)
    return "".join(out)


def _display(value: Any) -> Any:
    """A printed value as minijinja prints it: ``none``, ``true``/``false``, ``["a", 1]``, ``{"k": "v"}``."""
    from jinja2 import Undefined

    if isinstance(value, Undefined):
        return value
    if value is None or isinstance(value, bool):
        return _literal(value)
    if isinstance(value, (list, tuple, dict)):
        return _literal(value)
    return value


def _literal(value: Any) -> str:
    """``value`` written as minijinja's debug form, the one its sequences and maps print their items in."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return str(value)


def _describe(error: Exception) -> str:
    from jinja2 import TemplateNotFound, TemplateSyntaxError
    from jinja2.exceptions import SecurityError

    if isinstance(error, TemplateSyntaxError):
        return f"line {error.lineno}: {error.message}"
    if isinstance(error, SecurityError):
        return f"it uses what a card may not ({error}); a card may only format the variables it is given"
    if isinstance(error, TemplateNotFound) or "no loader for this environment" in str(error):
        return "it includes or imports another template; a card cannot read other files"
    if isinstance(error, _MissingRepoId):
        return str(error)
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
