"""``expose_as``: a module imported under a unique id, importable under its package name too."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_builder.loader.alias import expose_as


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package ``_kb_alias_abc123`` with a submodule imported by ``__init__`` and one that is not."""
    root = tmp_path / "_kb_alias_abc123"
    root.mkdir()
    (root / "__init__.py").write_text("from . import _ops\nVALUE = _ops.OPS + 1\n")
    (root / "_ops.py").write_text("OPS = 41\n")
    (root / "extra.py").write_text("from ._ops import OPS\nDOUBLE = 2 * OPS\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    finders = list(sys.meta_path)
    yield "_kb_alias_abc123"
    sys.meta_path[:] = finders
    for name in [n for n in sys.modules if n.split(".")[0] in ("_kb_alias_abc123", "mykernel")]:
        del sys.modules[name]


def test_plain_name_gives_the_same_modules(package: str) -> None:
    module = importlib.import_module(package)
    expose_as(module, "mykernel")
    import mykernel  # type: ignore[import-not-found]
    import mykernel._ops  # type: ignore[import-not-found]

    assert mykernel is module and mykernel.VALUE == 42
    assert mykernel._ops is sys.modules[f"{package}._ops"]
    # A submodule first imported through the alias is the real one, with its own name and spec.
    from mykernel import extra

    assert extra is sys.modules[f"{package}.extra"] and extra.DOUBLE == 82
    assert (
        extra.__name__ == f"{package}.extra"
        and extra.__spec__ is not None
        and extra.__spec__.name == f"{package}.extra"
    )


def test_refuses_a_taken_or_invalid_name(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(ImportError, match="already imported"):
        expose_as(module, "os")
    with pytest.raises(ValueError, match="not a valid"):
        expose_as(module, "my-kernel")
    expose_as(module, "mykernel")
    expose_as(module, "mykernel")  # again: no-op
