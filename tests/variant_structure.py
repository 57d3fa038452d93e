"""A form of a parsed variant that does not depend on the package that built it, for the differential tests of
``VariantAccepted.variant`` / ``VariantRejected.variant`` (test_loader_resolve_upstream.py,
test_formats_variant_model.py, and loader_compat.py's ``get_kernel_variants`` outcome). It imports neither
package, so that the script can use it in an interpreter that has imported only one of them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from packaging.version import Version


def structure(value: Any) -> Any:
    """Each part as its class name, its ``variant_str`` (and ``name``, where it has one: the backends) and its
    fields, with each version as a string together with the type it is (``packaging``'s ``Version`` in both
    packages), and the flags (``legacy``, ``cxx11_abi``, the ABI) as they are. JSON-serialisable."""
    if isinstance(value, Version):
        return f"{type(value).__module__}.{type(value).__name__}({value})"
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        assert value is None or isinstance(value, (str, bool)), value
        return value
    form: dict[str, Any] = {"class": type(value).__name__, "variant_str": value.variant_str}  # type: ignore[attr-defined]
    if hasattr(value, "name"):
        form["name"] = value.name
    for part in dataclasses.fields(value):
        form[part.name] = structure(getattr(value, part.name))
    return form
