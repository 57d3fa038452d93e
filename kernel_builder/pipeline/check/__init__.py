"""Check stage: what a built variant must satisfy before it is published (ABI, importability)."""
