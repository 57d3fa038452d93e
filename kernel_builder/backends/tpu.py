"""The tpu backend: pure-Python (noarch) variants only."""

from kernel_builder.backends.registry import Backend

BACKEND = Backend(name="tpu", general_table=frozenset({"python-depends"}))
