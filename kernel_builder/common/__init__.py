"""Helpers every stage uses: diagnostics, processes, progress display, file-system rules, on/off environment switches."""
