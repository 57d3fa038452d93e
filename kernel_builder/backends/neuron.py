"""The neuron backend (AWS Trainium/Inferentia): pure-Python (noarch) variants only."""

from kernel_builder.backends.registry import Backend

BACKEND = Backend(name="neuron", general_table=frozenset({"python-depends", "kernel-depends"}))
